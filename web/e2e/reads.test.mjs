// Exact bytes over lazy URL packs: the C guest c_reads (guest-tests/c)
// runs in a Web Worker (runner.js's runP1) over each pack of
// target/guest-tests/browser/reads/ — raw, zstd and lz4, chunks from 4 KiB
// to 1 MiB, files from 0 bytes to 5 MiB + 7 around every chunk size and the
// worker's 1 MiB copy pieces — opened by URL, so every read waits on Range
// requests. Each run reads every file one way, cold: 4 KiB at a time, with
// fread (two iovecs), with one read of the whole file, or with pread at
// pseudo-random offsets and lengths; or (on an overlay) flips a byte with
// pwrite, a copy-up, and reads the file again. It prints an FNV-1a hash of
// the bytes it got, lists the directories and reads the symlinks, and must
// print MODE.txt: what wasmtime's own preview1 printed over the same tree in
// a real directory, and PackFS natively over each pack
// (host/tests/guests.rs, reads_over_packs::p1, which web/test.sh runs first).
//
// PACKFS_WEB_PKG=DIR runs it on the build in DIR instead of web/pkg
// (pkg.mjs).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

import { startServer } from "./server.mjs";
import { launch, newPage } from "./browser.mjs";
import { pkgOverride } from "./pkg.mjs";

const TARGET = fileURLToPath(new URL("../../target/guest-tests/", import.meta.url));
const DIR = `${TARGET}browser/reads/`;
const packs = JSON.parse(readFileSync(`${DIR}packs.json`, "utf8"));
// Every mode over each pack itself; over an overlay the modes whose calls
// differ in shape (several iovecs, one large read, pread) and the copy-up.
// Not read4k there: the overlay reads as the pack does, and over zstd-4k
// its 4 KiB calls cost a request each (2,800, over ten seconds).
const RUNS = [
  ...["read4k", "fread", "whole", "pread"].map((mode) => ({ kind: "pack", mode })),
  ...["fread", "whole", "pread", "write"].map((mode) => ({ kind: "overlay", mode })),
];

let server, browser;

before(async () => {
  const files = {
    "/guests/c_reads.wasm": readFileSync(`${TARGET}c/c_reads.wasm`),
    "/fixtures/seed.pack": readFileSync(`${TARGET}browser/seed.pack`),
    "/fixtures/ro.pack": readFileSync(`${TARGET}browser/ro.pack`),
  };
  for (const p of packs) files[`/reads/${p.name}.pack`] = readFileSync(`${DIR}${p.name}.pack`);
  server = await startServer({ files: { ...files, ...pkgOverride() } });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/** Runs c_reads with `args` over `preopens` in a worker of a fresh page. */
async function run(args, preopens) {
  const { page, context, errors } = await newPage(browser);
  await page.goto(`${server.url}/www/`);
  const out = await page.evaluate(
    async ({ args, preopens }) => {
      const { runP1 } = await import("/pkg/runner.js");
      const module = await (await fetch("/guests/c_reads.wasm")).arrayBuffer();
      const dec = (chunks) => new TextDecoder().decode(new Uint8Array(chunks.flatMap((c) => Array.from(c))));
      const stdout = [], stderr = [];
      const start = performance.now();
      const r = await runP1(module, {
        args,
        preopens,
        stdout: (b) => stdout.push(b),
        stderr: (b) => stderr.push(b),
      });
      return { ...r, ms: performance.now() - start, stdout: dec(stdout), stderr: dec(stderr) };
    },
    { args, preopens },
  );
  await context.close();
  assert.deepEqual(errors, []);
  return out;
}

for (const p of packs) {
  for (const { kind, mode } of RUNS) {
    test(`${p.name}.pack as ${kind}, ${mode}: every byte as natively`, async (ctx) => {
      const url = `/reads/${p.name}.pack`;
      server.reset();
      const r = await run(["c_reads", "/r", mode], [{ path: "/r", kind, url }]);
      assert.equal(r.exitCode, 0, r.stderr);
      assert.equal(r.stdout, readFileSync(`${DIR}${mode}.txt`, "utf8"));
      // Everything came by Range requests from the server, none of the
      // whole pack.
      const s = server.stats.get(url);
      ctx.diagnostic(
        `${p.compress} ${p.chunkSize}: ${p.bytes}-byte pack, ${s.bytes} bytes fetched in ` +
          `${s.requests} requests, ${Math.round(r.ms)} ms`,
      );
      assert.equal(r.bytesFetched, s.bytes);
      assert.equal(r.requests, s.requests);
      assert.ok(s.requests > 3, `${s.requests} requests: the guest's reads fetched nothing`);
      for (const [start, end] of s.ranges) assert.ok(end - start < p.bytes, `a request for the whole pack`);
    });
  }
}

test("c_reads over the standard trees prints in a worker what it printed natively", async () => {
  const r = await run(
    ["c_reads"],
    [
      { path: "/", kind: "overlay", url: "/fixtures/seed.pack" },
      { path: "/ro", kind: "pack", url: "/fixtures/ro.pack" },
    ],
  );
  assert.equal(r.exitCode, 0, r.stderr);
  assert.equal(r.stdout, readFileSync(`${TARGET}browser/c_reads.txt`, "utf8"));
});
