// What a run costs when the runner stays warm, measured where it runs (a
// page, Node, Deno or Bun): a trivial guest run by one createRunner()
// runner, its first run (a new worker, packfs-web loaded and instantiated,
// the module compiled) and the next `runs`, against runP1, which starts
// all of that again each run. Shared by bench/runner.mjs (in each browser
// engine) and bench/runner-runtime.mjs (in each runtime).

// (module (memory (export "memory") 1) (func (export "_start")))
export const NOTHING = [0,97,115,109,1,0,0,0,1,4,1,96,0,0,3,2,1,0,5,3,1,0,1,7,19,2,6,109,101,109,111,114,121,2,0,6,95,115,116,97,114,116,0,0,10,4,1,2,0,11];

/** Times of the runs, in milliseconds: `first`, the median `warm` of the
 *  later ones with their `p99`, `min` and `max`, and `once` (runP1). */
export async function measure({ runP1, createRunner }, runs) {
  const module = new Uint8Array(NOTHING);
  const time = async (f) => {
    const start = performance.now();
    const r = await f();
    if (r.exitCode !== 0) throw new Error(`exit ${r.exitCode}`);
    return performance.now() - start;
  };
  const sorted = (v) => [...v].sort((a, b) => a - b);
  const median = (v) => {
    const s = sorted(v);
    return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  };
  const runner = createRunner();
  const first = await time(() => runner.run(module));
  const warm = [];
  for (let i = 0; i < runs; i++) warm.push(await time(() => runner.run(module)));
  runner.close();
  const once = [];
  for (let i = 0; i < Math.min(runs, 20); i++) once.push(await time(() => runP1(module)));
  const s = sorted(warm);
  return { first, warm: median(warm), p99: s[Math.floor(runs * 0.99)], min: s[0], max: s.at(-1), once: median(once), onceRuns: once.length, runs };
}
