// WASI 0.2 components on PackFS in JavaScript: the project's p2 guests
// (built for wasm32-wasip2 by host/tests/guests.rs, which leaves each
// component, its transcript on PackFS natively and the tree it left, all
// checked against wasmtime-wasi on a real directory, in
// target/guest-tests/browser/p2/) transpiled by jco (pinned in
// package-lock.json) with `--instantiation async`, run through
// packfs-web/preview2 over mem, an overlay over the seed pack's bytes and
// one over the seed pack read lazily from a file: URL. Each must print the
// native transcript, line for line, and leave the native tree, hash for
// hash. Then the randomized scripts of 0.2 calls that
// host/tests/p2_scripts.rs ran natively (p2_script over an overlay of a
// seed pack), each of which must answer here as it did there, call for
// call. Then what the adapter refuses: a capability it does not know, and
// a descriptor of another adapter; what it keeps apart across adapters
// (device numbers); what a failed call leaves held; what a component
// transpiled for JSPI may await; what a stdout callback's throw becomes.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

import { DIR, GUESTS, transpile, transpileOne } from "./jco.mjs";
import { startServer } from "./server.mjs";

const SHIM = new URL("../node_modules/@bytecodealliance/preview2-shim/dist/browser/", import.meta.url);
const DISPOSE = Symbol.dispose ?? Symbol.for("dispose");
let packfs, preview2, out, server;

before(async () => {
  packfs = await import(new URL("../pkg/index.js", import.meta.url).href);
  await packfs.default();
  preview2 = await import(new URL("../pkg/preview2.js", import.meta.url).href);
  out = transpile();
});

after(async () => {
  await server?.close();
});

/** Every path under `fs`'s root, as host/tests/guests.rs writes a tree:
 *  a directory, a symlink and its target, a file and the SHA-256 of its
 *  bytes. */
async function treeOf(fs) {
  const lines = [];
  const walk = async (dir) => {
    for (const e of fs.readdir(dir || "/")) {
      const path = `${dir}/${e.name}`;
      if (e.kind === "dir") {
        lines.push(`${path} Dir`);
        await walk(path);
      } else if (e.kind === "symlink") {
        lines.push(`${path} Symlink(${JSON.stringify(fs.readlink(path))})`);
      } else {
        lines.push(`${path} file ${createHash("sha256").update(await fs.readFile(path)).digest("hex")}`);
      }
    }
  };
  await walk("");
  return lines.sort().join("\n");
}

/** A MemFs holding what `pack` holds. */
function memOf(pack) {
  const fs = new packfs.MemFs();
  const copy = (dir) => {
    for (const e of pack.readdir(dir || "/")) {
      const path = `${dir}/${e.name}`;
      if (e.kind === "dir") {
        fs.mkdir(path);
        copy(path);
      } else if (e.kind === "symlink") fs.symlink(pack.readlink(path), path);
      else fs.writeFileSync(path, pack.readFileSync(path));
    }
  };
  copy("");
  return fs;
}

const seedBytes = () => readFileSync(join(DIR, "seed.pack"));
const BACKENDS = {
  mem: async () => memOf(packfs.Pack.fromBytes(seedBytes())),
  overlay: async () => new packfs.MemFs({ lower: packfs.Pack.fromBytes(seedBytes()) }),
  url: async () => new packfs.MemFs({ lower: await packfs.Pack.fromUrl(pathToFileURL(join(DIR, "seed.pack")).href) }),
};

/** Runs guest `name` with `root` at `/` and the read-only pack at `/ro`. */
async function run(name, root) {
  const ro = packfs.Pack.fromBytes(readFileSync(join(DIR, "ro.pack")));
  const decoder = new TextDecoder();
  let stdout = "";
  let stderr = "";
  const imports = await preview2.wasiImports({
    preopens: [{ path: "/", fs: root }, { path: "/ro", fs: ro }],
    args: [name],
    stdout: (b) => (stdout += decoder.decode(b, { stream: true })),
    stderr: (b) => (stderr += decoder.decode(b, { stream: true })),
  });
  const { instantiate } = await import(pathToFileURL(join(out, name, `${name}.js`)).href);
  const instance = await instantiate(undefined, imports);
  let status = 0;
  try {
    instance.run.run();
  } catch (e) {
    if (!e?.exitError) throw e;
    status = e.code;
  }
  return { status, stdout, stderr };
}

