// The guest benchmark in Node: bench_workload.wasm (the host's guest
// workload, each phase timed inside the guest) on PackFS and on three
// peers, each run in a fresh Node process (bench/node-run.mjs), the
// runtimes taking turns in every run, in a new order each time; writes
// web/BENCH-web-node.md. Also: what a lazy pack by URL fetches for one
// read in Node and in Chromium.
//
//   web/build.sh && (cd web && npm ci && npm run bench:node)
//
// RUNS (default 7), N (small files, default 5000) and BIG_MIB (default 8),
// as bench/guest.mjs takes them.

import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { fileURLToPath } from "node:url";

import { startServer } from "../e2e/server.mjs";
import { WEB_CODE, stamped } from "./results.mjs";

const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const root = here("../../");
const runs = Number(process.env.RUNS ?? 7);
const n = process.env.N ?? "5000";
const big = process.env.BIG_MIB ?? "8";
const ALL = ["create", "read", "stat", "readdir", "unlink", "mkdir", "rmdir", "write4k", "read4k", "write64k", "read64k", "write1m", "read1m"];

/** The runtimes, in the table's order: PackFS first, the reference. */
const RUNTIMES = [
  { key: "packfs", name: "PackFS `WASI`" },
  { key: "packfs-runner", name: "PackFS `runP1`", info: true },
  // Node 20.20's node:wasi ends in SIGSEGV when one process runs the
  // whole workload a second time: it has cold runs only.
  { key: "node-wasi", name: "node:wasi (tmpfs)", target: () => 1, coldOnly: true },
  { key: "shim", name: "browser_wasi_shim", target: (p) => (TWICE.has(p) ? 2 : 1) },
  { key: "wasm-util", name: "wasm-util + memfs", target: (p) => (TWICE.has(p) ? 2 : 1) },
];
/** Which run of a process is the warm one (0: the first). */
const WARM_AT = 2;
/** Phases whose target against the shims is 2x. */
const TWICE = new Set(["create", "read"]);

execFileSync(
  "cargo",
  ["build", "--release", "--target", "wasm32-wasip1", "--manifest-path", `${root}guest-tests/Cargo.toml`,
    "--target-dir", `${root}target/guest-tests`, "--bin", "bench_workload", "--bin", "toolbox"],
  { stdio: "inherit" },
);
const wasm = `${root}target/guest-tests/wasm32-wasip1/release/bench_workload.wasm`;

/** A run's phases ({ name: ns }) and the phase it failed at, if any. */
function parse({ stdout, stderr }) {
  const phases = {};
  for (const line of stdout.split("\n")) {
    const f = line.trim().split(/\s+/);
    if (f.length === 4 && f[0] === "phase") phases[f[1]] = Number(f[2]);
  }
  if (stdout.endsWith("done\n")) return { phases, failure: null };
  const m = /bench_workload: (\w+): (.*)/.exec(stderr);
  if (!m) throw new Error(`the guest stopped without saying why:\n${stdout}${stderr}`);
  return { phases, failure: { phase: m[1], message: m[2] } };
}

/** Runs of `phases` on `runtime`, `times` of them in one process of its
 *  own: the first cold, the rest warm. */
function runsOf(runtime, phases, times, size = { n, big }) {
  const out = execFileSync(process.execPath, ["--no-warnings", here("./node-run.mjs"), runtime, wasm, phases.join(","), size.n, size.big, String(times)], {
    encoding: "utf8",
    maxBuffer: 1 << 26,
  });
  return JSON.parse(out.trim().split("\n").at(-1)).map(parse);
}
const once = (runtime, phases, size) => runsOf(runtime, phases, 1, size)[0];

// What each runtime cannot run, found by small runs, never by a timed one.
const failures = {};
for (const { key } of RUNTIMES) {
  failures[key] = {};
  for (;;) {
    const r = once(key, ALL.filter((p) => !failures[key][p]), { n: "100", big: "1" });
    if (!r.failure) break;
    failures[key][r.failure.phase] = r.failure.message;
  }
}

