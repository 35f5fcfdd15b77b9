// What differs between the JavaScript runtimes packfs-web runs in (a page,
// a Web Worker, Node, Deno, Bun), in one place: where its wasm comes from,
// how a thread reads a pack file's bytes at once, how a worker is started
// and how it speaks to its parent.

/** Outside a browser: Node, Deno or Bun, whose `node:` modules packfs-web
 *  may use (each says it is Node in `process.versions`). */
export const server = typeof globalThis.process?.versions?.node === "string" || typeof globalThis.Deno === "object";

/** `node:fs` where there is one (loaded by {@link load}), else null. */
let fs = null;

/** A module specifier bundlers for the browser leave alone. */
const nodeModule = (name) => import(/* @vite-ignore */ `node:${name}`);

/** Loads what this runtime needs before packfs-web's first call: in Node,
 *  Deno and Bun, `node:fs`. */
export async function load() {
  if (server && fs === null) fs = await nodeModule("fs");
}

/** packfs-web's wasm, as `init` takes it: fetched from beside this script
 *  in a browser (undefined: wasm-bindgen's own default), read from disk
 *  where this script is a file. */
export async function wasmSource() {
  const url = new URL("./packfs_web_bg.wasm", import.meta.url);
  if (url.protocol !== "file:") return undefined;
  await load();
  return fs.readFileSync(url);
}

/** Whether this thread can read a `file:` URL at once. */
export const readsFiles = () => fs !== null;

/** The bytes `range` (a `Range` header's value, as packfs-web writes it:
 *  `bytes=A-B` or `bytes=-N`) of the file at `url`, as a server would
 *  answer: 206 with a Content-Range, 416 past its end. The validator
 *  changes when the file is replaced or rewritten. */
export function readFileRange(url, range) {
  // Opened without waiting, then looked at: an open of a FIFO for reading
  // blocks until a writer comes, and a read of one, a device or a socket
  // may never end, on a thread that must not wait for them.
  const fd = fs.openSync(new URL(url), fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0));
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) throw new Error(`it is not a regular file (${kindOf(st)})`);
    const size = st.size;
    const validator = `${st.ino}-${size}-${st.mtimeMs}`;
    const m = /^bytes=(\d*)-(\d*)$/.exec(range);
    if (!m || (m[1] === "" && m[2] === "")) throw new Error(`not a range packfs-web asks for: ${range}`);
    let [a, b] = m[1] === "" ? [Math.max(0, size - Number(m[2])), size - 1] : [Number(m[1]), m[2] === "" ? size - 1 : Number(m[2])];
    b = Math.min(b, size - 1);
    if (a > b) return { status: 416, contentRange: `bytes */${size}`, validator, body: new Uint8Array(0) };
    const body = new Uint8Array(b - a + 1);
    for (let at = 0; at < body.length; ) {
      const n = fs.readSync(fd, body, at, body.length - at, a + at);
      if (n === 0) throw new Error("it ended early: it changed while read");
      at += n;
    }
    return { status: 206, contentRange: `bytes ${a}-${b}/${size}`, validator, body };
  } finally {
    fs.closeSync(fd);
  }
}

/** What a file that is not a regular one is, for a message. */
function kindOf(st) {
  const kinds = { FIFO: "a FIFO", Directory: "a directory", CharacterDevice: "a character device", BlockDevice: "a block device", Socket: "a socket" };
  return Object.entries(kinds).find(([k]) => st[`is${k}`]())?.[1] ?? "not a file";
}

/** Blocks this thread for a moment: a descriptor that is not ready yet
 *  (EAGAIN) is tried again after it. */
const pause = () => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);

/** Writes all of `bytes` to file descriptor `fd` of this process. A
 *  non-blocking one (a pipe, once Node has touched process.stdout) that
 *  is full is waited for: a guest's write is taken whole or fails. */
export function writeFd(fd, bytes) {
  for (let at = 0; at < bytes.length; ) {
    try {
      at += fs.writeSync(fd, bytes, at, bytes.length - at);
    } catch (e) {
      if (e?.code !== "EAGAIN") throw e;
      pause();
    }
  }
}

/** Up to `max` bytes from file descriptor `fd` of this process; null at
 *  its end. */
export function readFd(fd, max) {
  const buf = new Uint8Array(max);
  for (;;) {
    try {
      const n = fs.readSync(fd, buf, 0, max, null);
      return n === 0 ? null : buf.subarray(0, n);
    } catch (e) {
      // A non-blocking stdin (a TTY Node set so) with nothing yet.
      if (e?.code !== "EAGAIN") throw e;
      pause();
    }
  }
}

/** The directory relative URLs resolve against where there is no page:
 *  the working directory, as a `file:` URL. */
export function workingDirectory() {
  const cwd = globalThis.process?.cwd?.();
  if (typeof cwd !== "string") return undefined;
  const path = cwd.endsWith("/") ? cwd : `${cwd}/`;
  return new URL(path.replace(/[%#?\\]/g, encodeURIComponent), "file:///").href;
}

/** A `worker_threads` worker running the module `name` beside this one,
 *  for Node, Deno and Bun, behind the Web Worker's face (`onmessage`,
 *  `onerror`, `postMessage`, `terminate`): its `terminate` ends it
 *  whatever it is doing, which Deno's Web Worker's does not. It keeps the
 *  process alive only while `busy(true)` says it works. (The URL is made
 *  here from a variable: a bundler would copy a literal one's file.) */
export async function nodeWorker(name) {
  const { Worker } = await nodeModule("worker_threads");
  const w = new Worker(new URL(name, import.meta.url));
  const face = {
    onmessage: null,
    onerror: null,
    postMessage: (m, transfer) => w.postMessage(m, transfer),
    terminate: () => w.terminate(),
    busy: (yes) => (yes ? w.ref() : w.unref()),
  };
  w.on("message", (data) => face.onmessage?.({ data }));
  w.on("error", (e) => face.onerror?.(e));
  // A worker that ends by itself (out of memory, say) without an error.
  w.on("exit", (code) => face.onerror?.({ message: `it exited (code ${code})` }));
  return face;
}

/** This worker's end towards its parent: `worker_threads`' parentPort
 *  where this is such a worker (Node, Deno, Bun: reached at once, so that
 *  a worker's module has no top-level await), else `self`, a Web Worker's.
 *  Both take `postMessage(m, transfer)` and an `onmessage` of `{ data }`. */
/** @returns {{ postMessage(message: unknown, transfer?: Transferable[]): void, onmessage: ((e: MessageEvent) => void) | null }} */
export function parentPort() {
  // @ts-ignore: a worker's `self` (or Node's port), not a page's window.
  return globalThis.process?.getBuiltinModule?.("node:worker_threads")?.parentPort ?? globalThis.self;
}