test("the p2 guests are here to run", () => {
  assert.deepEqual(GUESTS, ["dirs", "files", "links", "meta", "readonly", "seeded"]);
});

for (const name of GUESTS) {
  for (const [backend, make] of Object.entries(BACKENDS)) {
    test(`${name} (p2, jco) on ${backend} prints and leaves what it does natively`, async () => {
      const root = await make();
      const { status, stdout, stderr } = await run(name, root);
      assert.equal(status, 0, stderr);
      const want = readFileSync(join(DIR, "p2", `${name}.txt`), "utf8");
      assert.deepEqual(stdout.split("\n"), want.split("\n"));
      assert.equal(await treeOf(root), readFileSync(join(DIR, "p2", `${name}.tree`), "utf8").trim().split("\n").sort().join("\n"));
    });
  }
}

const SCRIPTS = join(DIR, "p2-scripts");
const scripts = readdirSync(SCRIPTS)
  .filter((f) => f.endsWith(".args"))
  .map((f) => Number(f.slice(0, -5)))
  .sort((a, b) => a - b);

test("randomized scripts of 0.2 calls answer through the adapter as natively", async (ctx) => {
  assert.ok(scripts.length >= 40, `${scripts.length} scripts`);
  transpileOne(join(SCRIPTS, "p2_script.wasm"), out, "p2_script");
  const { instantiate } = await import(pathToFileURL(join(out, "p2_script", "p2_script.js")).href);
  const seed = readFileSync(join(SCRIPTS, "seed.pack"));
  let calls = 0;
  for (const n of scripts) {
    const args = readFileSync(join(SCRIPTS, `${n}.args`), "utf8").split("\n").slice(0, -1);
    const decoder = new TextDecoder();
    let stdout = "";
    const imports = await preview2.wasiImports({
      preopens: [{ path: "/", kind: "overlay", bytes: seed }, { path: "/ro", kind: "pack", bytes: seed }],
      args: ["p2_script", ...args],
      stdout: (b) => (stdout += decoder.decode(b, { stream: true })),
    });
    (await instantiate(undefined, imports)).run.run();
    const want = readFileSync(join(SCRIPTS, `${n}.txt`), "utf8").split("\n");
    const got = stdout.split("\n");
    const first = want.findIndex((line, i) => got[i] !== line);
    assert.equal(first, -1, `script ${n}, line ${first}:\n  native: ${want[first]}\n  jco:    ${got[first]}`);
    calls += args.length;
  }
  ctx.diagnostic(`${scripts.length} scripts, ${calls} calls, every answer as native`);
});

test("the adapter refuses what it does not know", async () => {
  const io = await import(new URL("io.js", SHIM).href);
  assert.throws(() => new preview2.PackFsAdapter({}), TypeError);
  const adapter = new preview2.PackFsAdapter(io);
  assert.throws(() => adapter.getRoot({ fs: "/etc" }), TypeError);
  assert.throws(() => adapter.getRoot({ fs: new packfs.MemFs(), readOnly: "yes" }), TypeError);
  const root = adapter.getRoot(new packfs.MemFs());
  const other = new preview2.PackFsAdapter(io).getRoot(new packfs.MemFs());
  root.createDirectoryAt("d");
  assert.throws(() => root.renameAt("d", {}, "e"), (e) => e === "cross-device");
  assert.throws(() => root.renameAt("d", other, "e"), (e) => e === "cross-device", "two filesystems");
  assert.equal(root.isSameObject({}), false);
  // Escapes and trailing slashes as natively.
  assert.throws(() => root.statAt({}, "../x"), (e) => e === "not-permitted");
  assert.throws(() => root.openAt({}, "/etc", {}, { read: true }), (e) => e === "not-permitted");
  root.openAt({}, "f", { create: true }, { read: true, write: true });
  assert.throws(() => root.statAt({}, "f/"), (e) => e === "not-directory");
  // A read-only preopen refuses changes.
  const ro = adapter.getRoot({ fs: new packfs.MemFs(), readOnly: true });
  assert.throws(() => ro.createDirectoryAt("d"), (e) => e === "read-only" || e === "not-permitted");
});