/** Cold runs (a process's first) and warm ones (its third). */
const cold = Object.fromEntries(RUNTIMES.map(({ key }) => [key, []]));
const warm = Object.fromEntries(RUNTIMES.map(({ key }) => [key, []]));
for (let i = 0; i < runs; i++) {
  // A new order each run: none always follows the same one.
  const order = RUNTIMES.map((_, k) => RUNTIMES[(k + i) % RUNTIMES.length]);
  for (const { key, coldOnly } of order) {
    const rs = runsOf(key, ALL.filter((p) => !failures[key][p]), coldOnly ? 1 : WARM_AT + 1);
    const failed = rs.find((r) => r.failure);
    if (failed) throw new Error(`${key} failed ${failed.failure.phase} in a timed run: ${failed.failure.message}`);
    cold[key].push(rs[0].phases);
    if (!coldOnly) warm[key].push(rs[WARM_AT].phases);
    process.stderr.write(".");
  }
}
process.stderr.write("\n");

// A lazy pack by URL: what one read fetches, in Node and in Chromium.
const lazy = await lazyFetches();

const sorted = (v) => [...v].sort((a, b) => a - b);
const median = (v) => {
  const s = sorted(v);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const ms = (ns) => `${(ns / 1e6).toFixed(1)}`;
const spread = (v) => `${ms(median(v))} [${ms(sorted(v)[0])}–${ms(sorted(v).at(-1))}]`;
/** The table of `times` (cold or warm), and what it misses. */
function table(times) {
  const of = (key, p) => times[key].map((r) => r[p]);
  const missed = [];
  const rows = ALL.map((p) => {
    const ours = median(of("packfs", p));
    const cells = RUNTIMES.slice(1).map(({ key, name, target, info }) => {
      if (failures[key][p]) return `fails: ${failures[key][p]}`;
      if (times[key].length === 0) return "—";
      const theirs = of(key, p);
      const ratio = median(theirs) / ours;
      if (info) return `${spread(theirs)}, ${ratio.toFixed(2)}x`;
      const t = target(p);
      if (ratio < t) missed.push(`${p} against ${name}: ${ratio.toFixed(2)}x (target ${t}x)`);
      return `${spread(theirs)}, ${ratio.toFixed(2)}x${ratio < t ? " **short**" : ""}`;
    });
    return `| ${p} | ${spread(of("packfs", p))} | ${cells.join(" | ")} |`;
  });
  return `| phase | PackFS \`WASI\`, ms | ${RUNTIMES.slice(1).map((r) => r.name).join(" | ")} |
|---|---:|${RUNTIMES.slice(1).map(() => "---:").join("|")}|
${rows.join("\n")}

${missed.length ? `**Not met**: ${missed.join("; ")}.` : "**Met** on every phase against every peer."}`;
}
const version = (pkg) => JSON.parse(readFileSync(here(`../node_modules/${pkg}/package.json`), "utf8")).version;

const md = `# packfs-web guest benchmark in Node

The guest workload of [BENCH-web-guest.md](BENCH-web-guest.md)
(\`guest-tests/src/bin/bench_workload.rs\`, each phase timed inside the
guest by the WASI monotonic clock) as one wasm32-wasip1 module, in Node
${process.versions.node}, on **PackFS** (packfs-web's \`WASI\` class over an empty
\`MemFs\` at \`/\`, on the calling thread, as the peers run) and on three peers
as their documentation runs them for speed:

- **node:wasi** (Node's own, \`new WASI({ version: "preview1", preopens: {
  "/": dir } })\`) over an empty directory on tmpfs (\`/dev/shm\`): its
  documented use, a host directory; no logging to turn off;
- **browser_wasi_shim** ${version("@bjorn3/browser_wasi_shim")}, \`{ debug: false }\`, an empty \`PreopenDirectory\`;
- **wasm-util + memfs**: \`@tybys/wasm-util\` ${version("@tybys/wasm-util")} over \`memfs()\` from
  \`@napi-rs/wasm-runtime/fs\` ${version("@napi-rs/wasm-runtime")}, \`returnOnExit: true\`.

The shims' monotonic clock is \`performance.now()\` in nanoseconds, as
PackFS's is (node:wasi's own is already precise). **PackFS \`runP1\`** (the
guest in a worker thread, over a \`mem\` preopen) is shown beside, with no
target. Targets: every phase ≥ 1x against all three peers; create and read
(small files) ≥ 2x against the shims.

## Command

\`\`\`sh
web/build.sh && (cd web && npm ci && npm run bench:node)   # writes web/BENCH-web-node.md
\`\`\`

## Method

- ${n} small files of 128 B created, read, stat'ed, listed and unlinked;
  ${Number(n) / 5} directories made and removed; a ${big} MiB file written and
  read in 4 KiB, 64 KiB and 1 MiB pieces.
- ${runs} runs; in each, every runtime once, each in a fresh Node process,
  in an order that rotates from run to run. A process runs the workload
  ${WARM_AT + 1} times, each on a fresh runtime and empty filesystem (the module
  compiled once): its first run is **cold** (nothing compiled yet, by V8
  or by the runtime), its last **warm**. Cells: median [min–max] in ms,
  and the ratio peer ÷ PackFS (above 1: PackFS faster). Nothing is
  asserted on these numbers.

Machine: ${cpus()[0]?.model ?? "unknown"}, ${cpus().length} cores (shared). Run: ${new Date().toISOString().slice(0, 10)}.

## Cold: a process's first run

${table(cold)}

## Warm: a process's run ${WARM_AT + 1}

node:wasi has no warm figures: in Node ${process.versions.node} a process that runs this
workload a second time on a new \`WASI\` ends in SIGSEGV (exit 139),
whatever the directory.

${table(warm)}

## A lazy pack by URL: the same bytes in Node as in Chromium

One \`cat\` of a 200,000-byte file from an uncompressed 4.8 MB pack of 24
such files, over a \`pack\` preopen by URL (a loopback server): Node
fetched ${lazy.node.bytesFetched} bytes in ${lazy.node.requests} requests; Chromium ${lazy.chromium.bytesFetched} bytes in
${lazy.chromium.requests} requests (${lazy.node.bytesFetched === lazy.chromium.bytesFetched && lazy.node.requests === lazy.chromium.requests ? "the same" : "**not the same**"}).
`;
const command = "web/build.sh && (cd web && npm ci && npm run bench:node)";
writeFileSync(here("../BENCH-web-node.md"), stamped(md, command, [...WEB_CODE, "guest-tests/src/bin/bench_workload.rs"]));
console.log(md);

/** `cat /f/3.bin` from a lazy URL pack, in Node (this process) and in
 *  Chromium: what each fetched. */
async function lazyFetches() {
  const { default: init, MemFs } = await import("../pkg/index.js");
  const { runP1 } = await import("../pkg/runner.js");
  await init();
  const fs = new MemFs();
  fs.mkdir("f");
  for (let i = 0; i < 24; i++) fs.writeFileSync(`f/${i}.bin`, new Uint8Array(200_000).map((_, k) => (k * 31 + i) & 0xff));
  const pack = await fs.compact({ compress: "none" });
  const toolbox = readFileSync(`${root}target/guest-tests/wasm32-wasip1/release/toolbox.wasm`);
  const server = await startServer({ files: { "/big.pack": pack, "/toolbox.wasm": toolbox } });
  const options = { args: ["toolbox", "cat", "/f/3.bin"], preopens: [{ path: "/", kind: "pack", url: `${server.url}/big.pack`, pack: { persist: false } }] };
  try {
    const node = await runP1(toolbox, { ...options, stdout: () => {} });
    const { launch, newPage } = await import("../e2e/browser.mjs");
    const browser = await launch();
    const { page } = await newPage(browser);
    await page.goto(`${server.url}/www/`);
    const chromium = await page.evaluate(async (options) => {
      const { runP1 } = await import("/pkg/runner.js");
      const module = await (await fetch("/toolbox.wasm")).arrayBuffer();
      const r = await runP1(module, { ...options, stdout: () => {} });
      return { bytesFetched: r.bytesFetched, requests: r.requests };
    }, options);
    await browser.close();
    return { node: { bytesFetched: node.bytesFetched, requests: node.requests }, chromium };
  } finally {
    await server.close();
  }
}
