// The guest benchmark's page: runs bench_workload.wasm (a WASI preview1
// module) in Web Workers, on PackFS (runP1, an empty MemFs at "/") and on
// each peer's in-memory filesystem, one after another in every run, and
// leaves every run's phases in window.guestBench. Query: runs, n (small
// files), big (MiB), warm (runs in one worker). With fresh=RUNTIME (packfs
// or a peer's key) the page runs that runtime once, its first run on this
// page, leaving out the phases named by skip (a comma-separated list), and
// leaves { phases, grainNs }.
//
// The page must be cross-origin isolated (bench/guest.mjs serves it so):
// only then is performance.now(), which times every phase, precise to
// 5 µs in Chromium rather than 100 µs.

import { createRunner, runP1 } from "../pkg/runner.js";
import { grainNs } from "./clock.js";

const q = new URLSearchParams(location.search);
const runs = Number(q.get("runs") ?? 3);
const n = q.get("n") ?? "5000";
const big = q.get("big") ?? "8";
/** Runs of the small-file phases in one worker per runtime (warm). */
const warm = Number(q.get("warm") ?? 6);
const fresh = q.get("fresh");
const skip = new Set((q.get("skip") ?? "").split(",").filter(Boolean));
const argsOf = (phases, size = { n, big }) => ["bench_workload", phases.join(","), size.n, "/work", size.big];
/** The size of the run that finds what a peer cannot do. */
const PROBE = { n: "100", big: "1" };

/** bench_workload.rs's phases, in its order (its `all`). */
const ALL = [
  "create", "read", "stat", "readdir", "unlink", "mkdir", "rmdir",
  "write4k", "read4k", "write64k", "read64k", "write1m", "read1m",
];
/** The peers' workers (bundled by bench/guest.mjs). */
const PEERS = {
  shim: "dist/shim-worker.js",
  wasmUtil: "dist/wasm-util-worker.js",
  runno: "dist/runno-worker.js",
};

/** A run's output as { phases: { name: { ns, ops } }, failure }: `failure`
 *  is { phase, message } when the guest stopped at a phase. */
function parse(stdout, stderr) {
  const phases = {};
  for (const line of stdout.split("\n")) {
    const f = line.trim().split(/\s+/);
    if (f.length === 4 && f[0] === "phase") phases[f[1]] = { ns: Number(f[2]), ops: Number(f[3]) };
  }
  if (stdout.endsWith("done\n")) return { phases, failure: null };
  const m = /bench_workload: (\w+): (.*)/.exec(stderr);
  if (!m) throw new Error(`the guest stopped without saying why:\n${stdout}${stderr}`);
  return { phases, failure: { phase: m[1], message: m[2] } };
}

/** Waits for the machine to settle before a timed run: a worker just
 *  ended or just busy is torn down, collected and compiled for on
 *  background threads, which on two cores (maybe one core's two threads)
 *  would slow whichever runtime runs next. */
const settle = () => new Promise((resolve) => setTimeout(resolve, SETTLE_MS)).then(collect);
const SETTLE_MS = 1000;

/** Collects the page's garbage where the engine offers a page a way to
 *  (Chromium launched with --expose-gc); the peers' workers do the same
 *  before each run (guest-worker.js). */
const collect = () => globalThis.gc?.();

/** The small-file phases, the ones a runtime's warm-up weighs on. */
const WARM = ["create", "read", "stat", "unlink", "mkdir", "rmdir"];

/** One run of `phases` on PackFS: by `runner` (warm), else by runP1. */
async function packfs(module, wanted = ALL, runner = { run: runP1 }) {
  const out = { stdout: "", stderr: "" };
  const dec = new TextDecoder();
  const r = await runner.run(module, {
    args: argsOf(wanted),
    preopens: [{ path: "/", kind: "mem" }],
    stdout: (b) => (out.stdout += dec.decode(b, { stream: true })),
    stderr: (b) => (out.stderr += dec.decode(b, { stream: true })),
  });
  const { phases, failure } = parse(out.stdout, out.stderr);
  if (r.exitCode !== 0 || failure) throw new Error(`packfs: exit ${r.exitCode}\n${out.stdout}${out.stderr}`);
  return phases;
}

