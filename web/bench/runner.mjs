// What a run costs when the runner stays warm (bench/runner-measure.js),
// in each browser engine (a page served cross-origin isolated, so that
// performance.now() is precise) and in Node, Deno and Bun, one after the
// other; prints a table. Target: a later run ≤ 5 ms everywhere.
//
//   web/build.sh && (cd web && npm ci && npm run bench:runner)
//
// RUNS (default 100): later runs per runtime. ENGINES (default
// "chromium firefox webkit") and RUNTIMES (default "node deno bun").

import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

import { ISOLATED, startServer } from "../e2e/server.mjs";
import { WEB_CODE, writeBlock } from "./results.mjs";

const runs = Number(process.env.RUNS ?? 100);
const engines = (process.env.ENGINES ?? "chromium firefox webkit").split(/\s+/).filter(Boolean);
const runtimes = (process.env.RUNTIMES ?? "node deno bun").split(/\s+/).filter(Boolean);
const BIN = fileURLToPath(new URL("../node_modules/.bin/", import.meta.url));
const SCRIPT = fileURLToPath(new URL("./runner-runtime.mjs", import.meta.url));
const COMMAND = { node: [process.execPath], deno: [`${BIN}deno`, "run", "-A", "--quiet"], bun: [`${BIN}bun`] };

const rows = [];
const server = await startServer({ headers: ISOLATED });
try {
  for (const engine of engines) {
    process.env.PACKFS_BROWSER = engine;
    // browser.mjs reads the engine when it is first imported: one import
    // per engine, by a query that makes it a module of its own.
    const { launch, newPage } = await import(`../e2e/browser.mjs?${engine}`);
    const browser = await launch();
    try {
      const { page, context, errors } = await newPage(browser);
      await page.goto(`${server.url}/www/`);
      const r = await page.evaluate(async (runs) => {
        if (!crossOriginIsolated) throw new Error("the page is not cross-origin isolated");
        const { measure } = await import("/bench/runner-measure.js");
        return measure(await import("/pkg/runner.js"), runs);
      }, runs);
      await context.close();
      if (errors.length) throw errors[0];
      rows.push({ where: `${engine} ${browser.version()}`, ...r });
    } finally {
      await browser.close();
    }
  }
} finally {
  await server.close();
}
for (const runtime of runtimes) {
  const [cmd, ...args] = COMMAND[runtime];
  const version = execFileSync(cmd, ["--version"], { encoding: "utf8" }).split("\n")[0].trim();
  const out = execFileSync(cmd, [...args, SCRIPT, String(runs)], { encoding: "utf8" });
  rows.push({ where: `${runtime} ${version.replace(/^(deno|v)\s*/, "").replace(/\s*\(.*$/, "")}`, ...JSON.parse(out.trim().split("\n").at(-1)) });
}

const ms = (v) => `${v.toFixed(2)} ms`;
const lines = [
  `\`npm run bench:runner\` (RUNS=${runs}): a trivial guest's run by one warm createRunner(), against runP1 (a new worker each run).\n`,
  "| where | later run, median [min–max] | p99 | first run | runP1, one-shot (median) | runP1 ÷ later run |",
  "|---|--:|--:|--:|--:|--:|",
];
for (const r of rows) {
  const flag = r.warm > 5 ? " **over 5 ms**" : "";
  lines.push(`| ${r.where} | ${ms(r.warm)} [${r.min.toFixed(2)}–${r.max.toFixed(2)}]${flag} | ${ms(r.p99)} | ${ms(r.first)} | ${ms(r.once)} | ${(r.once / r.warm).toFixed(1)}x |`);
}
console.log(lines.join("\n"));
// A whole run (every engine and runtime, the default runs) is the
// results page's section.
if (!process.env.RUNS && !process.env.ENGINES && !process.env.RUNTIMES) {
  const block = `## A warm runner: what a run costs when the worker stays\n\n${lines.join("\n")}\n`;
  writeBlock(fileURLToPath(new URL("../BENCH-web-guest.md", import.meta.url)), "runner", block, "web/build.sh && (cd web && npm ci && npm run bench:runner)", WEB_CODE);
}
