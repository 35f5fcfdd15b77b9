// packfs-web/preview2: PackFS trees as the filesystem of WASI 0.2
// components transpiled by jco, through the filesystem adapter of jco's
// @bytecodealliance/preview2-shim (0.26). The rules are core's descriptor
// model, the one the host serves 0.2 and 0.3 with (WasiDescriptor); here
// only values are converted and the shim's stream objects made.
//
// Default transpile, in a browser (the component imports the shim):
//
//   import * as io from "@bytecodealliance/preview2-shim/io";
//   import { _addPreopenWithAdapter } from "@bytecodealliance/preview2-shim/filesystem";
//   _addPreopenWithAdapter("/", new PackFsAdapter(io), pack);
//
// `jco transpile --instantiation async`, in a browser, Node, Deno or Bun:
//
//   const imports = await wasiImports({ preopens: { "/": overlay }, args: ["app"] });
//   const { run } = await instantiate(undefined, imports);
//   run.run();

import { MemFs, Overlay, Pack, WasiDescriptor } from "./packfs_web.js";
import { checkSink, writeTo } from "./output.js";
import { checkPreopens } from "./options.js";

// `descriptor-flags` and `open-flags` as WasiDescriptor takes them.
/** @type {[string, number][]} */
const FLAGS = [
  ["read", 1],
  ["write", 2],
  ["fileIntegritySync", 4],
  ["dataIntegritySync", 8],
  ["requestedWriteSync", 16],
  ["mutateDirectory", 32],
];
/** @type {[string, number][]} */
const OPEN = [
  ["create", 1],
  ["directory", 2],
  ["exclusive", 4],
  ["truncate", 8],
];
const bits = (table, flags) => table.reduce((acc, [name, bit]) => (flags?.[name] ? acc | bit : acc), 0);

const TYPES = ["regular-file", "directory", "symbolic-link"];
/** A `descriptor-stat` from WasiDescriptor's array (see p2.rs). */
const stat = (s) => ({
  type: TYPES[s[0]],
  linkCount: s[1],
  size: s[2],
  dataAccessTimestamp: { seconds: s[3], nanoseconds: Number(s[4]) },
  dataModificationTimestamp: { seconds: s[5], nanoseconds: Number(s[6]) },
  statusChangeTimestamp: { seconds: s[7], nanoseconds: Number(s[8]) },
});
const hash = (h) => ({ lower: h[0], upper: h[1] });

/** The POSIX name the shim's `filesystem-error-code` maps back to each
 *  error-code (its table, `convertFsError`, reads `payload.code`). */
const POSIX = {
  access: "EACCES", "would-block": "EAGAIN", already: "EALREADY", "bad-descriptor": "EBADF", busy: "EBUSY",
  deadlock: "EDEADLK", quota: "EDQUOT", exist: "EEXIST", "file-too-large": "EFBIG", "illegal-byte-sequence": "EILSEQ",
  "in-progress": "EINPROGRESS", interrupted: "EINTR", invalid: "EINVAL", io: "EIO", "is-directory": "EISDIR",
  loop: "ELOOP", "too-many-links": "EMLINK", "message-size": "EMSGSIZE", "name-too-long": "ENAMETOOLONG",
  "no-device": "ENODEV", "no-entry": "ENOENT", "no-lock": "ENOLCK", "insufficient-memory": "ENOMEM",
  "insufficient-space": "ENOSPC", "not-directory": "ENOTDIR", "not-empty": "ENOTEMPTY",
  "not-recoverable": "ENOTRECOVERABLE", unsupported: "ENOTSUP", "no-tty": "ENOTTY", "no-such-device": "ENXIO",
  overflow: "EOVERFLOW", "not-permitted": "EPERM", pipe: "EPIPE", "read-only": "EROFS", "invalid-seek": "ESPIPE",
  "text-file-busy": "ETXTBSY", "cross-device": "EXDEV",
};

/** A stream's failed write or read, as wasi:io says it: the shim's error
 *  resource, which its `filesystem-error-code` turns back into `code`. */
