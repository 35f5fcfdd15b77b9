// runP1's limits in headless Chromium: a guest blocked in a host call (a
// sleep of an hour: Atomics.wait, or a spin where the page is not
// cross-origin isolated) ends at `timeout` with a "TimeoutError", and at
// once when its `signal` aborts, with an "AbortError" (RunError kinds
// "timeout" and "aborted"); bad options
// are TypeErrors. Each ends the worker, whatever it is blocked in. That it
// ends at all shows it (the guest sleeps an hour; each test has a minute);
// not before its time is asserted, how soon after only said: a loaded
// machine may take any time.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { startServer } from "./server.mjs";
import { launch, newPage } from "./browser.mjs";

// (module (import "wasi_snapshot_preview1" "poll_oneoff" ...) (memory (export "memory") 1)
//   (func (export "_start") one relative clock subscription of an hour, then poll_oneoff))
const SLEEPER = [0,97,115,109,1,0,0,0,1,12,2,96,4,127,127,127,127,1,127,96,0,0,2,38,1,22,119,97,115,105,95,115,110,97,112,115,104,111,116,95,112,114,101,118,105,101,119,49,11,112,111,108,108,95,111,110,101,111,102,102,0,0,3,2,1,1,5,3,1,0,1,7,19,2,6,109,101,109,111,114,121,2,0,6,95,115,116,97,114,116,0,1,10,44,1,42,0,65,8,65,0,58,0,0,65,16,65,1,54,2,0,65,24,66,128,192,226,133,227,232,0,55,3,0,65,0,65,128,8,65,1,65,128,16,16,0,26,11,0,14,4,110,97,109,101,1,7,1,0,4,112,111,108,108];

let server, browser;

before(async () => {
  server = await startServer();
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/** Runs the sleeper with `how` ("timeout", "abort", or a bad option); how it ended and when. */
async function sleep(how) {
  const { page, context, errors } = await newPage(browser);
  await page.goto(`${server.url}/www/`);
  const out = await page.evaluate(
    async ({ how, bytes }) => {
      const { runP1 } = await import("/pkg/runner.js");
      const module = new Uint8Array(bytes);
      const start = performance.now();
      const ended = (p) =>
        p.then(
          (r) => ({ resolved: r.exitCode }),
          (e) => ({ name: e.name, kind: e.kind, message: e.message, ms: performance.now() - start }),
        );
      if (how === "timeout") return ended(runP1(module, { timeout: 500 }));
      if (how === "abort") {
        const ac = new AbortController();
        setTimeout(() => ac.abort(), 300);
        return ended(runP1(module, { signal: ac.signal }));
      }
      if (how === "aborted") return ended(runP1(module, { signal: AbortSignal.abort() }));
      if (how === "bad timeout") return ended(runP1(module, { timeout: "soon" }));
      return ended(runP1(module, { signal: {} }));
    },
    { how, bytes: SLEEPER },
  );
  await context.close();
  assert.deepEqual(errors, []);
  return out;
}

test("a guest sleeping for an hour ends at its timeout", { timeout: 60_000 }, async (ctx) => {
  const r = await sleep("timeout");
  assert.equal(r.name, "TimeoutError", JSON.stringify(r));
  assert.equal(r.kind, "timeout");
  assert.match(r.message, /time limit of 500 ms/);
  ctx.diagnostic(`rejected ${Math.round(r.ms)} ms after the run began`);
  assert.ok(r.ms >= 500, `rejected ${Math.round(r.ms)} ms after the run began, for a limit of 500`);
});

test("an abort ends a sleeping guest with the signal's reason", { timeout: 60_000 }, async (ctx) => {
  const r = await sleep("abort");
  assert.equal(r.name, "AbortError", JSON.stringify(r));
  assert.equal(r.kind, "aborted");
  ctx.diagnostic(`rejected ${Math.round(r.ms)} ms after the run began`);
  assert.ok(r.ms >= 300, `rejected ${Math.round(r.ms)} ms after the run began, aborted at 300`);
  assert.equal((await sleep("aborted")).name, "AbortError");
});

test("bad limits are TypeErrors", { timeout: 60_000 }, async () => {
  for (const how of ["bad timeout", "bad signal"]) {
    const r = await sleep(how);
    assert.equal(r.name, "TypeError", JSON.stringify(r));
  }
});
