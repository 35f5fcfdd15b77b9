// The guest workload as a WASI 0.2 component in one browser engine
// (PACKFS_BROWSER, as the e2e tests take it), for bench/p2.mjs: each run
// a fresh module Worker per configuration, the configurations taking
// turns in a rotating order; a worker runs the workload TIMES times, each
// on a fresh filesystem with the component instantiated anew.
//
//   PACKFS_BROWSER=firefox node bench/p2-page.mjs JCO_DIR N BIG_MIB RUNS TIMES
//
// Configurations: packfs (packfs-web/preview2 over an empty MemFs) and
// shim (preview2-shim's InMemoryFilesystemAdapter); where the engine keeps
// OPFS files, journal (MemFs.openJournal: each change in OPFS before the
// call returns) and opfs (the shim's OpfsFilesystemAdapter, which holds
// the tree in memory and writes it to OPFS when flushed). Every run also
// times the whole of it, instantiation to the tree on disk (the shim's
// OPFS adapter: after its flush). Prints one line of JSON.

import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

import { ISOLATED, startServer } from "../e2e/server.mjs";
import { ENGINE, STORAGE_SKIP, launch, pageResult } from "../e2e/browser.mjs";

const [dir, n, big, runs, times] = process.argv.slice(2);
const SHIM = "/node_modules/@bytecodealliance/preview2-shim/dist/browser/index.js";

const WORKER = `
import init, { MemFs } from "/pkg/index.js";
import { wasiImports } from "/pkg/preview2.js";
import * as shim from "${SHIM}";
import { instantiate } from "/jco/bench_workload/bench_workload.js";

const dec = new TextDecoder();

async function once(config, args, name) {
  const out = { stdout: "", stderr: "" };
  const journal = config === "journal" ? await MemFs.openJournal(name) : null;
  const imports = await wasiImports({
    preopens: [{ path: "/", fs: journal ?? new MemFs() }],
    args,
    stdout: (b) => (out.stdout += dec.decode(b, { stream: true })),
    stderr: (b) => (out.stderr += dec.decode(b, { stream: true })),
    shim,
  });
  let adapter = null;
  if (config === "shim" || config === "opfs") {
    let root = { dir: {} };
    if (config === "opfs") {
      const handle = await (await navigator.storage.getDirectory()).getDirectoryHandle(name, { create: true });
      root = await shim.filesystem.loadOpfsCapability(handle);
      adapter = new shim.filesystem.OpfsFilesystemAdapter();
    }
    const fs = shim.filesystem.createFilesystem({ adapter: adapter ?? new shim.filesystem.InMemoryFilesystemAdapter(), preopens: { "/": root } });
    imports["wasi:filesystem/types"] = fs.types;
    // wasiImports has the shim's descriptors forward their drops to
    // PackFS's adapter; the shim's own adapter is measured as it ships.
    delete shim.filesystem.types.Descriptor.prototype[Symbol.dispose ?? Symbol.for("dispose")];
    imports["wasi:filesystem/preopens"] = fs.preopens;
    if (adapter) {
      // One flush, after the run: the adapter's own would also start one
      // after the run (at its first microtask), writing the same tree a
      // second time at once. Disposed, it flushes only when told (its
      // documented explicit path); its flush of the empty tree now ends
      // before the clock starts.
      adapter.dispose();
      await new Promise((ok) => setTimeout(ok, 200));
    }
  }
  const t0 = performance.now();
  try {
    (await instantiate(undefined, imports)).run.run();
  } catch (e) {
    if (!e?.exitError) throw e;
  }
  if (adapter) await adapter.flush();
  const wall = performance.now() - t0;
  if (!out.stdout.endsWith("done\\n")) throw new Error(config + " failed: " + out.stderr);
  const phases = { wall: wall * 1e6 };
  for (const line of out.stdout.split("\\n")) {
    const f = line.trim().split(/\\s+/);
    if (f.length === 4 && f[0] === "phase") phases[f[1]] = Number(f[2]);
  }
  return phases;
}

onmessage = async ({ data: { config, args, times, name } }) => {
  try {
    await init();
    const all = [];
    for (let i = 0; i < times; i++) all.push(await once(config, args, name + "-" + i));
    postMessage(all);
  } catch (e) {
    postMessage({ error: String(e?.stack ?? e) });
  }
};
`;

const PAGE = `<!doctype html>
<link rel="icon" href="data:,">
<body>p2 bench</body>
<script type="module">
const q = new URLSearchParams(location.search);
const configs = q.get("configs").split(",");
const args = ["bench_workload", "all", q.get("n"), "/work", q.get("big")];
const results = Object.fromEntries(configs.map((c) => [c, []]));
// A journal's file stays locked a moment after its worker ends.
async function clear() {
  const root = await navigator.storage.getDirectory();
  for (let tries = 0; ; tries++) {
    try {
      for await (const name of root.keys()) await root.removeEntry(name, { recursive: true });
      return;
    } catch (e) {
      if (tries === 50) throw e;
      await new Promise((ok) => setTimeout(ok, 100));
    }
  }
}
try {
  if (configs.includes("journal")) await clear();
  for (let i = 0; i < Number(q.get("runs")); i++) {
    const order = configs.map((_, k) => configs[(k + i) % configs.length]);
    for (const config of order) {
      const worker = new Worker("/p2bench/worker.js", { type: "module" });
      const r = await new Promise((ok) => {
        worker.onmessage = ({ data }) => ok(data);
        worker.onerror = (e) => ok({ error: String(e.message ?? e) });
        worker.postMessage({ config, args, times: Number(q.get("times")), name: config + i });
      });
      worker.terminate();
      if (r.error) throw new Error(r.error);
      results[config].push(r);
      if (config === "journal" || config === "opfs") await clear();
    }
  }
  window.p2Bench = { results, isolated: crossOriginIsolated };
} catch (e) {
  window.p2Bench = { error: String(e?.stack ?? e) };
}
</script>`;

const files = { "/p2bench/": Buffer.from(PAGE), "/p2bench/worker.js": Buffer.from(WORKER) };
const add = (from, at) => {
  for (const e of readdirSync(from, { withFileTypes: true })) {
    if (e.isDirectory()) add(join(from, e.name), `${at}/${e.name}`);
    else files[`${at}/${e.name}`] = readFileSync(join(from, e.name));
  }
};
add(join(dir, "bench_workload"), "/jco/bench_workload");

const configs = ["packfs", "shim", ...(STORAGE_SKIP ? [] : ["journal", "opfs"])];
const server = await startServer({ files, headers: ISOLATED });
const browser = await launch();
try {
  const q = new URLSearchParams({ configs: configs.join(","), n, big, runs, times });
  const r = await pageResult(browser, `${server.url}/p2bench/?${q}`, "p2Bench", 60 * 60_000);
  process.stdout.write(`${JSON.stringify({ engine: ENGINE, browser: r.browser, isolated: r.isolated, results: r.results, storageSkip: STORAGE_SKIP || null })}\n`);
} finally {
  await browser.close();
  await server.close();
}