// The shim forwards no drop of a descriptor to its adapter; wasiImports
// has it do so, as jco drops a resource: so a file a component closed is
// closed at once, and an unlinked one gives back its bytes and its quota,
// not whenever the descriptor object is collected. A stream holds its
// descriptor's file open until the stream is dropped too.
test("a component's dropped descriptor closes its file at once; its streams hold it until they drop", async () => {
  const shim = await import(new URL("index.js", SHIM).href);
  const fs = new packfs.MemFs({ maxBytes: 3 << 20 });
  const imports = await preview2.wasiImports({ preopens: { "/": fs }, shim });
  const [[root]] = imports["wasi:filesystem/preopens"].getDirectories();
  const empty = fs.usage().bytes;
  const mib = new Uint8Array(1 << 20).fill(7);
  // Ten times the quota, a file at a time: each is dropped, then unlinked.
  for (let i = 0; i < 20; i++) {
    const f = root.openAt({}, "f", { create: true }, { read: true, write: true });
    f.write(mib, 0n);
    f.write(mib, 1n << 20n);
    f[DISPOSE]?.();
    root.unlinkFileAt("f");
    assert.equal(fs.usage().bytes, empty, `round ${i}: the unlinked file's bytes are given back`);
  }
  // A stream outlives its dropped descriptor, then lets the file go.
  const f = root.openAt({}, "g", { create: true }, { read: true, write: true });
  const out = f.writeViaStream(0n);
  const input = f.readViaStream(0n);
  f[DISPOSE]?.();
  out.blockingWriteAndFlush(mib.subarray(0, 4096));
  assert.deepEqual(input.blockingRead(4n), new Uint8Array(4).fill(7));
  root.unlinkFileAt("g");
  assert.ok(fs.usage().bytes > empty, "two streams hold the unlinked file");
  out[DISPOSE]();
  assert.ok(fs.usage().bytes > empty, "one stream still holds it");
  input[DISPOSE]();
  assert.equal(fs.usage().bytes, empty, "the last stream dropped, the file is gone");
  // The shim hands out one preopen to every get-directories: a component
  // that drops one handle to it still has the others.
  const [[again]] = imports["wasi:filesystem/preopens"].getDirectories();
  again[DISPOSE]?.();
  root.createDirectoryAt("still-here");
  assert.equal(root.statAt({}, "still-here").type, "directory");
});

// Device numbers were each adapter's own, so the first filesystem of every
// adapter was device 1: with one adapter per preopen, as the README shows,
// two different files had one metadata-hash (and is-same-object said they
// differed).
test("two adapters' filesystems have different devices: different files, different metadata-hashes", async () => {
  const io = await import(new URL("io.js", SHIM).href);
  const roots = [new packfs.MemFs(), new packfs.MemFs()].map((fs) => new preview2.PackFsAdapter(io).getRoot(fs));
  for (const root of roots) root.openAt({}, "f", { create: true }, { read: true, write: true });
  const [a, b] = roots;
  assert.notDeepEqual(a.metadataHash(), b.metadataHash(), "the two roots");
  assert.notDeepEqual(a.metadataHashAt({}, "f"), b.metadataHashAt({}, "f"), "the two files");
  assert.equal(a.isSameObject(b), false);
  // One filesystem given to two adapters is one device: one file, one hash.
  const shared = new packfs.MemFs();
  const [c, d] = [0, 1].map(() => new preview2.PackFsAdapter(io).getRoot(shared));
  c.openAt({}, "g", { create: true }, { read: true, write: true });
  assert.deepEqual(c.metadataHashAt({}, "g"), d.metadataHashAt({}, "g"));
  assert.deepEqual(c.metadataHash(), d.metadataHash());
});

