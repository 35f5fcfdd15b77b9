// packfs-web's JavaScript hosts (the runner, the WASI class) as a careless
// embedder and a hostile server meet them, in Node, Deno and Bun: each case
// of e2e/runtime/embedder.mjs a process of its own, which must live to
// exit 0 (a throw let into a listener ends it with 1), with what it found
// checked here, bytes and all. Each case is a defect found in review of
// a3db56c:
// - a guest reading stdin, then a lazy pack's file, then the rest of stdin
//   got no rest: the runner's thread kept one remainder for both;
// - a stdout callback that threw ended the embedder's process (Node, Deno)
//   or the process after the run (Bun), where the WASI class gives the
//   guest EIO;
// - runP1 resolved once the last write's stream had written, stdout's
//   write still pending when the last went to stderr;
// - a stdin iterator whose `return` threw, at the run's end, did as that
//   callback did;
// - the WASI class's stdout, a full non-blocking pipe, failed with EIO
//   (61,440 of 1 MiB written);
// - a reactor whose WASI object was collected failed every call ("no
//   started Preview1");
// - a `file:` URL naming a FIFO froze the thread that opened it;
// - a server answering a small range with a whole large pack had the
//   runner's thread take and copy all of it (and a page's own read buffer
//   all of it, and take it);
// - output in flight was bounded in bytes: a guest writing a byte at a
//   time could have 4 Mi messages waiting for the page.
// The hand-written guests are assembled from the WAT below by jco's
// wasm-tools; the toolbox comes from target/guest-tests.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { createHash } from "node:crypto";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "@bytecodealliance/jco";

import { startServer, parseRange } from "./server.mjs";
import { packfs } from "./fixtures.mjs";

const TARGET = fileURLToPath(new URL("../../target/guest-tests/", import.meta.url));
const SCRIPT = fileURLToPath(new URL("./runtime/embedder.mjs", import.meta.url));
const BIN = fileURLToPath(new URL("../node_modules/.bin/", import.meta.url));
const RUNTIMES = ["node", "deno", "bun"];
const sha = (b) => createHash("sha256").update(b).digest("hex");

// Reads 10 bytes of stdin, then the file f.bin of its preopen (fd 3), then
// the rest of stdin, copying each to stdout as it reads it. Exits 100 +
// errno when a call fails.
const SIP = `(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_open"
    (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  ;; 0: an iovec; 8: a count; 12: the file's fd; 16: its name; 65536: the buffer.
  (memory (export "memory") 2)
  (data (i32.const 16) "f.bin")
  (func $ok (param $errno i32)
    (if (local.get $errno) (then (call $proc_exit (i32.add (local.get $errno) (i32.const 100))))))
  ;; Copies up to $max bytes (unsigned) of $fd to stdout.
  (func $copy (param $fd i32) (param $max i32)
    (local $left i32) (local $n i32)
    (local.set $left (local.get $max))
    (block $done
      (loop $more
        (br_if $done (i32.eqz (local.get $left)))
        (i32.store (i32.const 0) (i32.const 65536))
        (i32.store (i32.const 4)
          (select (local.get $left) (i32.const 65536) (i32.lt_u (local.get $left) (i32.const 65536))))
        (call $ok (call $fd_read (local.get $fd) (i32.const 0) (i32.const 1) (i32.const 8)))
        (local.set $n (i32.load (i32.const 8)))
        (br_if $done (i32.eqz (local.get $n)))
        (i32.store (i32.const 4) (local.get $n))
        (call $ok (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))
        (local.set $left (i32.sub (local.get $left) (local.get $n)))
        (br $more))))
  (func (export "_start")
    (call $copy (i32.const 0) (i32.const 10))
    ;; path_open(3, 0, "f.bin", 0, rights fd_read, 0, 0, &fd)
    (call $ok (call $path_open (i32.const 3) (i32.const 0) (i32.const 16) (i32.const 5) (i32.const 0)
      (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 12)))
    (call $copy (i32.load (i32.const 12)) (i32.const -1))
    (call $copy (i32.const 0) (i32.const -1))))`;

