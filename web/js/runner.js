// Runs a WASI preview1 module (wasm32-wasip1, wasi-libc C, ...) in a
// worker over packfs-web's filesystems: a Web Worker in a browser, Deno and
// Bun, a worker_threads one in Node. The worker may block, so a guest
// reading a lazy URL pack waits for each file's bytes (one Range request)
// instead of failing; the page (the thread that called runP1, in every
// runtime) stays responsive.
//
//   import { runP1 } from "./pkg/runner.js";
//   const { exitCode } = await runP1(wasmBytes, {
//     args: ["demo"],
//     preopens: [{ path: "/", kind: "overlay", url: "assets.pack", save: true }],
//     stdout: (bytes) => console.log(new TextDecoder().decode(bytes)),
//   });
//
// No cross-origin isolation is needed; with it, sleeps wait instead of
// spinning. Every option is checked before the worker starts: a mistake is
// a TypeError that names the option.

import { nodeWorker, server, wasmSource, workingDirectory } from "./runtime.js";

/**
 * Why a run failed. `kind` is one of:
 * - `"trap"`: the guest trapped (`message` is the trap's, e.g.
 *   "unreachable executed");
 * - `"timeout"`: it ran past `timeout` (`name` "TimeoutError");
 * - `"aborted"`: `signal` aborted (`name` "AbortError", `cause` the
 *   signal's reason);
 * - `"preopen"`: a preopen could not be opened (a pack's URL failed, or
 *   its bytes are not a pack); `message` names its path;
 * - `"module"`: the module does not compile, or imports what preview1
 *   does not define;
 * - `"io"`: the run failed around the guest (saving a preopen, the
 *   worker itself).
 * `detail` holds the stack where it was raised, when there is one.
 */
export class RunError extends Error {
  constructor(kind, message, { cause, detail } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = kind === "timeout" ? "TimeoutError" : kind === "aborted" ? "AbortError" : "RunError";
    this.kind = kind;
    this.detail = detail;
  }
}

const KINDS = ["mem", "pack", "overlay", "journal"];
const OPTIONS = ["args", "env", "stdin", "stdout", "stderr", "preopens", "timeout", "signal", "baseUrl"];
const PREOPEN = ["path", "kind", "url", "bytes", "readOnly", "options", "pack", "save", "name"];
/** A journal's name: what packfs-web's MemFs.openJournal takes. */
const JOURNAL_NAME = /^(?!\.\.?$)[A-Za-z0-9._-]{1,128}$/;
const FS_OPTIONS = ["maxBytes", "maxInodes"];
const PACK_OPTIONS = ["verifyOnRead", "persist", "cacheSize", "digest"];
/** A pack digest, as `packfs info` prints it. */
const DIGEST = /^blake3:[0-9a-fA-F]{64}$/;

const bad = (what, want, got) => {
  const shown = typeof got === "string" ? JSON.stringify(got) : got === null ? "null" : typeof got;
  return new TypeError(`${what} must be ${want}, not ${shown}`);
};
const isObject = (v) => typeof v === "object" && v !== null && !Array.isArray(v);
const isBytes = (v) => v instanceof Uint8Array || v instanceof ArrayBuffer;
/** A ReadableStream, or any async iterable of pieces (a Node Readable). */
const isStream = (v) => typeof ReadableStream === "function" && v instanceof ReadableStream || typeof v?.[Symbol.asyncIterator] === "function";

/** Throws a TypeError naming any key of `obj` that is not in `known`. */
function onlyKnown(obj, known, what) {
  for (const k of Object.keys(obj)) {
    if (!known.includes(k)) throw new TypeError(`${what} has no option ${JSON.stringify(k)} (${known.join(", ")})`);
  }
}

function checkNumbers(obj, known, what) {
  if (obj === undefined) return;
  if (!isObject(obj)) throw bad(what, "an object", obj);
  onlyKnown(obj, known, what);
  for (const [k, v] of Object.entries(obj)) {
    if (v !== undefined && !(Number.isSafeInteger(v) && v >= 0)) throw bad(`${what}.${k}`, "a whole number, 0 or more", v);
  }
}

/** The preopen `p` (the `i`th) as the worker takes it: checked, its URL
 *  made absolute against `base`. */
