// How every entry point checks what it is given: one checker, and one
// shape of preopen for `WASI`, `runP1`/`createRunner` and `wasiImports`
// (and `Preview1.preopen`'s arguments):
//
//   { path: "/data", fs: tree, readOnly: true }            a tree at hand
//   { path: "/data", kind: "overlay", url: "app.pack" }    a tree described
//
// A tree at hand (a `MemFs`, a `Pack` or an `Overlay`) serves a guest on
// this thread; the runner's guest runs in a worker, which builds its trees
// from their descriptions. A description serves everywhere it can be
// built at once: in `WASI` and `wasiImports`, "mem", and "pack" or
// "overlay" from bytes (a URL is fetched, and a journal opened, only by
// the runner, whose worker may wait).

/** A TypeError saying what `what` must be and what it is instead. */
export const bad = (what, want, got) => {
  const shown = typeof got === "string" ? JSON.stringify(got) : got === null ? "null" : typeof got;
  return new TypeError(`${what} must be ${want}, not ${shown}`);
};
export const isObject = (v) => typeof v === "object" && v !== null && !Array.isArray(v);
export const isBytes = (v) => v instanceof Uint8Array || v instanceof ArrayBuffer;

/** Throws a TypeError naming any key of `obj` that is not in `known`. */
export function onlyKnown(obj, known, what) {
  for (const k of Object.keys(obj)) {
    if (!known.includes(k)) throw new TypeError(`${what} has no option ${JSON.stringify(k)} (${known.join(", ")})`);
  }
}

/**
 * The `known` fields of `obj` (its own, or inherited, as a destructuring
 * reads them), each read once; unknown own ones refused first. What the
 * checks look at is then what is used: a getter cannot answer them one
 * way and the run another.
 */
export function pick(obj, known, what) {
  onlyKnown(obj, known, what);
  const out = {};
  for (const k of known) {
    const v = obj[k];
    if (v !== undefined) out[k] = v;
  }
  return out;
}

/** `obj` (if given): an object of `known` whole numbers, 0 or more. */
export function checkNumbers(obj, known, what) {
  if (obj === undefined) return;
  if (!isObject(obj)) throw bad(what, "an object", obj);
  onlyKnown(obj, known, what);
  for (const [k, v] of Object.entries(obj)) {
    if (v !== undefined && !(Number.isSafeInteger(v) && v >= 0)) throw bad(`${what}.${k}`, "a whole number, 0 or more", v);
  }
}

const KINDS = ["mem", "pack", "overlay", "journal"];
/** Most preopens a guest is given: a p1 guest's descriptors are fewer. */
const MAX_PREOPENS = 4096;
const PREOPEN = ["path", "fs", "kind", "url", "bytes", "readOnly", "options", "pack", "save", "name"];
/** A journal's name: what packfs-web's MemFs.openJournal takes. */
const JOURNAL_NAME = /^(?!\.\.?$)[A-Za-z0-9._-]{1,128}$/;
const FS_OPTIONS = ["maxBytes", "maxInodes"];
const PACK_OPTIONS = ["verifyOnRead", "persist", "cacheSize", "digest"];
/** A pack digest, as `packfs info` prints it. */
const DIGEST = /^blake3:[0-9a-fA-F]{64}$/;

/**
 * `preopens` checked: an array of preopens (or, where `where` is `WASI`
 * or `wasiImports`, the object of guest paths to trees they took first,
 * kept for the code written so). `trees` (packfs-web's `{ MemFs, Pack,
 * Overlay }`) where the guest runs on this thread, else absent: the
 * runner's, whose `base` makes each URL absolute. Each comes back as
 * `{ path, readOnly, fs }` (this thread) or as its checked description.
 *
 * @param {import("./runner.js").Preopen[] | Record<string, unknown> | undefined} preopens
 * @param {string} where
 * @param {{ trees?: { MemFs: Function, Pack: Function, Overlay: Function }, base?: string }} [how]
 * @returns {any[]}
 */
