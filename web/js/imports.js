// How a guest's preview1 imports reach packfs-web: shared by the runner's
// Worker (worker.js) and the benchmark's profile.

/** The guest's `wasi_snapshot_preview1` import object for `p1` (a
 *  started-to-be Preview1 of `Preview1`, the class): packfs-web's own
 *  export for each function where `p1.direct()` gives one (the guest then
 *  calls into packfs-web with no JavaScript between), else the function
 *  lowered to `Preview1.call`. */
export function imports(p1, Preview1) {
  const direct = p1.direct();
  const signatures = Preview1.signatures();
  const out = {};
  Preview1.functions().forEach((name, i) => {
    out[name] = direct[i] ?? lower(p1, i, signatures[i]);
  });
  return out;
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