function preopen(p, i, base) {
  const what = `preopens[${i}]`;
  if (!isObject(p)) throw bad(what, "an object", p);
  onlyKnown(p, PREOPEN, what);
  if (typeof p.path !== "string" || !p.path.startsWith("/") || p.path.split("/").includes("..") || p.path.includes("\0")) {
    throw bad(`${what}.path`, 'a guest path starting with "/", without ".." or NUL', p.path);
  }
  if (!KINDS.includes(p.kind)) {
    const names = KINDS.map((k) => JSON.stringify(k));
    throw bad(`${what}.kind`, `${names.slice(0, -1).join(", ")} or ${names.at(-1)}`, p.kind);
  }
  for (const k of ["readOnly", "save"]) {
    if (p[k] !== undefined && typeof p[k] !== "boolean") throw bad(`${what}.${k}`, "a boolean", p[k]);
  }
  const out = { ...p };
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
        if (k === "cacheSize") {
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

/** `options` checked, as the worker takes them (functions and limits apart). */
function check(module, options) {
  if (!(module instanceof WebAssembly.Module || isBytes(module))) {
    throw bad("module", "a WebAssembly.Module, a Uint8Array or an ArrayBuffer", module);
  }
  if (!isObject(options)) throw bad("options", "an object", options);
  onlyKnown(options, OPTIONS, "runP1");
  const { args, env, stdin, stdout, stderr, preopens, timeout, signal, baseUrl } = options;
  if (args !== undefined && !(Array.isArray(args) && args.every((a) => typeof a === "string"))) {
    throw bad("args", "an array of strings", args);
  }
  // C's argv and environ end a string at its first NUL, and split
  // NAME=value at the first "=": the guest would see other words.
  args?.forEach((a, i) => {
    if (a.includes("\0")) throw bad(`args[${i}]`, "a string without NUL", a);
  });
  if (env !== undefined && !(isObject(env) && Object.values(env).every((v) => typeof v === "string"))) {
    throw bad("env", "an object of strings", env);
  }
  for (const [k, v] of Object.entries(env ?? {})) {
    if (k === "" || /[=\0]/.test(k)) throw bad("env's names", "non-empty, without '=' or NUL", k);
    if (v.includes("\0")) throw bad(`env.${k}`, "a string without NUL", v);
  }
  if (stdin !== undefined && !isBytes(stdin) && typeof stdin !== "function" && !isStream(stdin)) {
    throw bad("stdin", "a Uint8Array, an ArrayBuffer, a ReadableStream, an async iterable (a Node stream) or a function", stdin);
  }
  for (const [k, f] of [["stdout", stdout], ["stderr", stderr]]) {
    if (f !== undefined && typeof f !== "function" && typeof f?.write !== "function") {
      throw bad(k, "a function or a writable stream", f);
    }
  }
  if (timeout !== undefined && !(typeof timeout === "number" && timeout >= 0)) {
    throw bad("timeout", "a number of milliseconds, 0 or more", timeout);
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw bad("signal", "an AbortSignal", signal);
  if (preopens !== undefined && !Array.isArray(preopens)) throw bad("preopens", "an array", preopens);
  if (baseUrl !== undefined && typeof baseUrl !== "string" && !(baseUrl instanceof URL)) {
    throw bad("baseUrl", "a string or a URL", baseUrl);
  }
  // Relative URLs are the page's, as in fetch(): not the worker script's;
  // where there is no page, the working directory's.
  const base = String(baseUrl ?? globalThis.location?.href ?? workingDirectory() ?? "");
  const checked = (preopens ?? []).map((p, i) => preopen(p, i, base));
  checked.forEach((p, i) => {
    if (checked.findIndex((q) => q.path === p.path) < i) throw bad(`preopens[${i}].path`, "a path no other preopen has", p.path);
  });
  return {
    args,
    env,
    stdin: stdin instanceof ArrayBuffer ? new Uint8Array(stdin) : isBytes(stdin) ? stdin : undefined,
    preopens: checked,
  };
}

/** setTimeout's longest delay, 2^31 − 1 ms (24.8 days): it fires a longer
 *  one, or Infinity, at once. */
const MAX_DELAY = 2 ** 31 - 1;

/** Calls `f` once `ms` milliseconds have passed, however many: a delay
 *  past {@link MAX_DELAY} is waited for in pieces, and Infinity never
 *  ends. Returns what cancels it. */
function after(ms, f) {
  if (ms === Infinity) return () => {};
  const due = performance.now() + ms;
  let timer;
  const arm = () => {
    const left = due - performance.now();
    timer = left > MAX_DELAY ? setTimeout(arm, MAX_DELAY) : setTimeout(f, left);
  };
  arm();
  return () => clearTimeout(timer);
}

/** Most bytes one piece of pulled stdin carries to the worker. */
const STDIN_PIECE = 1 << 16;

/** A piece of stdin as bytes; `null` for the end. */
function piece(v, what) {
  if (v === null || v === undefined) return null;
  if (typeof v === "string") return new TextEncoder().encode(v);
  if (v instanceof Uint8Array) return v;
  if (v instanceof ArrayBuffer) return new Uint8Array(v);
  throw new TypeError(`${what} gave ${typeof v}, not a Uint8Array, an ArrayBuffer or a string`);
}

/** `stdin` (a ReadableStream or a function) as `next()`, a promise of
 *  the next non-empty piece or `null` at the end, and `close()`, after
 *  which it gives nothing more. */
function pieces(stdin) {
  if (typeof stdin === "function") {
    let ended = false;
    return {
      async next() {
        // An empty piece ends it too: a function that keeps giving nothing
        // would otherwise be called without end.
        const b = ended ? null : piece(await stdin(), "stdin");
        if (b === null || b.length === 0) ended = true;
        return ended ? null : b;
      },
      close() {
        ended = true;
      },
    };
  }
  // A ReadableStream's reader, or any async iterable's iterator (a Node
  // Readable): the same pieces, the same end.
  const web = typeof ReadableStream === "function" && stdin instanceof ReadableStream;
  const it = web ? stdin.getReader() : stdin[Symbol.asyncIterator]();
  return {
    async next() {
      for (;;) {
        const { value, done } = await (web ? it.read() : it.next());
        if (done) return null;
        const b = piece(value, "stdin's stream");
        if (b.length > 0) return b;
      }
    },
    close() {
      Promise.resolve(web ? it.cancel() : it.return?.()).catch(() => {});
    },
  };
}

/** Most bytes of stdin read to its end before the guest starts (a page
 *  that is not cross-origin isolated cannot feed it as it reads). */
const MAX_DRAINED = 256 << 20;

/** All of `src`'s pieces, in one array, at most {@link MAX_DRAINED} bytes.
 *  It gives the event loop a turn every MiB or so, so that a timeout, an
 *  abort or `close()` (which closes `src`) takes effect meanwhile, however
 *  fast a source answers (a function's promises resolve in microtasks,
 *  between which no timer runs). */
async function drain(src) {
  const all = [];
  let total = 0;
  let since = 0;
  for (let b; (b = await src.next()) !== null; ) {
    total += b.length;
    if (total > MAX_DRAINED) {
      src.close();
      throw new RunError("io", `stdin: more than ${MAX_DRAINED >> 20} MiB to read before the guest starts (a page that is not cross-origin isolated reads it first)`);
    }
    all.push(b);
    if ((since += b.length) >= 1 << 20) {
      since = 0;
      await new Promise((turn) => setTimeout(turn, 0));
    }
  }
  const out = new Uint8Array(total);
  all.reduce((at, b) => (out.set(b, at), at + b.length), 0);
  return out;
}

/** Most bytes of a run's output the page may have been sent and not yet
 *  handed to its callbacks: past it, a write waits (where the page is
 *  cross-origin isolated, so the worker can wait) ... */
const OUTPUT_IN_FLIGHT = 4 << 20;
/** ... or, where it is not (the worker cannot wait for the page), the most
 *  a run may write to stdout and stderr together: a write past it fails
 *  (EIO). */
const OUTPUT_UNWAITED = 256 << 20;

/** Most bytes of an answer the page hands the worker at a time. */
const PIECE = 1 << 20;
/** Most milliseconds the page's fetch for a worker's blocking read may
 *  take, as a browser worker's own synchronous request may. */
const FETCH_TIMEOUT = 60_000;

/**
 * The page's end of what its worker asks and waits for (the guest's pulled
 * stdin; where there is no synchronous XMLHttpRequest, a pack's bytes): a
 * shared buffer, `[state, length]` then a piece. The worker sets state 0,
 * posts its question and waits; the answer's next piece goes in, length
 * is set (-1 at the end, -2 if it failed), then state 1, and it wakes. An
 * answer longer than a piece is taken in turns (`more`). `signal` ends
 * the page's fetches with the run.
 */
function channel(src, signal) {
  const shared = new SharedArrayBuffer(8 + PIECE);
  const state = new Int32Array(shared, 0, 2);
  const data = new Uint8Array(shared, 8);
  let left = new Uint8Array(0);
  const reply = (n) => {
    Atomics.store(state, 1, n);
    Atomics.store(state, 0, 1);
    Atomics.notify(state, 0);
  };
  const send = (bytes, max = PIECE) => {
    const n = Math.min(max, bytes.length, data.length);
    data.set(bytes.subarray(0, n));
    left = bytes.subarray(n);
    reply(n);
  };
  return {
    shared,
    async stdin(max) {
      try {
        while (left.length === 0) {
          const b = await src.next();
          if (b === null) return reply(-1);
          left = b;
        }
        send(left, max);
      } catch {
        reply(-2);
      }
    },
    async fetch(url, range, limit) {
      let head;
      let body = new Uint8Array(0);
      try {
        const r = await fetchRange(url, range, limit, signal);
        head = { status: r.status, contentRange: r.contentRange, validator: r.validator, length: r.body.length };
        body = r.body;
      } catch (e) {
        head = { error: `${e?.message ?? e}`.slice(0, 4096) };
      }
      // The head goes whole (it is small); the body follows, on `more`.
      send(new TextEncoder().encode(JSON.stringify(head)));
      left = body;
    },
    more() {
      send(left);
    },
  };
}

/** A GET of `url` with `range` as its `Range` header: status, headers
 *  and at most `limit` body bytes (more fails), within
 *  {@link FETCH_TIMEOUT}. */
async function fetchRange(url, range, limit, signal) {
  const timeout = AbortSignal.timeout(FETCH_TIMEOUT);
  const r = await fetch(url, { headers: { Range: range }, signal: AbortSignal.any ? AbortSignal.any([signal, timeout]) : signal });
  const chunks = [];
  let total = 0;
  for await (const c of r.body ?? []) {
    total += c.length;
    if (limit !== undefined && total > limit) {
      throw new Error(`${url} answered ${range} with more than ${limit} bytes`);
    }
    chunks.push(c);
  }
  const body = new Uint8Array(total);
  chunks.reduce((at, c) => (body.set(c, at), at + c.length), 0);
  const header = (name) => r.headers.get(name);
  return { status: r.status, contentRange: header("Content-Range"), validator: header("ETag") ?? header("Last-Modified"), body };
}

/**
 * packfs-web compiled once per page and given to every worker the page
 * starts, a one-shot runP1's and a runner's alike: the engine then shares
 * its code between them, the code it has optimized too, so a worker
 * started for a later run does not begin again from unoptimized code, and
 * the 0.8 MB module is fetched once. `null` where it cannot be fetched
 * from beside this script: each worker then loads its own.
 */
let packfsWeb;
function packfsWebModule() {
  const url = new URL("./packfs_web_bg.wasm", import.meta.url);
  const compile = () =>
    url.protocol === "file:" ? wasmSource().then((bytes) => WebAssembly.compile(bytes)) : WebAssembly.compileStreaming(fetch(url));
  packfsWeb ??= compile().catch(() => null);
  return packfsWeb;
}

/**
 * Runs `module` (bytes, or a WebAssembly.Module) to its exit, in a Worker
 * of its own that ends with the run: the one-shot form of
 * {@link createRunner}. Options: `args` (the first is the program's name),
 * `env` (an object of strings), `stdin` (bytes, a ReadableStream, or a
 * function giving each next piece: read as the guest reads where the page
 * is cross-origin isolated, else to its end before the guest starts; a
 * source that fails is EIO to a guest reading it, or, read first, rejects
 * the run with kind "io"), `stdout` and `stderr`
 * (called with each write's bytes), `preopens`: `{ path, kind: "mem" |
 * "pack" | "overlay" | "journal", url?, bytes?, name?, readOnly?,
 * options?, pack?, save? }` in descriptor order (a pack or an overlay's
 * lower comes from `url`, lazily, or `bytes`; `pack`: how it is opened, as
 * `Pack.fromUrl` takes it; a journal is the durable tree `name` in the
 * origin's private files, as `MemFs.openJournal` opens it; `options`:
 * quotas; `save`: return it compacted after the run),
 * `baseUrl` (what a relative `url` resolves against: the page's address
 * unless given), `timeout` (milliseconds, any number from 0: one past
 * setTimeout's 2^31 − 1 is waited for in pieces; Infinity, as leaving it
 * out, is no limit) and `signal` (an AbortSignal).
 * Resolves to `{ exitCode, bytesFetched, requests, saved: [{ path, pack
 * }] }`. Rejects with a TypeError naming the option when an option is
 * wrong, before anything is fetched, and otherwise with a
 * {@link RunError}. A timeout or an abort ends the worker at once, even
 * one blocked in a host call (a sleep, a fetch).
 */
export function runP1(module, options = {}) {
  const runner = createRunner({ modules: 0 });
  return runner.run(module, options).finally(() => runner.close());
}

/**
 * A runner that stays warm: its Worker and packfs-web instance are kept
 * from one run to the next, and each run starts from a clean guest state
 * (a new instance, new preopens, new stdio). Runs take turns: a run asked
 * for while another is under way starts when it ends. A run that times out
 * or is aborted takes the Worker with it, as does one after which
 * packfs-web's state there is in doubt (a call unwound through it); the
 * next run starts another.
 *
 * `modules` (8): how many compiled modules it keeps, keyed by the SHA-256
 * of their bytes, so a module given again as bytes is not compiled again
 * (a WebAssembly.Module is used as it is). `close()` ends the Worker and
 * rejects the run under way and those waiting with a RunError of kind
 * "aborted".
 */
export function createRunner({ modules = 8 } = {}) {
  if (!(Number.isSafeInteger(modules) && modules >= 0)) {
    throw bad("modules", "a whole number, 0 or more", modules);
  }
  return new Runner(modules);
}

class Runner {
  #worker = null;
  #turn = Promise.resolve();
  #closed = false;
  /** Ends the run under way, if there is one. */
  #stop = null;
  /** SHA-256 (hex) → Promise<WebAssembly.Module>, oldest first. */
  #compiled = new Map();
  #keep;

  constructor(keep) {
    this.#keep = keep;
  }

  /** Runs `module` as {@link runP1} does, in this runner's Worker. */
  run(module, options = {}) {
    let msg;
    try {
      msg = check(module, options);
    } catch (e) {
      return Promise.reject(e);
    }
    const run = this.#turn.then(() => this.#start(module, msg, options));
    this.#turn = run.catch(() => {});
    return run;
  }

  /** Ends the Worker; runs under way or waiting reject. */
  close() {
    this.#closed = true;
    this.#stop?.(new RunError("aborted", "the runner was closed"));
    this.#worker?.terminate();
    this.#worker = null;
  }

  async #module(module) {
    if (module instanceof WebAssembly.Module || this.#keep === 0) return module;
    const bytes = module instanceof ArrayBuffer ? new Uint8Array(module) : module;
    const key = Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)), (b) => b.toString(16).padStart(2, "0")).join("");
    let compiled = this.#compiled.get(key);
    if (compiled === undefined) {
      compiled = WebAssembly.compile(bytes);
      // A module that does not compile is not kept.
      compiled.catch(() => this.#compiled.delete(key));
      if (this.#compiled.size >= this.#keep) this.#compiled.delete(this.#compiled.keys().next().value);
    } else {
      this.#compiled.delete(key);
    }
    this.#compiled.set(key, compiled);
    try {
      return await compiled;
    } catch (e) {
      throw new RunError("module", `the module cannot run: ${e?.message ?? e}`, { detail: e?.stack });
    }
  }

  async #start(module, msg, { stdin, stdout, stderr, timeout, signal }) {
    const aborted = () => new RunError("aborted", "the run was aborted", { cause: signal.reason });
    if (this.#closed) throw new RunError("aborted", "the runner was closed");
    if (signal?.aborted) throw aborted();
    const engine = packfsWebModule();
    const compiled = await this.#module(module);
    if (this.#closed) throw new RunError("aborted", "the runner was closed");
    if (signal?.aborted) throw aborted();
    // Written out so that bundlers see the worker and bundle it.
    this.#worker ??= typeof Worker === "function"
      ? Object.assign(new Worker(new URL("./worker.js", import.meta.url), { type: "module" }), { busy() {} })
      : await nodeWorker("./worker.js");
    const worker = this.#worker;
    if (this.#closed) return this.close(), Promise.reject(new RunError("aborted", "the runner was closed"));
    const src = msg.stdin === undefined && stdin !== undefined ? pieces(stdin) : null;
    // A page that is not cross-origin isolated cannot share memory with its
    // worker; Node, Deno and Bun always can.
    const isolated = globalThis.crossOriginIsolated ?? typeof SharedArrayBuffer === "function";
    // The page's fetches for the worker's blocking reads end with the run.
    const fetches = new AbortController();
    // The worker asks through it for pulled stdin and, where it has no
    // synchronous XMLHttpRequest, for a pack's bytes.
    const asked = isolated && (src !== null || server) ? channel(src, fetches.signal) : null;
    // Output in flight, shared with the worker where it can wait on it.
    const flow = isolated ? new Int32Array(new SharedArrayBuffer(4)) : null;
    const output = {
      flow: flow?.buffer ?? null,
      inFlight: OUTPUT_IN_FLIGHT,
      unwaited: OUTPUT_UNWAITED,
      stdout: stdout !== undefined,
      stderr: stderr !== undefined,
    };
    const taken = (n) => {
      if (flow) {
        Atomics.sub(flow, 0, n);
        Atomics.notify(flow, 0);
      }
    };
    /** Written by every stream `hand` gave bytes to (they write in order,
     *  so the last write's callback says all were). */
    let written = Promise.resolve();
    /** Hands `bytes` to `to` (a function, or a writable stream, whose
     *  bytes are taken once it has written them). */
    const hand = (to, bytes) => {
      if (typeof to?.write === "function") {
        written = new Promise((done) => to.write(bytes, () => (taken(bytes.length), done())));
        return;
      }
      try {
        to?.(bytes);
      } finally {
        taken(bytes.length);
      }
    };
    return new Promise((resolve, reject) => {
      let cancelTimer = () => {};
      const onAbort = () => fail(aborted());
      // Ends the run; `gone`: and the worker, whatever it was doing.
      const end = (settle, gone) => {
        if (gone && this.#worker === worker) {
          worker.terminate();
          this.#worker = null;
        }
        worker.busy(false);
        fetches.abort();
        cancelTimer();
        signal?.removeEventListener("abort", onAbort);
        worker.onmessage = worker.onerror = null;
        this.#stop = null;
        src?.close();
        settle();
      };
      const fail = (e) => end(() => reject(e), true);
      this.#stop = fail;
      if (timeout !== undefined) {
        cancelTimer = after(timeout, () => fail(new RunError("timeout", `the guest ran longer than its time limit of ${timeout} ms`)));
      }
      signal?.addEventListener("abort", onAbort, { once: true });
      worker.busy(true);
      worker.onmessage = (e) => {
        const m = e.data;
        if (m.type === "stdin") asked.stdin(m.max);
        else if (m.type === "fetch") asked.fetch(m.url, m.range, m.limit);
        else if (m.type === "more") asked.more();
        else if (m.type === "stdout" || m.type === "stderr") hand(m.type === "stdout" ? stdout : stderr, m.bytes);
        // A worker whose packfs-web is in doubt runs no other guest.
        // It resolves once its output streams have written all it wrote.
        else if (m.type === "exit") {
          const { type, inDoubt, ...result } = m;
          written.then(() => this.#stop === fail && end(() => resolve(result), inDoubt));
        } else {
          end(() => reject(new RunError(m.kind, m.message, { detail: m.detail })), m.inDoubt);
        }
      };
      worker.onerror = (e) => fail(new RunError("io", `the worker failed: ${e.message ?? "it did not load"}`));
      const bytes = compiled instanceof WebAssembly.Module ? compiled : new Uint8Array(compiled);
      const input = asked && src ? Promise.resolve(true) : src ? drain(src) : Promise.resolve(msg.stdin);
      const ask = asked?.shared ?? null;
      Promise.all([input, engine]).then(
        ([stdin, engine]) => this.#stop === fail && worker.postMessage({ module: bytes, engine, ...msg, stdin, output, ask }),
        (e) => this.#stop === fail && fail(e instanceof RunError ? e : new RunError("io", `reading stdin: ${e?.message ?? e}`, { cause: e, detail: e?.stack })),
      );
    });
  }
}
