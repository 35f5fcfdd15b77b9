import type { FsOptions, MemFs, Overlay, Pack, PackOptions, Preview1Options } from "./packfs_web.js";

/** A filesystem shown to a guest, in descriptor order (3, 4, ...): the one
 *  shape `WASI`, `runP1`/`createRunner` and `wasiImports` take. Its tree
 *  is given (`fs`), where the guest runs on this thread (`WASI`,
 *  `wasiImports`), or described (`kind` and what it needs), everywhere it
 *  can be built at once: a URL pack and a journal only in the runner,
 *  whose worker may wait for them. */
export interface Preopen {
  /** The guest path, e.g. "/" or "/data". */
  path: string;
  /** The tree itself (not with `kind`). */
  fs?: MemFs | Pack | Overlay;
  /** An empty in-memory tree, a read-only pack, an in-memory overlay over
   *  a pack, or a durable tree kept in the origin's private files (OPFS). */
  kind?: "mem" | "pack" | "overlay" | "journal";
  /** A "journal" preopen's name (1 to 128 letters, digits, `.`, `_`, `-`):
   *  its tree, as the last run that had it left it (empty the first time),
   *  each change in OPFS before the guest's call returns, so that neither
   *  a reload nor a crash loses one. One run at a time, in any tab, has a
   *  name: another fails with a `RunError` of kind "preopen" while it is
   *  open. `MemFs.openJournal` opens the same tree. */
  name?: string;
  /** The pack's URL ("pack" and "overlay"): opened lazily, each file's
   *  bytes fetched on its first read. A relative URL is the page's (or
   *  `baseUrl`'s), as in `fetch`; where there is no page (Node, Deno,
   *  Bun), the working directory's. In those runtimes a `file:` URL is a
   *  pack file on this machine, read lazily from disk. */
  url?: string | URL;
  /** The pack's bytes, instead of a URL. */
  bytes?: Uint8Array | ArrayBuffer;
  /** How the pack is opened, as `Pack.fromUrl` and `Pack.fromBytes` take it (bytes fetched by URL are checked before they are kept, whatever `verifyOnRead` says). */
  pack?: PackOptions;
  /** Every change refused (EPERM), as a read-only preopen. */
  readOnly?: boolean;
  /** Quotas of a "mem", "overlay" or "journal" preopen. */
  options?: FsOptions;
  /** Return this filesystem compacted into a pack after the run (the
   *  runner's). */
  save?: boolean;
}

/** The guest's `args`, `env`, `stdin`, `stdout` and `stderr` (as `Preview1`
 *  takes them), its filesystems, and how long it may run. */
export interface RunOptions extends Omit<Preview1Options, "stdin" | "stdout" | "stderr"> {
  /** The guest's input. Bytes; or a `ReadableStream` (of `Uint8Array`s or
   *  strings), or a function returning the next piece (a `Uint8Array`, an
   *  `ArrayBuffer` or a string, or a promise of one; `null`, `undefined` or
   *  an empty piece at the end), read as the guest reads when the page is
   *  cross-origin isolated: a read blocks the guest until the next piece
   *  arrives. Without isolation a stream or function is read to its end
   *  before the guest starts (the `timeout` and `signal` still apply). A
   *  stream is cancelled when the run ends. Any async iterable of pieces
   *  (a Node `Readable`) is read as a stream. In Node, Deno and Bun a
   *  stream or function is always read as the guest reads. */
  stdin?: Uint8Array | ArrayBuffer | ReadableStream<Uint8Array | string> | AsyncIterable<Uint8Array | string> | StdinSource;
  /** Called with each of the guest's writes to stdout; a promise it
   *  returns is waited for (the write counts as in flight until it
   *  settles, and the next is not made before). Or a writable stream, whose
   *  `write` takes them: a Node `Writable` (calling back), a
   *  `WritableStream`'s writer or `Deno.stdout` (returning a promise; one
   *  of a count short of the bytes has the rest written next). The guest
   *  waits while more than 4 MiB it wrote are not yet written there, and
   *  the run resolves once all are. A callback that throws or whose
   *  promise rejects, or a stream whose write fails, is given nothing
   *  more: the guest's next write to it fails with EIO (as the `WASI`
   *  class's does). Output lost where the guest could not be told (it
   *  wrote no more there, or the page is not cross-origin isolated)
   *  rejects the run with a `RunError` of kind "io", its `cause` the
   *  callback's error. A run that fails (a trap, a preopen) also settles
   *  only once the output is written, within `timeout`; one ended by
   *  `timeout`, `signal` or `close()` waits at most a second for it.
   *  A Node stream's "error" events are listened to while the run lasts,
   *  each a failure as a write's (unheard, one would end the process).
   *  Anything else (a `WritableStream` itself: give its writer) is a
   *  TypeError at the call. */
  stdout?: Sink;
  /** As `stdout`, for stderr. */
  stderr?: Sink;
  preopens?: Preopen[];
  /** What a relative preopen `url` resolves against (default: the page's
   *  `location.href`; in Node, Deno and Bun, the working directory). */
  baseUrl?: string | URL;
  /** Most milliseconds the run may take; past it the worker ends and the run rejects with a `RunError` of kind "timeout".
   *  Any number from 0: one past setTimeout's 2^31 − 1 ms is waited for in pieces; `Infinity`, as leaving it out, is no limit. */
  timeout?: number;
  /** Aborting it ends the worker and rejects the run with a `RunError` of kind "aborted", its `cause` the signal's reason. */
  signal?: AbortSignal;
}

