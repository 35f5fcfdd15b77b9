// The WASI class (packfs-web/wasi) on a page's own thread, in each engine:
// a preview1 guest over PackFS trees prints what it printed natively
// (host/tests/guests.rs's transcript), proc_exit's status is start's
// result, and a read of a lazy URL pack's bytes not fetched yet, which
// cannot wait on a page, is EIO to the guest, never wrong bytes.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

import { startServer } from "./server.mjs";
import { launch, newPage } from "./browser.mjs";
import { packfs } from "./fixtures.mjs";

const TARGET = fileURLToPath(new URL("../../target/guest-tests/", import.meta.url));
let server, browser;

before(async () => {
  // A pack whose file lies past what opening it fetches (its last 64 KiB).
  const { MemFs } = await packfs();
  const fs = new MemFs();
  fs.writeFileSync("big.bin", new Uint8Array(400_000).map((_, i) => (i * 7) & 0xff));
  fs.writeFileSync("tail.txt", "x".repeat(70_000));
  const big = Buffer.from(await fs.compact({ compress: "none" }));
  server = await startServer({
    files: {
      "/fixtures/big.pack": big,
      "/fixtures/seed.pack": readFileSync(`${TARGET}browser/seed.pack`),
      "/fixtures/ro.pack": readFileSync(`${TARGET}browser/ro.pack`),
      "/guests/files.wasm": readFileSync(`${TARGET}wasm32-wasip1/release/files.wasm`),
      "/guests/toolbox.wasm": readFileSync(`${TARGET}wasm32-wasip1/release/toolbox.wasm`),
    },
  });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

test("a guest on the page's thread, over PackFS trees, prints what it printed natively", async () => {
  const { page, context, errors } = await newPage(browser);
  await page.goto(`${server.url}/www/`);
  const r = await page.evaluate(async () => {
    const { default: init, MemFs, Pack } = await import("/pkg/index.js");
    const { WASI } = await import("/pkg/wasi.js");
    await init();
    const bytes = async (url) => new Uint8Array(await (await fetch(url)).arrayBuffer());
    let out = "";
    const dec = new TextDecoder();
    const wasi = new WASI({
      version: "preview1",
      args: ["files"],
      preopens: [
        { path: "/", fs: new MemFs({ lower: Pack.fromBytes(await bytes("/fixtures/seed.pack")) }) },
        { path: "/ro", fs: Pack.fromBytes(await bytes("/fixtures/ro.pack")) },
      ],
      stdout: (b) => (out += dec.decode(b, { stream: true })),
      stderr: () => {},
    });
    const { instance } = await WebAssembly.instantiate(await bytes("/guests/files.wasm"), wasi.getImportObject());
    return { exitCode: wasi.start(instance), out };
  });
  await context.close();
  assert.deepEqual(errors, []);
  assert.equal(r.exitCode, 0);
  assert.equal(r.out, readFileSync(`${TARGET}browser/files.txt`, "utf8"));
});

test("proc_exit's status is start's result; a lazy pack's bytes not fetched yet are EIO there, never wrong bytes", async () => {
  const { page, context, errors } = await newPage(browser);
  await page.goto(`${server.url}/www/`);
  const r = await page.evaluate(async () => {
    const { default: init, Pack } = await import("/pkg/index.js");
    const { WASI } = await import("/pkg/wasi.js");
    await init();
    const module = await WebAssembly.compile(await (await fetch("/guests/toolbox.wasm")).arrayBuffer());
    const run = async (args, preopens = {}) => {
      let out = "", err = "";
      const dec = new TextDecoder();
      const wasi = new WASI({ args: ["toolbox", ...args], preopens, stdout: (b) => (out += dec.decode(b)), stderr: (b) => (err += dec.decode(b)) });
      const exitCode = wasi.start(await WebAssembly.instantiate(module, wasi.getImportObject()));
      return { exitCode, out, err };
    };
    const lazy = await Pack.fromUrl("/fixtures/big.pack", { persist: false });
    return { exit: await run(["exit", "7"]), lazy: await run(["ls", "/", "cat", "/big.bin"], { "/": lazy }) };
  });
  await context.close();
  assert.deepEqual(errors, []);
  assert.equal(r.exit.exitCode, 7);
  // The index is here: the listing works; the file's bytes are not.
  assert.equal(r.lazy.out, "big.bin\ntail.txt\n");
  assert.notEqual(r.lazy.exitCode, 0, JSON.stringify(r.lazy));
  assert.match(r.lazy.err, /^toolbox: cat \/big\.bin: .*errno 29/);
});
