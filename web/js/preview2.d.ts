// packfs-web/preview2: PackFS trees as the filesystem of WASI 0.2
// components transpiled by jco (@bytecodealliance/preview2-shim 0.26).

import type { MemFs, Overlay, Pack } from "./packfs_web.js";
import type { Preopen, Sink } from "./runner.js";

/** A preopen: a filesystem, or one with `readOnly` (a Pack always is). */
export type Capability = MemFs | Pack | Overlay | { fs: MemFs | Pack | Overlay; readOnly?: boolean };

/** The shim's `io` module (`@bytecodealliance/preview2-shim/io`), whose
 *  streams the component holds. */
export interface ShimIo {
  inputStreamCreate(handler: object): unknown;
  outputStreamCreate(handler: object): unknown;
  error: { Error: new (message: string) => unknown };
}

/** The shim's `BrowserFilesystemAdapter` over PackFS: pass it to
 *  `createFilesystem({ adapter, preopens })` or
 *  `_addPreopenWithAdapter(path, adapter, capability)`. Device numbers
 *  (and so `metadata-hash`) are one per filesystem across all adapters:
 *  one adapter per preopen is fine. */
export declare class PackFsAdapter {
  /** `jspi`: the component was transpiled with `--async-mode jspi` and
   *  JSPI_IMPORTS async; its reads of lazy bytes then await them. */
  constructor(io: ShimIo, options?: { jspi?: boolean });
  getRoot(capability: Capability): object;
}

export interface WasiImportsOptions {
  /** The component's filesystems, as every entry point takes them
   *  (`{ path, fs, readOnly }`, or a "mem" tree, a pack or an overlay
   *  described from bytes). The object of guest paths to capabilities is
   *  taken too (deprecated). */
  preopens?: Preopen[] | Record<string, Capability>;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
  /** Where each write's bytes go (the console when absent): what
   *  `runP1`'s `stdout` takes, a callback or a writable stream (a Node
   *  `Writable`, a `WritableStream`'s writer, `Deno.stdout`), anything
   *  else a TypeError at the call. A component's write cannot wait, so a
   *  promise the sink answers with is not waited for. One that throws
   *  fails that write (a stream error the component sees), as a `WASI`
   *  callback's throw is EIO; one that fails later (its promise rejects,
   *  a stream calls back an error) fails the next. */
  stdout?: Sink;
  stderr?: Sink;
  /** The shim's browser build, where a bare import cannot find it. */
  shim?: object;
  /** The component was transpiled for JSPI (see PackFsAdapter). */
  jspi?: boolean;
}

/** The imports of a component transpiled with `jco transpile
 *  --instantiation async`, PackFS trees as its preopens, the rest of
 *  WASI from the shim's browser build (in Node, Deno and Bun too). It
 *  also has the shim's descriptors pass a component's drop on to
 *  PackFS (the shim does not), so that a file the component closed is
 *  closed at once; through `PackFsAdapter` alone, when it is collected. */
export declare function wasiImports(options?: WasiImportsOptions): Promise<Record<string, object>>;

/** The imports to list with `jco transpile --async-mode jspi --async-imports`:
 *  every read of a file (a descriptor's, and an input stream's read,
 *  blocking-read, skip and blocking-skip), each of which may await a lazy
 *  pack's bytes. */
export declare const JSPI_IMPORTS: string[];
