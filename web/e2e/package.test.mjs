// The npm package as a user gets it: `npm pack` of web/pkg, the tarball
// installed into a fresh app (web/examples/vite-app), the app type-checked
// against the package's declarations (`tsc --noEmit`) and bundled with
// Vite, then served on 127.0.0.1 and run in headless Chromium: it opens a
// pack by URL, reads a file, compacts a compressed pack, and runs a
// preview1 guest in the package's Worker.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { startServer } from "./server.mjs";
import { launch, newPage } from "./browser.mjs";
import { packOf } from "./fixtures.mjs";

const web = fileURLToPath(new URL("..", import.meta.url));
const app = join(web, "examples", "vite-app");
let server, browser, tarballDir;

const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });

before(async () => {
  tarballDir = mkdtempSync(join(tmpdir(), "packfs-web-pack-"));
  run("npm", ["pack", "--pack-destination", tarballDir], join(web, "pkg"));
  const tarball = join(tarballDir, readdirSync(tarballDir).find((f) => f.endsWith(".tgz")));
  // The app's own dependencies as its lock file says, then the package
  // from the tarball (not saved: its hash changes with every build).
  run("npm", ["ci", "--no-audit", "--no-fund"], app);
  run("npm", ["install", "--no-save", "--no-audit", "--no-fund", tarball], app);
  const pack = await packOf({ "data/hello.txt": "hello from a pack\n", "data/more.txt": "two\nlines\n" });
  server = await startServer({
    files: { "/fixtures/app.pack": pack, "/fixtures/demo.wasm": readFileSync(join(web, "pkg", "demo.wasm")) },
  });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.close();
  if (tarballDir) rmSync(tarballDir, { recursive: true, force: true });
});

test("the packed tarball holds the package and nothing else", () => {
  const manifest = JSON.parse(readFileSync(join(app, "node_modules", "packfs-web", "package.json"), "utf8"));
  assert.equal(manifest.name, "packfs-web");
  assert.equal(manifest.type, "module");
  assert.deepEqual(Object.keys(manifest.exports), [".", "./runner", "./wasi", "./preview2", "./worker", "./packfs_web_bg.wasm", "./package.json"]);
  const installed = readdirSync(join(app, "node_modules", "packfs-web")).sort();
  assert.deepEqual(installed, [
    "README.md",
    "channel.js",
    "imports.js",
    "index.d.ts",
    "index.js",
    "options.js",
    "output.js",
    "package.json",
    "packfs_web.d.ts",
    "packfs_web.js",
    "packfs_web_bg.wasm",
    "packfs_web_bg.wasm.d.ts",
    "preview2.d.ts",
    "preview2.js",
    "runner.d.ts",
    "runner.js",
    "runtime.js",
    "snippets",
    "wasi.d.ts",
    "wasi.js",
    "worker.js",
  ]);
});

test("the app type-checks against the package's declarations", () => {
  run("npx", ["tsc", "--noEmit"], app);
});

test("bundled by Vite, the app opens a pack by URL, reads, compacts and runs a guest in the Worker", async () => {
  rmSync(join(app, "dist"), { recursive: true, force: true });
  run("npx", ["vite", "build", "--logLevel", "warn"], app);
  const assets = readdirSync(join(app, "dist", "assets"));
  assert.ok(assets.some((f) => f.endsWith(".wasm")), `the wasm is emitted: ${assets}`);
  assert.ok(assets.filter((f) => f.endsWith(".js")).length >= 2, `the Worker is a chunk of its own: ${assets}`);

  const { page, context, errors } = await newPage(browser);
  await page.goto(`${server.url}/examples/vite-app/dist/index.html`);
  await page.waitForFunction(() => window.appResult, null, { timeout: 60_000 });
  const r = await page.evaluate(() => window.appResult);
  assert.equal(r.error, undefined, r.error);
  assert.equal(r.hello, "hello from a pack\n");
  assert.equal(r.version, 1);
  assert.equal(r.compactedVersion, 2);
  assert.equal(r.notes, "written in the app");
  assert.equal(r.exitCode, 0, r.stdout);
  assert.match(r.stdout, /\/data\/hello\.txt/);
  assert.match(r.stdout, /report written to \/out\/report\.txt/);
  assert.deepEqual(errors, []);
  await context.close();
});
