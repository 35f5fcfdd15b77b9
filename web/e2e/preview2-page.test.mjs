// WASI 0.2 components on PackFS in a browser: the project's p2 guests,
// transpiled by jco (e2e/jco.mjs), run through packfs-web/preview2 on a
// page (an overlay over the seed pack fetched whole) and in a module
// Worker (an overlay over the seed pack read lazily by Range, each read
// waiting for its bytes); each must print its native transcript (left by
// host/tests/guests.rs). On a page's own thread a read of bytes not
// fetched yet cannot wait: it is the error `io`, never wrong bytes; where
// the engine has JSPI, the same guests transpiled for it (`--async-mode
// jspi`, JSPI_IMPORTS async) read a lazy pack on the page itself, each
// read awaiting its bytes. A
// journal (MemFs.openJournal, in OPFS) as a preopen keeps what a
// component wrote for the next Worker that opens it.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

import { startServer } from "./server.mjs";
import { STORAGE_SKIP, launch, newPage } from "./browser.mjs";
import { DIR, GUESTS, transpile, transpileOne } from "./jco.mjs";

const SHIM = "/node_modules/@bytecodealliance/preview2-shim/dist/browser/index.js";

const PAGE = `<!doctype html>
<link rel="icon" href="data:,">
<script type="importmap">{ "imports": { "@bytecodealliance/preview2-shim": "${SHIM}" } }</script>
<body>p2</body>`;

/** Runs guest `name` over the overlay `root` makes; in a worker, or here.
 *  `jspi`: its JSPI build, its reads awaiting a lazy pack's bytes. */
const RUN = `
import init, { MemFs, Pack } from "/pkg/index.js";
import { wasiImports } from "/pkg/preview2.js";

export async function run(name, lazy, jspi = false) {
  await init();
  const seed = lazy
    ? await Pack.fromUrl("/fixtures/seed.pack")
    : Pack.fromBytes(new Uint8Array(await (await fetch("/fixtures/seed.pack")).arrayBuffer()));
  const ro = Pack.fromBytes(new Uint8Array(await (await fetch("/fixtures/ro.pack")).arrayBuffer()));
  const chunks = [];
  const imports = await wasiImports({
    preopens: [{ path: "/", fs: new MemFs({ lower: seed }) }, { path: "/ro", fs: ro }],
    args: [name],
    stdout: (b) => chunks.push(b),
    shim: await import("${SHIM}"),
    jspi,
  });
  const { instantiate } = await import(jspi ? \`/jco/jspi/\${name}/\${name}.js\` : \`/jco/\${name}/\${name}.js\`);
  let status = 0;
  try {
    await (await instantiate(undefined, imports)).run.run();
  } catch (e) {
    if (!e?.exitError) throw e;
    status = e.code;
  }
  const stdout = new TextDecoder().decode(new Uint8Array(chunks.flatMap((c) => Array.from(c))));
  return { status, stdout, requests: lazy ? seed.requests : 0 };
}
`;

const WORKER = `
import { run } from "/p2/run.js";
onmessage = async ({ data }) => {
  try {
    postMessage(await run(data.name, true));
  } catch (e) {
    postMessage({ error: String(e?.stack ?? e) });
  }
};
`;

/** p2_script's calls on a journal at \`/\` (and at \`/ro\`, read-only), in a
 *  Worker; then the file it wrote, as the journal reads after. */
const JOURNAL = `
import init, { MemFs } from "/pkg/index.js";
import { wasiImports } from "/pkg/preview2.js";
onmessage = async ({ data: script }) => {
  try {
    await init();
    const fs = await MemFs.openJournal("p2-journal");
    const chunks = [];
    const imports = await wasiImports({
      preopens: [{ path: "/", fs }, { path: "/ro", fs, readOnly: true }],
      args: ["p2_script", ...script],
      stdout: (b) => chunks.push(b),
      shim: await import("${SHIM}"),
    });
    const { instantiate } = await import("/jco/p2_script/p2_script.js");
    (await instantiate(undefined, imports)).run.run();
    const stdout = new TextDecoder().decode(new Uint8Array(chunks.flatMap((c) => Array.from(c))));
    let kept = null;
    try { kept = Array.from(await fs.readFile("d/f")); } catch {}
    postMessage({ stdout, kept });
  } catch (e) {
    postMessage({ error: String(e?.stack ?? e) });
  }
};
`;

let server, browser, JSPI_SKIP;