// A reactor: no _start, no proc_exit import; `hello` writes "hi\n" to
// stdout and returns fd_write's errno.
const REACTOR = `(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "\\10\\00\\00\\00\\03\\00\\00\\00")
  (data (i32.const 16) "hi\\n")
  (func (export "_initialize"))
  (func (export "hello") (result i32)
    (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8))))`;

// 10,000 writes of one byte to stdout, then "done\n" to stderr.
const DRIP = `(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  ;; 0: 1 byte at 32; 16: 5 at 40 ("done\\n"); 8: a count.
  (data (i32.const 0) "\\20\\00\\00\\00\\01\\00\\00\\00")
  (data (i32.const 16) "\\28\\00\\00\\00\\05\\00\\00\\00")
  (data (i32.const 32) "x")
  (data (i32.const 40) "done\\n")
  (func (export "_start")
    (local $i i32)
    (loop $more
      (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $more (i32.lt_u (local.get $i) (i32.const 10000))))
    (drop (call $fd_write (i32.const 2) (i32.const 16) (i32.const 1) (i32.const 8)))))`;

let guests, server, whole, hostile, hostileSent, sipFile, sipInput, big;

/** A pack of one file `f.bin` of `size` bytes (incompressible, stored). */
async function onePack(size) {
  const { MemFs } = await packfs();
  const fs = new MemFs();
  let x = 0x2545f491;
  const b = new Uint8Array(size).map(() => ((x ^= x << 13), (x ^= x >>> 17), (x ^= x << 5), x & 0xff));
  fs.writeFileSync("f.bin", b);
  return { pack: Buffer.from(await fs.compact({ compress: "none" })), file: Buffer.from(b) };
}

/** A pack of 24 files `f/<i>.bin` of 200,000 bytes. */
async function bigPack() {
  const { MemFs } = await packfs();
  const fs = new MemFs();
  fs.mkdir("f");
  for (let i = 0; i < 24; i++) fs.writeFileSync(`f/${i}.bin`, new Uint8Array(200_000).fill(i));
  return Buffer.from(await fs.compact({ compress: "none" }));
}

before(async () => {
  guests = mkdtempSync(join(tmpdir(), "packfs-embedder-"));
  writeFileSync(join(guests, "sip.wasm"), await parse(SIP));
  writeFileSync(join(guests, "reactor.wasm"), await parse(REACTOR));
  writeFileSync(join(guests, "drip.wasm"), await parse(DRIP));
  copyFileSync(`${TARGET}wasm32-wasip1/release/toolbox.wasm`, join(guests, "toolbox.wasm"));
  const sip = await onePack(256 << 10);
  sipFile = sip.file;
  sipInput = Buffer.from(Array.from({ length: 1000 }, (_, i) => (i * 7 + 3) & 0xff));
  server = await startServer({ files: { "/sip.pack": sip.pack } });
  // The pack's opening (its header, its tail) answered as asked; any other
  // range with a 200 and the whole pack.
  big = await bigPack();
  whole = createServer((req, res) => {
    const r = parseRange(req.headers.range, big.length);
    if (Array.isArray(r) && (r[0] === 0 || r[1] === big.length)) {
      res.writeHead(206, { "Content-Range": `bytes ${r[0]}-${r[1] - 1}/${big.length}`, "Content-Length": r[1] - r[0] });
      res.end(big.subarray(r[0], r[1]));
    } else {
      res.writeHead(200, { "Content-Length": big.length });
      res.end(big);
    }
  });
  await new Promise((ok) => whole.listen(0, "127.0.0.1", ok));
  // The opening's tail request answered with a body without end: a 206
  // (/endless, 64 MiB at most, then it ends), or a 200 that says it is
  // 2 GiB (/huge, 64 KiB of it sent, then the connection cut).
  hostile = createServer((req, res) => {
    const chunk = Buffer.alloc(1 << 16, 0x41);
    if (req.url === "/huge") {
      res.writeHead(200, { "Content-Length": 2 ** 31 });
      res.write(chunk);
      return setTimeout(() => res.destroy(), 100);
    }
    res.writeHead(206, { "Content-Range": `bytes 0-65535/${1 << 30}` });
    const pump = () => {
      while (hostileSent < 64 << 20) {
        hostileSent += chunk.length;
        if (!res.write(chunk)) return;
      }
      res.end();
    };
    res.on("drain", pump);
    req.on("close", () => res.destroy());
    pump();
  });
  await new Promise((ok) => hostile.listen(0, "127.0.0.1", ok));
});

