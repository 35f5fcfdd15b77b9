// Runs the browser benchmark (bench/bench.html) in headless Chromium and
// writes web/BENCH-web.md.
//
//   web/build.sh && (cd web && npm run bench)
//
// Builds a 20,000-file tree as a pack (with packfs-web in Node), bundles the
// peers (@bjorn3/browser_wasi_shim, @zenfs/core) with esbuild, serves
// everything on 127.0.0.1 and reads window.benchResults.

import { writeFileSync, readFileSync, mkdirSync } from "node:fs";
import { cpus } from "node:os";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

import { startServer } from "../e2e/server.mjs";
import { WEB_CODE, stamped } from "./results.mjs";
import { launch, pageResult } from "../e2e/browser.mjs";
import { noise, packOf, packfs } from "../e2e/fixtures.mjs";

const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const rounds = Number(process.env.ROUNDS ?? 7);

mkdirSync(here("./dist"), { recursive: true });
await build({
  entryPoints: [here("./peers.js")],
  bundle: true,
  format: "esm",
  platform: "browser",
  outfile: here("./dist/peers.js"),
  logLevel: "warning",
});

// 20,000 files: 20 directories × 10 subdirectories × 100 files, 64 B to
// 4 KiB each (about 40 MB in all), incompressible.
const files = {};
for (let i = 0; i < 20_000; i++) {
  const size = 64 + ((i * 2654435761) >>> 0) % 4033;
  const path = `d${String(i % 20).padStart(2, "0")}/s${String((i >> 5) % 10)}/f${String(i).padStart(5, "0")}.dat`;
  files[path] = noise(size, i + 7);
}
const paths = Object.keys(files);
const pack = await packOf(files);
console.log(`tree: ${paths.length} files, pack ${pack.length} bytes`);

// A compressible tree for the compressed packs: 4,000 text files of 1 to
// 16 KB (log-like lines), stored (version 1), zstd and lz4 (version 2).
const { MemFs } = await packfs();
const textFs = new MemFs();
const textPaths = [];
for (let i = 0; i < 4000; i++) {
  const path = `t${String(i % 40).padStart(2, "0")}/f${String(i).padStart(4, "0")}.log`;
  const n = 1000 + ((i * 2654435761) >>> 0) % 15000;
  let body = "";
  for (let j = 0; body.length < n; j++) body += `${i}:${j} GET /assets/${(i * 31 + j) % 977}.js 200 ${(j * 7919) % 10000}us\n`;
  textFs.mkdir(path.split("/")[0], { recursive: true });
  textFs.writeFileSync(path, body.slice(0, n));
  textPaths.push(path);
}
const textPacks = {
  stored: Buffer.from(await textFs.compact()),
  zstd: Buffer.from(await textFs.compact({ compress: "zstd" })),
  lz4: Buffer.from(await textFs.compact({ compress: "lz4" })),
};
textFs.free();

const server = await startServer({
  files: {
    "/bench/tree.pack": pack,
    "/bench/paths.json": Buffer.from(JSON.stringify(paths)),
    "/bench/text-stored.pack": textPacks.stored,
    "/bench/text-zstd.pack": textPacks.zstd,
    "/bench/text-lz4.pack": textPacks.lz4,
    "/bench/text-paths.json": Buffer.from(JSON.stringify(textPaths)),
  },
});
const browser = await launch();
let res;
try {
  res = await pageResult(browser, `${server.url}/bench/bench.html?rounds=${rounds}`, "benchResults", 20 * 60_000);
} finally {
  await browser.close();
  await server.close();
}

const cpu = cpus()[0]?.model ?? "unknown";
const fmt = (n, d = 1) => n.toFixed(d);
function table(kind, base) {
  const rows = res.results.filter((r) => r.kind === kind);
  const baseMs = rows.find((r) => r.name === base).medianMs;
  const lines = [
    `| implementation | median ms / ${rows[0].ops.toLocaleString("en")} | µs / op | ops / s | min–max ms | time vs \`${base}\` |`,
    "|---|---:|---:|---:|---:|---:|",
  ];
  for (const r of rows) {
    const us = (r.medianMs * 1000) / r.ops;
    lines.push(
      `| ${r.name} | ${fmt(r.medianMs)} | ${fmt(us, 2)} | ${Math.round(r.ops / (r.medianMs / 1000)).toLocaleString("en")} | ${fmt(r.minMs)}–${fmt(r.maxMs)} | ${fmt(r.medianMs / baseMs, 2)}× |`,
    );
  }
  return lines.join("\n");
}

