// Runs one WASI preview1 guest in this worker over packfs-web's
// filesystems (see runner.js, which starts it): a Web Worker, or a
// worker_threads one in Node. A read of a lazy pack's bytes not here yet
// blocks this worker: on a synchronous Range request in a browser; in
// Node, Deno and Bun, which have none, on the page's fetch of it (the
// runner's thread; "page" below), or on a read of the file of a `file:`
// pack.
//
// Message in:  { module, engine, args, env, stdin, preopens, output, ask },
//              checked by runner.js (engine: packfs-web's compiled module,
//              or null) (preopens as it documents them, each url absolute;
//              stdin bytes, or true to pull each piece from the page;
//              output: which callbacks the page has, and how much output
//              may be in flight, see `output`; ask: the shared buffer of
//              channel.js's `channel`, or null).
// Messages out: { type: "stdin", max } while the guest waits for input,
//              { type: "fetch", url, range, limit } and { type: "more" }
//              while it waits for a pack's bytes (Node, Deno, Bun),
//              { type: "stdout" | "stderr", bytes }, then
//              { type: "exit", exitCode, bytesFetched, requests, saved }
//              or { type: "error", kind, message, detail } (kind as
//              runner.js's RunError says), each with `inDoubt`: true when
//              packfs-web's state here can no longer be trusted (a call
//              unwound through its frames), and the worker must go.

import init, { MemFs, Pack, Preview1 } from "./index.js";
import { OPEN, STREAM_SLOT, TOLD } from "./output.js";
import { imports } from "./imports.js";
import { parentPort, readFileRange, server } from "./runtime.js";

const port = parentPort();

/** A failure of kind `kind` (runner.js's RunError), with what raised it. */
class Failed extends Error {
  constructor(kind, message, cause) {
    super(message);
    this.kind = kind;
    this.detail = cause?.stack;
  }
}

/** `f()`, its failure one of kind `kind`, said as `what: ...`. */
async function as(kind, what, f) {
  try {
    return await f();
  } catch (e) {
    if (e instanceof Failed) throw e;
    throw new Failed(kind, `${what}: ${e?.message ?? e}`, e);
  }
}

/** How long a journal another worker holds is waited for: a worker ended
 *  mid-run (a timeout, an abort, close()) lets go of its file a moment
 *  after, and the next run must still start. */
const JOURNAL_WAIT = 5000;

async function openJournal(name, options) {
  for (const start = performance.now(); ; ) {
    try {
      return await MemFs.openJournal(name, options);
    } catch (e) {
      if (e?.code !== "busy" || performance.now() - start > JOURNAL_WAIT) throw e;
      await new Promise((later) => setTimeout(later, 50));
    }
  }
}

async function open(p) {
  if (p.kind === "mem") return { fs: new MemFs(p.options) };
  if (p.kind === "journal") return { fs: await openJournal(p.name, p.options) };
  const pack = p.url !== undefined ? await Pack.fromUrl(p.url, p.pack) : Pack.fromBytes(p.bytes, p.pack);
  if (p.kind === "pack") return { fs: pack, pack };
  return { fs: new MemFs({ ...p.options, lower: pack }), pack };
}

/** Asks the page through `shared` (channel.js's `channel`) and waits for
 *  its answer: a piece of bytes, or null for the end. */
function asker(shared) {
  const state = new Int32Array(shared, 0, 2);
  const data = new Uint8Array(shared, 8);
  return (question) => {
    Atomics.store(state, 0, 0);
    port.postMessage(question);
    Atomics.wait(state, 0, 0);
    const n = Atomics.load(state, 1);
    if (n === -1) return null;
    if (n < 0) throw new Error(`the page's answer to ${question.type} failed`);
    return data.slice(0, n);
  };
}

/** The guest's stdin, pulled from the page a piece at a time. */
const pull = (ask) => (max) => ask({ type: "stdin", max });

/** A blocking GET (packfs-web's `Pack.setBlockingGet`) without a
 *  synchronous XMLHttpRequest: a `file:` pack read from disk, anything
 *  else fetched by the page, its answer taken a piece at a time. */
const blockingGet = (ask) => (url, range, limit) => {
  if (url.startsWith("file:")) return readFileRange(url, range);
  const head = JSON.parse(new TextDecoder().decode(ask({ type: "fetch", url, range, limit })));
  if (head.error !== undefined) throw new Error(head.error);
  const body = new Uint8Array(head.length);
  for (let at = 0; at < body.length; ) {
    const piece = ask({ type: "more" });
    if (piece === null || piece.length === 0) throw new Error("the page's answer ended early");
    body.set(piece, at);
    at += piece.length;
  }
  return { ...head, body };
};

/** The guest's `type` output ("stdout" or "stderr") as output.js's
 *  `outputs` says: not sent where the page has no callback; else sent,
 *  each write's bytes moved, not copied. Where the page shares `flow`
 *  (the units sent and not yet taken, then each stream's state), a write
 *  waits while more than `inFlight` are, and fails (the guest sees EIO)
 *  once the page's callback for it has; where it cannot (not cross-origin
 *  isolated), a write past `unwaited` units in all fails: either way a
 *  guest cannot make the page hold more than that. */
