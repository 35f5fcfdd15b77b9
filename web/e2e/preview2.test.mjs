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
// a descriptor of another adapter.

import { test, before } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

import { DIR, GUESTS, transpile, transpileOne } from "./jco.mjs";

let packfs, preview2, out;

before(async () => {
  packfs = await import(new URL("../pkg/index.js", import.meta.url).href);
  await packfs.default();
  preview2 = await import(new URL("../pkg/preview2.js", import.meta.url).href);
  out = transpile();
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
  overlay: async () => new packfs.Overlay(packfs.Pack.fromBytes(seedBytes())),
  url: async () => new packfs.Overlay(await packfs.Pack.fromUrl(pathToFileURL(join(DIR, "seed.pack")).href)),
};

/** Runs guest `name` with `root` at `/` and the read-only pack at `/ro`. */
async function run(name, root) {
  const ro = packfs.Pack.fromBytes(readFileSync(join(DIR, "ro.pack")));
  const decoder = new TextDecoder();
  let stdout = "";
  let stderr = "";
  const imports = await preview2.wasiImports({
    preopens: { "/": root, "/ro": ro },
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
      preopens: { "/": new packfs.Overlay(packfs.Pack.fromBytes(seed)), "/ro": packfs.Pack.fromBytes(seed) },
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
  const io = await import(new URL("../node_modules/@bytecodealliance/preview2-shim/dist/browser/io.js", import.meta.url).href);
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
  const shim = await import(new URL("../node_modules/@bytecodealliance/preview2-shim/dist/browser/index.js", import.meta.url).href);
  const DISPOSE = Symbol.dispose ?? Symbol.for("dispose");
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
