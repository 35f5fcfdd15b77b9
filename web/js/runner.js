// Runs a WASI preview1 module (wasm32-wasip1, wasi-libc C, ...) in a Web
// Worker over packfs-web's filesystems. The worker may block, so a guest
// reading a lazy URL pack waits for each file's bytes (one Range request)
// instead of failing; the page stays responsive.
//
//   import { runP1 } from "./pkg/runner.js";
//   const { exitCode } = await runP1(wasmBytes, {
//     args: ["demo"],
//     preopens: [{ path: "/", kind: "overlay", url: "/assets.pack", save: true }],
//     stdout: (bytes) => console.log(new TextDecoder().decode(bytes)),
//   });
//
// No cross-origin isolation is needed; with it, sleeps wait instead of
// spinning.

/**
 * Runs `module` (bytes, or a WebAssembly.Module) to its exit. Options:
 * `args` (the first is the program's name), `env` (an object of strings),
 * `stdin` (a Uint8Array), `stdout` and `stderr` (called with each write's
 * bytes), `preopens`: `{ path, kind: "mem" | "pack" | "overlay", url?,
 * bytes?, readOnly?, options?, save? }` in descriptor order (a pack or an
 * overlay's lower comes from `url`, lazily, or `bytes`; `save`: return it
 * compacted after the run), `timeout` (milliseconds) and `signal` (an
 * AbortSignal). Resolves to `{ exitCode, bytesFetched, requests, saved:
 * [{ path, pack }] }`; rejects if the guest traps or a preopen cannot be
 * opened, with a "TimeoutError" DOMException past `timeout`, and with the
 * signal's reason once it aborts. Either ends the worker at once, even one
 * blocked in a host call (a sleep, a fetch).
 */
export function runP1(module, options = {}) {
  const { stdout, stderr, timeout, signal, ...rest } = options;
  if (timeout !== undefined && !(typeof timeout === "number" && timeout >= 0)) {
    return Promise.reject(new TypeError("timeout must be a number of milliseconds, 0 or more"));
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    return Promise.reject(new TypeError("signal must be an AbortSignal"));
  }
  if (signal?.aborted) return Promise.reject(signal.reason);
  const worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
  return new Promise((resolve, reject) => {
    let timer;
    const onAbort = () => end(() => reject(signal.reason));
    // Ends the run: the worker goes, whatever it was doing.
    const end = (settle) => {
      worker.terminate();
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      settle();
    };
    if (timeout !== undefined) {
      timer = setTimeout(
        () => end(() => reject(new DOMException(`the guest ran longer than its time limit of ${timeout} ms`, "TimeoutError"))),
        timeout,
      );
    }
    signal?.addEventListener("abort", onAbort, { once: true });
    worker.onmessage = (e) => {
      const m = e.data;
      if (m.type === "stdout") stdout?.(m.bytes);
      else if (m.type === "stderr") stderr?.(m.bytes);
      else if (m.type === "exit") {
        const { type, ...result } = m;
        end(() => resolve(result));
      } else {
        const err = new Error(m.message);
        err.code = m.code;
        end(() => reject(err));
      }
    };
    worker.onerror = (e) => end(() => reject(new Error(e.message ?? "the worker failed")));
    const bytes = module instanceof WebAssembly.Module ? module : new Uint8Array(module);
    worker.postMessage({ module: bytes, ...rest });
  });
}