/** One run of `phases` on a peer, in a fresh worker (or in `kept`, which
 *  stays: each run there still gets a fresh runtime and filesystem). */
function inWorker(peer, module, phases, probe, kept) {
  const worker = kept ?? new Worker(PEERS[peer], { type: "module" });
  return new Promise((resolve, reject) => {
    worker.onmessage = (e) => {
      if (!kept) worker.terminate();
      if (e.data.error) reject(new Error(`${peer}: ${e.data.error}`));
      else resolve({ ...e.data, ...parse(e.data.stdout, e.data.stderr) });
    };
    worker.postMessage({ module, args: probe ? argsOf(phases, PROBE) : argsOf(phases), trace: probe });
  });
}

/**
 * Runs every phase a peer can on a fresh filesystem, leaving out those
 * that failed before: each phase that fails goes into `failures` and the
 * run starts again without it. A `probe` run is small and watches every
 * call, to name the one a phase failed on. Returns the phases' times and
 * the clock grain the worker saw.
 */
async function peerRun(peer, module, failures, probe = false) {
  for (;;) {
    const r = await inWorker(peer, module, ALL.filter((p) => !failures[p]), probe);
    if (!r.failure) return { phases: r.phases, grainNs: r.grainNs };
    failures[r.failure.phase] = { message: r.failure.message, ...(r.failed ?? {}) };
  }
}

/** A runtime's first run on this page: nothing of it compiled or warm yet. */
async function firstRun(module) {
  const wanted = ALL.filter((p) => !skip.has(p));
  if (fresh === "packfs") return packfs(module, wanted);
  const r = await inWorker(fresh, module, wanted, false);
  if (r.failure) throw new Error(`${fresh}: ${r.failure.phase}: ${r.failure.message}`);
  return r.phases;
}

try {
  if (!crossOriginIsolated) {
    throw new Error("the page is not cross-origin isolated (COOP same-origin and COEP require-corp): its clock is coarse");
  }
  if (fresh) {
    const module = await WebAssembly.compileStreaming(fetch("bench_workload.wasm"));
    window.guestBench = { phases: await firstRun(module), grainNs: grainNs() };
  } else await allRuns();
} catch (e) {
  window.guestBench = { error: String(e?.stack ?? e) };
}

/** Every runtime's runs, fresh workers then warm ones, on this one page. */
async function allRuns() {
  const module = await WebAssembly.compileStreaming(fetch("bench_workload.wasm"));
  const results = { packfs: [] };
  const failures = {};
  let grain = grainNs();
  // Which phases each peer cannot run, and on which call: found by a small
  // run with every call watched, never by a timed one.
  for (const peer of Object.keys(PEERS)) {
    results[peer] = [];
    failures[peer] = {};
    await peerRun(peer, module, failures[peer], true);
  }
  for (let i = 0; i < runs; i++) {
    await settle();
    results.packfs.push(await packfs(module));
    for (const peer of Object.keys(PEERS)) {
      await settle();
      const r = await peerRun(peer, module, failures[peer]);
      results[peer].push(r.phases);
      grain = Math.max(grain, r.grainNs);
    }
  }
  // Warm: every run of a runtime in one worker (PackFS: one createRunner),
  // each on a fresh filesystem, the runtimes taking turns as above so that
  // a slow spell of the machine falls on all of them; @runno/wasi, O(n²)
  // per phase, is left out.
  const warmPeers = ["shim", "wasmUtil"];
  const warmed = { packfs: [] };
  const runner = createRunner();
  const workers = warmPeers.map((peer) => new Worker(PEERS[peer], { type: "module" }));
  for (const peer of warmPeers) warmed[peer] = [];
  for (let i = 0; i < warm; i++) {
    await settle();
    warmed.packfs.push(await packfs(module, WARM, runner));
    for (const [k, peer] of warmPeers.entries()) {
      await settle();
      warmed[peer].push((await inWorker(peer, module, WARM, false, workers[k])).phases);
    }
  }
  runner.close();
  for (const w of workers) w.terminate();
  const collected = typeof globalThis.gc === "function";
  window.guestBench = { n: Number(n), big: Number(big), runs, grainNs: grain, results, failures, warm: warmed, collected };
}