/** What a writable stream offers: `write`, calling back once the bytes
 *  are written (a Node `Writable`), or returning a promise that settles
 *  then (a `WritableStream`'s writer; `Deno.stdout`, its promise a count
 *  of the bytes written). */
export interface Writable {
  write(bytes: Uint8Array, written: (error?: Error | null) => void): unknown;
}

/** Where a guest's output goes: a callback (its promise, if it returns
 *  one, waited for) or a writable stream. */
// Two function types, not one returning `void | PromiseLike`: a function
// typed to return `void` takes any function, whatever it returns (an arrow
// that appends to a string returns the string).
export type Sink = ((bytes: Uint8Array) => void) | ((bytes: Uint8Array) => PromiseLike<unknown>) | Writable;

export interface RunResult {
  /** The status the guest passed to proc_exit, or 0 when _start returned. */
  exitCode: number;
  /** Bytes fetched from URL packs (opening them included). */
  bytesFetched: number;
  /** HTTP requests made for them. */
  requests: number;
  /** The preopens marked `save`, compacted. */
  saved: { path: string; pack: Uint8Array }[];
}

/** Why a run failed, once its options were accepted (a wrong option is a TypeError). */
export class RunError extends Error {
  /** "TimeoutError" for kind "timeout", "AbortError" for "aborted", else "RunError". */
  name: "RunError" | "TimeoutError" | "AbortError";
  /** trap: the guest trapped; timeout: past `timeout`; aborted: `signal` aborted;
   *  preopen: a preopen could not be opened; module: the module does not
   *  compile or link; io: the run failed around the guest (its output
   *  lost, see `stdout`). */
  kind: "trap" | "timeout" | "aborted" | "preopen" | "module" | "io";
  /** The stack where it was raised, apart from the message. */
  detail?: string;
}

/** The next piece of a guest's input, or `null`/`undefined`/empty at the end. */
export type StdinSource = () =>
  | Uint8Array | ArrayBuffer | string | null | undefined
  | Promise<Uint8Array | ArrayBuffer | string | null | undefined>;

/** Runs a WASI preview1 module in a Web Worker over packfs-web's filesystems. */
export function runP1(module: Uint8Array | ArrayBuffer | WebAssembly.Module, options?: RunOptions): Promise<RunResult>;

/** A runner that keeps its Worker and packfs-web instance between runs;
 *  each run starts from a clean guest state. */
export interface Runner {
  /** Runs `module` as `runP1` does; runs take turns. */
  run(module: Uint8Array | ArrayBuffer | WebAssembly.Module, options?: RunOptions): Promise<RunResult>;
  /** Ends the Worker; the run under way and those waiting reject with a `RunError` of kind "aborted". */
  close(): void;
}

/** A warm runner. `modules` (8): how many compiled modules it keeps, keyed by their bytes' SHA-256. */
export function createRunner(options?: { modules?: number }): Runner;
