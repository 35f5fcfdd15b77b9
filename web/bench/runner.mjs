// What a run costs when the runner stays warm, in headless Chromium: a
// trivial guest (`_start` returns) run by one `createRunner()` runner, its
// first run (a new Worker, packfs-web loaded and instantiated, the module
// compiled) and the next RUNS (default 100), against `runP1`, which starts
// all of that again for each run, in the same page. Cross-origin isolated,
// so performance.now() is precise to 5 µs.
//
//   web/build.sh && (cd web && npm ci && npm run bench:runner)

import { ISOLATED, startServer } from "../e2e/server.mjs";
import { launch, newPage } from "../e2e/browser.mjs";

const runs = Number(process.env.RUNS ?? 100);
// (module (memory (export "memory") 1) (func (export "_start")))
const NOTHING = [0,97,115,109,1,0,0,0,1,4,1,96,0,0,3,2,1,0,5,3,1,0,1,7,19,2,6,109,101,109,111,114,121,2,0,6,95,115,116,97,114,116,0,0,10,4,1,2,0,11];

const server = await startServer({ headers: ISOLATED });
const browser = await launch();
try {
  const { page, context, errors } = await newPage(browser);
  await page.goto(`${server.url}/www/`);
  const r = await page.evaluate(
    async ({ runs, bytes }) => {
      if (!crossOriginIsolated) throw new Error("the page is not cross-origin isolated");
      const { runP1, createRunner } = await import("/pkg/runner.js");
      const module = new Uint8Array(bytes);
      const time = async (f) => {
        const start = performance.now();
        const r = await f();
        if (r.exitCode !== 0) throw new Error(`exit ${r.exitCode}`);
        return performance.now() - start;
      };
      const median = (v) => {
        const s = [...v].sort((a, b) => a - b);
        return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
      };
      const runner = createRunner();
      const first = await time(() => runner.run(module));
      const warm = [];
      for (let i = 0; i < runs; i++) warm.push(await time(() => runner.run(module)));
      runner.close();
      const once = [];
      for (let i = 0; i < Math.min(runs, 20); i++) once.push(await time(() => runP1(module)));
      return { first, warm: median(warm), p99: [...warm].sort((a, b) => a - b)[Math.floor(runs * 0.99)], once: median(once), onceRuns: once.length };
    },
    { runs, bytes: NOTHING },
  );
  await context.close();
  if (errors.length) throw errors[0];
  const ms = (v) => `${v.toFixed(2)} ms`;
  console.log(`Chromium ${browser.version()}, \`npm run bench:runner\` (RUNS=${runs}):\n`);
  console.log("| a trivial guest's run | time | vs a warm run |\n|---|--:|--:|");
  console.log(`| \`createRunner()\`, later runs (median of ${runs}) | ${ms(r.warm)} | 1.00x |`);
  console.log(`| \`createRunner()\`, later runs, p99 | ${ms(r.p99)} | ${(r.p99 / r.warm).toFixed(2)}x |`);
  console.log(`| \`createRunner()\`, first run | ${ms(r.first)} | ${(r.first / r.warm).toFixed(1)}x |`);
  console.log(`| \`runP1\`, one-shot (median of ${r.onceRuns}) | ${ms(r.once)} | ${(r.once / r.warm).toFixed(1)}x |`);
} finally {
  await browser.close();
  await server.close();
}
