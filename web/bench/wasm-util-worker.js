// The guest benchmark on @tybys/wasm-util's WASI over memfs, as napi-rs
// ships it for the browser (@napi-rs/wasm-runtime's browser loader:
// `memfs()` from "@napi-rs/wasm-runtime/fs", then `new WASI({ version:
// "preview1", fs, preopens: { "/": "/" } })`), with `returnOnExit` so that
// proc_exit ends the run with its code. Its debug log is off unless
// NODE_DEBUG_NATIVE names wasi, which a browser never sets.
// Bundled by bench/guest.mjs with esbuild; see guest-worker.js.

import { memfs } from "@napi-rs/wasm-runtime/fs";
import { WASI } from "@tybys/wasm-util";

import { serve } from "./guest-worker.js";

serve(({ args, stdout, stderr }) => {
  const { fs } = memfs();
  const wasi = new WASI({
    version: "preview1",
    args,
    fs,
    preopens: { "/": "/" },
    returnOnExit: true,
    print: (line) => stdout(`${line}\n`),
    printErr: (line) => stderr(`${line}\n`),
  });
  return { imports: wasi.wasiImport, start: (instance) => wasi.start(instance) };
});