function failed(io, code) {
  const error = new io.error.Error(code);
  error.payload = { code: POSIX[code] ?? "EIO" };
  return { tag: "last-operation-failed", val: error };
}

/** Runs a stream's call; an error-code thrown becomes a stream error. */
function streamCall(io, f) {
  try {
    return f();
  } catch (e) {
    throw typeof e === "string" && e in POSIX ? failed(io, e) : e;
  }
}

/**
 * `len` bytes at `at` of `d`, for a component transpiled for JSPI (`jco
 * transpile --async-mode jspi`, the reads among its async imports): the
 * bytes when they are here, else a promise of them once fetched, which
 * the component awaits where it would have blocked. Never waits on the
 * thread, so a page may read a lazy pack.
 */
function readAwaiting(d, len, at) {
  const got = d.readOrWant(len, at);
  if (got !== undefined) return got;
  return d.fetchWanted().then(() => readAwaiting(d, len, at));
}

/** The key jco calls when a component drops a resource (its own). */
const DISPOSE = Symbol.dispose ?? Symbol.for("dispose");
/** What forwardDrops passes through the shim's Descriptor, which keeps
 *  its adapter's descriptor private, to say it was dropped. */
const DROPPED = Symbol("dropped");

/** A `descriptor` for the shim's Descriptor to wrap. */
class PackFsDescriptor {
  #d;
  #io;
  /** Reads may return promises (see readAwaiting). */
  #jspi;
  /** This descriptor and its open streams: the file stays open (an
   *  unlinked one keeps its bytes, and its quota) until all are dropped.
   *  A preopen is never let go: the shim hands the same one out to every
   *  `get-directories`, so one dropped handle must not close the others. */
  #holds;

  constructor(d, io, jspi, preopen = false) {
    this.#d = d;
    this.#io = io;
    this.#jspi = jspi;
    this.#holds = preopen ? Infinity : 1;
  }

