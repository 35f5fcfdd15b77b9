// What the peers' guest workers share (shim-worker.js, wasm-util-worker.js,
// runno-worker.js): one run of bench_workload.wasm in this Web Worker on a
// peer's WASI, timed by the same clock as PackFS's (clock.js).
//
// Message in: { module, args, trace }; out: { stdout, stderr, exitCode,
// failed, grainNs } or { error }. With `trace`, every call is watched and `failed`
// names the last one that returned an errno since the guest last printed a
// phase (the call a failing phase died on); without it nothing is wrapped.

import { grainNs, preciseClock } from "./clock.js";

/**
 * Serves runs: `setup({ args, stdout, stderr })` builds a fresh runtime
 * with an empty in-memory filesystem at "/", sending the guest's output
 * text to `stdout` and `stderr`, and returns `{ imports, start(instance)
 * → exit code }`.
 */
export function serve(setup) {
  self.onmessage = async (e) => {
    try {
      const { module, args, trace } = e.data;
      // A kept worker's earlier runs leave garbage: collected here, where
      // the engine lets a page (Chromium with --expose-gc), not in a timed
      // phase.
      globalThis.gc?.();
      const output = { stdout: "", stderr: "" };
      let failed = null;
      const stdout = (text) => {
        output.stdout += text;
        if (text.includes("phase ")) failed = null;
      };
      const stderr = (text) => (output.stderr += text);
      const peer = setup({ args, stdout, stderr });
      const imports = { ...peer.imports };
      let memory;
      preciseClock(imports, () => memory);
      if (trace) {
        for (const [name, f] of Object.entries(imports)) {
          imports[name] = (...a) => {
            const errno = f(...a);
            if (typeof errno === "number" && errno !== 0) failed = { call: name, errno };
            return errno;
          };
        }
      }
      const instance = await WebAssembly.instantiate(module, { wasi_snapshot_preview1: imports });
      memory = instance.exports.memory;
      const exitCode = peer.start(instance);
      self.postMessage({ ...output, exitCode, failed, grainNs: grainNs() });
    } catch (err) {
      self.postMessage({ error: String(err?.stack ?? err) });
    }
  };
}