export function checkPreopens(preopens, where, { trees, base } = {}) {
  if (preopens === undefined) return [];
  /** @type {any[]} */
  let list;
  if (trees !== undefined && isPlain(preopens)) {
    // The older shape: guest path -> tree (or `{ fs, readOnly }`), each
    // read once.
    list = Object.entries(/** @type {Record<string, any>} */ (preopens)).map(([path, v]) => {
      if (!isPlain(v)) return { path, fs: v };
      const { fs, readOnly, ...rest } = v;
      const extra = Object.keys(rest);
      if (extra.length > 0) throw new TypeError(`preopens[${JSON.stringify(path)}] has no option ${JSON.stringify(extra[0])} (fs, readOnly)`);
      return { path, fs, readOnly };
    });
  } else if (Array.isArray(preopens)) {
    if (preopens.length > MAX_PREOPENS) throw bad("preopens", `at most ${MAX_PREOPENS} preopens`, preopens.length);
    // A hole is an `undefined` entry, refused as one.
    list = Array.from(preopens);
  } else {
    throw bad("preopens", `an array of preopens ({ path, fs } or { path, kind, ... }) for ${where}`, preopens);
  }
  const checked = list.map((p, i) => preopen(p, `preopens[${i}]`, trees, base));
  const seen = new Set();
  checked.forEach((p, i) => {
    if (seen.has(p.path)) throw bad(`preopens[${i}].path`, "a path no other preopen has", p.path);
    seen.add(p.path);
  });
  return checked;
}

/** An object of the older shape: plain, not a tree, a Map or an array. */
const isPlain = (v) => isObject(v) && [Object.prototype, null].includes(Object.getPrototypeOf(v));

/**
 * @param {unknown} v
 * @param {{ MemFs: Function, Pack: Function, Overlay: Function }} trees
 */
const isTree = (v, trees) => v instanceof trees.MemFs || v instanceof trees.Pack || v instanceof trees.Overlay;

function preopen(given, what, trees, base) {
  if (!isObject(given)) throw bad(what, "an object", given);
  const p = pick(given, PREOPEN, what);
  // packfs-web's own rule (Preview1.preopen's), wherever a preopen is given.
  if (typeof p.path !== "string" || p.path === "" || p.path.split("/").includes("..") || p.path.includes("\0")) {
    throw bad(`${what}.path`, 'a guest path (not empty, without ".." or NUL)', p.path);
  }
  for (const k of ["readOnly", "save"]) {
    if (p[k] !== undefined && typeof p[k] !== "boolean") throw bad(`${what}.${k}`, "a boolean", p[k]);
  }
  if (p.fs !== undefined) {
    if (trees === undefined) {
      throw new TypeError(`${what}.fs: a tree cannot cross to the runner's worker; describe it (kind, and url or bytes)`);
    }
    if (typeof p.fs === "string") throw new TypeError(`${what}.fs is a host path: give a PackFS tree (MemFs, Pack or Overlay)`);
    if (!isTree(p.fs, trees)) throw bad(`${what}.fs`, "a MemFs, a Pack or an Overlay", p.fs);
    const extra = Object.keys(p).filter((k) => !["path", "fs", "readOnly"].includes(k));
    if (extra.length > 0) throw new TypeError(`${what}: fs gives a tree, and ${extra.join(", ")} would describe one: not both`);
    return { path: p.path, fs: p.fs, readOnly: p.readOnly ?? false };
  }
  const out = described(p, what, base);
  if (trees === undefined) return out;
  if (p.save !== undefined) throw new TypeError(`${what}.save is the runner's (runP1): here, compact the tree you gave`);
  if (p.kind === "journal" || p.url !== undefined) {
    throw new TypeError(`${what}: a ${p.kind === "journal" ? "journal" : "URL pack"} opens asynchronously: open it first and give it as fs, or run the guest with runP1`);
  }
  return { path: p.path, fs: build(out, trees), readOnly: p.readOnly ?? false };
}