// read-directory on a file took its hold on the descriptor before the
// listing failed (not-directory), and never gave it back: the file stayed
// open, and an unlinked one kept its bytes and its quota, until collected.
test("a failed read-directory on a file holds nothing: the file closes when dropped", async () => {
  const shim = await import(new URL("index.js", SHIM).href);
  const fs = new packfs.MemFs({ maxBytes: 3 << 20 });
  const imports = await preview2.wasiImports({ preopens: { "/": fs }, shim });
  const [[root]] = imports["wasi:filesystem/preopens"].getDirectories();
  const empty = fs.usage().bytes;
  const f = root.openAt({}, "f", { create: true }, { read: true, write: true });
  f.write(new Uint8Array(1 << 20).fill(7), 0n);
  assert.throws(() => f.readDirectory(), (e) => e === "not-directory" || e?.payload === "not-directory");
  f[DISPOSE]();
  root.unlinkFileAt("f");
  assert.equal(fs.usage().bytes, empty, "the unlinked file's bytes are given back");
});

// The shim sends input-stream.read (and skip) to a handler's blockingRead
// when it has no read of its own: with JSPI, a promise, to an import not
// among JSPI_IMPORTS, which the component does not await; skip took the
// promise for bytes and failed.
test("with JSPI, each input-stream read or skip over a lazy pack either answers at once or is among JSPI_IMPORTS", async () => {
  const io = await import(new URL("io.js", SHIM).href);
  const bytes = new Uint8Array(300_000).map((_, i) => (i * 13) & 0xff);
  const fs = new packfs.MemFs();
  fs.writeFileSync("big.bin", bytes);
  fs.writeFileSync("tail.txt", "x".repeat(70_000));
  server = await startServer({ files: { "/lazy.pack": Buffer.from(await fs.compact({ compress: "none" })) } });
  const calls = [
    ["read", "input-stream.read", (got) => assert.deepEqual(got, bytes.subarray(0, 4096))],
    ["blockingRead", "input-stream.blocking-read", (got) => assert.deepEqual(got, bytes.subarray(0, 4096))],
    ["skip", "input-stream.skip", (got) => assert.equal(got, 4096n)],
    ["blockingSkip", "input-stream.blocking-skip", (got) => assert.equal(got, 4096n)],
  ];
  let awaited = 0;
  for (const [method, name, check] of calls) {
    // A pack of its own for each: the file's bytes not here yet.
    const pack = await packfs.Pack.fromUrl(`${server.url}/lazy.pack`, { persist: false });
    const root = new preview2.PackFsAdapter(io, { jspi: true }).getRoot(pack);
    const stream = root.openAt({}, "big.bin", {}, { read: true }).readViaStream(0n);
    let got = stream[method](4096n);
    if (got instanceof Promise) {
      assert.ok(preview2.JSPI_IMPORTS.includes(`wasi:io/streams#[method]${name}`), `${name} returned a promise, and is not among JSPI_IMPORTS`);
      got = await got;
      awaited += 1;
    }
    check(got);
  }
  assert.ok(awaited > 0, "some call awaited the pack's bytes");
});

// A stdout callback that threw unwound through the component (a trap, or
// the embedder's own error out of run()); the WASI class gives the guest
// EIO for the same, as a failed stream write.
test("a stdout callback that throws fails the component's write, as a stream error", async () => {
  const shim = await import(new URL("index.js", SHIM).href);
  const imports = await preview2.wasiImports({
    shim,
    stdout: () => {
      throw new Error("the embedder's bug");
    },
  });
  const stdout = imports["wasi:cli/stdout"].getStdout();
  assert.throws(() => stdout.blockingWriteAndFlush(new Uint8Array([104, 105])), (e) => e?.tag === "last-operation-failed");
  // A p2 guest told so says it failed, and exits; nothing unwinds out of run().
  const decoder = new TextDecoder();
  let stderr = "";
  const guest = await preview2.wasiImports({
    preopens: [{ path: "/", fs: new packfs.MemFs() }, { path: "/ro", fs: packfs.Pack.fromBytes(readFileSync(join(DIR, "ro.pack"))) }],
    args: ["files"],
    stdout: () => {
      throw new Error("the embedder's bug");
    },
    stderr: (b) => (stderr += decoder.decode(b, { stream: true })),
  });
  const { instantiate } = await import(pathToFileURL(join(out, "files", "files.js")).href);
  const instance = await instantiate(undefined, guest);
  assert.throws(() => instance.run.run(), (e) => e instanceof WebAssembly.RuntimeError || e?.exitError);
  assert.match(stderr, /failed printing to stdout/);
});

