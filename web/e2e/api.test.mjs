// The JavaScript API as a page sees it (the generated bindings, not just
// the Rust side): result shapes, thrown errors, and the TypeScript
// declarations wasm-bindgen emitted.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { startServer } from "./server.mjs";
import { launch, newPage } from "./browser.mjs";

let server, browser;

before(async () => {
  server = await startServer();
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

test("results are plain objects, errors are Errors with WASI codes", async () => {
  const { page, context, errors } = await newPage(browser);
  await page.goto(`${server.url}/www/`);
  await page.waitForSelector("body[data-ready=true]");
  const r = await page.evaluate(async () => {
    const { MemFs, Pack, Overlay } = await import("/pkg/packfs_web.js");
    const fs = new MemFs({ maxInodes: 10 });
    fs.mkdir("/dir/sub", { recursive: true });
    fs.writeFileSync("dir/ünï.txt", new Uint8Array([1, 2, 3]));
    await fs.writeFile("dir/text", "text");
    fs.symlink("text", "dir/l");
    const caught = (f) => {
      try {
        f();
        return null;
      } catch (e) {
        return { isError: e instanceof Error, code: e.code, errno: e.errno, message: e.message };
      }
    };
    const pack = Pack.fromBytes(await fs.compact());
    const over = new Overlay(pack);
    over.writeFileSync("dir/text", "changed");
    return {
      entries: fs.readdir("dir"),
      empty: fs.readdir("dir/sub"),
      stat: fs.stat("dir/l"),
      lstat: fs.lstat("dir/l"),
      text: new TextDecoder().decode(await fs.readFile("dir/text")),
      syncType: Object.prototype.toString.call(fs.readFileSync("dir/text")),
      asyncType: Object.prototype.toString.call(await pack.readFile("dir/text")),
      missing: caught(() => fs.stat("nope")),
      exist: caught(() => fs.mkdir("dir")),
      readonly: caught(() => pack.writeFileSync("x", "y")),
      rejected: await fs.readFile("nope").then(() => null, (e) => e.code),
      quota: caught(() => {
        for (let i = 0; i < 20; i++) fs.writeFileSync(`f${i}`, "");
      }),
      usage: fs.usage(),
      overlay: new TextDecoder().decode(over.readFileSync("dir/text")),
      lower: new TextDecoder().decode(pack.readFileSync("dir/text")),
      info: pack.info(),
      v2: await (async () => {
        const bytes = await fs.compact({ compress: "lz4", chunkSize: 4096 });
        const p = Pack.fromBytes(bytes);
        return { info: p.info(), text: new TextDecoder().decode(p.readFileSync("dir/text")) };
      })(),
      badCompress: await fs.compact({ compress: "gzip" }).then(() => null, (e) => e.code),
      classes: [typeof MemFs, typeof Pack.fromUrl, typeof Overlay],
    };
  });
  assert.deepEqual(r.entries, [
    { name: "l", kind: "symlink", size: 4 },
    { name: "sub", kind: "dir", size: 0 },
    { name: "text", kind: "file", size: 4 },
    { name: "ünï.txt", kind: "file", size: 3 },
  ]);
  assert.deepEqual(r.empty, []);
  assert.deepEqual(Object.keys(r.stat), ["kind", "size", "mode", "nlink", "ino", "mtimeMs", "atimeMs", "ctimeMs"]);
  assert.equal(r.stat.kind, "file");
  assert.equal(r.lstat.kind, "symlink");
  assert.equal(r.stat.mode, 0o644);
  assert.ok(Math.abs(r.stat.mtimeMs - Date.now()) < 3_600_000, "mtime is about now");
  assert.equal(r.text, "text");
  assert.equal(r.syncType, "[object Uint8Array]");
  assert.equal(r.asyncType, "[object Uint8Array]");
  assert.deepEqual(r.missing, { isError: true, code: "no-entry", errno: "ENOENT", message: "no-entry: no such file or directory: nope" });
  assert.equal(r.exist.code, "exist");
  assert.equal(r.readonly.code, "read-only");
  assert.equal(r.rejected, "no-entry");
  assert.equal(r.quota.code, "quota");
  assert.equal(r.usage.inodes, 10);
  assert.equal(r.overlay, "changed");
  assert.equal(r.lower, "text");
  assert.equal(r.info.version, 1);
  assert.deepEqual([r.info.chunkSize, r.info.codecs], [0, []]);
  assert.equal(r.v2.info.version, 2);
  assert.equal(r.v2.info.chunkSize, 4096);
  assert.equal(r.v2.text, "text");
  assert.equal(r.badCompress, "invalid");
  assert.deepEqual(r.classes, ["function", "function", "function"]);
  assert.deepEqual(errors, []);
  await context.close();
});

test("the TypeScript declarations describe the API", () => {
  const dts = readFileSync(new URL("../pkg/packfs_web.d.ts", import.meta.url), "utf8");
  for (const decl of [
    "export class MemFs",
    "export class Pack",
    "export class Overlay",
    "constructor(options?: MemFsOptions);",
    "constructor(lower: Pack, options?: FsOptions);",
    "static fromBytes(bytes: Uint8Array, options?: PackOptions): Pack;",
    "static fromUrl(url: string, options?: PackOptions): Promise<Pack>;",
    "readFile(path: string): Promise<Uint8Array>;",
    "readFileSync(path: string): Uint8Array;",
    "writeFile(path: string, data: ArrayBufferView | ArrayBuffer | string): Promise<void>;",
    "readdir(path: string): DirEntry[];",
    "stat(path: string): Stats;",
    "compact(options?: CompactOptions): Promise<Uint8Array>;",
    "verify(): Promise<VerifyReport>;",
    "mkdir(path: string, options?: MkdirOptions): void;",
    "export interface PackFsError extends Error",
  ]) {
    assert.ok(dts.includes(decl), `missing from packfs_web.d.ts: ${decl}`);
  }
});
