// Preview1 guests in a Web Worker (runner.js's runP1): every p1 guest of
// guest-tests runs in headless Chromium over lazy URL packs of the harness's
// starting trees — `/` an in-memory overlay over seed.pack, `/ro` ro.pack
// itself — and must print exactly what it printed natively on PackFS over
// the same trees, which host/tests/guests.rs checked against wasmtime's own
// preview1 on a real directory and left in target/guest-tests/browser/
// (web/test.sh runs it first).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

import { startServer } from "./server.mjs";
import { launch, newPage } from "./browser.mjs";
import { growingGuest } from "./wasm.mjs";

const TARGET = fileURLToPath(new URL("../../target/guest-tests/", import.meta.url));
const RUST = ["files", "dirs", "links", "meta", "readonly", "seeded"];
const C = ["c_stdio", "c_dirs"];

let server, browser;
const wasm = (name) =>
  readFileSync(C.includes(name) ? `${TARGET}c/${name}.wasm` : `${TARGET}wasm32-wasip1/release/${name}.wasm`);
const transcript = (name) => readFileSync(`${TARGET}browser/${name}.txt`, "utf8");

before(async () => {
  const files = {
    "/fixtures/seed.pack": readFileSync(`${TARGET}browser/seed.pack`),
    "/fixtures/ro.pack": readFileSync(`${TARGET}browser/ro.pack`),
  };
  for (const name of [...RUST, ...C]) files[`/guests/${name}.wasm`] = wasm(name);
  server = await startServer({ files });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/** Runs guest `name` in a worker of a fresh page; its stdout, stderr and result. */
async function run(name) {
  const { page, context, errors } = await newPage(browser);
  await page.goto(`${server.url}/www/`);
  const out = await page.evaluate(async (name) => {
    const { runP1 } = await import("/pkg/runner.js");
    const module = await (await fetch(`/guests/${name}.wasm`)).arrayBuffer();
    const dec = (chunks) => new TextDecoder().decode(new Uint8Array(chunks.flatMap((c) => Array.from(c))));
    const stdout = [], stderr = [];
    const r = await runP1(module, {
      args: [name],
      preopens: [
        { path: "/", kind: "overlay", url: "/fixtures/seed.pack" },
        { path: "/ro", kind: "pack", url: "/fixtures/ro.pack" },
      ],
      stdout: (b) => stdout.push(b),
      stderr: (b) => stderr.push(b),
    });
    return { ...r, stdout: dec(stdout), stderr: dec(stderr) };
  }, name);
  await context.close();
  assert.deepEqual(errors, []);
  return out;
}

for (const name of [...RUST, ...C]) {
  test(`${name} prints in a worker what it printed natively`, async () => {
    const r = await run(name);
    assert.equal(r.exitCode, 0, r.stderr);
    assert.equal(r.stdout, transcript(name));
  });
}

test("a guest reads a lazy pack it was never given whole, a Range request per file", async (ctx) => {
  const pack = readFileSync(`${TARGET}browser/seed.pack`);
  server.reset();
  const r = await run("seeded");
  const served = server.stats.get("/fixtures/seed.pack");
  ctx.diagnostic(`seed.pack: ${pack.length} bytes; fetched ${served.bytes} in ${served.requests} requests`);
  assert.equal(r.bytesFetched, served.bytes + server.stats.get("/fixtures/ro.pack").bytes);
  // Opening takes at most three requests; the guest's reads took more.
  // Each blob comes once: beyond the pack, only the part of one that the
  // opening request's 64 KiB tail already held.
  assert.ok(served.requests > 3, `${served.requests} requests`);
  assert.ok(served.bytes <= pack.length + 65536, `${served.bytes} bytes of a ${pack.length}-byte pack`);
});

test("proc_exit's status is the result, and a trap rejects", async () => {
  const { page, context } = await newPage(browser);
  await page.goto(`${server.url}/www/`);
  const [exit, trap] = await page.evaluate(async () => {
    const { runP1 } = await import("/pkg/runner.js");
    // (module (import "wasi_snapshot_preview1" "proc_exit" (func (param i32)))
    //   (memory (export "memory") 1) (func (export "_start") (call 0 (i32.const 42))))
    const exiting = new Uint8Array([0,97,115,109,1,0,0,0,1,8,2,96,1,127,0,96,0,0,2,36,1,22,119,97,115,105,
      95,115,110,97,112,115,104,111,116,95,112,114,101,118,105,101,119,49,9,112,114,111,99,95,101,120,105,
      116,0,0,3,2,1,1,5,3,1,0,1,7,19,2,6,109,101,109,111,114,121,2,0,6,95,115,116,97,114,116,0,1,10,8,1,
      6,0,65,42,16,0,11]);
    // (module (memory (export "memory") 1) (func (export "_start") unreachable))
    const trapping = new Uint8Array([0,97,115,109,1,0,0,0,1,4,1,96,0,0,3,2,1,0,5,3,1,0,1,7,19,2,6,109,
      101,109,111,114,121,2,0,6,95,115,116,97,114,116,0,0,10,5,1,3,0,0,11]);
    const exit = (await runP1(exiting)).exitCode;
    const trap = await runP1(trapping).then(() => "resolved", (e) => e.message);
    return [exit, trap];
  });
  await context.close();
  assert.equal(exit, 42);
  assert.match(trap, /unreachable/i);
});

test("a guest that grows its memory between calls is seen in the new pages", async () => {
  const { page, context } = await newPage(browser);
  await page.goto(`${server.url}/www/`);
  const [exitCode, out] = await page.evaluate(async (bytes) => {
    const { runP1 } = await import("/pkg/runner.js");
    const chunks = [];
    const r = await runP1(new Uint8Array(bytes), { stdout: (b) => chunks.push(...b) });
    return [r.exitCode, new TextDecoder().decode(new Uint8Array(chunks))];
  }, Array.from(growingGuest()));
  await context.close();
  assert.equal(exitCode, 0);
  assert.equal(out, "ok\ngrew\n");
});
