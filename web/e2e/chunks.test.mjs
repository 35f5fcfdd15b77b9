// Chunks of a lazy pack that a guest reads in a Worker persist in the
// Origin Private File System, in headless Chromium: the second page load
// of the same guest over the same pack fetches only the open's bytes; a
// damaged entry is refetched and the guest still reads every right byte;
// the store stays within its `cacheSize`, and gives its space back to a
// journal's write; a second worker while the first holds the store reads
// right from a store of its own.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

import { startServer } from "./server.mjs";
import { launch, QUOTA_SKIP, STORAGE_SKIP } from "./browser.mjs";
import { pkgOverride } from "./pkg.mjs";
import { packfs } from "./fixtures.mjs";

const TARGET = fileURLToPath(new URL("../../target/guest-tests/", import.meta.url));
const TOOLBOX = readFileSync(`${TARGET}wasm32-wasip1/release/toolbox.wasm`);

// Files around the 128 KiB chunk and 64 KiB copy sizes, incompressible, in
// a zstd pack: 1.2 MB of chunks.
const SIZES = [1, 4095, 65536, 65537, 131071, 131072, 131073, 262144 + 9, 300_000, 200_000];
const FILES = Object.fromEntries(SIZES.map((n, i) => [`f${i}`, randomBytes(n)]));
const PATH = "/fixtures/chunks.pack";
const sha = (b) => createHash("sha256").update(b).digest("hex");
const ALL = sha(Buffer.concat(Object.values(FILES)));

const CAT = Object.keys(FILES).flatMap((n) => ["cat", `/p/${n}`]);

let server, browser;

before(async () => {
  const { MemFs } = await packfs();
  const fs = new MemFs();
  for (const [name, bytes] of Object.entries(FILES)) fs.writeFileSync(name, bytes);
  const pack = Buffer.from(await fs.compact({ compress: "zstd" }));
  server = await startServer({ files: { [PATH]: pack, "/guests/toolbox.wasm": TOOLBOX, ...pkgOverride() } });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/** In a new tab of `context`: runs `script(run)` where `run(args, pack)`
 *  runs the toolbox over the pack at /p (`pack`: its preopen options),
 *  resolving to `{ exitCode, sha, bytesFetched, requests }`, and `cat`
 *  the arguments that print every file. */
async function inTab(context, script, arg) {
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e));
  await page.goto(`${server.url}/www/`);
  const r = await page.evaluate(
    async ({ script, url, cat, arg }) => {
      const { runP1, createRunner } = await import("/pkg/runner.js");
      const module = new Uint8Array(await (await fetch("/guests/toolbox.wasm")).arrayBuffer());
      const hex = async (b) => Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", b)), (x) => x.toString(16).padStart(2, "0")).join("");
      const run = async (args, pack, runner) => {
        const parts = [];
        let err = "";
        const r = await (runner ?? { run: runP1 }).run(module, {
          args: ["toolbox", ...args],
          preopens: [{ path: "/p", kind: "pack", url, pack }],
          stdout: (b) => parts.push(b),
          stderr: (b) => (err += new TextDecoder().decode(b)),
        });
        const all = new Uint8Array(parts.reduce((n, b) => n + b.length, 0));
        parts.reduce((at, b) => (all.set(b, at), at + b.length), 0);
        return { exitCode: r.exitCode, err, sha: await hex(all), bytesFetched: r.bytesFetched, requests: r.requests };
      };
      const helpers = { run, createRunner, module, url, cat, arg };
      return new Function("h", `return (${script})(h)`)(helpers);
    },
    { script: script.toString(), url: PATH, cat: CAT, arg },
  );
  await page.close();
  assert.deepEqual(errors, []);
  return r;
}


