// One case of e2e/embedder.test.mjs in this runtime (Node, Deno or Bun),
// a process of its own: `node embedder.mjs CASE`. Writes what the case
// found, as JSON, to the file PACKFS_RESULT names, and then ends by
// itself: a case passes only if the process lives to exit 0, so that a
// throw packfs-web let escape into a listener fails it. Guests come from
// PACKFS_GUESTS (the toolbox and the test's hand-written ones), the test
// server's address from PACKFS_SERVER.

import { execFileSync } from "node:child_process";
import { createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Readable, Writable } from "node:stream";

const PKG = new URL("../../pkg/", import.meta.url);
const { default: init, MemFs, Pack } = await import(new URL("index.js", PKG).href);
const { runP1 } = await import(new URL("runner.js", PKG).href);
const { WASI } = await import(new URL("wasi.js", PKG).href);
await init();

const name = (globalThis.Deno ? Deno.args : process.argv.slice(2))[0];
const env = process.env;
const guest = (file) => readFileSync(join(env.PACKFS_GUESTS, file));
const TOOLBOX = guest("toolbox.wasm");
const sha = (b) => createHash("sha256").update(b).digest("hex");
const text = (chunks) => Buffer.concat(chunks).toString("utf8");
/** How a run ended: its result, or its RunError's kind and message. */
const ended = (p) => p.then((r) => ({ exitCode: r.exitCode }), (e) => ({ kind: e.kind, message: e.message, cause: `${e.cause?.message ?? ""}` }));
/** A turn of the event loop. */
const turn = () => new Promise((done) => setTimeout(done, 0));

