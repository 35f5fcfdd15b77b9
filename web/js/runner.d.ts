import type { FsOptions, Preview1Options } from "./packfs_web.js";

/** A filesystem shown to the guest, in descriptor order (3, 4, ...). */
export interface Preopen {
  /** The guest path, e.g. "/" or "/data". */
  path: string;
  /** An empty in-memory tree, a read-only pack, or an in-memory overlay over a pack. */
  kind: "mem" | "pack" | "overlay";
  /** The pack's URL: opened lazily, each file's bytes fetched on its first read. */
  url?: string;
  /** The pack's bytes, instead of a URL. */
  bytes?: Uint8Array;
  /** Every change refused (EPERM), as a read-only preopen. */
  readOnly?: boolean;
  /** Quotas of a mem or overlay preopen. */
  options?: FsOptions;
  /** Return this filesystem compacted into a pack after the run. */
  save?: boolean;
}

/** The guest's `args`, `env`, `stdin`, `stdout` and `stderr` (as `Preview1`
 *  takes them), its filesystems, and how long it may run. */
export interface RunOptions extends Preview1Options {
  preopens?: Preopen[];
  /** Most milliseconds the run may take; past it the worker ends and the run rejects with a "TimeoutError" DOMException. */
  timeout?: number;
  /** Aborting it ends the worker and rejects the run with the signal's reason. */
  signal?: AbortSignal;
}

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

/** Runs a WASI preview1 module in a Web Worker over packfs-web's filesystems. */
export function runP1(module: BufferSource | WebAssembly.Module, options?: RunOptions): Promise<RunResult>;
