// packfs-web's API, runner and WASI class in a JavaScript runtime without a
// page: run by e2e/runtimes.test.mjs in Node, Deno and Bun, each its own
// process (`node suite.mjs`, `deno run -A suite.mjs`, `bun suite.mjs`),
// with the test server's address in PACKFS_SERVER. Uses only what all
// three have: node:assert, node:fs, node:stream, node:crypto. Prints a
// line per case ("ok - NAME" or "not ok - NAME" and the failure) and
// exits 1 if any failed.

import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL, fileURLToPath } from "node:url";
import { Readable, Writable } from "node:stream";

const PKG = new URL("../../pkg/", import.meta.url);
const TARGET = fileURLToPath(new URL("../../../target/guest-tests/", import.meta.url));
const SERVER = process.env.PACKFS_SERVER;
const { default: init, MemFs, Pack } = await import(new URL("index.js", PKG).href);
const { runP1, createRunner, RunError } = await import(new URL("runner.js", PKG).href);
const { WASI } = await import(new URL("wasi.js", PKG).href);
// With nothing given, init finds its wasm by itself (read from disk).
const exported = await init();

const RUST = ["files", "dirs", "links", "meta", "readonly", "seeded"];
const C = ["c_stdio", "c_dirs"];
const guest = (name) => readFileSync(C.includes(name) ? `${TARGET}c/${name}.wasm` : `${TARGET}wasm32-wasip1/release/${name}.wasm`);
const transcript = (name) => readFileSync(`${TARGET}browser/${name}.txt`, "utf8");
const SEED = readFileSync(`${TARGET}browser/seed.pack`);
const RO = readFileSync(`${TARGET}browser/ro.pack`);
const TOOLBOX = guest("toolbox");
const sha = (b) => createHash("sha256").update(b).digest("hex");
const text = (chunks) => Buffer.concat(chunks).toString("utf8");

// (module (memory (export "memory") 1) (func (export "_start") unreachable))
const TRAP = new Uint8Array([0,97,115,109,1,0,0,0,1,4,1,96,0,0,3,2,1,0,5,3,1,0,1,7,19,2,6,109,101,109,111,114,121,2,0,6,95,115,116,97,114,116,0,0,10,5,1,3,0,0,11]);
// (module (import "wasi_snapshot_preview1" "proc_exit" (func (param i32)))
//   (memory (export "memory") 1) (func (export "_start") (call 0 (i32.const 42))))
const EXIT42 = new Uint8Array([0,97,115,109,1,0,0,0,1,8,2,96,1,127,0,96,0,0,2,36,1,22,119,97,115,105,
  95,115,110,97,112,115,104,111,116,95,112,114,101,118,105,101,119,49,9,112,114,111,99,95,101,120,105,
  116,0,0,3,2,1,1,5,3,1,0,1,7,19,2,6,109,101,109,111,114,121,2,0,6,95,115,116,97,114,116,0,1,10,8,1,
  6,0,65,42,16,0,11]);

const cases = [];
const test = (name, f) => cases.push([name, f]);

/** Runs `module` with `options`, stdout and stderr gathered. */
async function run(module, options = {}, runner = null) {
  const out = [], err = [];
  const r = await (runner ? runner.run(module, { stdout: (b) => out.push(b), stderr: (b) => err.push(b), ...options })
    : runP1(module, { stdout: (b) => out.push(b), stderr: (b) => err.push(b), ...options }));
  return { ...r, stdout: text(out), stderr: text(err), out: Buffer.concat(out) };
}

/** A pack of `n` files of `size` incompressible bytes each, `/f/<i>.bin`,
 *  and the files' bytes. */
async function bigPack(n, size) {
  const fs = new MemFs();
  fs.mkdir("f");
  const files = [];
  let x = 0x9e3779b9;
  for (let i = 0; i < n; i++) {
    const b = new Uint8Array(size);
    for (let k = 0; k < size; k++) {
      x ^= x << 13; x ^= x >>> 17; x ^= x << 5;
      b[k] = x & 0xff;
    }
    fs.writeFileSync(`f/${i}.bin`, b);
    files.push(b);
  }
  return { pack: await fs.compact({ compress: "none" }), files };
}

const scratch = mkdtempSync(join(tmpdir(), "packfs-runtime-"));

test("init() found its wasm by itself, once: the classes work", async () => {
  assert.equal(await init(), exported);
  const fs = new MemFs();
  fs.writeFileSync("a.txt", "hello");
  const pack = Pack.fromBytes(await fs.compact());
  assert.equal(new TextDecoder().decode(await pack.readFile("a.txt")), "hello");
});

