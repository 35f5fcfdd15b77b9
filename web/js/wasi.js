// A WASI preview1 host with the shape of Node's `node:wasi` (and of
// @tybys/wasm-util's class of the same shape), whose preopens are PackFS
// trees, not host paths: code written for either switches by changing
// one import. It runs the guest on the calling thread, in every runtime
// and engine; a read of a lazy URL pack's bytes not fetched yet is an
// error there (EIO to the guest), as no thread but a worker may wait: run
// such guests with the runner, or load the pack first.
//
//   import init, { MemFs } from "packfs-web";
//   import { WASI } from "packfs-web/wasi";
//   await init();
//   const wasi = new WASI({ version: "preview1", args: ["app"], preopens: [{ path: "/", fs: new MemFs() }] });
//   const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
//   const exitCode = wasi.start(instance);

import { MemFs, Overlay, Pack, Preview1 } from "./packfs_web.js";
import { importsNow } from "./imports.js";
import { bad, checkPreopens, isObject, pick } from "./options.js";
import { readFd, readsFiles, writeFd } from "./runtime.js";

const OPTIONS = ["version", "args", "env", "preopens", "returnOnExit", "stdin", "stdout", "stderr"];

/** A stdio option as Preview1 takes it: a function as it is; a file
 *  descriptor of this process (node:wasi's form; Node, Deno and Bun)
 *  read or written at once; left out, descriptor `fd`'s where there are
 *  descriptors, else nothing to read and output to the console. */
function stdio(v, name, fd) {
  if (typeof v === "function") return v;
  if (v === undefined && !readsFiles()) {
    if (name === "stdin") return undefined;
    const text = new TextDecoder();
    return (bytes) => (name === "stdout" ? console.log : console.error)(text.decode(bytes).replace(/\n$/, ""));
  }
  const n = v ?? fd;
  if (!Number.isSafeInteger(n) || n < 0 || !readsFiles()) {
    throw bad(name, readsFiles() ? "a function or a file descriptor" : "a function", v);
  }
  return name === "stdin" ? (max) => readFd(n, max) : (bytes) => writeFd(n, bytes);
}

export class WASI {
  #p1;
  #imports;
  #version;
  #returnOnExit;
  #started = false;

  /**
   * `version`: "preview1" (the default; "unstable", the older ABI, is not
   * served); `args`, `env` as node:wasi takes them; `preopens`: an array
   * of `{ path, fs, readOnly }` (a `MemFs`, a `Pack` or an `Overlay`), or
   * of descriptions (options.js), in order (node:wasi's object of guest
   * paths to trees is taken too);
   * `returnOnExit` (true): `start` returns the exit code, else a
   * `proc_exit` ends the process; `stdin`, `stdout`, `stderr`: functions
   * as `Preview1` takes them, or file descriptors of this process (Node,
   * Deno, Bun: 0, 1 and 2 unless given).
   */
  constructor(options = {}) {
    if (!isObject(options)) throw bad("options", "an object", options);
    options = pick(options, OPTIONS, "WASI");
    const { version = "preview1", args = [], env = {}, preopens, returnOnExit = true } = options;
    if (version !== "preview1") throw bad("version", '"preview1"', version);
    if (typeof returnOnExit !== "boolean") throw bad("returnOnExit", "a boolean", returnOnExit);
    if (!returnOnExit && typeof globalThis.process?.exit !== "function") {
      throw new TypeError("returnOnExit: false ends the process, and there is none here");
    }
    const trees = checkPreopens(preopens, "WASI", { trees: { MemFs, Pack, Overlay } });
    this.#version = version;
    this.#returnOnExit = returnOnExit;
    const p1 = new Preview1({
      args,
      env,
      stdin: stdio(options.stdin, "stdin", 0),
      stdout: stdio(options.stdout, "stdout", 1),
      stderr: stdio(options.stderr, "stderr", 2),
    });
    for (const { path, fs, readOnly } of trees) p1.preopen(path, fs, readOnly);
    this.#p1 = p1;
    this.#imports = importsNow(p1, Preview1);
    /** The `wasi_snapshot_preview1` functions, as node:wasi's `wasiImport`. */
    this.wasiImport = this.#imports;
  }

  /** The import object a preview1 module instantiates with. */
  getImportObject() {
    return { wasi_snapshot_preview1: this.#imports };
  }

  /** Runs a command's `_start`; returns its exit code (0 when it returns)
   *  unless `returnOnExit` is false. A trap is thrown as it is. */
  start(instance) {
    const exports = this.#begin(instance);
    if (typeof exports._start !== "function") throw new TypeError("instance exports no _start function");
    if (exports._initialize !== undefined) throw new TypeError("instance exports _initialize as well as _start");
    try {
      exports._start();
      return 0;
    } catch (e) {
      if (typeof e?.exitCode !== "number") throw e;
      if (!this.#returnOnExit) globalThis.process.exit(e.exitCode);
      return e.exitCode;
    }
  }

  /** Readies a reactor: calls its `_initialize`, if it has one. The
   *  instance's imports keep the guest's state (imports.js), so this
   *  object may be dropped after, as node:wasi's may. */
  initialize(instance) {
    const exports = this.#begin(instance);
    if (exports._start !== undefined) throw new TypeError("instance exports _start: start() it");
    if (exports._initialize !== undefined && typeof exports._initialize !== "function") {
      throw new TypeError("instance's _initialize is not a function");
    }
    exports._initialize?.();
  }

  /** @returns {Record<string, any>} the instance's exports, started. */
  #begin(instance) {
    if (!(instance instanceof WebAssembly.Instance)) throw bad("instance", "a WebAssembly.Instance", instance);
    if (this.#started) throw new Error("WASI instance has already started");
    const { memory } = instance.exports;
    if (!(memory instanceof WebAssembly.Memory)) throw new TypeError("instance exports no memory");
    this.#started = true;
    this.#p1.start(memory);
    return instance.exports;
  }
}
