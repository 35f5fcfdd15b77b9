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

import { bad, checkPreopens, isBytes, isObject, pick } from "./options.js";
import { channel, drain, pieces } from "./channel.js";
import { checkSink, outputs } from "./output.js";
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
  /**
   * @param {"trap" | "timeout" | "aborted" | "preopen" | "module" | "io"} kind
   * @param {string} message
   * @param {{ cause?: unknown, detail?: string }} [more]
   */
  constructor(kind, message, { cause, detail } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = kind === "timeout" ? "TimeoutError" : kind === "aborted" ? "AbortError" : "RunError";
    this.kind = kind;
    this.detail = detail;
  }
}

const OPTIONS = ["args", "env", "stdin", "stdout", "stderr", "preopens", "timeout", "signal", "baseUrl"];

/** A ReadableStream, or any async iterable of pieces (a Node Readable). */
const isStream = (v) => typeof ReadableStream === "function" && v instanceof ReadableStream || typeof v?.[Symbol.asyncIterator] === "function";

/** `options` checked, as the worker takes them (functions and limits apart). */
function check(module, options) {
  if (!(module instanceof WebAssembly.Module || isBytes(module))) {
    throw bad("module", "a WebAssembly.Module, a Uint8Array or an ArrayBuffer", module);
  }
  if (!isObject(options)) throw bad("options", "an object", options);
  options = pick(options, OPTIONS, "runP1");
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
  checkSink(stdout, "stdout");
  checkSink(stderr, "stderr");
  if (timeout !== undefined && !(typeof timeout === "number" && timeout >= 0)) {
    throw bad("timeout", "a number of milliseconds, 0 or more", timeout);
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw bad("signal", "an AbortSignal", signal);
  if (baseUrl !== undefined && typeof baseUrl !== "string" && !(baseUrl instanceof URL)) {
    throw bad("baseUrl", "a string or a URL", baseUrl);
  }
  // Relative URLs are the page's, as in fetch(): not the worker script's;
  // where there is no page, the working directory's.
  const base = String(baseUrl ?? globalThis.location?.href ?? workingDirectory() ?? "");
  const checked = checkPreopens(preopens, "runP1", { base });
  return {
    msg: { args, env, stdin: stdin instanceof ArrayBuffer ? new Uint8Array(stdin) : isBytes(stdin) ? stdin : undefined, preopens: checked },
    options,
  };
}

/** Most milliseconds a run ended from the page (its timeout, its signal,
 *  close()) waits for the output its guest wrote to be written. */
const OUTPUT_GRACE = 1000;

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
 * (called with each write's bytes, or writable streams; one that throws
 * or fails takes no more, and the guest's next write to it is EIO),
 * `preopens`: `{ path, kind: "mem" |
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
 * }] }` once `stdout` and `stderr` have written all the guest wrote.
 * Rejects with a TypeError naming the option when an option is wrong,
 * before anything is fetched, and otherwise with a {@link RunError}: of
 * kind "io" too when output was lost and the guest could not be told
 * (its last write failed late, or the page is not cross-origin isolated). A timeout or an abort ends the worker at once, even
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

  /**
   * Runs `module` as {@link runP1} does, in this runner's Worker.
   * @param {Uint8Array | ArrayBuffer | WebAssembly.Module} module
   * @param {import("./runner.js").RunOptions} [options]
   * @returns {Promise<import("./runner.js").RunResult>}
   */
  run(module, options = {}) {
    let checked;
    try {
      checked = check(module, options);
    } catch (e) {
      return Promise.reject(e);
    }
    const run = this.#turn.then(() => this.#start(module, checked.msg, checked.options));
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

  /** @param {import("./runner.js").RunOptions} options */
  async #start(module, msg, options) {
    const { stdin, stdout, stderr, timeout, signal } = options;
    const aborted = () => new RunError("aborted", "the run was aborted", { cause: signal.reason });
    if (this.#closed) throw new RunError("aborted", "the runner was closed");
    if (signal?.aborted) throw aborted();
    const engine = packfsWebModule();
    const compiled = await this.#module(module);
    if (this.#closed) throw new RunError("aborted", "the runner was closed");
    if (signal?.aborted) throw aborted();
    // Written out so that bundlers see the worker and bundle it. Node,
    // Deno and Bun get a worker_threads one: Deno's Web Worker, terminated,
    // goes on with what it was doing (a wait on this thread, a guest's
    // loop) and keeps the process alive.
    this.#worker ??= !server && typeof Worker === "function"
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
    const out = outputs({ stdout, stderr }, isolated);
    return new Promise((resolve, reject) => {
      let cancelTimer = () => {};
      /** "running"; "ending": the worker is done with, its output being
       *  written; "settled". */
      let phase = "running";
      const onAbort = () => stop(aborted());
      const settle = (finish) => {
        if (phase === "settled") return;
        phase = "settled";
        if (this.#stop === stop) this.#stop = null;
        cancelTimer();
        signal?.removeEventListener("abort", onAbort);
        out.close();
        finish();
      };
      // Done with the worker; `gone`: and it ends, whatever it was doing.
      // Its listeners go first: Deno's worker_threads says a terminated
      // worker's exit within terminate(), which would end the run again.
      const quit = (gone) => {
        phase = "ending";
        worker.onmessage = worker.onerror = null;
        if (gone && this.#worker === worker) {
          worker.terminate();
          this.#worker = null;
        }
        worker.busy(false);
        fetches.abort();
        src?.close();
      };
      // The guest ended (`outcome(lost)` says how): the run settles once
      // its output is written, within what is left of `timeout` (the timer
      // and `signal` still end it meanwhile), so that what it wrote last,
      // a panic's message, is out when the embedder hears of it.
      const ended = (gone, outcome) => {
        quit(gone);
        out.settled().then((lost) => settle(outcome(lost)));
      };
      // Ended from here (timeout, abort, close, a failed worker or stdin):
      // the output handed on already gets OUTPUT_GRACE to be written.
      // While the output of an ended guest is written, it ends that wait.
      const stop = (e) => {
        if (phase === "running") {
          quit(true);
          let timer;
          const grace = new Promise((done) => (timer = setTimeout(done, OUTPUT_GRACE)));
          Promise.race([out.settled(), grace]).then(() => (clearTimeout(timer), settle(() => reject(e))));
        } else settle(() => reject(e));
      };
      this.#stop = stop;
      if (timeout !== undefined) {
        cancelTimer = after(timeout, () => stop(new RunError("timeout", `the guest ran longer than its time limit of ${timeout} ms`)));
      }
      signal?.addEventListener("abort", onAbort, { once: true });
      worker.busy(true);
      worker.onmessage = (e) => {
        const m = e.data;
        if (m.type === "stdin") asked.stdin(m.max);
        else if (m.type === "fetch") asked.fetch(m.url, m.range, m.limit);
        else if (m.type === "more") asked.more();
        else if (m.type === "stdout" || m.type === "stderr") out.hand(m.type, m.bytes);
        // A worker whose packfs-web is in doubt runs no other guest.
        // Output lost where the guest could not be told rejects an exit.
        else if (m.type === "exit") {
          const { type, inDoubt, ...result } = m;
          ended(inDoubt, (lost) => {
            if (lost === null) return () => resolve(result);
            const e = lost.error;
            const message = `${lost.type} failed: ${e?.message ?? e} (the guest, which exited ${result.exitCode}, was not told)`;
            return () => reject(new RunError("io", message, { cause: e, detail: e?.stack }));
          });
        } else {
          ended(m.inDoubt, () => () => reject(new RunError(m.kind, m.message, { detail: m.detail })));
        }
      };
      worker.onerror = (e) => stop(new RunError("io", `the worker failed: ${e.message ?? "it did not load"}`));
      const bytes = compiled instanceof WebAssembly.Module ? compiled : new Uint8Array(compiled);
      const input = asked && src ? Promise.resolve(true) : src ? drain(src) : Promise.resolve(msg.stdin);
      const ask = asked?.shared ?? null;
      Promise.all([input, engine]).then(
        ([stdin, engine]) => phase === "running" && worker.postMessage({ module: bytes, engine, ...msg, stdin, output: out.config, ask }),
        (e) => phase === "running" && stop(e instanceof RunError ? e : new RunError("io", `reading stdin: ${e?.message ?? e}`, { cause: e, detail: e?.stack })),
      );
    });
  }
}