for (const name of [...RUST, ...C]) {
  test(`runP1: ${name} prints over lazy URL packs what it printed natively`, async () => {
    const r = await run(guest(name), {
      args: [name],
      preopens: [
        { path: "/", kind: "overlay", url: `${SERVER}/fixtures/seed.pack` },
        { path: "/ro", kind: "pack", url: `${SERVER}/fixtures/ro.pack` },
      ],
    });
    assert.equal(r.exitCode, 0, r.stderr);
    assert.equal(r.stdout, transcript(name));
  });
}

const big = await bigPack(24, 200_000);
const bigFile = join(scratch, "big.pack");
writeFileSync(bigFile, big.pack);

for (const [what, url, baseUrl] of [
  ["an absolute file: URL", pathToFileURL(bigFile).href, undefined],
  ["a relative URL and baseUrl", "big.pack", pathToFileURL(`${scratch}/`).href],
]) {
  test(`runP1: a local pack file by ${what} is read lazily from disk, its bytes whole`, async () => {
    const r = await run(TOOLBOX, { args: ["toolbox", "cat", "/f/7.bin"], preopens: [{ path: "/", kind: "pack", url }], baseUrl });
    assert.equal(r.exitCode, 0, r.stderr);
    assert.equal(sha(r.out), sha(big.files[7]));
    assert.ok(r.bytesFetched < big.pack.length / 4, `${r.bytesFetched} of ${big.pack.length} bytes read`);
  });
}

test("runP1: a file of a large URL pack arrives whole, through the page's fetch", async () => {
  const r = await run(TOOLBOX, { args: ["toolbox", "cat", "/f/3.bin", "cat", "/f/23.bin"], preopens: [{ path: "/", kind: "pack", url: `${SERVER}/big.pack` }] });
  assert.equal(r.exitCode, 0, r.stderr);
  assert.equal(sha(r.out), sha(Buffer.concat([big.files[3], big.files[23]])));
  assert.ok(r.bytesFetched < big.pack.length / 4, `${r.bytesFetched} of ${big.pack.length} bytes fetched`);
});

test("runP1: a server answering a range with more than the pack holds fails the read (EIO), not the host", async () => {
  const r = await run(TOOLBOX, { args: ["toolbox", "cat", "/f/3.bin"], preopens: [{ path: "/", kind: "pack", url: `${process.env.PACKFS_FLOOD}/flood/big.pack` }] });
  assert.notEqual(r.exitCode, 0);
  // errno 29: EIO.
  assert.match(r.stderr, /^toolbox: cat \/f\/3.bin: .*errno 29/);
});

test("runP1: stdin from a Node Readable, stdout into a Node Writable", async () => {
  const written = [];
  const stdout = new Writable({ write(chunk, _enc, done) { written.push(Buffer.from(chunk)); setTimeout(done, 1); } });
  const r = await runP1(TOOLBOX, { args: ["toolbox", "lines"], stdin: Readable.from(["one\ntw", "o\nthree\n"]), stdout });
  assert.equal(r.exitCode, 0);
  assert.equal(text(written), "> one\n> two\n> three\n");
});

test("runP1: exit status, a trap, a module that does not compile, a timeout and an abort, each its kind", async () => {
  assert.equal((await runP1(EXIT42)).exitCode, 42);
  const kind = (p) => p.then(() => "resolved", (e) => (e instanceof RunError ? e.kind : `${e}`));
  assert.equal(await kind(runP1(TRAP)), "trap");
  assert.equal(await kind(runP1(new Uint8Array([0, 97, 115, 109, 9]))), "module");
  // A stdin that never answers: only the timeout ends it.
  assert.equal(await kind(runP1(TOOLBOX, { args: ["toolbox", "lines"], stdin: () => new Promise(() => {}), timeout: 300 })), "timeout");
  const ac = new AbortController();
  setTimeout(() => ac.abort(new Error("enough")), 200);
  assert.equal(await kind(runP1(TOOLBOX, { args: ["toolbox", "lines"], stdin: () => new Promise(() => {}), signal: ac.signal })), "aborted");
});

test("createRunner: a warm runner runs again, each run clean, after a trap too", async () => {
  const runner = createRunner();
  try {
    const a = await run(TOOLBOX, { args: ["toolbox", "write", "/x", "1", "cat", "/x"], preopens: [{ path: "/", kind: "mem" }] }, runner);
    assert.equal(a.stdout, "1");
    await assert.rejects(runner.run(TRAP), (e) => e.kind === "trap");
    const b = await run(TOOLBOX, { args: ["toolbox", "ls", "/"], preopens: [{ path: "/", kind: "mem" }] }, runner);
    assert.equal(b.stdout, "");
  } finally {
    runner.close();
  }
});

