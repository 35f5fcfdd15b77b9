// One run of bench_workload.wasm in this Node process, on one runtime:
//
//   node bench/node-run.mjs RUNTIME WASM PHASES N BIG_MIB [TIMES]
//
// RUNTIME: packfs (packfs-web's WASI class over an empty MemFs at "/", on
// this thread), packfs-runner (runP1 over a "mem" preopen, in a worker
// thread), node-wasi (node:wasi over an empty directory on tmpfs, its
// documented use), shim (@bjorn3/browser_wasi_shim 0.4.2, an empty
// PreopenDirectory, debug off) or wasm-util (@tybys/wasm-util's WASI over
// memfs, as @napi-rs/wasm-runtime ships it). Runs it TIMES (1) times, each
// on a fresh runtime and filesystem, and prints one line of JSON: for each
// run the guest's stdout and stderr, and its exit code. The first run is
// the process's first (cold: nothing of one runtime's JIT or heap carries
// into another's); later ones are warm.

import { mkdtempSync, openSync, readFileSync, rmSync, closeSync } from "node:fs";
import { join } from "node:path";

import { preciseClock } from "./clock.js";

const [runtime, wasmPath, phases, n, big, times = "1"] = process.argv.slice(2);
const args = ["bench_workload", phases, n, "/work", big];
const module = await WebAssembly.compile(readFileSync(wasmPath));
const dec = new TextDecoder();

/** Runs the guest with `imports` and `start`; { stdout, stderr, exitCode }. */
async function direct(imports, start, out) {
  let memory;
  preciseClock(imports, () => memory);
  const instance = await WebAssembly.instantiate(module, { wasi_snapshot_preview1: imports });
  memory = instance.exports.memory;
  const exitCode = start(instance);
  return { ...out, exitCode };
}

async function run() {
  const out = { stdout: "", stderr: "" };
  if (runtime === "packfs" || runtime === "packfs-runner") {
    const { default: init, MemFs } = await import("../pkg/index.js");
    await init();
    const stdout = (b) => (out.stdout += dec.decode(b, { stream: true }));
    const stderr = (b) => (out.stderr += dec.decode(b, { stream: true }));
    if (runtime === "packfs-runner") {
      const { runP1 } = await import("../pkg/runner.js");
      const r = await runP1(module, { args, preopens: [{ path: "/", kind: "mem" }], stdout, stderr });
      return { ...out, exitCode: r.exitCode };
    }
    const { WASI } = await import("../pkg/wasi.js");
    const wasi = new WASI({ version: "preview1", args, preopens: [{ path: "/", fs: new MemFs() }], stdout, stderr });
    const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
    const exitCode = wasi.start(instance);
    return { ...out, exitCode };
  }
  if (runtime === "node-wasi") {
    const { WASI } = await import("node:wasi");
    const dir = mkdtempSync("/dev/shm/packfs-bench-");
    const [o, e] = ["out", "err"].map((x) => join(dir, `std${x}`));
    const [fo, fe] = [openSync(o, "w"), openSync(e, "w")];
    const root = join(dir, "root");
    (await import("node:fs")).mkdirSync(root);
    try {
      const wasi = new WASI({ version: "preview1", args, env: {}, preopens: { "/": root }, returnOnExit: true, stdout: fo, stderr: fe });
      const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
      const exitCode = wasi.start(instance);
      closeSync(fo);
      closeSync(fe);
      return { stdout: readFileSync(o, "utf8"), stderr: readFileSync(e, "utf8"), exitCode };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  if (runtime === "shim") {
    const { ConsoleStdout, File, OpenFile, PreopenDirectory, WASI } = await import("@bjorn3/browser_wasi_shim");
    const fds = [
      new OpenFile(new File([])),
      ConsoleStdout.lineBuffered((line) => (out.stdout += `${line}\n`)),
      ConsoleStdout.lineBuffered((line) => (out.stderr += `${line}\n`)),
      new PreopenDirectory("/", new Map()),
    ];
    const wasi = new WASI(args, [], fds, { debug: false });
    return direct({ ...wasi.wasiImport }, (i) => wasi.start(i), out);
  }
  if (runtime === "wasm-util") {
    const { memfs } = await import("@napi-rs/wasm-runtime/fs");
    const { WASI } = await import("@tybys/wasm-util");
    const { fs } = memfs();
    const wasi = new WASI({
      version: "preview1", args, fs, preopens: { "/": "/" }, returnOnExit: true,
      print: (line) => (out.stdout += `${line}\n`),
      printErr: (line) => (out.stderr += `${line}\n`),
    });
    return direct({ ...wasi.wasiImport }, (i) => wasi.start(i), out);
  }
  throw new Error(`no runtime ${runtime}`);
}

const all = [];
for (let i = 0; i < Number(times); i++) all.push(await run());
process.stdout.write(`${JSON.stringify(all)}\n`);