  /** A stream over this descriptor: holds it open until dropped (from
   *  when it exists: a hold taken for a call that then failed would keep
   *  the file until collection). */
  #stream(create, handler) {
    let open = true;
    handler.drop = () => {
      if (open) this.#release();
      open = false;
    };
    const stream = create(handler);
    this.#holds += 1;
    return stream;
  }

  #release() {
    if (--this.#holds === 0) this.#d.free();
  }

  /** Bytes at `at`: at once, or, with JSPI, when they come. */
  #read(len, at) {
    return this.#jspi ? readAwaiting(this.#d, len, at) : this.#d.read(len, at);
  }

  /** The WasiDescriptor of another of this adapter's descriptors, or
   *  `cross-device` for one of another adapter's. */
  static #of(other) {
    if (!(other instanceof PackFsDescriptor)) throw "cross-device";
    return other.#d;
  }

  readViaStream(offset) {
    const io = this.#io;
    this.#d.checkReader(offset);
    let at = offset;
    const took = (data) => {
      if (data.length === 0) throw { tag: "closed" };
      at += BigInt(data.length);
      return data;
    };
    // At once, or with JSPI a promise: the shim sends input-stream.read,
    // skip and blocking-skip here too (to `blockingRead` when a handler
    // has no `read`), so each is among JSPI_IMPORTS, which await it.
    const read = (len) => {
      const data = streamCall(io, () => this.#read(len, at));
      if (data instanceof Promise) return data.then(took, (e) => Promise.reject(typeof e === "string" ? failed(io, e) : e));
      return took(data);
    };
    const skip = (len) => {
      const data = read(len);
      return data instanceof Promise ? data.then((d) => BigInt(d.length)) : BigInt(data.length);
    };
    return this.#stream(io.inputStreamCreate, { read, blockingRead: read, skip, blockingSkip: skip });
  }

  writeViaStream(offset) {
    const d = this.#d;
    const io = this.#io;
    d.checkWriter();
    let at = offset;
    return this.#stream(io.outputStreamCreate, {
      write(buf) {
        streamCall(io, () => d.write(buf, at));
        at += BigInt(buf.length);
      },
    });
  }

  appendViaStream() {
    const d = this.#d;
    const io = this.#io;
    d.checkWriter();
    return this.#stream(io.outputStreamCreate, {
      write(buf) {
        streamCall(io, () => d.append(buf));
      },
    });
  }

  advise(offset) {
    // The drop wasiImports forwards (see forwardDrops); a component's
    // offset is a bigint.
    if (offset === DROPPED) return this.#release();
    this.#d.advise();
  }
  syncData() {
    this.#d.sync();
  }
  sync() {
    this.#d.sync();
  }
  getFlags() {
    const got = this.#d.getFlags();
    return Object.fromEntries(FLAGS.map(([name, bit]) => [name, (got & bit) !== 0]));
  }
  getType() {
    return this.#d.getType();
  }
  setSize(size) {
    this.#d.setSize(size);
  }
  setTimes(atime, mtime) {
    this.#d.setTimes(atime, mtime);
  }
  read(length, offset) {
    const data = this.#read(length, offset);
    const answer = (data) => [data, data.length === 0];
    return data instanceof Promise ? data.then(answer) : answer(data);
  }
  write(buffer, offset) {
    return this.#d.write(buffer, offset);
  }
  readDirectory() {
    const d = this.#d;
    // Read before the hold is taken: a file's read-directory fails, and
    // must leave the file as free to close as it found it.
    let page = d.readDir(undefined);
    // The shim forwards no drop of a directory stream: it holds the
    // descriptor until it is collected.
    this.#holds += 1;
    let at = 0;
    return {
      readDirectoryEntry() {
        if (at === page.length && page.length > 0) {
          page = d.readDir(page[page.length - 1][0]);
          at = 0;
        }
        if (at === page.length) return undefined;
        const [name, type] = page[at++];
        return { name, type };
      },
    };
  }
  createDirectoryAt(path) {
    this.#d.createDirectoryAt(path);
  }
  stat() {
    return stat(this.#d.stat());
  }
  statAt(pathFlags, path) {
    return stat(this.#d.statAt(!!pathFlags?.symlinkFollow, path));
  }
  setTimesAt(pathFlags, path, atime, mtime) {
    this.#d.setTimesAt(!!pathFlags?.symlinkFollow, path, atime, mtime);
  }
  linkAt(oldPathFlags, oldPath, newDescriptor, newPath) {
    this.#d.linkAt(!!oldPathFlags?.symlinkFollow, oldPath, PackFsDescriptor.#of(newDescriptor), newPath);
  }
  openAt(pathFlags, path, openFlags, flags) {
    const d = this.#d.openAt(!!pathFlags?.symlinkFollow, path, bits(OPEN, openFlags), bits(FLAGS, flags));
    return new PackFsDescriptor(d, this.#io, this.#jspi);
  }
  readlinkAt(path) {
    return this.#d.readlinkAt(path);
  }
  removeDirectoryAt(path) {
    this.#d.removeDirectoryAt(path);
  }
  renameAt(oldPath, newDescriptor, newPath) {
    this.#d.renameAt(oldPath, PackFsDescriptor.#of(newDescriptor), newPath);
  }
  symlinkAt(target, path) {
    this.#d.symlinkAt(target, path);
  }
  unlinkFileAt(path) {
    this.#d.unlinkFileAt(path);
  }
  isSameObject(other) {
    return other instanceof PackFsDescriptor && this.#d.isSameObject(PackFsDescriptor.#of(other));
  }
  metadataHash() {
    return hash(this.#d.metadataHash());
  }
  metadataHashAt(pathFlags, path) {
    return hash(this.#d.metadataHashAt(!!pathFlags?.symlinkFollow, path));
  }
}

/** What a component transpiled for JSPI lists among its async imports
 *  (`--async-imports`), so that a read of a lazy pack's bytes not here
 *  yet awaits them (with `{ jspi: true }`). */
export const JSPI_IMPORTS = [
  "wasi:filesystem/types#[method]descriptor.read",
  "wasi:io/streams#[method]input-stream.read",
  "wasi:io/streams#[method]input-stream.blocking-read",
  "wasi:io/streams#[method]input-stream.skip",
  "wasi:io/streams#[method]input-stream.blocking-skip",
];

/** Each filesystem's device number, shared by every adapter: the
 *  metadata-hash of two files of different filesystems differs however
 *  many adapters (one per preopen, say) gave them out. Numbers are never
 *  given twice, so one of a collected filesystem is no other's. */
const devices = new WeakMap();
let lastDevice = 0;

/** `fs`'s device number, given it on its first call. */
function deviceOf(fs) {
  let device = devices.get(fs);
  if (device === undefined) {
    // WasiDescriptor takes 1 to 2^32 - 1.
    if (lastDevice === 2 ** 32 - 1) throw new RangeError("no device numbers left for another filesystem");
    devices.set(fs, (device = ++lastDevice));
  }
  return device;
}

/**
 * The shim's filesystem adapter over PackFS: a preopen's capability is a
 * MemFs, Pack or Overlay, or `{ fs, readOnly }` (a Pack is always
 * read-only). `io` is the shim's `io` module, whose streams the component
 * holds: the one its `wasi:io/streams` imports come from. With `{ jspi:
 * true }`, for a component transpiled for JSPI with JSPI_IMPORTS async,
 * reads of a lazy pack's bytes not here yet return promises (the
 * component awaits them) instead of waiting on the thread or failing.
 */
export class PackFsAdapter {
  #io;
  #jspi;

  constructor(io, { jspi = false } = {}) {
    if (typeof jspi !== "boolean") throw new TypeError("jspi must be true or false");
    this.#jspi = jspi;
    if (typeof io?.inputStreamCreate !== "function" || typeof io?.outputStreamCreate !== "function") {
      throw new TypeError("PackFsAdapter needs the shim's io module (import * as io from \"@bytecodealliance/preview2-shim/io\")");
    }
    this.#io = io;
  }

  getRoot(capability) {
    const { fs, readOnly = false } =
      capability instanceof MemFs || capability instanceof Pack || capability instanceof Overlay
        ? { fs: capability }
        : (capability ?? {});
    if (typeof readOnly !== "boolean") throw new TypeError("readOnly must be true or false");
    let d;
    if (fs instanceof MemFs) d = WasiDescriptor.rootMemFs(fs, readOnly, deviceOf(fs));
    else if (fs instanceof Pack) d = WasiDescriptor.rootPack(fs, deviceOf(fs));
    else if (fs instanceof Overlay) d = WasiDescriptor.rootOverlay(fs, readOnly, deviceOf(fs));
    else throw new TypeError("a preopen is a MemFs, Pack or Overlay, or { fs, readOnly }");
    return new PackFsDescriptor(d, this.#io, this.#jspi, true);
  }
}

/** The shim's browser build: its own where a bundler or import map
 *  resolves it (a browser), found beside its Node build elsewhere (only
 *  the browser build takes adapters). */
async function shim() {
  const base = "@bytecodealliance/preview2-shim";
  if (typeof document !== "undefined" || "WorkerGlobalScope" in globalThis) return import(base);
  const browser = new URL("../browser/index.js", import.meta.resolve(base));
  return import(browser.href);
}

/** Has the shim's Descriptor pass a component's drop on to its
 *  adapter's descriptor, which the shim (0.26) does not: without it a file
 *  the component closed stays open until it is collected, an unlinked one
 *  keeping its bytes and its quota. Adapters with no dispose of their own
 *  are untouched. */
function forwardDrops(Descriptor) {
  const proto = Descriptor.prototype;
  if (Object.hasOwn(proto, DISPOSE)) return;
  // Its one way to its adapter's descriptor is a call it forwards as it
  // is: `advise`, with an offset no component can pass.
  proto[DISPOSE] = function () {
    try {
      this.advise(DROPPED);
    } catch {
      // Another adapter's descriptor, which took it for an offset.
    }
  };
}

/** Bytes written to a stdout or stderr: to `to` when given, a sink as
 *  runP1 takes (see output.js's writeTo). A component's write cannot
 *  wait, so a promise the sink answers with is not waited for. A sink that
 *  fails fails the component's write (a stream error, EIO to a p1-style
 *  guest), as the WASI class's callbacks do, instead of unwinding through
 *  the component: the write it threw in, or, failing later (a promise
 *  rejected, a stream's callback), the next. */
function sink(io, to) {
  if (to === undefined) return undefined;
  let broken = false;
  // A sink that answered with a promise takes the next write only once
  // that one is whole (a short write's rest goes first): until then writes
  // wait here, in order, up to QUEUED_MAX bytes (a sink that never
  // answers fails each write past it; what was taken is still written).
  const queue = [];
  let queued = 0;
  let busy = false;
  const next = () => {
    while (!busy && !broken && queue.length) {
      const buf = queue.shift();
      queued -= buf.length;
      busy = writeTo(to, buf, (bad) => {
        broken ||= bad;
        if (busy) {
          busy = false;
          next();
        }
      });
    }
  };
  const call = (buf) => {
    // Past what may wait, this write fails; those taken before still go.
    if (broken || queued + buf.length > QUEUED_MAX) throw failed(io, "io");
    queue.push(buf.slice());
    queued += buf.length;
    next();
    // A sink that failed at once fails the write it failed in.
    if (broken) throw failed(io, "io");
  };
  return { write: call, blockingFlush() {}, flush() {} };
}

/** Most bytes a component's output may have waiting for its sink. */
const QUEUED_MAX = 16 << 20;

/**
 * The imports of a component transpiled with `jco transpile
 * --instantiation async`, with PackFS trees as its preopens: `preopens`
 * is an array of preopens as every entry point takes them (options.js:
 * `{ path, fs, readOnly }`, or a description), or the object of guest
 * paths to capabilities (as PackFsAdapter's) it took first. `stdout` and
 * `stderr`, when given, take each write's bytes (else the console's).
 * `shim` is the shim's browser build (`import * as shim from
 * "@bytecodealliance/preview2-shim"`), for where a bare import cannot
 * find it (a worker, which import maps do not reach). `jspi`: the
 * component was transpiled for JSPI (see PackFsAdapter).
 *
 * @param {import("./preview2.js").WasiImportsOptions} [options]
 * @returns {Promise<Record<string, object>>}
 */
export async function wasiImports({ preopens, args = [], env = {}, cwd = "/", stdout, stderr, shim: given, jspi = false } = {}) {
  checkSink(stdout, "stdout");
  checkSink(stderr, "stderr");
  const trees = checkPreopens(preopens, "wasiImports", { trees: { MemFs, Pack, Overlay } });
  const { cli: cliShim, clocks, filesystem, io, random } = given ?? (await shim());
  const capabilities = Object.fromEntries(trees.map(({ path, fs, readOnly }) => [path, { fs, readOnly }]));
  const fs = filesystem.createFilesystem({ adapter: new PackFsAdapter(io, { jspi }), preopens: capabilities });
  forwardDrops(filesystem.types.Descriptor);
  const cli = cliShim.createCli({
    arguments: args,
    environment: env,
    initialCwd: cwd,
    stdout: sink(io, stdout),
    stderr: sink(io, stderr),
  });
  return {
    "wasi:cli/environment": cli.environment,
    "wasi:cli/exit": cli.exit,
    "wasi:cli/stdin": cli.stdin,
    "wasi:cli/stdout": cli.stdout,
    "wasi:cli/stderr": cli.stderr,
    "wasi:cli/terminal-input": cli.terminalInput,
    "wasi:cli/terminal-output": cli.terminalOutput,
    "wasi:cli/terminal-stdin": cli.terminalStdin,
    "wasi:cli/terminal-stdout": cli.terminalStdout,
    "wasi:cli/terminal-stderr": cli.terminalStderr,
    "wasi:clocks/monotonic-clock": clocks.monotonicClock,
    "wasi:clocks/wall-clock": clocks.wallClock,
    "wasi:filesystem/types": fs.types,
    "wasi:filesystem/preopens": fs.preopens,
    "wasi:io/error": io.error,
    "wasi:io/poll": io.poll,
    "wasi:io/streams": io.streams,
    "wasi:random/random": random.random,
    "wasi:random/insecure": random.insecure,
    "wasi:random/insecure-seed": random.insecureSeed,
  };
}
