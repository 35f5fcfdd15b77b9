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
  assert.match(trap, /unreachable/);
});

/** A wasm module, hand-assembled: a guest that writes "ok\n" to stdout,
 *  grows its memory by a page, then writes "grew\n" from the new page (its
 *  iovec and bytes there) and exits with that fd_write's errno. packfs-web
 *  keeps the guest memory's buffer between calls, so this checks it sees
 *  the grown one. */
function growingGuest() {
  const sleb = (n) => {
    const out = [];
    for (;;) {
      const b = n & 0x7f;
      n >>= 7;
      if ((n === 0 && !(b & 0x40)) || (n === -1 && b & 0x40)) return [...out, b];
      out.push(b | 0x80);
    }
  };
  const konst = (n) => [0x41, ...sleb(n)];
  const str = (s) => [s.length, ...Buffer.from(s)];
  const section = (id, body) => [id, body.length, ...body];
  const store = (addr, value) => [...konst(addr), ...konst(value), 0x36, 2, 0];
  const write = (iov, nwritten) => [...konst(1), ...konst(iov), ...konst(1), ...konst(nwritten), 0x10, 0];
  const code = [
    ...write(0, 100), 0x1a, // fd_write(1, [iovec at 0], 1, 100); drop
    ...konst(1), 0x40, 0, 0x1a, // memory.grow 1; drop
    ...store(65536, 65544), ...store(65540, 5), // the iovec at 65536: 5 bytes at 65544
    ...store(65544, 0x77657267), ...store(65548, 10), // "grew\n"
    ...write(65536, 65552), 0x10, 1, // proc_exit(fd_write(1, [iovec at 65536], 1, 65552))
    0x0b,
  ];
  const body = [0, ...code];
  return new Uint8Array([
    0, 0x61, 0x73, 0x6d, 1, 0, 0, 0,
    ...section(1, [3, 0x60, 4, 0x7f, 0x7f, 0x7f, 0x7f, 1, 0x7f, 0x60, 1, 0x7f, 0, 0x60, 0, 0]),
    ...section(2, [2, ...str("wasi_snapshot_preview1"), ...str("fd_write"), 0, 0,
      ...str("wasi_snapshot_preview1"), ...str("proc_exit"), 0, 1]),
    ...section(3, [1, 2]),
    ...section(5, [1, 0, 1]),
    ...section(7, [2, ...str("memory"), 2, 0, ...str("_start"), 0, 2]),
    ...section(10, [1, body.length, ...body]),
    // The iovec at 0: 3 bytes at 8, "ok\n".
    ...section(11, [1, 0, ...konst(0), 0x0b, 11, 8, 0, 0, 0, 3, 0, 0, 0, ...Buffer.from("ok\n")]),
  ]);
}

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
