/** A preview1 guest's arguments, environment and stdio (`Preview1`). */
export interface Preview1Options {
  args?: string[];
  env?: Record<string, string>;
  /** The guest's input: bytes, or a function called as the guest reads
   *  with the most bytes that read takes, returning a `Uint8Array` (what
   *  the read does not take is kept for the next) or `null` at the end. */
  stdin?: Uint8Array | ((max: number) => Uint8Array | null);
  stdout?: (bytes: Uint8Array) => void;
  stderr?: (bytes: Uint8Array) => void;
}

/** What an entry is. */
export type FileKind = "file" | "dir" | "symlink";

/** One entry of `readdir`. */
export interface DirEntry {
  name: string;
  kind: FileKind;
  /** Bytes of content (a symlink: of its target; a directory: 0). */
  size: number;
}

/** What `stat` and `lstat` return. Times are milliseconds since the epoch. */
export interface Stats {
  kind: FileKind;
  size: number;
  /** Permission bits, e.g. 0o644. */
  mode: number;
  nlink: number;
  ino: number;
  mtimeMs: number;
  atimeMs: number;
  ctimeMs: number;
}

/** Limits of a writable filesystem (a `MemFs`; an overlay's upper). */
export interface FsOptions {
  /** Most bytes of file content and symlink targets. */
  maxBytes?: number;
  /** Most inodes, the root included. */
  maxInodes?: number;
}

/** How a `MemFs` is made: its limits, and the lower layer it overlays. */
export interface MemFsOptions extends FsOptions {
  /** Makes it an overlay over this pack: reads see the pack until a path
   *  is changed; changes stay in the `MemFs` (the pack never changes). */
  lower?: Pack;
}

/** How to open a pack. */
export interface PackOptions {
  /** Check each file's checksum on its first read (default: true for
   *  `fromUrl`, false for `fromBytes`). */
  verifyOnRead?: boolean;
  /** `fromUrl`: keep fetched chunks across page loads, keyed by content,
   *  so that later loads read them without fetching (default: true): in a
   *  dedicated Worker in the Origin Private File System, where a
   *  preview1 guest's blocking reads find them too, else in the Cache API.
   *  Each is checked before it is used; a damaged one is fetched again. */
  persist?: boolean;
  /** Most bytes the Origin Private File System store keeps, for every
   *  pack of the origin (default 256 MiB; the oldest half goes when it is
   *  full). The first pack a worker opens it for sets it, until the last
   *  such pack is freed. One worker at a time has it: another keeps its
   *  chunks in the Cache API. */
  cacheSize?: number;
  /** Pin the pack: `blake3:` and 64 hex digits, its digest as `packfs
   *  pack` and `packfs info` print it (or `Pack.digest`). Another pack,
   *  or one without digests, is refused at open (`io`, "not the pinned
   *  pack"), and every chunk is checked against its digest before it is
   *  served or kept: a chunk altered on the server or on the way fails
   *  its read with `io` and is fetched again on the next. */
  digest?: string;
}

/** A blocking transport (`Pack.setBlockingGet`): a GET of `url` with
 *  `range` as its `Range` header, answered before it returns. */
export type BlockingGet = (url: string, range: string, limit: number | undefined) => {
  status: number;
  /** The `Content-Range` header, if any. */
  contentRange?: string | null;
  /** The `ETag` (else `Last-Modified`): a later reply with another is
   *  from a changed pack. */
  validator?: string | null;
  body: Uint8Array;
};

export interface MkdirOptions {
  /** Create missing parents; an existing directory is no error. */
  recursive?: boolean;
}

/** Current size of a writable filesystem, in the units of `FsOptions`. */
export interface Usage {
  bytes: number;
  inodes: number;
}

/** A pack's header and trailer, and how it stores its contents. */
export interface PackInfo {
  version: number;
  /** Blob alignment in bytes. */
  align: number;
  inodes: number;
  dirents: number;
  /** Distinct contents. */
  blobs: number;
  /** Bytes of distinct content. */
  contentLen: number;
  dataLen: number;
  packLen: number;
  /** Version 2: the chunk size (0 in version 1). */
  chunkSize: number;
  /** Version 2: how each codec stores the chunks (empty in version 1). */
  codecs: { codec: "raw" | "zstd" | "lz4"; chunks: number; content: number; stored: number }[];
}

/** How `compact` writes its pack. */
export interface CompactOptions {
  /** "zstd" (level 3 with the browser's encoder), "lz4", or "none" (a
   * version 1 pack; the default). */
  compress?: "zstd" | "lz4" | "none";
  /** A compressed pack's chunk size: a power of two from 4096 to 1048576. */
  chunkSize?: number;
}

/** What `verify` found. */
export interface VerifyReport {
  ok: boolean;
  /** Blobs checked. */
  blobs: number;
  /** Bytes checked. */
  bytes: number;
  /** Files whose content fails its checksum (the first 1000). */
  bad: { path: string; error: string }[];
  /** Further files whose content fails, not listed in `bad`. */
  unlisted: number;
}

/** The WASI `error-code` names carried by thrown errors' `code`. */
export type ErrorCode =
  | "no-entry" | "exist" | "not-directory" | "is-directory" | "not-empty"
  | "access" | "not-permitted" | "read-only" | "loop" | "name-too-long"
  | "insufficient-space" | "quota" | "cross-device" | "invalid"
  | "file-too-large" | "bad-descriptor" | "too-many-links" | "busy"
  | "unsupported" | "io" | "would-block";

/** Every method throws (or rejects with) one of these. An argument of the
 *  wrong type (`readdir(5)`) is a `TypeError` naming it, `code` "invalid". */
export interface PackFsError extends Error {
  code: ErrorCode;
  /** The POSIX name, e.g. "ENOENT". */
  errno: string;
}
