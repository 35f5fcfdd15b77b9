// The peers the benchmark compares against, bundled into one ES module
// (bench/dist/peers.js) by bench/run.mjs with esbuild: ZenFS needs its
// npm dependencies resolved, which a browser without a bundler cannot do.
export * as shim from "@bjorn3/browser_wasi_shim";
export { configure, InMemory, fs as zenfs } from "@zenfs/core";
