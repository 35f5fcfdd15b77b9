// The guest benchmark on @bjorn3/browser_wasi_shim: an empty
// PreopenDirectory at "/" (its in-memory filesystem), `debug: false` (in
// 0.4.2 a WASI built without options logs every call to the console).
// Bundled by bench/guest.mjs with esbuild; see guest-worker.js.

import { ConsoleStdout, File, OpenFile, PreopenDirectory, WASI } from "@bjorn3/browser_wasi_shim";

import { serve } from "./guest-worker.js";

serve(({ args, stdout, stderr }) => {
  const fds = [
    new OpenFile(new File([])),
    ConsoleStdout.lineBuffered((line) => stdout(`${line}\n`)),
    ConsoleStdout.lineBuffered((line) => stderr(`${line}\n`)),
    new PreopenDirectory("/", new Map()),
  ];
  const wasi = new WASI(args, [], fds, { debug: false });
  return { imports: wasi.wasiImport, start: (instance) => wasi.start(instance) };
});
