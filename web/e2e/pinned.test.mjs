// Packs pinned by their digest (docs/pack-format.md §18), in headless
// Chromium: a pinned URL pack whose bytes were altered on the server fails
// the read of what was altered, never serves it, and reads the rest; a
// pack re-sealed by whoever could write it is refused at open; a guest's
// preopen takes the same pin; identical chunks of packs in two directories
// are kept once in the Origin Private File System, shared by digest.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

import { startServer } from "./server.mjs";
import { launch, newPage, STORAGE_SKIP } from "./browser.mjs";
import { pkgOverride } from "./pkg.mjs";
import { packfs } from "./fixtures.mjs";

const TARGET = fileURLToPath(new URL("../../target/guest-tests/", import.meta.url));
const TOOLBOX = readFileSync(`${TARGET}wasm32-wasip1/release/toolbox.wasm`);
const sha = (b) => createHash("sha256").update(b).digest("hex");

// Around the 128 KiB chunk: one file in chunks of its own, small ones
// sharing one.
const FILES = { big: randomBytes(300_000), small: randomBytes(5000), other: randomBytes(70_000) };
let server, browser, digest, altered;

async function packOf(files) {
  const { MemFs, Pack } = await packfs();
  const fs = new MemFs();
  for (const [name, bytes] of Object.entries(files)) fs.writeFileSync(name, bytes);
  const pack = Buffer.from(await fs.compact({ compress: "zstd", chunkSize: 65536 }));
  return { pack, digest: Pack.fromBytes(pack).digest };
}

