// How a guest's preview1 imports reach packfs-web: shared by the runner's
// Worker (worker.js), the WASI class (wasi.js) and the benchmark's profile.

/**
 * The guest's `wasi_snapshot_preview1` import object for `p1` (a
 * Preview1 of class `Preview1`), given `wasm`, packfs-web's exports (what
 * its `init` resolves to). Each function but `proc_exit` is a trampoline
 * to packfs-web's direct export of it, passing `p1.id`: wasm to wasm,
 * with no JavaScript between the guest and packfs-web. `proc_exit`, which
 * ends the guest by throwing, is lowered to `Preview1.call`.
 */
export async function imports(p1, Preview1, wasm) {
  await prepare(Preview1, wasm);
  return importsNow(p1, Preview1);
}

/** Compiles the trampoline module, once, and keeps packfs-web's exports
 *  `wasm`: {@link importsNow} needs both. */
export async function prepare(Preview1, wasm) {
  trampolines ??= WebAssembly.compile(trampoline(direct(Preview1)));
  compiled ??= await trampolines;
  exported = wasm;
}

/** {@link imports}, at once, once {@link prepare} has been awaited. */
export function importsNow(p1, Preview1) {
  if (compiled === undefined) throw new Error("packfs-web is not initialized: await init() first");
  const wasm = exported;
  const names = Preview1.functions();
  const signatures = Preview1.signatures();
  // `refused` holds `p1`, and the trampoline instance holds `refused`, as
  // the guest's instance holds the trampolines it imports: so the guest's
  // imports keep its Preview1 alive, whoever else lets go of it (a
  // reactor's WASI object, dropped once initialized). The trampolines pass
  // only its id, and packfs-web's table of guests holds it weakly.
  const p1Imports = { id: p1.id, refused: () => refused(Preview1, p1) };
  for (const { name } of direct(Preview1)) p1Imports[name] = wasm[`direct_${name}`];
  const out = { ...new WebAssembly.Instance(compiled, { p1: p1Imports }).exports };
  const exit = names.indexOf("proc_exit");
  out.proc_exit = lower(p1, exit, signatures[exit]);
  return out;
}

/** The functions with a direct export: all but `proc_exit`. */
function direct(Preview1) {
  const signatures = Preview1.signatures();
  return Preview1.functions().map((name, i) => ({ name, sig: signatures[i] })).filter((f) => f.name !== "proc_exit");
}

/** The trampoline module, compiled once: the functions are the same for
 *  every guest, its id an imported global. A promise of it, and it. */
let trampolines, compiled;
/** packfs-web's exports, as `prepare` was given them. */
let exported;

/** What a trampoline calls when a direct export refused its call (a
 *  negative number in place of an errno): throws, from outside packfs-web,
 *  whose frames have all returned, with the refusal's words. (`_p1`: the
 *  guest's Preview1, which its caller holds by passing it.) */
function refused(Preview1, _p1) {
  throw new Error(Preview1.lastRefusal());
}

/**
 * A wasm module that imports `p1.<name>` (the direct export: an i32 guest
 * id, then the function's parameters) for each of `functions` ({ name, sig
 * }, `sig` as Preview1.signatures gives it), `p1.refused` and the
 * immutable global `p1.id`, and exports `<name>` with the function's own
 * parameters, which calls the import with the id first and returns its
 * errno, or, when the import answers with a negative number (a refusal),
 * calls `p1.refused` with it (which throws).
 */
function trampoline(functions) {
  const leb = (n) => {
    const out = [];
    do {
      let b = n & 0x7f;
      n >>>= 7;
      if (n) b |= 0x80;
      out.push(b);
    } while (n);
    return out;
  };
  const str = (s) => [...leb(s.length), ...new TextEncoder().encode(s)];
  const vec = (items) => [...leb(items.length), ...items.flat()];
  const section = (id, items) => {
    const body = vec(items);
    return [id, ...leb(body.length), ...body];
  };
  const I32 = 0x7f, I64 = 0x7e;
  const params = (sig) => [...sig].map((t) => (t === "I" ? I64 : I32));
  const type = (ps) => [0x60, ...vec(ps.map((p) => [p])), 1, I32];
  const n = functions.length;
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    // Types: function k's import is type 2k, its export type 2k + 1;
    // `refused` (i32 -> nothing) type 2n.
    ...section(1, [
      ...functions.flatMap(({ sig }) => [type([I32, ...params(sig)]), type(params(sig))]),
      [0x60, 1, I32, 0],
    ]),
    // Imports: the functions (0 .. n - 1), `refused` (n), the id global.
    ...section(2, [
      ...functions.map(({ name }, k) => [...str("p1"), ...str(name), 0x00, ...leb(2 * k)]),
      [...str("p1"), ...str("refused"), 0x00, ...leb(2 * n)],
      [...str("p1"), ...str("id"), 0x03, I32, 0x00],
    ]),
    ...section(3, functions.map((_, k) => leb(2 * k + 1))),
    ...section(7, functions.map(({ name }, k) => [...str(name), 0x00, ...leb(n + 1 + k)])),
    ...section(10, functions.map(({ sig }, k) => {
      // One i32 local after the parameters: the answer.
      const r = leb(sig.length);
      const body = [
        1, 1, I32,
        // global.get id, local.get 0 .., call import k, local.tee r
        0x23, 0, ...[...sig].flatMap((_, j) => [0x20, ...leb(j)]), 0x10, ...leb(k), 0x22, ...r,
        // if r < 0: refused(r)
        0x41, 0, 0x48, 0x04, 0x40, 0x20, ...r, 0x10, ...leb(n), 0x0b,
        // r
        0x20, ...r, 0x0b,
      ];
      return [...leb(body.length), ...body];
    })),
  ]);
}

/** The import for preview1 function `i`: its arguments as numbers, a
 *  64-bit one (a BigInt) as its low and high 32 bits. */
export function lower(p1, i, sig) {
  if (!sig.includes("I")) {
    // 32-bit values only (most calls): straight through.
    return (a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0) => p1.call(i, a, b, c, d, e, f, g, 0, 0, 0, 0);
  }
  return (...args) => {
    const v = [];
    for (let k = 0; k < sig.length; k++) {
      if (sig[k] === "I") v.push(Number(BigInt.asUintN(32, args[k])), Number(args[k] >> 32n));
      else v.push(args[k]);
    }
    while (v.length < 11) v.push(0);
    return p1.call(i, ...v);
  };
}