after(async () => {
  whole?.closeAllConnections();
  whole?.close();
  hostile?.closeAllConnections();
  hostile?.close();
  await server?.close();
  if (guests) rmSync(guests, { recursive: true, force: true });
});

/** The command that runs case `name` in `runtime`; `gc`: with a `gc()`;
 *  `location`: Deno's `location` (and so its Cache API's origin). */
function command(runtime, name, gc, location) {
  if (runtime === "node") return [process.execPath, ...(gc ? ["--expose-gc"] : []), SCRIPT, name];
  if (runtime === "deno") {
    const flags = [...(gc ? ["--v8-flags=--expose-gc"] : []), ...(location ? [`--location=${location}`] : [])];
    return [`${BIN}deno`, "run", "--allow-all", "--no-prompt", "--quiet", ...flags, SCRIPT, name];
  }
  return [`${BIN}bun`, SCRIPT, name];
}

/**
 * Runs case `name` in `runtime`: its exit status, what it found (the
 * JSON it wrote), its stdout and stderr. `readLate`: its stdout is not
 * read until half a second after it starts (or it ends). A case that has
 * not ended after a minute is killed (`code` null): it hung.
 */
async function runCase(runtime, name, { gc = false, readLate = false, location } = {}) {
  const result = join(guests, `${runtime}-${name.replace(/\W+/g, "-")}.json`);
  rmSync(result, { force: true });
  const [cmd, ...args] = command(runtime, name, gc, location);
  const child = spawn(cmd, args, {
    env: { ...process.env, PACKFS_GUESTS: guests, PACKFS_SERVER: server.url, PACKFS_WHOLE: `http://127.0.0.1:${whole.address().port}`, PACKFS_HOSTILE: `http://127.0.0.1:${hostile.address().port}`, PACKFS_RESULT: result, NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const out = [];
  let err = "";
  const read = () => child.stdout.on("data", (d) => out.push(d)).resume();
  if (readLate) {
    child.stdout.pause();
    setTimeout(read, 500);
  } else read();
  child.stderr.on("data", (d) => (err += d));
  const killer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  const code = await new Promise((done, fail) => {
    child.on("error", fail);
    child.on("close", done);
  });
  clearTimeout(killer);
  let found;
  try {
    found = JSON.parse(readFileSync(result, "utf8"));
  } catch {
    found = undefined;
  }
  return { code, found, stdout: Buffer.concat(out), stderr: err };
}

/** Runs case `name` in `runtime`, which must exit 0 having found something. */
async function lives(runtime, name, options) {
  const r = await runCase(runtime, name, options);
  assert.equal(r.code, 0, `${name} in ${runtime}: exit ${r.code === null ? "(killed: it hung)" : r.code}\n${r.stderr}`);
  assert.notEqual(r.found, undefined, r.stderr);
  return r;
}

// Deno has the Cache API (given a location): each change a lazy pack made
// there wrapped the ones before in another array, which persisted()
// resolved to, all kept for the pack's lifetime.
test("deno: a lazy pack's persisted() resolves to undefined after many changes to its Cache API store", async () => {
  const { found } = await lives("deno", "persisted() after many changes", { location: "http://packfs-embedder.test/" });
  assert.equal(found.caches, true, "Deno has the Cache API");
  assert.equal(found.persisted, "undefined");
});

for (const runtime of RUNTIMES) {
  test(`${runtime}: stdin read before and after a lazy pack's file arrives whole, from every kind of source`, async () => {
    const { found } = await lives(runtime, "stdin around a fetch");
    const want = Buffer.concat([sipInput.subarray(0, 10), sipFile, sipInput.subarray(10)]);
    for (const [kind, r] of Object.entries(found)) {
      assert.equal(r.exitCode, 0, `${kind}: ${JSON.stringify(r)}`);
      assert.equal(r.length, want.length, `${kind}: ${r.length} bytes, not ${want.length}`);
      assert.equal(r.sha, sha(want), kind);
    }
    assert.deepEqual(Object.keys(found), ["bytes", "function", "async iterable", "ReadableStream"]);
  });

  test(`${runtime}: a stdout callback that throws is EIO to the guest's next write, and the process lives`, async () => {
    const { found } = await lives(runtime, "a stdout callback that throws, then more output");
    assert.equal(found.calls, 1, "the failed callback is not called again");
    assert.equal(found.exitCode, 1, JSON.stringify(found));
    assert.match(found.stderr, /^toolbox: (cat \/m\/f|echo done): .*errno 29/m);
  });

  test(`${runtime}: a last write lost after the guest exited rejects the run (io), by a callback or a stream`, async () => {
    const { found } = await lives(runtime, "a failed last write, by a callback and by a stream");
    for (const [how, cause] of [["callback", "the embedder's bug"], ["stream", "disk full"]]) {
      assert.equal(found[how].kind, "io", `${how}: ${JSON.stringify(found[how])}`);
      assert.match(found[how].message, /^stdout failed: .*the guest, which exited 0, was not told/, how);
      assert.equal(found[how].cause, cause, how);
    }
  });

  test(`${runtime}: runP1 resolves once stdout has written, though the guest wrote last to stderr`, async () => {
    const { found } = await lives(runtime, "runP1 resolves after every stream has written");
    assert.equal(found.exitCode, 0, JSON.stringify(found));
    assert.equal(found.written, "out\n");
    assert.equal(found.stdoutDone, true, "stdout's write was called back before the run resolved");
  });

  test(`${runtime}: a stdin whose iterator's return throws, ended by the run's timeout, leaves the process alive`, async () => {
    const { found } = await lives(runtime, "a stdin whose return throws");
    assert.equal(found.kind, "timeout", JSON.stringify(found));
  });

  test(`${runtime}: the WASI class's stdout, a full non-blocking pipe, is waited for: every byte, in order`, async () => {
    const { found, stdout } = await lives(runtime, "WASI's stdout, a full non-blocking pipe", { readLate: true });
    assert.equal(found.exitCode, 0, found.stderr);
    const want = Buffer.from(Array.from({ length: 1 << 20 }, (_, i) => i % 251));
    assert.equal(stdout.length, want.length);
    assert.equal(sha(stdout), sha(want));
  });

  test(`${runtime}: a reactor keeps working after its WASI object is collected`, async () => {
    const { found } = await lives(runtime, "a reactor outlives its WASI object", { gc: true });
    assert.equal(found.error, undefined, found.error);
    assert.equal(found.errno, 0);
    assert.equal(found.out, "hi\n");
    // Bun's collector, which scans the stack, may keep it: the call then
    // proves less, and still must work.
    if (runtime !== "bun") assert.equal(found.collected, true, "the WASI object was collected");
  });

  test(`${runtime}: a file: URL naming a FIFO or a directory is refused at once, on the thread and in the worker`, async () => {
    const { found } = await lives(runtime, "a file: URL that is not a regular file");
    assert.equal(found.fifo.code, "io", JSON.stringify(found.fifo));
    assert.match(found.fifo.message, /is not a regular file \(a FIFO\)/);
    assert.equal(found.directory.code, "io", JSON.stringify(found.directory));
    assert.match(found.directory.message, /is not a regular file \(a directory\)/);
    // The URL named once, not three times.
    assert.equal(found.fifo.message.split("fifo.pack").length, 2, found.fifo.message);
    assert.equal(found.runner.kind, "preopen", JSON.stringify(found.runner));
    assert.match(found.runner.message, /is not a regular file \(a FIFO\)/);
  });

  test(`${runtime}: a small range answered with the whole pack fails the read (EIO, io); no thread takes more than was asked`, async () => {
    const { found } = await lives(runtime, "a later range answered with the whole pack");
    assert.equal(found.runner.exitCode, 1, JSON.stringify(found.runner));
    assert.match(found.runner.stderr, /^toolbox: cat \/f\/3\.bin: .*errno 29/);
    assert.equal(found.thread.code, "io", JSON.stringify(found.thread));
    assert.match(found.thread.message, /longer than the \d+ bytes asked for/);
    assert.ok(found.thread.bytesFetched < found.thread.length / 4, JSON.stringify(found.thread));
  });

  test(`${runtime}: sinks that answer with promises: waited for, a rejection is a failure (io), a short write's rest written`, async () => {
    const { found } = await lives(runtime, "sinks that answer with promises");
    assert.equal(found.rejects.kind, "io", JSON.stringify(found.rejects));
    assert.equal(found.rejects.cause, "async sink failed");
    assert.deepEqual(found.resolvesLate, { exitCode: 0, late: "hello\n" });
    assert.deepEqual(found.byWriter, { exitCode: 0, streamed: "hello\n" });
    assert.deepEqual(found.byShortWriter, { exitCode: 0, short: "hello\nagain\n" });
    assert.match(found.refused, /^TypeError: stdout must be a function or a writable stream .*not object/);
  });

  test(`${runtime}: a stdout stream whose "error" event nothing listens to fails the guest's write (EIO) or the run (io), and the process lives`, async () => {
    const { found } = await lives(runtime, "a stdout stream that fails to open");
    // Told in time, the guest exits 1; else the run rejects.
    if (found.kind === undefined) assert.equal(found.exitCode, 1, JSON.stringify(found));
    else {
      assert.equal(found.kind, "io", JSON.stringify(found));
      assert.match(found.cause, /ENOENT|no such file/i);
    }
  });

  test(`${runtime}: a guest that traps has its last output written before the run rejects`, async () => {
    const { found } = await lives(runtime, "a trap's last words written before the run rejects");
    assert.equal(found.kind, "trap", JSON.stringify(found));
    assert.equal(found.written, "the last words\n");
  });

  test(`${runtime}: the opening's tail answered without end is cut at what was asked (206), or at 1 GiB (200)`, async () => {
    hostileSent = 0;
    const { found } = await lives(runtime, "an opening's tail without end");
    assert.equal(found.endless.code, "io", JSON.stringify(found.endless));
    assert.match(found.endless.message, /longer than the 65536 bytes asked for/);
    assert.ok(hostileSent < 64 << 20, `the server sent ${hostileSent} bytes: all it had`);
    assert.equal(found.huge.code, "io", JSON.stringify(found.huge));
    assert.match(found.huge.message, /longer than the 1073741824 bytes a pack served whole may be/);
  });

  test(`${runtime}: a guest writing a byte at a time cannot put more than 4 MiB's worth of writes in flight`, async () => {
    const { found } = await lives(runtime, "a byte at a time");
    assert.equal(found.exitCode, 0, JSON.stringify(found));
    // In flight: more than 4,096 units (a write counts as a KiB at least)
    // makes the next write wait: 4,097 sent, then the guest waits.
    assert.equal(found.before, 4097, "writes handed to stdout before any was called back");
    assert.equal(found.calls, 10_000);
  });
}