const CASES = {
  // A guest reads 10 bytes of stdin, then a file of a pack by HTTP (the
  // page fetches it, its answer sent in turns), then the rest of stdin.
  async "stdin around a fetch"() {
    const input = Buffer.from(Array.from({ length: 1000 }, (_, i) => (i * 7 + 3) & 0xff));
    const sources = {
      bytes: () => input,
      function: () => {
        let given = false;
        return () => (given ? null : ((given = true), input));
      },
      "async iterable": () => Readable.from([input]),
      ReadableStream: () => new ReadableStream({ start: (c) => (c.enqueue(new Uint8Array(input)), c.close()) }),
    };
    const out = {};
    for (const [kind, source] of Object.entries(sources)) {
      const got = [];
      const r = await ended(runP1(guest("sip.wasm"), {
        stdin: source(),
        stdout: (b) => got.push(Buffer.from(b)),
        preopens: [{ path: "/", kind: "pack", url: `${env.PACKFS_SERVER}/sip.pack` }],
      }));
      out[kind] = { ...r, sha: sha(Buffer.concat(got)), length: Buffer.concat(got).length };
    }
    return out;
  },

  // A stdout callback that throws: the guest's first write is 5 MiB, more
  // than may be in flight, so its next waits for the page, which by then
  // has seen the callback fail: that write is EIO to the guest.
  async "a stdout callback that throws, then more output"() {
    let calls = 0;
    const err = [];
    const r = await ended(runP1(TOOLBOX, {
      args: ["toolbox", "fill", "/m/f", "5", "cat", "/m/f", "echo", "done"],
      preopens: [{ path: "/m", kind: "mem" }],
      stdout: () => {
        calls += 1;
        throw new Error("the embedder's bug");
      },
      stderr: (b) => err.push(Buffer.from(b)),
    }));
    return { ...r, calls, stderr: text(err) };
  },

  // The guest's only write fails in the page after the guest has exited,
  // through a callback or a stream: it cannot be told, so the run rejects.
  async "a failed last write, by a callback and by a stream"() {
    const run = (stdout) => ended(runP1(TOOLBOX, { args: ["toolbox", "echo", "hello"], stdout }));
    return {
      callback: await run(() => {
        throw new Error("the embedder's bug");
      }),
      // Its "error" event listened to, as a stream's owner must.
      stream: await run(new Writable({ write: (_chunk, _enc, done) => done(new Error("disk full")) }).on("error", () => {})),
    };
  },

  // Both streams writable, stdout the slower (it calls back a while after
  // stderr has): the guest's last write is to stderr. Whether stdout had
  // called back when the run resolved.
  async "runP1 resolves after every stream has written"() {
    const got = [];
    let release;
    let stdoutDone = false;
    const stdout = new Writable({
      write(chunk, _enc, done) {
        got.push(Buffer.from(chunk));
        release = () => ((stdoutDone = true), done());
      },
    });
    const stderr = new Writable({
      write(_chunk, _enc, done) {
        done();
        const now = release;
        release = null;
        if (now) setTimeout(now, 200);
      },
    });
    const r = await ended(runP1(TOOLBOX, { args: ["toolbox", "echo", "out", "stderr", "err"], stdout, stderr }));
    return { ...r, written: text(got), stdoutDone };
  },

  // A stdin whose iterator's `return` throws, ended by a timeout: the throw
  // stays out of the timer's callback.
  async "a stdin whose return throws"() {
    const stdin = {
      [Symbol.asyncIterator]: () => ({
        next: () => new Promise(() => {}),
        return() {
          throw new Error("the embedder's bug");
        },
      }),
    };
    return ended(runP1(TOOLBOX, { args: ["toolbox", "lines"], stdin, timeout: 300 }));
  },

  // The WASI class writing 1 MiB to this process's stdout, a pipe the
  // test reads late, made non-blocking as Node makes it once
  // process.stdout is touched.
  async "WASI's stdout, a full non-blocking pipe"() {
    void process.stdout;
    const err = [];
    const wasi = new WASI({
      args: ["toolbox", "fill", "/m/f", "1", "cat", "/m/f"],
      preopens: { "/m": new MemFs() },
      stderr: (b) => err.push(Buffer.from(b)),
    });
    const { instance } = await WebAssembly.instantiate(TOOLBOX, wasi.getImportObject());
    return { exitCode: wasi.start(instance), stderr: text(err) };
  },

  // A reactor initialized, its WASI object dropped and collected; its
  // export still calls preview1 (fd_write).
  async "a reactor outlives its WASI object"() {
    const gc = globalThis.gc ?? (() => globalThis.Bun.gc(true));
    const out = [];
    const made = async () => {
      const wasi = new WASI({ stdout: (b) => out.push(Buffer.from(b)) });
      const { instance } = await WebAssembly.instantiate(guest("reactor.wasm"), wasi.getImportObject());
      wasi.initialize(instance);
      return { instance, dropped: new WeakRef(wasi) };
    };
    const { instance, dropped } = await made();
    let rounds = 0;
    for (; dropped.deref() !== undefined && rounds < 100; rounds++) {
      gc();
      await turn();
    }
    // Its FinalizationRegistry's callbacks, which free what it held, run
    // in later turns.
    for (let i = 0; i < 10; i++) {
      gc();
      await turn();
    }
    let errno, error;
    try {
      errno = instance.exports.hello();
    } catch (e) {
      error = e.message;
    }
    return { collected: dropped.deref() === undefined, errno, error, out: text(out) };
  },

  // A file: URL naming a FIFO, and a directory: refused at once, on this
  // thread and in the runner's worker, never waited on.
  async "a file: URL that is not a regular file"() {
    const dir = mkdtempSync(join(tmpdir(), "packfs-fifo-"));
    try {
      const fifo = join(dir, "fifo.pack");
      execFileSync("mkfifo", [fifo]);
      const opened = (url) => Pack.fromUrl(url).then(() => ({ opened: true }), (e) => ({ code: e.code, message: e.message }));
      return {
        fifo: await opened(pathToFileURL(fifo).href),
        directory: await opened(pathToFileURL(`${dir}/`).href),
        runner: await ended(runP1(TOOLBOX, { args: ["toolbox", "ls", "/"], preopens: [{ path: "/", kind: "pack", url: pathToFileURL(fifo).href }] })),
      };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },

  // A server that answers the pack's opening as asked, and any later range
  // with a 200 and the whole pack: a guest's read (the runner's blocking
  // fetch), and this thread's own read (fetch, awaited).
  async "a later range answered with the whole pack"() {
    const err = [];
    const url = `${env.PACKFS_WHOLE}/big.pack`;
    const r = await ended(runP1(TOOLBOX, {
      args: ["toolbox", "cat", "/f/3.bin"],
      preopens: [{ path: "/", kind: "pack", url }],
      stderr: (b) => err.push(Buffer.from(b)),
    }));
    const pack = await Pack.fromUrl(url, { persist: false });
    const read = await pack.readFile("f/3.bin").then((b) => ({ read: b.length }), (e) => ({ code: e.code, message: e.message }));
    return { runner: { ...r, stderr: text(err) }, thread: { ...read, bytesFetched: pack.bytesFetched, length: pack.info().packLen } };
  },
  // Sinks that answer with promises: an async callback that rejects (the
  // run rejects, io, and nothing is left unhandled), one that resolves
  // late (the run waits for it), a WritableStream's writer, a writer that
  // writes at most 3 bytes a call (as Deno.stdout may), and a
  // WritableStream itself, refused at the call.
  async "sinks that answer with promises"() {
    const echo = (stdout, more = []) => ended(runP1(TOOLBOX, { args: ["toolbox", "echo", "hello", ...more], stdout }));
    const rejects = await echo(async () => {
      throw new Error("async sink failed");
    });
    let late = "";
    const resolvesLate = await echo(async (b) => {
      await new Promise((done) => setTimeout(done, 100));
      late += Buffer.from(b).toString();
    });
    let streamed = "";
    const writer = new WritableStream({ write: (b) => void (streamed += Buffer.from(b).toString()) }).getWriter();
    const byWriter = await echo(writer);
    let short = "";
    const shortWriter = {
      write: async (b) => {
        short += Buffer.from(b.subarray(0, 3)).toString();
        return Math.min(3, b.length);
      },
    };
    const byShortWriter = await echo(shortWriter, ["echo", "again"]);
    const refused = await runP1(TOOLBOX, { stdout: new WritableStream() }).then(
      () => "accepted",
      (e) => `${e.name}: ${e.message}`,
    );
    return { rejects, resolvesLate: { ...resolvesLate, late }, byWriter: { ...byWriter, streamed }, byShortWriter: { ...byShortWriter, short }, refused };
  },

  // stdout a file stream into a directory that is not there: its "error"
  // event, which nothing else listens to, fails the run instead of ending
  // the process.
  async "a stdout stream that fails to open"() {
    const stdout = createWriteStream(join(tmpdir(), "packfs-no-such-directory", "out"));
    return ended(runP1(TOOLBOX, { args: ["toolbox", "echo", "hello"], stdout }));
  },

  // The guest writes to stderr, then traps; stderr calls back each write
  // a while later (a slow disk). The run rejects once it has written.
  async "a trap's last words written before the run rejects"() {
    let written = "";
    const stderr = new Writable({
      write(chunk, _enc, done) {
        setTimeout(() => ((written += chunk), done()), 200);
      },
    });
    const r = await ended(runP1(TOOLBOX, { args: ["toolbox", "stderr", "the last words", "trap"], stderr }));
    return { ...r, written };
  },

  // The opening's tail answered by a hostile server, with a 206 and a
  // body without end, and with a 200 saying it is 2 GiB.
  async "an opening's tail without end"() {
    const opened = (path) =>
      Pack.fromUrl(`${env.PACKFS_HOSTILE}${path}`, { persist: false }).then(() => ({ opened: true }), (e) => ({ code: e.code, message: e.message }));
    return { endless: await opened("/endless"), huge: await opened("/huge") };
  },

  // A lazy pack kept in the Cache API (Deno, given a location): what
  // persisted() resolves to once its file has been read (changes to the
  // store: the ledger at the opening, the file's bytes and the ledger).
  async "persisted() after many changes"() {
    const pack = await Pack.fromUrl(`${env.PACKFS_SERVER}/sip.pack`);
    for (let i = 0; i < 3; i++) await pack.readFile("f.bin");
    const v = await pack.persisted();
    return { caches: typeof caches === "object", persisted: v === undefined ? "undefined" : JSON.stringify(v).slice(0, 200) };
  },

  // 10,000 writes of a byte to stdout, then "done" to stderr; stdout calls
  // back none until stderr says done, or two seconds on. How many it was
  // handed before.
  async "a byte at a time"() {
    let calls = 0;
    let before = null;
    const held = [];
    const release = () => {
      before ??= calls;
      for (const done of held.splice(0)) done();
    };
    const stdout = {
      write(_bytes, done) {
        calls += 1;
        if (before === null) held.push(done);
        else done();
      },
    };
    const timer = setTimeout(release, 2000);
    const r = await ended(runP1(guest("drip.wasm"), { stdout, stderr: release }));
    clearTimeout(timer);
    return { ...r, calls, before };
  },
};

writeFileSync(env.PACKFS_RESULT, JSON.stringify(await CASES[name]()));
