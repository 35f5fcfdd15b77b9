// The guest benchmark on @runno/wasi: its WASI class with an empty `fs`
// map (its in-memory filesystem: one object keyed by full path) and no
// `debug` hook, the default. Runno's own WASIWorkerHost is not used: its
// worker installs a debug hook that posts every call to the page.
// Bundled by bench/guest.mjs with esbuild; see guest-worker.js.

import { WASI } from "@runno/wasi";

import { serve } from "./guest-worker.js";

serve(({ args, stdout, stderr }) => {
  const wasi = new WASI({
    args,
    env: {},
    fs: {},
    stdout,
    stderr,
  });
  return {
    imports: wasi.getImportObject().wasi_snapshot_preview1,
    start: (instance) => wasi.start({ instance }).exitCode,
  };
});