const md = `# packfs-web benchmark: random reads in Chromium

Random reads of every file of a 20,000-file tree, whole, in one page and one
run, against two JavaScript in-memory filesystems:

- **packfs-web** — \`Pack.fromBytes\` (the pack's bytes in wasm memory), an
  \`Overlay\` over it (nothing changed: reads go through to the pack) and a
  \`MemFs\` holding the same files;
- **@bjorn3/browser_wasi_shim** — its in-memory \`PreopenDirectory\`, read as a
  WASI \`fd_read\` is served: \`path_open\`, \`fd_filestat_get\`, \`fd_read\`;
- **@zenfs/core** — the \`InMemory\` backend through its Node-style
  \`fs.readFileSync\`.

## Command

\`\`\`sh
web/build.sh && (cd web && npm ci && npm run bench)   # writes web/BENCH-web.md
\`\`\`

(\`ROUNDS=N\` changes the number of measured rounds; the source is
\`web/bench/bench.js\` and \`web/bench/run.mjs\`.)

## Method

- Tree: ${res.files.toLocaleString("en")} files in 20 × 10 directories (\`dNN/sN/fNNNNN.dat\`), 64 B to
  4 KiB each, ${(res.bytes / 1e6).toFixed(1)} MB of content, incompressible; pack ${(res.packBytes / 1e6).toFixed(1)} MB. Built
  in Node with packfs-web, served from 127.0.0.1, loaded once; every
  filesystem is filled from it before timing starts.
- One round reads all ${res.files.toLocaleString("en")} files once, in one fixed pseudo-random order
  (the same for every implementation), each into a new \`Uint8Array\`, and
  sums length and first byte (every implementation must give the same sum).
  Rounds of the implementations are interleaved; round 0 is a warm-up; the
  table gives the median of ${res.rounds} measured rounds (and their range).
- \`stat\`: the size of every file, same order.
- Timing: \`performance.now()\` around each whole round. Nothing is asserted
  on these numbers; they are measurements, not tests.

Machine: ${cpu}, ${cpus().length} cores (shared); ${res.browser} (Debian), headless,
\`--no-sandbox --disable-gpu\`; packfs-web release build (wasm-bindgen ${readFileSync(here("../Cargo.toml"), "utf8").match(/wasm-bindgen = "=([0-9.]+)"/)[1]}).
Run: ${new Date().toISOString().slice(0, 10)}.

## Whole-file reads

${table("read", "packfs Pack.readFileSync")}

## stat

${table("stat", "packfs Pack.stat")}

## Compressed packs against the stored one

The same reads (whole files, a fixed pseudo-random order, \`Pack.fromBytes\`)
of a compressible tree: ${res.text.files.toLocaleString("en")} log-like text files of 1 to 16 KB,
${(res.text.bytes / 1e6).toFixed(1)} MB, packed stored (version 1, ${(res.text.sizes.stored / 1e6).toFixed(2)} MB), with zstd
(${(res.text.sizes.zstd / 1e6).toFixed(2)} MB: the browser's pure-Rust encoder) and with lz4
(${(res.text.sizes.lz4 / 1e6).toFixed(2)} MB), 128 KiB chunks, the default chunk cache.

${table("compressed", "stored (version 1)")}

## Notes

ANALYSIS
`;

const target = here("../BENCH-web.md");
let analysis = "";
try {
  const old = readFileSync(target, "utf8");
  const at = old.indexOf("## Notes\n");
  if (at >= 0) analysis = old.slice(at + "## Notes\n".length).trim();
} catch {}
const command = "web/build.sh && (cd web && npm ci && npm run bench)";
writeFileSync(target, stamped(md.replace("ANALYSIS", analysis || "(none yet)"), command, WEB_CODE));
console.log(readFileSync(target, "utf8"));