before(async () => {
  const good = await packOf(FILES);
  digest = good.digest;
  assert.match(digest, /^blake3:[0-9a-f]{64}$/);
  // One byte of big's bytes flipped on the server (the index untouched, so
  // the pack digest is the same: the chunk's digest catches it).
  const bad = Buffer.from(good.pack);
  altered = bad.indexOf(FILES.big.subarray(100_000, 100_064));
  assert.ok(altered > 0, "big is stored raw: its bytes are in the pack as they are");
  bad[altered + 7] ^= 0x40;
  // And a pack written again with other content, every check in it sound.
  const forged = await packOf({ ...FILES, small: Buffer.from("forged ".repeat(700)) });
  const a = await packOf({ big: FILES.big, one: randomBytes(10) });
  const b = await packOf({ big: FILES.big, two: randomBytes(20) });
  server = await startServer({
    files: {
      "/fixtures/good.pack": good.pack,
      "/fixtures/altered.pack": bad,
      "/fixtures/forged.pack": forged.pack,
      "/a/p.pack": a.pack,
      "/b/p.pack": b.pack,
      "/guests/toolbox.wasm": TOOLBOX,
      ...pkgOverride(),
    },
  });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

test("a pinned pack altered on the server never serves the altered chunk", async () => {
  const { page, errors } = await newPage(browser);
  await page.goto(`${server.url}/www/`);
  await page.waitForSelector("body[data-ready=true]");
  const r = await page.evaluate(async (digest) => {
    const { Pack } = await import("/pkg/packfs_web.js");
    const hex = async (b) => Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", b)), (x) => x.toString(16).padStart(2, "0")).join("");
    const attempt = async (f) => {
      try {
        return { ok: await hex(await f()) };
      } catch (e) {
        return { code: e.code, message: String(e.message) };
      }
    };
    const opts = { digest, persist: false };
    const good = await Pack.fromUrl("/fixtures/good.pack", opts);
    const altered = await Pack.fromUrl("/fixtures/altered.pack", opts);
    const unpinned = await Pack.fromUrl("/fixtures/altered.pack", { persist: false });
    const open = async (url, o) => {
      try {
        await Pack.fromUrl(url, o);
        return "opened";
      } catch (e) {
        return `${e.code}: ${e.message}`;
      }
    };
    return {
      digests: [good.digest, altered.digest],
      good: { big: await attempt(() => good.readFile("big")), small: await attempt(() => good.readFile("small")) },
      altered: {
        big: await attempt(() => altered.readFile("big")),
        again: await attempt(() => altered.readFile("big")),
        small: await attempt(() => altered.readFile("small")),
        other: await attempt(() => altered.readFile("other")),
      },
      unpinned: await attempt(() => unpinned.readFile("big")),
      forged: await open("/fixtures/forged.pack", opts),
      forgedUnpinned: await open("/fixtures/forged.pack", {}),
      badDigest: await open("/fixtures/good.pack", { digest: "blake3:00" }),
      wrongType: await open("/fixtures/good.pack", { digest: 7 }),
    };
  }, digest);
  assert.deepEqual(errors, []);
  assert.deepEqual(r.digests, [digest, digest], "the index is the same: so is the digest");
  assert.deepEqual(r.good, { big: { ok: sha(FILES.big) }, small: { ok: sha(FILES.small) } });
  for (const k of ["big", "again"]) {
    assert.equal(r.altered[k].code, "io", JSON.stringify(r.altered));
    assert.match(r.altered[k].message, /digest|checksum/, JSON.stringify(r.altered[k]));
  }
  assert.deepEqual(r.altered.small, { ok: sha(FILES.small) });
  assert.deepEqual(r.altered.other, { ok: sha(FILES.other) });
  assert.equal(r.unpinned.code, "io", "unpinned, the checksum catches plain damage too");
  assert.match(r.forged, /^io: .*not the pinned pack/, r.forged);
  assert.equal(r.forgedUnpinned, "opened", "unpinned, a sound forgery opens: only a pin can tell");
  assert.match(r.badDigest, /^invalid: .*not a digest/, r.badDigest);
  assert.match(r.wrongType, /digest must be a string/, r.wrongType);
});

test("a guest's pack preopen takes the pin", async () => {
  const { page, errors } = await newPage(browser);
  await page.goto(`${server.url}/www/`);
  await page.waitForSelector("body[data-ready=true]");
  const r = await page.evaluate(async (digest) => {
    const { runP1 } = await import("/pkg/runner.js");
    const module = new Uint8Array(await (await fetch("/guests/toolbox.wasm")).arrayBuffer());
    const hex = async (b) => Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", b)), (x) => x.toString(16).padStart(2, "0")).join("");
    const run = async (url, pack, args) => {
      const parts = [];
      let err = "";
      try {
        const r = await runP1(module, {
          args: ["toolbox", ...args],
          preopens: [{ path: "/p", kind: "pack", url, pack }],
          stdout: (b) => parts.push(b),
          stderr: (b) => (err += new TextDecoder().decode(b)),
        });
        const all = new Uint8Array(parts.reduce((n, b) => n + b.length, 0));
        parts.reduce((at, b) => (all.set(b, at), at + b.length), 0);
        return { exitCode: r.exitCode, out: all.length, sha: await hex(all), err };
      } catch (e) {
        return { kind: e.kind, name: e.name, message: String(e.message) };
      }
    };
    const alone = { digest, persist: false };
    return {
      altered: await run("/fixtures/altered.pack", alone, ["cat", "/p/big"]),
      alteredSmall: await run("/fixtures/altered.pack", alone, ["cat", "/p/small"]),
      good: await run("/fixtures/good.pack", { digest }, ["cat", "/p/big", "cat", "/p/small"]),
      // The genuine chunks kept by digest: the altered server's are not
      // needed, nor used.
      alteredKept: await run("/fixtures/altered.pack", { digest }, ["cat", "/p/big"]),
      forged: await run("/fixtures/forged.pack", { digest }, ["ls", "/p"]),
      badDigest: await run("/fixtures/good.pack", { digest: "sha256:00" }, ["ls", "/p"]),
    };
  }, digest);
  assert.deepEqual(errors, []);
  const both = Buffer.concat([FILES.big, FILES.small]);
  assert.deepEqual(r.good, { exitCode: 0, out: both.length, sha: sha(both), err: "" });
  assert.notEqual(r.altered.exitCode, 0, JSON.stringify(r.altered));
  assert.ok(r.altered.out < 200_000, "the altered chunk's bytes never reached the guest");
  assert.equal(r.altered.sha, sha(FILES.big.subarray(0, r.altered.out)), "what it printed is the genuine bytes");
  assert.deepEqual(r.alteredSmall, { exitCode: 0, out: FILES.small.length, sha: sha(FILES.small), err: "" });
  if (!STORAGE_SKIP) assert.deepEqual(r.alteredKept, { exitCode: 0, out: FILES.big.length, sha: sha(FILES.big), err: "" });
  // With no store to have kept them, the altered chunk is refused again.
  else assert.equal(r.alteredKept.sha, sha(FILES.big.subarray(0, r.alteredKept.out)), JSON.stringify(r.alteredKept));
  assert.equal(r.forged.kind, "preopen", JSON.stringify(r.forged));
  assert.match(r.forged.message, /not the pinned pack/);
  assert.equal(r.badDigest.name, "TypeError", JSON.stringify(r.badDigest));
  assert.match(r.badDigest.message, /pack\.digest must be blake3: and 64 hex digits/);
});

test("a chunk two directories' packs share is kept once, by digest", { skip: STORAGE_SKIP }, async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${server.url}/www/`);
  await page.waitForSelector("body[data-ready=true]");
  const r = await page.evaluate(async () => {
    const { runP1 } = await import("/pkg/runner.js");
    const module = new Uint8Array(await (await fetch("/guests/toolbox.wasm")).arrayBuffer());
    const run = async (url) => {
      const r = await runP1(module, { args: ["toolbox", "cat", "/p/big"], preopens: [{ path: "/p", kind: "pack", url }], stdout: () => {} });
      return { exitCode: r.exitCode, bytesFetched: r.bytesFetched };
    };
    const open = async (url) => {
      const r = await runP1(module, { args: ["toolbox", "ls", "/p"], preopens: [{ path: "/p", kind: "pack", url }], stdout: () => {} });
      return r.bytesFetched;
    };
    return { a: await run("/a/p.pack"), openB: await open("/b/p.pack"), b: await run("/b/p.pack") };
  });
  await context.close();
  assert.equal(r.a.exitCode, 0);
  assert.ok(r.a.bytesFetched > 300_000, JSON.stringify(r));
  assert.equal(r.b.exitCode, 0);
  assert.equal(r.b.bytesFetched, r.openB, `the other directory's pack read big from the store: ${JSON.stringify(r)}`);
});
