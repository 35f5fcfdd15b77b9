// The baseline of the guest benchmark: a WASI preview1 module on
// @bjorn3/browser_wasi_shim's in-memory filesystem (an empty
// PreopenDirectory at "/"), in a Web Worker as PackFS's runP1 runs it.
// Bundled by bench/guest.mjs with esbuild.
//
// Message in: { module, args }; out: { stdout, exitCode } or { error }.

import { ConsoleStdout, File, OpenFile, PreopenDirectory, WASI } from "@bjorn3/browser_wasi_shim";

self.onmessage = async (e) => {
  try {
    const { module, args } = e.data;
    let stdout = "";
    const fds = [
      new OpenFile(new File([])),
      ConsoleStdout.lineBuffered((line) => (stdout += `${line}\n`)),
      ConsoleStdout.lineBuffered((line) => (stdout += `stderr: ${line}\n`)),
      new PreopenDirectory("/", new Map()),
    ];
    const wasi = new WASI(args, [], fds);
    const instance = await WebAssembly.instantiate(module, { wasi_snapshot_preview1: wasi.wasiImport });
    const exitCode = wasi.start(instance);
    self.postMessage({ stdout, exitCode });
  } catch (err) {
    self.postMessage({ error: String(err?.stack ?? err) });
  }
};
