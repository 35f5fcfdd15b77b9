// packfs-web's entry point: everything packfs_web.js exports, with an
// `init` that finds packfs-web's wasm by itself in every runtime (a
// browser fetches it from beside this script; Node, Deno and Bun read it
// from disk) and readies what the runtime needs: `file:` packs read from
// disk at once, and the WASI class's imports.
//
//   import init, { MemFs, Pack } from "packfs-web";
//   await init();

import initWasm, { Pack, Preview1 } from "./packfs_web.js";
import { prepare } from "./imports.js";
import { load, readFileRange, server, wasmSource } from "./runtime.js";

export * from "./packfs_web.js";

/**
 * Loads packfs-web, once per thread; later calls return at once. Takes
 * what wasm-bindgen's init takes (`{ module_or_path }`), or nothing.
 */
export default async function init(options) {
  if (options === undefined) {
    const source = await wasmSource();
    if (source !== undefined) options = { module_or_path: source };
  }
  const wasm = await initWasm(options);
  await load();
  // A pack's file read at once where a read must wait; a URL's bytes
  // cannot be waited for on this thread (the runner's worker can).
  if (server && !installed) {
    installed = true;
    Pack.setBlockingGet((url, range) => {
      if (url.startsWith("file:")) return readFileRange(url, range);
      throw new Error("a read of a URL pack's bytes not fetched yet cannot wait here: use the async methods, loadAll(), or the runner");
    });
  }
  await prepare(Preview1, wasm);
  return wasm;
}

/** Whether init installed this thread's transport (a worker installs its
 *  own after, which stays). */
let installed = false;
