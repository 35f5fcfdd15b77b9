// The npm README's examples (web/npm/README.md), run as they are written:
// the first on a page (its URLs are the page's), the others in Node. What
// each leaves undefined for a reader to supply is supplied here (a pack,
// a guest, a transpiled component), and its URLs name fixtures: the demo
// pack (its docs/README.md and data/*.txt) and the README's demo guest.
// Each example must run to its end; what it prints is checked.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { startServer } from "./server.mjs";
import { launch, newPage } from "./browser.mjs";
import { demoPack, README } from "./fixtures.mjs";
import { transpileOne } from "./jco.mjs";

const PKG = fileURLToPath(new URL("../pkg/", import.meta.url));
const EXPORTS = JSON.parse(readFileSync(join(PKG, "package.json"), "utf8")).exports;
/** The README's demo guest: a p1 module (packfs-web's build of it), and
 *  its component (built by the host tests). */
const DEMO_P1 = join(PKG, "demo.wasm");
const DEMO_P2 = fileURLToPath(new URL("../../target/guest-tests/wasm32-wasip2/release/demo.wasm", import.meta.url));

/** The README's ```js blocks, in order. */
const BLOCKS = [...readFileSync(new URL("../npm/README.md", import.meta.url), "utf8").matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1]);

/** Each bare specifier of the package, as the package's exports map it. */
const specifiers = (base) =>
  Object.fromEntries(
    Object.entries(EXPORTS)
      .filter(([k]) => !k.endsWith(".wasm") && k !== "./package.json")
      .map(([k, v]) => [`packfs-web${k.slice(1)}`, new URL(typeof v === "string" ? v : v.default, base).href]),
  );

let server, browser, pack, dir;

before(async () => {
  pack = await demoPack();
  server = await startServer({ files: { "/assets.pack": pack, "/tool.wasm": readFileSync(DEMO_P1) } });
  browser = await launch();
  dir = mkdtempSync(join(tmpdir(), "packfs-readme-"));
});

after(async () => {
  await browser?.close();
  await server?.close();
});

test("the README has the examples this test runs", () => {
  assert.equal(BLOCKS.length, 3, "a block added or removed: run it here too");
});

test("the first example runs on a page: a lazy pack read, a MemFs compacted, a guest run over an overlay", async () => {
  const { page, context, errors } = await newPage(browser);
  const importMap = JSON.stringify({ imports: specifiers(new URL("/pkg/", server.url)) });
  // Its imports stay at the module's top; the rest is caught.
  const imports = BLOCKS[0].match(/^import .*;$/gm).join("\n");
  const rest = BLOCKS[0].replace(/^import .*;$/gm, "");
  // What it logs, kept by the page (not every engine's driver reports a
  // page's console).
  const html = `<!doctype html><link rel="icon" href="data:,"><script type="importmap">${importMap}</script>
<script>window.logged = []; const log = console.log; console.log = (...a) => { window.logged.push(a.join(" ")); log(...a); };</script>
<script type="module">
${imports}
try {
${rest}
window.done = { exitCode, logged };
} catch (e) { window.done = { error: String(e?.stack ?? e) }; }
</script>`;
  server.setFile("/readme.html", Buffer.from(html));
  try {
    await page.goto(new URL("/readme.html", server.url).href);
    await page.waitForFunction(() => window.done, null, { timeout: 60_000 });
    const done = await page.evaluate(() => window.done);
    assert.equal(done.error, undefined, done.error);
    const { logged } = done;
    assert.deepEqual(errors, []);
    // The pack's README, then the demo's report of the pack's text files
    // under /data (its defaults: /data, and /out/report.txt made in the
    // overlay).
    assert.ok(logged.some((l) => l.trim() === README.trim()), logged.join("\n"));
    assert.ok(logged.some((l) => /total \(1 files\)/.test(l)), logged.join("\n"));
    assert.equal(done.exitCode, 0);
  } finally {
    await context.close();
  }
});

/** Runs `code` (an example, with `prelude` before it) in a Node process
 *  of its own, its imports of the package resolved; its stdout. */
function node(name, prelude, code) {
  let body = code;
  for (const [spec, url] of Object.entries(specifiers(pathToFileURL(PKG)))) body = body.replaceAll(`"${spec}"`, JSON.stringify(url));
  const file = join(dir, `${name}.mjs`);
  writeFileSync(file, `${prelude}\n${body}\nconsole.log("example done");\n`);
  return execFileSync(process.execPath, [file], { encoding: "utf8", timeout: 120_000 });
}

test("the jco example runs in Node: the demo component over a MemFs whose lower is the pack", () => {
  const packFile = join(dir, "assets.pack");
  writeFileSync(packFile, pack);
  transpileOne(DEMO_P2, dir, "app");
  const index = pathToFileURL(join(PKG, "index.js")).href;
  const prelude = `import { readFileSync as readPack } from "node:fs";
import init, { MemFs, Pack } from ${JSON.stringify(index)};
import { instantiate } from ${JSON.stringify(pathToFileURL(join(dir, "app", "app.js")).href)};
await init();
const pack = Pack.fromBytes(readPack(${JSON.stringify(packFile)}));`;
  const out = node("jco", prelude, BLOCKS[1]);
  assert.match(out, /total \(1 files\)\n/);
  assert.match(out, /example done\n$/);
});

test("the WASI example runs in Node: a guest on this thread over a pack by file: URL", () => {
  const packFile = join(dir, "app.pack");
  writeFileSync(packFile, pack);
  assert.ok(BLOCKS[2].includes('"file:///srv/app.pack"'), "the example names its pack so");
  const code = BLOCKS[2].replace('"file:///srv/app.pack"', JSON.stringify(pathToFileURL(packFile).href));
  const prelude = `import { readFileSync as readGuest } from "node:fs";
const wasmBytes = readGuest(${JSON.stringify(DEMO_P1)});`;
  // The demo takes `--help` for its data directory, which is not there:
  // it says so and exits 1, as the example leaves it to.
  const out = node("wasi", prelude, `${code}\nconsole.log("exit", exitCode);`);
  assert.match(out, /exit 1\nexample done\n$/);
});