// wasiImports takes the sinks runP1 takes: a Node Writable wrote nothing
// (every write EIO, its TypeError swallowed); an async callback's
// rejection went unhandled. Other values are refused at the call.
test("wasiImports takes runP1's sinks: a Node Writable, a rejecting async callback fails the next write; others refused", async () => {
  const shim = await import(new URL("index.js", SHIM).href);
  const { Writable } = await import("node:stream");
  const hi = new Uint8Array([104, 105]);
  const stdoutOf = async (stdout) => (await preview2.wasiImports({ shim, stdout }))["wasi:cli/stdout"].getStdout();
  let written = "";
  const writable = await stdoutOf(new Writable({ write: (chunk, _enc, done) => ((written += chunk), done()) }));
  writable.blockingWriteAndFlush(hi);
  await new Promise((done) => setImmediate(done));
  assert.equal(written, "hi");
  const unhandled = [];
  const onUnhandled = (e) => unhandled.push(e);
  process.on("unhandledRejection", onUnhandled);
  try {
    const rejecting = await stdoutOf(async () => {
      throw new Error("async sink failed");
    });
    rejecting.blockingWriteAndFlush(hi);
    await new Promise((done) => setImmediate(done));
    assert.throws(() => rejecting.blockingWriteAndFlush(hi), (e) => e?.tag === "last-operation-failed");
  } finally {
    process.off("unhandledRejection", onUnhandled);
  }
  assert.deepEqual(unhandled, []);
  for (const stdout of [{}, new WritableStream(), "out"]) {
    await assert.rejects(preview2.wasiImports({ shim, stdout }), (e) => e instanceof TypeError && /^stdout must be a function or a writable stream/.test(e.message));
  }
});

// A sink whose write answers with a promise of how much it took (Deno's
// stdout, a stream's short writes) gets a component's writes in order: on
// the first fix of review it wrote the second write's bytes before the
// rest of the first ("AAABBBAAABBB\n\n").
test("wasiImports keeps a component's writes in order through a sink that writes a few bytes at a time", async () => {
  const shim = await import(new URL("index.js", SHIM).href);
  let got = "";
  const dec = new TextDecoder();
  const sink = {
    write(b) {
      got += dec.decode(b.subarray(0, 3));
      return new Promise((resolve) => setTimeout(() => resolve(Math.min(3, b.length)), 1));
    },
  };
  const stdout = (await preview2.wasiImports({ shim, stdout: sink }))["wasi:cli/stdout"].getStdout();
  const enc = new TextEncoder();
  for (const line of ["AAAAAA\n", "BBBBBB\n", "CC\n"]) stdout.blockingWriteAndFlush(enc.encode(line));
  for (let i = 0; i < 1000 && got.length < 17; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(got, "AAAAAA\nBBBBBB\nCC\n");
});

// Past what may wait for a slow sink (16 MiB), the write that does not fit
// fails, and nothing already taken is lost: on review, the writes queued
// before the one that overflowed were dropped with everything after.
test("wasiImports delivers every write it took when a slow sink's queue fills", async () => {
  const shim = await import(new URL("index.js", SHIM).href);
  let delivered = 0;
  const sink = {
    write(b) {
      return new Promise((resolve) =>
        setTimeout(() => {
          delivered += b.length;
          resolve(b.length);
        }, 5),
      );
    },
  };
  const stdout = (await preview2.wasiImports({ shim, stdout: sink }))["wasi:cli/stdout"].getStdout();
  const piece = new Uint8Array(1_000_000);
  let accepted = 0;
  let failed = 0;
  for (let i = 0; i < 20; i++) {
    try {
      stdout.checkWrite();
      stdout.write(piece);
      accepted += piece.length;
    } catch {
      failed++;
    }
  }
  assert.ok(failed > 0 && accepted >= 16_000_000, `accepted ${accepted}, failed ${failed}`);
  for (let i = 0; i < 2000 && delivered < accepted; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(delivered, accepted);
});