/** The OPFS store's files: name → bytes (a page's view). */
async function storeFiles(context, edit) {
  const page = await context.newPage();
  await page.goto(`${server.url}/www/`);
  const sizes = await page.evaluate(async (edit) => {
    const dir = await (await (await navigator.storage.getDirectory()).getDirectoryHandle("packfs")).getDirectoryHandle("cache");
    const out = {};
    for (const name of ["0.bin", "1.bin"]) {
      const file = await dir.getFileHandle(name);
      let bytes = new Uint8Array(await (await file.getFile()).arrayBuffer());
      if (edit) {
        bytes = new Function("b", `return (${edit})(b)`)(bytes);
        const w = await file.createWritable();
        await w.write(bytes);
        await w.close();
      }
      out[name] = bytes.length;
    }
    return out;
  }, edit?.toString());
  await page.close();
  return sizes;
}

test("a second page load fetches only the open's bytes; a damaged entry is refetched", { skip: STORAGE_SKIP }, async () => {
  const context = await browser.newContext();
  const opening = await inTab(context, ({ run }) => run(["ls", "/p"]));
  assert.equal(opening.exitCode, 0);
  const first = await inTab(context, ({ run, cat }) => run(cat));
  assert.equal(first.exitCode, 0, first.err);
  assert.equal(first.sha, ALL, "every byte");
  assert.ok(first.bytesFetched > opening.bytesFetched + 1_000_000, `${first.bytesFetched} fetched`);

  const second = await inTab(context, ({ run, cat }) => run(cat));
  assert.equal(second.sha, ALL);
  assert.equal(second.bytesFetched, opening.bytesFetched, "only the open");
  assert.equal(second.requests, opening.requests);

  // One byte of the first entry's extent (after the file's 16-byte header
  // and the entry's 40), in whichever generation holds it.
  const sizes = await storeFiles(context, (b) => {
    if (b.length > 64) b[16 + 40 + 5] ^= 0xff;
    return b;
  });
  assert.ok(sizes["0.bin"] + sizes["1.bin"] > 1_000_000, JSON.stringify(sizes));
  const third = await inTab(context, ({ run, cat }) => run(cat));
  assert.equal(third.sha, ALL, "the damaged entry is not served");
  assert.ok(third.bytesFetched > opening.bytesFetched, "it is refetched");
  assert.ok(third.bytesFetched <= opening.bytesFetched + 2 * 131072, `${third.bytesFetched}: only that one`);
  const fourth = await inTab(context, ({ run, cat }) => run(cat));
  assert.equal(fourth.bytesFetched, opening.bytesFetched, "and kept again");
  await context.close();
});

// The bound was applied only when the store was first made: a later
// load's smaller cacheSize (0 included) went on serving from a store of
// the earlier one's size.
test("the store stays within its cacheSize, whatever an earlier load kept, evicting the oldest", { skip: STORAGE_SKIP }, async () => {
  const context = await browser.newContext();
  const first = await inTab(context, ({ run, cat }) => run(cat));
  assert.equal(first.sha, ALL);
  const total = (s) => s["0.bin"] + s["1.bin"];
  const kept = total(await storeFiles(context));
  assert.ok(kept > 1_000_000, `the default bound keeps every chunk: ${kept} bytes`);
  for (const bound of [400_000, 400_000, 0]) {
    const r = await inTab(context, ({ run, cat, arg }) => run(cat, { cacheSize: arg }), bound);
    assert.equal(r.sha, ALL);
    const sizes = await storeFiles(context);
    assert.ok(total(sizes) <= Math.max(bound, 32), `cacheSize ${bound}: ${JSON.stringify(sizes)}`);
    if (bound > 0) assert.ok(total(sizes) > 131072, "it keeps some");
  }
  await context.close();
});