/** A tree made at once from its checked description (no URL, no journal). */
function build(p, { MemFs, Pack }) {
  if (p.kind === "mem") return new MemFs(p.options);
  const pack = Pack.fromBytes(p.bytes instanceof ArrayBuffer ? new Uint8Array(p.bytes) : p.bytes, p.pack);
  return p.kind === "pack" ? pack : new MemFs({ ...p.options, lower: pack });
}

/** A description checked, its URL made absolute against `base`. */
function described(p, what, base) {
  if (!KINDS.includes(p.kind)) {
    const names = KINDS.map((k) => JSON.stringify(k));
    throw bad(`${what}.kind`, `${names.slice(0, -1).join(", ")} or ${names.at(-1)}`, p.kind);
  }
  const out = { ...p };
  // Their fields too are read once, here.
  if (isObject(p.pack)) out.pack = p.pack = pick(p.pack, PACK_OPTIONS, `${what}.pack`);
  if (isObject(p.options)) out.options = p.options = pick(p.options, FS_OPTIONS, `${what}.options`);
  if (p.kind === "journal") {
    if (typeof p.name !== "string" || !JOURNAL_NAME.test(p.name)) {
      throw bad(`${what}.name`, "1 to 128 letters, digits, '.', '_' or '-' (not . or ..)", p.name);
    }
  } else if (p.name !== undefined) {
    throw new TypeError(`${what}.name is for "journal" preopens, not ${JSON.stringify(p.kind)}`);
  }
  if (p.kind === "mem" || p.kind === "journal") {
    for (const k of ["url", "bytes", "pack"]) {
      if (p[k] !== undefined) throw new TypeError(`${what}.${k} is for "pack" and "overlay" preopens, not ${JSON.stringify(p.kind)}`);
    }
  } else {
    if ((p.url === undefined) === (p.bytes === undefined)) {
      throw new TypeError(`${what} (${JSON.stringify(p.kind)}) needs a url or bytes, one of the two`);
    }
    if (p.bytes !== undefined && !isBytes(p.bytes)) throw bad(`${what}.bytes`, "a Uint8Array or an ArrayBuffer", p.bytes);
    if (p.url !== undefined) {
      if (typeof p.url !== "string" && !(p.url instanceof URL)) throw bad(`${what}.url`, "a string or a URL", p.url);
      try {
        out.url = new URL(p.url, base || undefined).href;
      } catch {
        throw new TypeError(`${what}.url ${JSON.stringify(String(p.url))} is not a URL (against ${base})`);
      }
    }
    if (p.pack !== undefined) {
      if (!isObject(p.pack)) throw bad(`${what}.pack`, "an object", p.pack);
      onlyKnown(p.pack, PACK_OPTIONS, `${what}.pack`);
      for (const [k, v] of Object.entries(p.pack)) {
        if (v === undefined) continue;
        if (p.bytes !== undefined && (k === "persist" || k === "cacheSize")) {
          throw new TypeError(`${what}.pack.${k} is for a pack by url, not bytes`);
        } else if (k === "cacheSize") {
          if (!(Number.isSafeInteger(v) && v >= 0)) throw bad(`${what}.pack.${k}`, "a whole number, 0 or more", v);
        } else if (k === "digest") {
          if (typeof v !== "string" || !DIGEST.test(v)) throw bad(`${what}.pack.${k}`, "blake3: and 64 hex digits", v);
        } else if (typeof v !== "boolean") throw bad(`${what}.pack.${k}`, "a boolean", v);
      }
    }
  }
  if (p.kind === "pack" && p.options !== undefined) throw new TypeError(`${what}.options (quotas) are for "mem", "overlay" and "journal" preopens`);
  checkNumbers(p.options, FS_OPTIONS, `${what}.options`);
  return out;
}
