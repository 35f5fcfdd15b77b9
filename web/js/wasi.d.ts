import type { MemFs, Overlay, Pack } from "./packfs_web.js";
import type { Preopen } from "./runner.js";

/** A PackFS tree a guest is given. */
export type Tree = MemFs | Pack | Overlay;

export interface WASIOptions {
  /** "preview1" (the default); the older "unstable" ABI is not served. */
  version?: "preview1";
  /** The guest's arguments, the first its program name. */
  args?: string[];
  /** The guest's environment. */
  env?: Record<string, string>;
  /** The guest's filesystems, in descriptor order (3, 4, ...): trees
   *  given (`{ path, fs, readOnly }`) or described (a "mem" tree, a pack
   *  or an overlay from bytes). node:wasi's shape, guest path → tree, is
   *  taken too (deprecated: it has no `readOnly`). */
  preopens?: Preopen[] | Record<string, Tree>;
  /** `start` returns the exit code (true, the default); false ends the
   *  process at `proc_exit` (Node, Deno, Bun). */
  returnOnExit?: boolean;
  /** A function giving up to `max` bytes (`null` at the end), or a file
   *  descriptor of this process (Node, Deno, Bun; 0 unless given). */
  stdin?: ((max: number) => Uint8Array | null) | number;
  /** A function taking each write, or a file descriptor of this process
   *  (Node, Deno, Bun; 1 unless given; in a browser, the console). */
  stdout?: ((bytes: Uint8Array) => void) | number;
  /** As `stdout`, for stderr (2 unless given). */
  stderr?: ((bytes: Uint8Array) => void) | number;
}

/** A WASI preview1 host with node:wasi's shape, over PackFS trees. */
export class WASI {
  constructor(options?: WASIOptions);
  /** The `wasi_snapshot_preview1` functions. */
  readonly wasiImport: Record<string, (...args: any[]) => any>;
  /** `{ wasi_snapshot_preview1: wasiImport }`. */
  getImportObject(): { wasi_snapshot_preview1: Record<string, (...args: any[]) => any> };
  /** Runs `_start`; returns its exit code. */
  start(instance: WebAssembly.Instance): number;
  /** Calls a reactor's `_initialize`, if it has one. The instance's
   *  imports keep the guest's state: the WASI object may be dropped. */
  initialize(instance: WebAssembly.Instance): void;
}