test("runP1: options are checked as in a browser", async () => {
  await assert.rejects(runP1(TOOLBOX, { preopens: [{ path: "/", kind: "pack" }] }), TypeError);
  await assert.rejects(runP1(TOOLBOX, { stdout: 5 }), /stdout must be a function or a writable stream/);
  await assert.rejects(runP1(TOOLBOX, { preopens: [{ path: "/", kind: "pack", url: "http://[" }] }), /is not a URL/);
});

test("WASI: node:wasi's shape over PackFS trees, on this thread: the files guest as natively", async () => {
  await init();
  const out = [];
  const wasi = new WASI({
    version: "preview1",
    args: ["files"],
    env: {},
    preopens: [{ path: "/", fs: new MemFs({ lower: Pack.fromBytes(SEED) }) }, { path: "/ro", fs: Pack.fromBytes(RO) }],
    stdout: (b) => out.push(Buffer.from(b)),
    stderr: () => {},
  });
  const { instance } = await WebAssembly.instantiate(guest("files"), wasi.getImportObject());
  assert.equal(wasi.start(instance), 0);
  assert.equal(text(out), transcript("files"));
  assert.throws(() => wasi.start(instance), /already started/);
  assert.equal(typeof wasi.wasiImport.fd_write, "function");
});

test("WASI: one preopen shape: a tree described, node:wasi's object kept; what cannot be, refused by name", async () => {
  await init();
  const run = (preopens) => {
    const out = [];
    const wasi = new WASI({ version: "preview1", args: ["files"], preopens, stdout: (b) => out.push(Buffer.from(b)), stderr: () => {} });
    return WebAssembly.instantiate(guest("files"), wasi.getImportObject()).then(({ instance }) => [wasi.start(instance), text(out)]);
  };
  // Described (the runner's shape), and node:wasi's object of trees (deprecated): the same transcript.
  const described = [{ path: "/", kind: "overlay", bytes: SEED }, { path: "/ro", kind: "pack", bytes: new Uint8Array(RO).buffer }];
  assert.deepEqual(await run(described), [0, transcript("files")]);
  assert.deepEqual(await run({ "/": new MemFs({ lower: Pack.fromBytes(SEED) }), "/ro": Pack.fromBytes(RO) }), [0, transcript("files")]);
  const refused = [
    [[{ path: "/", kind: "pack", url: "file:///x.pack" }], /opens asynchronously/],
    [[{ path: "/", kind: "journal", name: "j" }], /opens asynchronously/],
    [[{ path: "/", kind: "mem", save: true }], /save is the runner's/],
    [[{ path: "/", fs: new MemFs(), kind: "mem" }], /not both/],
    [[{ path: "/", fs: new MemFs() }, { path: "/", fs: new MemFs() }], /no other preopen has/],
    [[{ path: "/", fs: {} }], /preopens\[0\]\.fs must be a MemFs, a Pack or an Overlay/],
    ["/", /preopens must be an array/],
  ];
  for (const [preopens, message] of refused) assert.throws(() => new WASI({ preopens }), (e) => e instanceof TypeError && message.test(e.message));
  // Found by review: each field is read once (a getter cannot pass the
  // checks as one thing and reach the worker as another); a hole is an
  // entry refused; only a plain object is the older shape, whose values
  // name no path; relative names (node:wasi's ".") are taken everywhere.
  let reads = 0;
  const shifty = { path: "/", get kind() { return reads++ === 0 ? "mem" : "journal"; } };
  const shiftyRun = await runP1(TOOLBOX, { args: ["toolbox", "ls", "/"], preopens: [shifty] });
  assert.equal(shiftyRun.exitCode, 0);
  assert.equal(reads, 1);
  const holes = [, { path: "/", fs: new MemFs() }];
  assert.throws(() => new WASI({ preopens: holes }), /preopens\[0\] must be an object, not undefined/);
  await assert.rejects(runP1(TOOLBOX, { preopens: [{ path: "/", kind: "mem" }, ,] }), /preopens\[1\] must be an object/);
  assert.throws(() => new WASI({ preopens: new Map([["/", new MemFs()]]) }), /preopens must be an array/);
  assert.throws(() => new WASI({ preopens: { "/a": { fs: new MemFs(), path: "/b" } } }), /has no option "path"/);
  assert.deepEqual(await run({ ".": new MemFs({ lower: Pack.fromBytes(SEED) }), "/ro": Pack.fromBytes(RO) }).then(([s]) => s), 0);
  assert.throws(() => new MemFs({ lowr: Pack.fromBytes(SEED) }), /has no option "lowr"/);
  assert.throws(() => new WASI({ preopens: [{ path: "/", kind: "pack", bytes: SEED, pack: { persist: true } }] }), /for a pack by url, not bytes/);
  // Found by the second review: options inherited from a prototype are
  // read (as Rust reads them), once: a pin is held, a quota kept.
  const wrong = "blake3:" + "0".repeat(64);
  assert.throws(() => new WASI({ preopens: [{ path: "/", kind: "pack", bytes: SEED, pack: Object.create({ digest: wrong }) }] }), /pinned/);
  const small = [{ path: "/", kind: "mem", options: Object.create({ maxBytes: 10 }) }];
  const quota = await runP1(TOOLBOX, { args: ["toolbox", "write", "/f", "x".repeat(100)], preopens: small });
  assert.notEqual(quota.exitCode, 0, "a write past the inherited maxBytes was taken");
  assert.throws(() => new MemFs(Object.create({ lowr: Pack.fromBytes(SEED) })), /options must be a plain object/);
  let timeoutReads = 0;
  const reread = { args: ["toolbox", "ls", "/"], preopens: [{ path: "/", kind: "mem" }], get timeout() { return timeoutReads++ === 0 ? 60_000 : "soon"; } };
  assert.equal((await runP1(TOOLBOX, reread)).exitCode, 0);
  assert.equal(timeoutReads, 1);
  const sparse = [];
  sparse.length = 1e8;
  assert.throws(() => new WASI({ preopens: sparse }), /at most 4096 preopens/);
  // A tree at hand cannot cross to the runner's worker: said so at the call.
  await assert.rejects(runP1(TOOLBOX, { preopens: [{ path: "/", fs: new MemFs() }] }), /cannot cross to the runner's worker/);
});

test("WASI: proc_exit's status is start's result; wrong options are TypeErrors", async () => {
  await init();
  const wasi = new WASI({ version: "preview1" });
  const { instance } = await WebAssembly.instantiate(EXIT42, wasi.getImportObject());
  assert.equal(wasi.start(instance), 42);
  assert.throws(() => new WASI({ preopens: { "/": "/etc" } }), /host path/);
  assert.throws(() => new WASI({ version: "unstable" }), TypeError);
  assert.throws(() => new WASI({ stdout: "x" }), TypeError);
  assert.throws(() => new WASI({ nope: 1 }), /no option "nope"/);
  const reactor = new WASI();
  assert.throws(() => reactor.initialize(instance), /_start/);
});

test("WASI: a local pack file opened by URL on this thread is read lazily, and a changed file is refused", async () => {
  await init();
  const file = join(scratch, "changing.pack");
  writeFileSync(file, big.pack);
  const pack = await Pack.fromUrl(pathToFileURL(file).href);
  const out = [];
  const wasi = new WASI({ args: ["toolbox", "cat", "/f/5.bin"], preopens: { "/": pack }, stdout: (b) => out.push(Buffer.from(b)) });
  const { instance } = await WebAssembly.instantiate(TOOLBOX, wasi.getImportObject());
  assert.equal(wasi.start(instance), 0);
  assert.equal(sha(Buffer.concat(out)), sha(big.files[5]));
  assert.ok(pack.bytesFetched < big.pack.length / 4, `${pack.bytesFetched} bytes read`);
  // Rewritten in place: the next read sees another file, and refuses it.
  writeFileSync(file, (await bigPack(24, 200_001)).pack);
  await assert.rejects(pack.readFile("f/9.bin"), /changed/);
});

test("WASI: preopen paths, args and env are checked as Preview1 checks them", async () => {
  for (const path of ["../x", "/a/../b", "/a\0b", ""]) {
    assert.throws(() => new WASI({ preopens: { [path]: new MemFs() } }), TypeError, JSON.stringify(path));
  }
  assert.throws(() => new WASI({ args: ["a\0b"] }), TypeError);
  assert.throws(() => new WASI({ env: { "A=B": "c" } }), TypeError);
});

// Last: it replaces this thread's transport.
test("a blocking transport that answers nonsense, throws or lies is an io error, never a pack", async () => {
  const refused = async (get, pattern) => {
    Pack.setBlockingGet(get);
    await assert.rejects(Pack.fromUrl(pathToFileURL(bigFile).href), (e) => e.code === "io" && pattern.test(e.message));
  };
  await refused(() => ({ status: "200", body: "x" }), /status is not an HTTP status/);
  await refused(() => ({ status: 206, body: [1, 2] }), /body is not a Uint8Array/);
  await refused(() => { throw new Error("no disk"); }, /no disk/);
  await refused(() => ({ status: 206, contentRange: "bytes 0-3/10", body: new Uint8Array(4) }), /corrupt pack|truncated/);
  assert.throws(() => Pack.setBlockingGet(5), TypeError);
});

let failed = 0;
for (const [name, f] of cases) {
  try {
    await f();
    console.log(`ok - ${name}`);
  } catch (e) {
    failed += 1;
    console.log(`not ok - ${name}\n${e?.stack ?? e}`);
  }
}
rmSync(scratch, { recursive: true, force: true });
process.exit(failed ? 1 : 0);
