// Runs the guest benchmark (bench/guest.html) in headless Chromium: the
// workload of the host's guest benchmark (guest-tests/src/bin/
// bench_workload.rs) as a WASI preview1 module in a Web Worker, on PackFS
// (runP1 over a MemFs) and on @bjorn3/browser_wasi_shim's in-memory
// filesystem, the same .wasm, alternately; writes web/BENCH-web-guest.md.
//
//   web/build.sh && (cd web && npm ci && npm run bench:guest)
//
// RUNS (default 3), N (small files, default 5000: browser_wasi_shim lists a
// directory in O(n²)) and BIG_MIB (the big
// file, default 8: browser_wasi_shim regrows a file by copying it whole on
// every write that extends it, so 64 MiB in 4 KiB writes would copy ~0.5 TB).

import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { cpus } from "node:os";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

import { startServer } from "../e2e/server.mjs";
import { launch, pageResult } from "../e2e/browser.mjs";

const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const root = here("../../");
const runs = Number(process.env.RUNS ?? 3);
const n = Number(process.env.N ?? 5000);
const big = Number(process.env.BIG_MIB ?? 8);

execFileSync(
  "cargo",
  ["build", "--release", "--target", "wasm32-wasip1", "--manifest-path", `${root}guest-tests/Cargo.toml`,
    "--target-dir", `${root}target/guest-tests`, "--bin", "bench_workload"],
  { stdio: "inherit" },
);
const wasm = readFileSync(`${root}target/guest-tests/wasm32-wasip1/release/bench_workload.wasm`);
mkdirSync(here("./dist"), { recursive: true });
await build({
  entryPoints: [here("./shim-worker.js")],
  bundle: true,
  format: "esm",
  platform: "browser",
  outfile: here("./dist/shim-worker.js"),
  logLevel: "warning",
});

const server = await startServer({ files: { "/bench/bench_workload.wasm": wasm } });
const browser = await launch();
let res;
try {
  res = await pageResult(browser, `${server.url}/bench/guest.html?runs=${runs}&n=${n}&big=${big}`, "guestBench", 60 * 60_000);
} finally {
  await browser.close();
  await server.close();
}

const median = (v) => {
  const s = [...v].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const phases = Object.keys(res.results.packfs[0]);
const rows = phases.map((p) => {
  const ours = median(res.results.packfs.map((r) => r[p].ns));
  const theirs = median(res.results.shim.map((r) => r[p].ns));
  const ops = res.results.packfs[0][p].ops;
  const bulk = /^(write|read)\d/.test(p);
  const per = (ns) => (bulk ? `${(big / (ns / 1e9)).toFixed(0)} MiB/s` : `${(ns / ops / 1e3).toFixed(2)} µs/op`);
  // A phase below the clock's resolution (5 µs in a browser) has no ratio.
  const ratio = ours > 0 ? `${(theirs / ours).toFixed(2)}x ${theirs >= ours ? "met" : "**not met**"}` : "—";
  return `| ${p} | ${(ours / 1e6).toFixed(1)} ms (${ours > 0 ? per(ours) : "—"}) | ${(theirs / 1e6).toFixed(1)} ms (${theirs > 0 ? per(theirs) : "—"}) | ${ratio} |`;
});
const md = `# packfs-web guest benchmark: a WASI preview1 guest in Chromium

The host's guest workload (\`guest-tests/src/bin/bench_workload.rs\`, \`std::fs\`
only, each phase timed inside the guest) as one wasm32-wasip1 module, run in
a Web Worker on **PackFS** (\`runP1\`, an empty \`MemFs\` preopened at \`/\`)
and on **@bjorn3/browser_wasi_shim**'s in-memory filesystem (an empty
\`PreopenDirectory\` at \`/\`, in a worker likewise), the same \`.wasm\`, runs
alternating. Target: PackFS at least as fast (≥ 1x) on every phase.

## Command

\`\`\`sh
web/build.sh && (cd web && npm ci && npm run bench:guest)   # writes web/BENCH-web-guest.md
\`\`\`

(\`RUNS\`, \`N\` and \`BIG_MIB\` change the runs, the small files and the big
file; the source is \`web/bench/guest.mjs\`, \`guest.js\` and \`shim-worker.js\`.)

## Method

- ${n} small files of 128 B created, read (open + read + close), stat'ed,
  listed and unlinked; ${n / 5} directories made and removed; a ${big} MiB
  file written and read back in 4 KiB, 64 KiB and 1 MiB pieces (not 64 MiB
  as on the host: browser_wasi_shim copies a file whole each time a write
  extends it, so its write phases grow with the square of the size).
- Medians of ${runs} runs each. Ratio = browser_wasi_shim's time ÷ PackFS's
  (above 1: PackFS faster). Nothing is asserted on these numbers.

Machine: ${cpus()[0]?.model ?? "unknown"}, ${cpus().length} cores (shared); Chromium ${res.chromium}, headless;
packfs-web release build. Run: ${new Date().toISOString().slice(0, 10)}.

## Results

| phase | PackFS | browser_wasi_shim | speed-up |
|---|---:|---:|---:|
${rows.join("\n")}
`;
writeFileSync(here("../BENCH-web-guest.md"), md);
console.log(md);