before(async () => {
  const out = transpile();
  const files = {
    "/p2/": Buffer.from(PAGE),
    "/p2/run.js": Buffer.from(RUN),
    "/p2/worker.js": Buffer.from(WORKER),
    "/p2/journal.js": Buffer.from(JOURNAL),
    "/fixtures/seed.pack": readFileSync(join(DIR, "seed.pack")),
    "/fixtures/ro.pack": readFileSync(join(DIR, "ro.pack")),
  };
  const add = (dir, at) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) add(join(dir, e.name), `${at}/${e.name}`);
      else files[`${at}/${e.name}`] = readFileSync(join(dir, e.name));
    }
  };
  transpileOne(join(DIR, "p2-scripts", "p2_script.wasm"), out, "p2_script");
  const { JSPI_IMPORTS } = await import(new URL("../pkg/preview2.js", import.meta.url).href);
  const jspi = ["--async-mode", "jspi", "--async-imports", ...JSPI_IMPORTS, "--async-exports", "wasi:cli/run#run"];
  for (const name of GUESTS) transpileOne(join(DIR, "p2", `${name}.wasm`), join(out, "jspi"), name, jspi);
  add(out, "/jco");
  server = await startServer({ files });
  browser = await launch();
  const hasJspi = await onPage(() => typeof WebAssembly.Suspending === "function");
  JSPI_SKIP = !hasJspi && "this engine has no JSPI (WebAssembly.Suspending)";
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/** The page at /p2/, and `f(arg)` evaluated there. */
async function onPage(f, arg) {
  const { page, context, errors } = await newPage(browser);
  await page.goto(`${server.url}/p2/`);
  try {
    return await page.evaluate(f, arg);
  } finally {
    await context.close();
    assert.deepEqual(errors, []);
  }
}

for (const name of GUESTS) {
  const want = () => readFileSync(join(DIR, "p2", `${name}.txt`), "utf8");

  test(`${name} (p2, jco) prints on a page what it printed natively`, async () => {
    const r = await onPage(async (name) => (await import("/p2/run.js")).run(name, false), name);
    assert.equal(r.status, 0);
    assert.equal(r.stdout, want());
  });

  test(`${name} (p2, jco for JSPI) prints on a page, over a lazy pack, what it printed natively`, async (ctx) => {
    if (JSPI_SKIP) return ctx.skip(JSPI_SKIP);
    const r = await onPage(async (name) => (await import("/p2/run.js")).run(name, true, true), name);
    assert.equal(r.status, 0);
    assert.equal(r.stdout, want());
    assert.ok(r.requests > 0, "read lazily");
  });

  test(`${name} (p2, jco) prints in a Worker, over a lazy pack, what it printed natively`, async () => {
    const r = await onPage(
      (name) =>
        new Promise((resolve) => {
          const w = new Worker("/p2/worker.js", { type: "module" });
          w.onmessage = ({ data }) => resolve(data);
          w.onerror = (e) => resolve({ error: e.message });
          w.postMessage({ name });
        }),
      name,
    );
    assert.equal(r.error, undefined, r.error);
    assert.equal(r.status, 0);
    assert.equal(r.stdout, want());
    assert.ok(r.requests > 0, "read lazily");
  });
}

test("on a page, a read of a lazy pack's bytes not fetched yet is io, not wrong bytes", async () => {
  const r = await onPage(async (shim) => {
    const { default: init, Pack } = await import("/pkg/index.js");
    const { PackFsAdapter } = await import("/pkg/preview2.js");
    await init();
    const io = (await import(shim)).io;
    const root = new PackFsAdapter(io).getRoot(await Pack.fromUrl("/fixtures/seed.pack"));
    const seed = root.openAt({}, "seed", { directory: true }, { read: true });
    const names = [];
    for (let s = seed.readDirectory(), e; (e = s.readDirectoryEntry()); ) names.push(e);
    const file = names.find((e) => e.type === "regular-file");
    const f = seed.openAt({}, file.name, {}, { read: true });
    try {
      return { read: Array.from(f.read(64n, 0n)[0]) };
    } catch (e) {
      return { error: e, file: file.name };
    }
  }, SHIM);
  assert.equal(r.error, "io", JSON.stringify(r));
});

test("a journal as a component's preopen keeps what it wrote for the next Worker", { skip: STORAGE_SKIP }, async () => {
  // Both Workers in one page: a new context would have storage of its own.
  const [first, again] = await onPage(async (scripts) => {
    const inWorker = (script) =>
      new Promise((resolve) => {
        const w = new Worker("/p2/journal.js", { type: "module" });
        w.onmessage = ({ data }) => {
          w.terminate();
          resolve(data);
        };
        w.onerror = (e) => resolve({ error: e.message });
        w.postMessage(script);
      });
    const out = [];
    for (const script of scripts) out.push(await inWorker(script));
    return out;
  }, [["mkdir|0|d", "open|2|0|n|c|rw|d/f", "write|2|0|5|7|5", "mkdir|1|x"], ["statat|0|n|d/f"]]);
  assert.equal(first.error, undefined, first.error);
  assert.match(first.stdout, /^2 write\|2\|0\|5\|7\|5: taken 5, ok \(\)$/m);
  assert.match(first.stdout, /^3 mkdir\|1\|x: err .*"not-permitted"/m, "the read-only preopen refuses, as natively");
  assert.equal(again.error, undefined, again.error);
  assert.match(again.stdout, /^0 statat\|0\|n\|d\/f: ok "DescriptorType::RegularFile links 1 size 5"$/m, again.stdout);
  assert.equal(again.kept?.length, 5);
});