// On a page the chunks go to the Cache API, which had no bound at all:
// cacheSize 100,000 kept every chunk of a 4 MiB pack.
test("on a page, the Cache API store stays within its cacheSize", async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${server.url}/www/`);
  const r = await page.evaluate(async (url) => {
    const web = await import("/pkg/packfs_web.js");
    await web.default();
    const held = async () => {
      const cache = await caches.open("packfs");
      let n = 0;
      for (const req of await cache.keys()) {
        if (new URL(req.url).pathname !== "/.packfs-cache/ledger") n += (await (await cache.match(req)).arrayBuffer()).byteLength;
      }
      return n;
    };
    const open = async (options) => {
      const p = await web.Pack.fromUrl(url, options);
      await p.loadAll();
      // The store writes in the background: waited for (it was given
      // 500 ms, which a loaded machine may not keep).
      await p.persisted();
      p.free();
      return held();
    };
    return { all: await open(), bounded: await open({ cacheSize: 100_000 }), none: await open({ cacheSize: 0 }) };
  }, PATH);
  await page.close();
  assert.ok(r.all > 1_000_000, JSON.stringify(r));
  assert.ok(r.bounded <= 100_000 && r.bounded > 0, JSON.stringify(r));
  assert.equal(r.none, 0, JSON.stringify(r));
  await context.close();
});

// A cache is the first to give space back: with the origin's quota nearly
// used up by fetched chunks, a journal's write (which must land) once
// failed with StorageFull, in that run and the next.
test("the store gives its space back to a journal's write the origin's quota would refuse", { skip: QUOTA_SKIP }, async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${server.url}/www/`);
  const cdp = await context.newCDPSession(page);
  const usage = await page.evaluate(async () => (await navigator.storage.estimate()).usage);
  // Room for the pack's chunks (1.2 MB) and a little more, not for both
  // them and a 1 MiB write.
  await cdp.send("Storage.overrideQuotaForOrigin", { origin: server.url, quotaSize: usage + (3 << 19) });
  const r = await page.evaluate(
    async ({ url, cat }) => {
      const { runP1 } = await import("/pkg/runner.js");
      const module = new Uint8Array(await (await fetch("/guests/toolbox.wasm")).arrayBuffer());
      let err = "";
      const r = await runP1(module, {
        args: ["toolbox", ...cat, "fill", "/j/x", "1"],
        preopens: [{ path: "/p", kind: "pack", url }, { path: "/j", kind: "journal", name: "room" }],
        stderr: (b) => (err += new TextDecoder().decode(b)),
      });
      return { exitCode: r.exitCode, err };
    },
    { url: PATH, cat: CAT },
  );
  await cdp.send("Storage.overrideQuotaForOrigin", { origin: server.url });
  await page.close();
  assert.equal(r.exitCode, 0, r.err);
  await context.close();
});

// A second worker kept what it fetched in the Cache API, which its
// blocking reads never see: every run fetched it all again.
test("a second worker while the first holds the store reads right from a store of its own", { skip: STORAGE_SKIP }, async () => {
  const context = await browser.newContext();
  const r = await inTab(context, async ({ run, createRunner, module, url }) => {
    const holder = createRunner();
    let opened;
    const ready = new Promise((r) => (opened = r));
    // It has the pack open, so the store, once it writes; then it writes on.
    const held = holder
      .run(module, {
        args: ["toolbox", "echo", "open", "tick", "/t/x", "100000000"],
        preopens: [{ path: "/p", kind: "pack", url }, { path: "/t", kind: "mem" }],
        stdout: () => opened(),
      })
      .catch((e) => e.kind);
    await ready;
    const args = ["cat", "/p/f8"];
    const other = [await run(args), await run(args)];
    holder.close();
    return { other, held: await held };
  });
  assert.equal(r.held, "aborted");
  for (const o of r.other) {
    assert.equal(o.exitCode, 0, o.err);
    assert.equal(o.sha, sha(FILES.f8));
  }
  // The first fetched f8's chunks; the second found them in its store.
  assert.ok(r.other[0].bytesFetched > FILES.f8.length, `${r.other[0].bytesFetched}`);
  assert.ok(r.other[1].bytesFetched < FILES.f8.length / 4, `${r.other[1].bytesFetched}`);
  await context.close();
});