function output(type, { flow, unit, inFlight, unwaited, ...wanted }) {
  if (!wanted[type]) return undefined;
  const shared = flow ? new Int32Array(flow) : null;
  const slot = STREAM_SLOT[type];
  let total = 0;
  return (bytes) => {
    const cost = Math.max(1, Math.ceil(bytes.length / unit));
    if (shared) {
      for (let v; (v = Atomics.load(shared, 0)) > inFlight; ) Atomics.wait(shared, 0, v);
      // Looked at after the wait: the page says a failure before it takes
      // the failed write's bytes, which is what wakes this.
      if (Atomics.load(shared, slot) !== OPEN) {
        Atomics.store(shared, slot, TOLD);
        throw new Error(`${type}: the page's callback failed`);
      }
      Atomics.add(shared, 0, cost);
    } else if ((total += cost) > unwaited) {
      throw new Error(`${type}: more than ${(unwaited * unit) >> 20} MiB (a write counts as 1 KiB at least), which a page that is not cross-origin isolated cannot be made to wait for`);
    }
    port.postMessage({ type, bytes }, [bytes.buffer]);
  };
}

async function run(msg) {
  // The page's compiled packfs-web where it sent one (runner.js), else
  // fetched from beside this script. Once per worker: later runs return.
  const wasm = (loaded = await init(msg.engine ? { module_or_path: msg.engine } : undefined));
  const ask = msg.ask ? asker(msg.ask) : null;
  if (server && ask) Pack.setBlockingGet(blockingGet(ask));
  const opened = [];
  let p1;
  try {
    p1 = await as("io", "preview1", () => new Preview1({
      args: msg.args ?? ["guest"],
      env: msg.env ?? {},
      stdin: msg.stdin === true ? pull(ask) : msg.stdin,
      stdout: output("stdout", msg.output),
      stderr: output("stderr", msg.output),
    }));
    await guest(msg, p1, wasm, opened);
  } finally {
    // Freed now, not when collected: a journal's file stays locked, to
    // this worker and every tab, until nothing holds its tree.
    for (const o of new Set([p1, ...opened.flatMap((o) => [o.fs, o.pack])])) o?.free();
  }
}

/** Runs the guest `msg` describes with `p1` (over packfs-web's exports
 *  `wasm`), its preopens put in `opened`. */
async function guest(msg, p1, wasm, opened) {
  for (const p of msg.preopens) {
    const what = `preopen ${p.path}${p.url === undefined ? "" : ` (${p.url})`}`;
    const o = await as("preopen", what, () => open(p));
    await as("preopen", what, () => {
      p1.preopen(p.path, o.fs, p.readOnly);
    });
    opened.push({ ...o, spec: p });
  }
  const wasi = await imports(p1, Preview1, wasm);
  const instance = await as("module", "the module cannot run", async () => {
    const module = msg.module instanceof WebAssembly.Module ? msg.module : await WebAssembly.compile(msg.module);
    const instance = /** @type {WebAssembly.Instance} */ (
      /** @type {unknown} */ (await WebAssembly.instantiate(module, { wasi_snapshot_preview1: wasi }))
    );
    if (!(instance.exports.memory instanceof WebAssembly.Memory)) throw new Error("it exports no memory");
    if (typeof instance.exports._start !== "function") throw new Error("it exports no _start function");
    return instance;
  });
  p1.start(instance.exports.memory);
  let exitCode = 0;
  try {
    instance.exports._start();
  } catch (e) {
    if (typeof e?.exitCode === "number") exitCode = e.exitCode;
    // V8 says a guest out of stack with a RangeError.
    else if (e instanceof WebAssembly.RuntimeError || e instanceof RangeError) {
      throw outOfMemory() ?? new Failed("trap", `the guest trapped: ${e.message}`, e);
    } else throw new Failed("io", `a host call failed: ${e?.message ?? e}`, e);
  }
  const saved = [];
  for (const o of opened) {
    if (o.spec.save) saved.push({ path: o.spec.path, pack: await as("io", `saving ${o.spec.path}`, () => o.fs.compact()) });
  }
  const packs = opened.filter((o) => o.pack);
  port.postMessage(
    {
      type: "exit",
      inDoubt: inDoubt(),
      exitCode,
      bytesFetched: packs.reduce((n, o) => n + o.pack.bytesFetched, 0),
      requests: packs.reduce((n, o) => n + o.pack.requests, 0),
      saved,
    },
    saved.map((s) => s.pack.buffer),
  );
}

/** packfs-web's exports here, once loaded. */
let loaded;

/** A wasm memory never gives back what it grew to: a worker whose
 *  packfs-web holds more than this after a run is retired, not kept warm. */
const RETIRE_FROM = 1 << 30;

/** Whether packfs-web here is in doubt (and, not loaded, it is), or holds
 *  more memory than a warm worker keeps. */
function inDoubt() {
  try {
    return Preview1.inDoubt() || loaded.memory.buffer.byteLength > RETIRE_FROM;
  } catch {
    return true;
  }
}

/** What a failure inside packfs-web's own frames most likely was: its
 *  memory, near wasm32's 4 GiB, could not grow for a write (an unbounded
 *  `mem` tree filled). Said so, not as the guest's trap. */
function outOfMemory() {
  const bytes = loaded?.memory.buffer.byteLength ?? 0;
  if (!(Preview1.inDoubt() && bytes > 3 * 2 ** 30)) return null;
  return new Failed("io", `packfs-web ran out of memory (${Math.round(bytes / 2 ** 20)} MiB): give the guest's mem trees a maxBytes`);
}

port.onmessage = (e) => {
  run(e.data).catch((err) => {
    const f = err instanceof Failed ? err : new Failed("io", String(err?.message ?? err), err);
    port.postMessage({ type: "error", inDoubt: inDoubt(), kind: f.kind, message: f.message, detail: f.detail });
  });
};
