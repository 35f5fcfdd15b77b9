// Where a small read's time goes on PackFS (bench/profile.html, run in
// headless Chromium, cross-origin isolated): the guest's read phase, its
// calls counted and timed, and the same calls made straight from
// JavaScript. Prints a summary and the figures as JSON.
//
//   (cd web && npm run bench:guest-profile)    after web/build.sh and one
//                                              npm run bench:guest
//
// N (default 5000) small files.

import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

import { ISOLATED, startServer } from "../e2e/server.mjs";
import { launch, pageResult } from "../e2e/browser.mjs";

const here = (p) => fileURLToPath(new URL(p, import.meta.url));
const n = Number(process.env.N ?? 5000);
const wasm = readFileSync(here("../../target/guest-tests/wasm32-wasip1/release/bench_workload.wasm"));
const server = await startServer({
  files: { "/bench/bench_workload.wasm": wasm },
  headers: ISOLATED,
});
const browser = await launch();
let r;
try {
  r = await pageResult(browser, `${server.url}/bench/profile.html?n=${n}`, "readProfile", 10 * 60_000);
} finally {
  await browser.close();
  await server.close();
}
const perFile = (x) => `${x.toFixed(2)} µs`;
const callsPerFile = Object.values(r.calls).reduce((s, c) => s + c.count, 0) / n;
console.log(`read phase: ${perFile(r.readNs / n / 1e3)} a file (watched: ${perFile(r.watchedReadNs / n / 1e3)})`);
console.log(`calls a file: ${callsPerFile}: ${r.first.map((c) => c.name).join(", ")}`);
for (const [name, c] of Object.entries(r.calls)) {
  console.log(`  ${name}: ${c.count} calls, ${((c.ms * 1000) / c.count).toFixed(2)} µs each (timed around the import)`);
}
console.log(`the same calls from JavaScript: ${perFile((r.replayMs * 1000) / n)} a file`);
console.log(`a call that does nothing (fd_close of a closed fd): ${r.nullCallUs.toFixed(3)} µs`);
console.log(`a bare JavaScript → wasm call with as many numbers: ${r.crossingUs.toFixed(3)} µs`);
console.log(`typed arrays made a file: ${r.arraysPerFile}`);
console.log(`fd_fdstat_get (24 bytes to the guest): ${r.fdstatCallUs.toFixed(3)} µs`);
console.log(JSON.stringify(r, null, 1));
