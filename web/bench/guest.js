// The guest benchmark's page: runs bench_workload.wasm (a WASI preview1
// module) in Web Workers, alternately on PackFS (runP1, an empty MemFs at
// "/") and on browser_wasi_shim's in-memory filesystem, and leaves every
// run's phases in window.guestBench. Query: runs, n (small files), big (MiB).

import { runP1 } from "../pkg/runner.js";

const q = new URLSearchParams(location.search);
const runs = Number(q.get("runs") ?? 3);
const args = ["bench_workload", "all", q.get("n") ?? "20000", "/work", q.get("big") ?? "8"];

function phases(stdout) {
  const out = {};
  for (const line of stdout.split("\n")) {
    const f = line.trim().split(/\s+/);
    if (f.length === 4 && f[0] === "phase") out[f[1]] = { ns: Number(f[2]), ops: Number(f[3]) };
  }
  if (!stdout.endsWith("done\n")) throw new Error(`the guest did not finish:\n${stdout}`);
  return out;
}

async function packfs(module) {
  let stdout = "";
  const dec = new TextDecoder();
  const r = await runP1(module, {
    args,
    preopens: [{ path: "/", kind: "mem" }],
    stdout: (b) => (stdout += dec.decode(b, { stream: true })),
    stderr: (b) => (stdout += dec.decode(b, { stream: true })),
  });
  if (r.exitCode !== 0) throw new Error(`packfs: exit ${r.exitCode}\n${stdout}`);
  return phases(stdout);
}

function shim(module) {
  const worker = new Worker("dist/shim-worker.js", { type: "module" });
  return new Promise((resolve, reject) => {
    worker.onmessage = (e) => {
      worker.terminate();
      if (e.data.error) reject(new Error(e.data.error));
      else if (e.data.exitCode !== 0) reject(new Error(`shim: exit ${e.data.exitCode}\n${e.data.stdout}`));
      else resolve(phases(e.data.stdout));
    };
    worker.postMessage({ module, args });
  });
}

try {
  const module = await WebAssembly.compileStreaming(fetch("bench_workload.wasm"));
  const results = { packfs: [], shim: [] };
  for (let i = 0; i < runs; i++) {
    results.packfs.push(await packfs(module));
    results.shim.push(await shim(module));
  }
  window.guestBench = { args, runs, results };
} catch (e) {
  window.guestBench = { error: String(e?.stack ?? e) };
}
