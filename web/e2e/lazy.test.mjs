// Range laziness, measured by the server: opening a multi-megabyte pack by
// URL transfers kilobytes (its tail: trailer and index, and its header);
// reading a file transfers about that file's size, once; an overlay reads
// through the same fetches; verifying fetches the rest exactly once; a
// 1 GiB pack opens with the same few kilobytes.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { startServer } from "./server.mjs";
import { launch, newPage, STORAGE_SKIP } from "./browser.mjs";
import { bigFiles, packOf, packfs } from "./fixtures.mjs";

const PATH = "/fixtures/big.pack";
let server, browser, files, pack;

before(async () => {
  files = bigFiles(); // 400 files of 20-22 KB, ~8.4 MB
  pack = await packOf(files);
  server = await startServer({ files: { [PATH]: pack } });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

// A copy: the server keeps counting into its own object.
const served = () => structuredClone(server.stats.get(PATH) ?? { requests: 0, bytes: 0, ranges: [] });

test("a multi-megabyte pack opens with kilobytes and reads file by file", async (ctx) => {
  assert.ok(pack.length > 8_000_000, `pack is ${pack.length} bytes`);
  const { page, context, errors } = await newPage(browser);
  await page.goto(`${server.url}/www/`);
  await page.waitForSelector("body[data-ready=true]");
  // The page's module is initialized: use its exports directly (window.t
  // holds the objects between evaluations).
  await page.evaluate(async (url) => {
    const m = await import("/pkg/packfs_web.js");
    window.t = { m, pack: await m.Pack.fromUrl(url) };
  }, PATH);

  const opened = served();
  assert.ok(opened.bytes < 80 * 1024, `opening transferred ${opened.bytes} bytes`);
  assert.ok(opened.bytes * 100 < pack.length, "opening transferred over 1% of the pack");
  assert.ok(opened.requests <= 3, `${opened.requests} requests`);
  assert.equal(await page.evaluate(() => t.pack.bytesFetched), opened.bytes);
  ctx.diagnostic(`opening a ${pack.length}-byte pack: ${opened.bytes} bytes in ${opened.requests} requests`);

  // Listing everything needs no content.
  const listed = await page.evaluate(() => t.pack.readdir("d07").length);
  assert.equal(listed, 20);
  assert.equal(served().bytes, opened.bytes);

  // One file: about its own size, in one request.
  const name = "d07/f00107.bin";
  const size = files[name].length;
  const got = await page.evaluate(async (p) => Array.from(await t.pack.readFile(p)), name);
  assert.deepEqual(Buffer.from(got), files[name]);
  const one = served().bytes - opened.bytes;
  assert.ok(one >= size && one <= size + 4096, `reading ${size} bytes transferred ${one}`);
  assert.equal(served().requests, opened.requests + 1);
  ctx.diagnostic(`reading a ${size}-byte file: ${one} bytes`);

  // Again: nothing more.
  await page.evaluate(async (p) => void (await t.pack.readFile(p)), name);
  assert.equal(served().bytes - opened.bytes, one);

  // Ten more files through an overlay over the pack, and one written there.
  const ten = Object.keys(files).slice(200, 210);
  const before = served().bytes;
  const lens = await page.evaluate(async (ps) => {
    t.fs = new t.m.Overlay(t.pack);
    const out = [];
    for (const p of ps) out.push((await t.fs.readFile(p)).length);
    await t.fs.writeFile("d00/new.txt", "upper");
    return out;
  }, ten);
  const want = ten.map((p) => files[p].length);
  assert.deepEqual(lens, want);
  const sum = want.reduce((a, b) => a + b, 0);
  const tenBytes = served().bytes - before;
  assert.ok(tenBytes >= sum && tenBytes <= sum + 10 * 4096, `reading ${sum} bytes transferred ${tenBytes}`);

  // Verifying fetches the rest, each byte once at most.
  const ok = await page.evaluate(async () => (await t.pack.verify()).ok);
  assert.equal(ok, true);
  const total = served().bytes;
  assert.ok(total <= pack.length + 64 * 1024, `transferred ${total} bytes of a ${pack.length}-byte pack`);
  const ranges = served().ranges.slice(opened.requests).sort((a, b) => a[0] - b[0]);
  for (let i = 1; i < ranges.length; i++) {
    assert.ok(ranges[i][0] >= ranges[i - 1][1], `ranges ${ranges[i - 1]} and ${ranges[i]} overlap`);
  }
  assert.equal(await page.evaluate(() => t.pack.isComplete), true);
  assert.equal(await page.evaluate(() => t.fs.readFileSync("d00/new.txt").length), 5);
  assert.deepEqual(errors, []);
  await context.close();
});

test("the sync read of content still on the network is would-block", async () => {
  server.reset();
  const { page, context } = await newPage(browser);
  await page.goto(`${server.url}/www/`);
  await page.waitForSelector("body[data-ready=true]");
  const code = await page.evaluate(async (url) => {
    const m = await import("/pkg/packfs_web.js");
    const p = await m.Pack.fromUrl(url);
    try {
      p.readFileSync("d01/f00001.bin");
      return "no error";
    } catch (e) {
      return `${e.code} ${e.errno}`;
    }
  }, PATH);
  assert.equal(code, "would-block EAGAIN");
  await context.close();
});

test("a 1 GiB pack opens with kilobytes; a file past the first GiB reads alone", async (ctx) => {
  // Built in Node: a 1023 MiB file (a hole in memory: zeros), then small
  // files whose blobs lie after it.
  const { MemFs } = await packfs();
  const fs = new MemFs();
  fs.writeFileSync("a.txt", "first");
  fs.writeFileSync("huge.bin", "");
  fs.truncateSync("huge.bin", 1023 * 1024 * 1024);
  fs.mkdir("z");
  fs.writeFileSync("z/last.txt", "the last file");
  let out = await fs.compact();
  fs.free();
  const big = Buffer.from(out.buffer, out.byteOffset, out.byteLength);
  out = null;
  assert.ok(big.length > 1023 * 1024 * 1024, `pack is ${big.length} bytes`);
  server.setFile("/fixtures/huge.pack", big);
  server.reset();

  const { page, context, errors } = await newPage(browser);
  await page.goto(`${server.url}/www/`);
  await page.waitForSelector("body[data-ready=true]");
  const r = await page.evaluate(async () => {
    const m = await import("/pkg/packfs_web.js");
    const p = await m.Pack.fromUrl("/fixtures/huge.pack");
    const opened = p.bytesFetched;
    const size = p.stat("huge.bin").size;
    const last = new TextDecoder().decode(await p.readFile("z/last.txt"));
    return { opened, size, last, total: p.bytesFetched, packLen: p.info().packLen };
  });
  const s = structuredClone(server.stats.get("/fixtures/huge.pack"));
  ctx.diagnostic(`opening a ${big.length}-byte pack: ${r.opened} bytes; after reading one small file: ${s.bytes}`);
  assert.equal(r.packLen, big.length);
  assert.equal(r.size, 1023 * 1024 * 1024);
  assert.equal(r.last, "the last file");
  assert.ok(r.opened < 80 * 1024, `opening transferred ${r.opened} bytes`);
  assert.equal(s.bytes, r.total);
  assert.ok(s.bytes - r.opened < 4096, `reading 13 bytes transferred ${s.bytes - r.opened}`);
  assert.deepEqual(errors, []);
  await context.close();
  server.setFile("/fixtures/huge.pack", Buffer.alloc(0));
});

test("a compressed pack by URL: a read fetches its chunks, compressed, and decodes them", async (ctx) => {
  // 200 text files of about 20 KB: compressible, in 16 KiB chunks.
  const { MemFs } = await packfs();
  const fs = new MemFs();
  const text = (i) => Array.from({ length: 2000 }, (_, j) => `line ${j} of file ${i}\n`).join("").slice(0, 20_000 + i);
  fs.mkdir("t");
  for (let i = 0; i < 200; i++) fs.writeFileSync(`t/f${String(i).padStart(3, "0")}.txt`, text(i));
  const out = await fs.compact({ compress: "zstd", chunkSize: 16384 });
  fs.free();
  const packed = Buffer.from(out);
  server.setFile("/fixtures/text.pack", packed);
  server.reset();

  const { page, context, errors } = await newPage(browser);
  await page.goto(`${server.url}/www/`);
  await page.waitForSelector("body[data-ready=true]");
  const r = await page.evaluate(async () => {
    const m = await import("/pkg/packfs_web.js");
    const p = await m.Pack.fromUrl("/fixtures/text.pack");
    const opened = p.bytesFetched;
    const one = new TextDecoder().decode(await p.readFile("t/f150.txt"));
    const afterOne = p.bytesFetched;
    const report = await p.verify();
    return { opened, one, afterOne, ok: report.ok, total: p.bytesFetched, info: p.info() };
  });
  ctx.diagnostic(`a ${packed.length}-byte pack of ${r.info.contentLen} bytes: opening ${r.opened}, one file ${r.afterOne - r.opened}`);
  assert.equal(r.info.version, 2);
  assert.equal(r.info.chunkSize, 16384);
  assert.ok(r.info.codecs.some((c) => c.codec === "zstd" && c.stored * 3 < c.content), JSON.stringify(r.info.codecs));
  assert.ok(packed.length * 3 < r.info.contentLen, "compressed over 3x");
  assert.equal(r.one, text(150));
  // A 20 KB file spans two or three chunks: far fewer bytes than its size.
  assert.ok(r.afterOne - r.opened < 20_000, `one file transferred ${r.afterOne - r.opened}`);
  assert.ok(r.ok);
  const s = structuredClone(server.stats.get("/fixtures/text.pack"));
  assert.ok(s.bytes <= packed.length + 65536, `${s.bytes} bytes of a ${packed.length}-byte pack`);
  assert.deepEqual(errors, []);
  await context.close();
});

test("fetched chunks persist across page loads in the Cache API, checked before use", { skip: STORAGE_SKIP }, async () => {
  server.reset();
  const { page, context, errors } = await newPage(browser);
  const load = async () => {
    await page.goto(`${server.url}/www/`);
    await page.waitForSelector("body[data-ready=true]");
  };
  const names = Object.keys(files).slice(300, 305);
  const sum = names.reduce((a, n) => a + files[n].length, 0);
  // Opens the pack (and reads `names`), as a page of an app would.
  const visit = (read) =>
    page.evaluate(
      async ({ url, names, read }) => {
        const m = await import("/pkg/packfs_web.js");
        const p = await m.Pack.fromUrl(url);
        const out = [];
        for (const n of read ? names : []) out.push(Array.from(await p.readFile(n)));
        // The writes to the Cache API go on in the background: waited for
        // (they were given 300 ms, which a loaded machine may not keep).
        await p.persisted();
        return out;
      },
      { url: PATH, names, read },
    );
  const check = (out) => names.forEach((n, i) => assert.deepEqual(Buffer.from(out[i]), files[n], n));

  await load();
  await visit(false);
  const opening = served();
  check(await visit(true));
  const first = served();
  assert.ok(first.bytes - 2 * opening.bytes >= sum, "the first visit fetched the files");

  // A new page load: only the opening is fetched; the files come from the cache.
  await load();
  check(await visit(true));
  const second = served();
  assert.equal(second.requests - first.requests, opening.requests);
  assert.equal(second.bytes - first.bytes, opening.bytes);

  // Every entry damaged: the next load checks, refuses and refetches them.
  await page.evaluate(async () => {
    const c = await caches.open("packfs");
    const keys = await c.keys();
    for (const k of keys) await c.put(k, new Response(new Uint8Array(20_000).fill(7)));
    return keys.length;
  });
  await load();
  check(await visit(true));
  const third = served();
  assert.ok(third.bytes - second.bytes - opening.bytes >= sum, "damaged entries were fetched again");
  // Off: nothing is read from the cache.
  const off = await page.evaluate(async ({ url, name }) => {
    const m = await import("/pkg/packfs_web.js");
    const p = await m.Pack.fromUrl(url, { persist: false });
    const before = p.bytesFetched;
    await p.readFile(name);
    return p.bytesFetched - before;
  }, { url: PATH, name: names[0] });
  assert.ok(off >= files[names[0]].length, `persist: false fetched ${off}`);
  assert.deepEqual(errors, []);
  await context.close();
});
