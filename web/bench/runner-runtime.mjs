// bench/runner-measure.js in this runtime (Node, Deno or Bun): prints its
// result as one line of JSON. Run by bench/runner.mjs.
//
//   node bench/runner-runtime.mjs RUNS

import { measure } from "./runner-measure.js";

const runner = await import("../pkg/runner.js");
const runs = Number(globalThis.process?.argv?.[2] ?? 100);
console.log(JSON.stringify(await measure(runner, runs)));
// A runtime whose workers outlive the runner's close() would not exit.
globalThis.process.exit(0);
