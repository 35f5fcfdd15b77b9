// End-to-end tests of the demo page (web/www/) in headless Chromium:
// open a pack by URL, file picker and drag and drop; browse; view text and
// an image; edit and add files in the overlay; verify; download the
// compacted pack and check what it holds. Saves screenshots to
// web/e2e/artifacts/.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

import { startServer } from "./server.mjs";
import { download, launch, newPage } from "./browser.mjs";
import { demoPack, demoFiles, logo, packfs, README } from "./fixtures.mjs";

const ARTIFACTS = fileURLToPath(new URL("./artifacts/", import.meta.url));
mkdirSync(ARTIFACTS, { recursive: true });

let server, browser, demo;

before(async () => {
  demo = await demoPack();
  server = await startServer({ files: { "/fixtures/demo.pack": demo } });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

async function openDemo() {
  const t = await newPage(browser, { acceptDownloads: true });
  await t.page.goto(`${server.url}/www/`);
  await t.page.waitForSelector("body[data-ready=true]");
  return t;
}

const entry = (path) => `#tree [data-path="${path}"]`;

test("open by URL, read, edit, add, verify, download the compacted pack", async () => {
  const { page, context, errors } = await openDemo();
  await page.fill("#url-input", "/fixtures/demo.pack");
  await page.click("#open-url");
  await page.waitForSelector(entry("docs"));
  const top = await page.$$eval("#tree > li > .entry", (bs) => bs.map((b) => b.dataset.path));
  assert.deepEqual(top, ["data", "docs", "empty", "images", "readme", "src"]);
  // The demo pack is compressed: the summary says how well.
  assert.match(await page.textContent("#info"), /inodes · \d+ blobs · v2 · zstd \d+\.\dx/);
  // The demo pack is under 64 KiB: the first request (the pack's tail) got it all.
  assert.match(await page.textContent("#fetched"), /^fetched \d+ KiB in 1 request$/);

  // Text: expand docs, open the README.
  await page.click(entry("docs"));
  await page.click(entry("docs/README.md"));
  await page.waitForSelector("#editor");
  assert.equal(await page.inputValue("#editor"), README);
  assert.match(await page.textContent(entry("docs/README.md")), /\d+ B/);

  // A symlink shows its target and the content behind it.
  await page.click(entry("readme"));
  await page.waitForFunction(() => document.querySelector("#viewer-meta").textContent.startsWith("→ docs/README.md"));
  assert.equal(await page.inputValue("#editor"), README);

  // An image, decoded by the browser.
  await page.click(entry("images"));
  await page.click(entry("images/logo.png"));
  await page.waitForSelector("#viewer img");
  await page.waitForFunction(() => document.querySelector("#viewer img").complete);
  const size = await page.$eval("#viewer img", (img) => [img.naturalWidth, img.naturalHeight]);
  assert.deepEqual(size, [160, 120]);
  await page.screenshot({ path: `${ARTIFACTS}demo-image.png` });

  // Edit the README in the overlay.
  await page.click(entry("docs/README.md"));
  await page.waitForSelector("#editor");
  await page.fill("#editor", "# Edited in the browser\n");
  await page.click("#save");
  await page.waitForSelector(`${entry("docs/README.md")}.changed`);

  // Add a file in a new directory.
  await page.fill("#new-path", "notes/today.txt");
  await page.click("#new-file");
  await page.waitForSelector(entry("notes/today.txt"));
  await page.waitForFunction(() => document.querySelector("#viewer-path").textContent === "notes/today.txt");
  await page.fill("#editor", "written by the e2e test");
  await page.click("#save");
  await page.waitForFunction(() => document.querySelector("#status").textContent.startsWith("Saved notes/today.txt"));

  // Delete one.
  await page.click(entry("data"));
  await page.click(entry("data/numbers.csv"));
  await page.waitForSelector("#editor");
  await page.click("#delete");
  await page.waitForFunction(() => !document.querySelector('#tree [data-path="data/numbers.csv"]'));

  // Checksums (of the pack under the overlay): fetches the rest, all OK.
  await page.click("#verify");
  await page.waitForSelector("#checksum.ok");
  assert.match(await page.textContent("#checksum"), /checksums OK/);

  await page.screenshot({ path: `${ARTIFACTS}demo.png`, fullPage: true });

  // Download the compacted pack and read it back.
  const { name, bytes } = await download(page, "#download");
  assert.equal(name, "demo-edited.pack");
  const { Pack } = await packfs();
  const pack = Pack.fromBytes(bytes);
  assert.equal((await pack.verify()).ok, true);
  const text = async (p) => new TextDecoder().decode(await pack.readFile(p));
  assert.equal(await text("docs/README.md"), "# Edited in the browser\n");
  assert.equal(await text("notes/today.txt"), "written by the e2e test");
  assert.equal(await text("docs/notes.txt"), demoFiles()["docs/notes.txt"]);
  assert.deepEqual(Buffer.from(await pack.readFile("images/logo.png")), logo());
  assert.equal(pack.readlink("readme"), "docs/README.md");
  assert.equal(pack.exists("data/numbers.csv"), false);
  assert.deepEqual(
    pack.readdir("").map((e) => e.name),
    ["data", "docs", "empty", "images", "notes", "readme", "src"],
  );
  // The original pack on the server is untouched.
  assert.equal(Pack.fromBytes(demo).exists("notes/today.txt"), false);

  assert.deepEqual(errors, []);
  await context.close();
});

test("open by file picker and by drag and drop; checksums are checked at once", async () => {
  const { page, context, errors } = await openDemo();
  await page.setInputFiles("#file-input", { name: "picked.pack", mimeType: "application/octet-stream", buffer: demo });
  await page.waitForSelector("#checksum.ok");
  assert.equal(await page.textContent("#pack-name"), "picked.pack");
  assert.equal(await page.textContent("#fetched"), "");
  await page.click(entry("src"));
  await page.click(entry("src/main.rs"));
  await page.waitForSelector("#editor");
  assert.match(await page.inputValue("#editor"), /hello from a pack/);

  // Drop a pack on the page.
  await page.evaluate((bytes) => {
    const dt = new DataTransfer();
    dt.items.add(new File([new Uint8Array(bytes)], "dropped.pack"));
    window.dispatchEvent(new DragEvent("dragenter", { dataTransfer: dt, cancelable: true }));
    window.dispatchEvent(new DragEvent("drop", { dataTransfer: dt, cancelable: true }));
  }, [...demo]);
  await page.waitForFunction(() => document.querySelector("#pack-name").textContent === "dropped.pack");
  await page.waitForSelector("#checksum.ok");
  assert.equal(await page.isHidden("#drop-overlay"), true);
  assert.deepEqual(errors, []);
  await context.close();
});

test("damaged packs: an error message, or the damaged file named by verify", async () => {
  const { page, context } = await openDemo();
  // A truncated pack does not open.
  await page.setInputFiles("#file-input", { name: "cut.pack", mimeType: "application/octet-stream", buffer: demo.subarray(0, demo.length - 10) });
  await page.waitForSelector("#status.error");
  assert.match(await page.textContent("#status"), /^io: /);

  // A flipped content byte opens, and verify names the file (in a pack
  // stored uncompressed, where the byte can be found).
  const flipped = await demoPack("none");
  flipped[flipped.indexOf("Remember")] ^= 0x20;
  await page.setInputFiles("#file-input", { name: "flipped.pack", mimeType: "application/octet-stream", buffer: flipped });
  await page.waitForSelector("#checksum.bad");
  assert.match(await page.textContent("#checksum"), /1 damaged: docs\/notes\.txt/);
  await page.screenshot({ path: `${ARTIFACTS}damaged.png` });
  await context.close();
});

test("a missing URL is reported, the page keeps working", async () => {
  const { page, context } = await openDemo();
  await page.fill("#url-input", "/fixtures/none.pack");
  await page.click("#open-url");
  await page.waitForSelector("#status.error");
  assert.match(await page.textContent("#status"), /io: .*HTTP 404/);
  await page.click("#new-empty");
  await page.fill("#new-path", "hello.txt");
  await page.click("#new-file");
  await page.waitForSelector(entry("hello.txt"));
  await context.close();
});

test("run a WASI guest over the open pack: its output, what it fetched, its writes in the tree and the download", async () => {
  const { page, context, errors } = await openDemo();
  await page.fill("#url-input", "/fixtures/demo.pack");
  await page.click("#open-url");
  await page.waitForSelector(entry("docs"));
  await page.click("#run");
  await page.fill("#run-args", "/docs /out/report.txt");
  await page.click("#run-start");
  await page.waitForFunction(() => /exit status/.test(document.getElementById("run-result").textContent));
  const out = await page.textContent("#run-output");
  const files = demoFiles();
  const words = (p) => files[p].split(/\s+/).filter(Boolean).length;
  assert.match(out, /report written to \/out\/report\.txt\n$/);
  assert.match(out, new RegExp(`${words("docs/notes.txt")}\\s+\\d+\\s+/docs/notes\\.txt`));
  assert.match(out, /total \(2 files\)/);
  assert.match(await page.textContent("#run-result"), /^exit status 0 · the guest fetched \d+(\.\d)? KiB in \d+ requests?$/);
  // The guest's write is in the page's tree, and in the download.
  await page.waitForSelector(entry("out"));
  await page.click(entry("out"));
  await page.click(entry("out/report.txt"));
  await page.waitForSelector("#editor");
  const report = await page.inputValue("#editor");
  assert.ok(out.startsWith(report), `${report} is what the guest printed`);
  await page.screenshot({ path: `${ARTIFACTS}demo-run.png`, fullPage: true });
  const { Pack } = await packfs();
  const pack = Pack.fromBytes((await download(page, "#download")).bytes);
  assert.equal(new TextDecoder().decode(await pack.readFile("out/report.txt")), report);
  assert.equal(new TextDecoder().decode(await pack.readFile("docs/notes.txt")), files["docs/notes.txt"]);
  assert.deepEqual(errors, []);
  await context.close();
});
