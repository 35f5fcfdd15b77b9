// runP1 as a new user calls it, in headless Chromium: a relative pack URL
// is the page's, not the worker script's (or `baseUrl`'s); every option is
// checked before anything is fetched, with a TypeError that names it; a
// failed run rejects with a RunError whose `kind` says why, a message a
// person can read and the stack apart; a preopen's `pack` options reach
// the pack (verifyOnRead over a damaged pack); a warm runner (createRunner)
// keeps its Worker, starts each run clean, and ends only what it must; a
// timeout of Infinity, or past setTimeout's 2^31 - 1 ms, does not end the
// run at once.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

import { startServer } from "./server.mjs";
import { launch, newPage } from "./browser.mjs";
import { pkgOverride } from "./pkg.mjs";
import { packfs } from "./fixtures.mjs";
import { catchingGuest } from "./wasm.mjs";

const TARGET = fileURLToPath(new URL("../../target/guest-tests/", import.meta.url));
const SEED = readFileSync(`${TARGET}browser/seed.pack`);
const RO = readFileSync(`${TARGET}browser/ro.pack`);

// (module (memory (export "memory") 1) (func (export "_start")))
const NOTHING = [0,97,115,109,1,0,0,0,1,4,1,96,0,0,3,2,1,0,5,3,1,0,1,7,19,2,6,109,101,109,111,114,121,2,0,6,95,115,116,97,114,116,0,0,10,4,1,2,0,11];
// (module (memory (export "memory") 1) (func (export "_start") unreachable))
const TRAP = [0,97,115,109,1,0,0,0,1,4,1,96,0,0,3,2,1,0,5,3,1,0,1,7,19,2,6,109,101,109,111,114,121,2,0,6,95,115,116,97,114,116,0,0,10,5,1,3,0,0,11];
// (module (import "env" "f" (func)) (memory (export "memory") 1) (func (export "_start")))
const STRANGER = [0,97,115,109,1,0,0,0,1,4,1,96,0,0,2,9,1,3,101,110,118,1,102,0,0,3,2,1,0,5,3,1,0,1,7,19,2,6,109,101,109,111,114,121,2,0,6,95,115,116,97,114,116,0,1,10,4,1,2,0,11];

const TEXT = "every byte of this file is verified on its first read\n".repeat(20);
const DAMAGED_TEXT = TEXT.replace("verified", "verifieD");

// limits.test.mjs's guest that sleeps for an hour in poll_oneoff.
const SLEEPER = [0,97,115,109,1,0,0,0,1,12,2,96,4,127,127,127,127,1,127,96,0,0,2,38,1,22,119,97,115,105,95,115,110,97,112,115,104,111,116,95,112,114,101,118,105,101,119,49,11,112,111,108,108,95,111,110,101,111,102,102,0,0,3,2,1,1,5,3,1,0,1,7,19,2,6,109,101,109,111,114,121,2,0,6,95,115,116,97,114,116,0,1,10,44,1,42,0,65,8,65,0,58,0,0,65,16,65,1,54,2,0,65,24,66,128,192,226,133,227,232,0,55,3,0,65,0,65,128,8,65,1,65,128,16,16,0,26,11,0,14,4,110,97,109,101,1,7,1,0,4,112,111,108,108];

let server, browser;

before(async () => {
  const { MemFs } = await packfs();
  const fs = new MemFs();
  fs.writeFileSync("a.txt", TEXT);
  const damaged = Buffer.from(await fs.compact({ compress: "none" }));
  const at = damaged.indexOf("verified");
  assert.ok(at > 0, "the text is stored as it is");
  damaged[at + 7] = "D".charCodeAt(0);
  const files = {
    "/fixtures/seed.pack": SEED,
    "/fixtures/ro.pack": RO,
    // Where a relative URL from the page at /www/ lands, and from a baseUrl.
    "/www/packs/seed.pack": SEED,
    "/elsewhere/seed.pack": SEED,
    "/guests/toolbox.wasm": readFileSync(`${TARGET}wasm32-wasip1/release/toolbox.wasm`),
    "/fixtures/damaged.pack": damaged,
  };
  server = await startServer({ files: { ...files, ...pkgOverride() } });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/** Runs `script(runP1, modules, arg)` on a fresh page at /www/. */
async function onPage(script, arg) {
  const { page, context, errors } = await newPage(browser);
  await page.goto(`${server.url}/www/`);
  const out = await page.evaluate(
    async ({ script, arg, modules }) => {
      const { runP1, createRunner, RunError } = await import("/pkg/runner.js");
      const bytes = Object.fromEntries(Object.entries(modules).map(([k, v]) => [k, new Uint8Array(v)]));
      const ended = (p) =>
        p.then(
          (r) => ({ resolved: r }),
          (e) => ({
            type: e.constructor.name,
            isRunError: e instanceof RunError,
            name: e.name,
            kind: e.kind,
            message: e.message,
            detail: e.detail,
            cause: e.cause?.name,
          }),
        );
      const run = new Function("runP1", "modules", "ended", "arg", "createRunner", `return (${script})(runP1, modules, ended, arg, createRunner);`);
      return run(runP1, bytes, ended, arg, createRunner);
    },
    {
      script: script.toString(),
      arg,
      modules: {
        nothing: NOTHING,
        trap: TRAP,
        stranger: STRANGER,
        sleeper: SLEEPER,
        // 20,000 refused calls caught in its start section (not yet started).
        catching: Array.from(catchingGuest({ calls: 20_000, inStart: true })),
      },
    },
  );
  await context.close();
  assert.deepEqual(errors, []);
  return out;
}

test("a page's runs share one compiled packfs-web: more runs, no more fetches of it", { timeout: 60_000 }, async () => {
  // The page (the demo) loads packfs-web itself too: compare one run's
  // page with four's.
  const fetches = async (runs) => {
    server.reset();
    const r = await onPage(async (runP1, m, ended, runs, createRunner) => {
      const out = [];
      for (let i = 0; i < runs - 1; i++) out.push(await ended(runP1(m.nothing, { preopens: [{ path: "/", kind: "mem" }] })));
      const runner = createRunner();
      out.push(await ended(runner.run(m.nothing, {})));
      runner.close();
      return out;
    }, runs);
    for (const x of r) assert.equal(x.resolved?.exitCode, 0, JSON.stringify(x));
    return server.stats.get("/pkg/packfs_web_bg.wasm")?.requests;
  };
  const one = await fetches(1);
  assert.ok(one >= 1 && one <= 2, `${one}`);
  assert.equal(await fetches(4), one, "four workers fetch it as often as one");
});

test("a relative url is the page's, or baseUrl's", { timeout: 60_000 }, async () => {
  server.reset();
  const r = await onPage(async (runP1, m, ended) => [
    await ended(runP1(m.nothing, { preopens: [{ path: "/", kind: "pack", url: "packs/seed.pack" }] })),
    await ended(
      runP1(m.nothing, {
        baseUrl: new URL("/elsewhere/", location.href),
        preopens: [{ path: "/", kind: "overlay", url: "seed.pack" }],
      }),
    ),
  ]);
  assert.equal(r[0].resolved?.exitCode, 0, JSON.stringify(r[0]));
  assert.equal(r[1].resolved?.exitCode, 0, JSON.stringify(r[1]));
  assert.ok(server.stats.get("/www/packs/seed.pack")?.requests > 0, "fetched from the page's directory");
  assert.ok(server.stats.get("/elsewhere/seed.pack")?.requests > 0, "fetched from baseUrl");
  assert.equal(server.stats.get("/pkg/packs/seed.pack"), undefined, "not from the worker script's");
});

test("every option is checked before anything is fetched, by name", { timeout: 60_000 }, async () => {
  const url = "/fixtures/seed.pack";
  // [options (module: "nothing" unless `module` is given), what the message names]
  const cases = [
    [{ preopens: [{ path: "/", kind: "overlayy", url }] }, /preopens\[0\]\.kind must be "mem", "pack", "overlay" or "journal", not "overlayy"/],
    [{ preopens: [{ path: "/", kind: "pack" }] }, /preopens\[0\] \("pack"\) needs a url or bytes/],
    [{ preopens: [{ path: "/", kind: "pack", url, bytes: new Uint8Array(8) }] }, /needs a url or bytes, one of the two/],
    [{ preopens: [{ path: "/a/../b", kind: "mem" }] }, /preopens\[0\]\.path must be a guest path/],
    [{ preopens: [{ path: "/", kind: "mem", url }] }, /preopens\[0\]\.url is for "pack" and "overlay"/],
    [{ preopens: [{ path: "/", kind: "mem", name: "notes" }] }, /preopens\[0\]\.name is for "journal" preopens, not "mem"/],
    [{ preopens: [{ path: "/", kind: "journal" }] }, /preopens\[0\]\.name must be 1 to 128 letters/],
    [{ preopens: [{ path: "/", kind: "mem", readonly: true }] }, /preopens\[0\] has no option "readonly"/],
    [{ preopens: [{ path: "/", kind: "mem", readOnly: "yes" }] }, /preopens\[0\]\.readOnly must be a boolean/],
    [{ preopens: [{ path: "/", kind: "mem", options: { maxBytes: -1 } }] }, /preopens\[0\]\.options\.maxBytes must be a whole number/],
    [{ preopens: [{ path: "/", kind: "pack", url, options: {} }] }, /preopens\[0\]\.options \(quotas\)/],
    [{ preopens: [{ path: "/", kind: "pack", url, pack: { persist: "no" } }] }, /preopens\[0\]\.pack\.persist must be a boolean/],
    [{ preopens: [{ path: "/", kind: "pack", url, pack: { cache: 1 } }] }, /preopens\[0\]\.pack has no option "cache"/],
    [{ preopens: [{ path: "/", kind: "pack", url, pack: { cacheSize: -1 } }] }, /preopens\[0\]\.pack\.cacheSize must be a whole number/],
    [{ preopens: [{ path: "/", kind: "pack", url, pack: { digest: "blake3:12" } }] }, /preopens\[0\]\.pack\.digest must be blake3: and 64 hex digits/],
    [{ preopens: [{ path: "/", kind: "pack", url: "http://[bad" }] }, /preopens\[0\]\.url .* is not a URL/],
    [{ preopens: {} }, /preopens must be an array/],
    [{ preopen: [] }, /runP1 has no option "preopen"/],
    [{ args: ["a", 1] }, /args must be an array of strings/],
    // What C's argv and environ cannot carry, and preopens no guest path
    // reaches: taken, the guest saw "a" for "a\0b", a name split at "=".
    [{ args: ["a\0b"] }, /args\[0\] must be a string without NUL/],
    [{ env: { "A=B": "c" } }, /env's names must be non-empty, without '=' or NUL, not "A=B"/],
    [{ env: { A: "b\0c" } }, /env\.A must be a string without NUL/],
    [{ preopens: [{ path: "/a/../b", kind: "mem" }] }, /preopens\[0\]\.path must be a guest path \(not empty, without "\.\."/],
    [{ preopens: [{ path: "/m", kind: "mem" }, { path: "/m", kind: "mem" }] }, /preopens\[1\]\.path must be a path no other preopen has/],
    [{ env: { A: 1 } }, /env must be an object of strings/],
    [{ stdin: "text" }, /stdin must be a Uint8Array, an ArrayBuffer, a ReadableStream, an async iterable \(a Node stream\) or a function, not "text"/],
    [{ stdout: "console" }, /stdout must be a function/],
    [{ baseUrl: 7 }, /baseUrl must be a string or a URL/],
    [{ module: "guest.wasm" }, /module must be a WebAssembly.Module/],
  ];
  server.reset();
  const r = await onPage(async (runP1, m, ended, cases) => {
    const out = [];
    for (const [options] of cases) {
      const { module, ...rest } = options;
      // Bytes cross into the page as plain objects: made again here.
      for (const p of Array.isArray(rest.preopens) ? rest.preopens : []) {
        if (p.bytes) p.bytes = new Uint8Array(8);
      }
      out.push(await ended(runP1(module ?? m.nothing, rest)));
    }
    return out;
  }, cases.map(([o]) => [o]));
  r.forEach((got, i) => {
    assert.equal(got.type, "TypeError", `case ${i}: ${JSON.stringify(got)}`);
    assert.match(got.message, cases[i][1], `case ${i}`);
  });
  assert.equal(server.stats.get(url), undefined, "nothing was fetched");
});

// setTimeout fires a delay past 2^31 - 1 ms, Infinity included, at once: a
// caller meaning "no limit" got a TimeoutError as the run started.
test("a timeout of Infinity is no limit, and one past 2^31 - 1 ms a long one: neither ends the run at once", { timeout: 60_000 }, async () => {
  const r = await onPage(async (runP1, m, ended) => {
    const out = {};
    for (const timeout of [Infinity, 2 ** 31 - 1, 2 ** 31, 1e12, Number.MAX_VALUE]) {
      // The sleeper sleeps for an hour: still running after a second.
      const stop = new AbortController();
      const run = ended(runP1(m.sleeper, { timeout, signal: stop.signal }));
      const first = await Promise.race([run, new Promise((done) => setTimeout(() => done("running"), 1000))]);
      stop.abort();
      out[String(timeout)] = { first, then: await run };
    }
    out.nothing = await ended(runP1(m.nothing, { timeout: Infinity }));
    // A finite one still ends it.
    out.short = await ended(runP1(m.sleeper, { timeout: 300 }));
    return out;
  });
  for (const timeout of ["Infinity", "2147483647", "2147483648", "1000000000000", String(Number.MAX_VALUE)]) {
    assert.equal(r[timeout].first, "running", `${timeout}: ${JSON.stringify(r[timeout])}`);
    assert.equal(r[timeout].then.kind, "aborted", `${timeout}: ${JSON.stringify(r[timeout])}`);
  }
  assert.equal(r.nothing.resolved?.exitCode, 0, JSON.stringify(r.nothing));
  assert.equal(r.short.kind, "timeout", JSON.stringify(r.short));
});

test("a failed run says why: its kind, a message, the stack apart", { timeout: 60_000 }, async () => {
  const r = await onPage(async (runP1, m, ended) => {
    const aborted = ended(runP1(m.nothing, { signal: AbortSignal.abort(new Error("stop")) }));
    return {
      trap: await ended(runP1(m.trap)),
      module: await ended(runP1(m.stranger)),
      notWasm: await ended(runP1(new Uint8Array([1, 2, 3]))),
      missing: await ended(runP1(m.nothing, { preopens: [{ path: "/data", kind: "pack", url: "/fixtures/none.pack" }] })),
      damaged: await ended(runP1(m.nothing, { preopens: [{ path: "/", kind: "overlay", bytes: new Uint8Array(100) }] })),
      aborted: await aborted,
    };
  });
  const { trap, module, notWasm, missing, damaged, aborted } = r;
  for (const [what, e, kind] of [
    ["trap", trap, "trap"],
    ["module", module, "module"],
    ["notWasm", notWasm, "module"],
    ["missing", missing, "preopen"],
    ["damaged", damaged, "preopen"],
  ]) {
    assert.ok(e.isRunError, `${what}: ${JSON.stringify(e)}`);
    assert.equal(e.kind, kind, `${what}: ${JSON.stringify(e)}`);
    assert.equal(e.name, "RunError");
    // A message a person reads: one line, no stack.
    assert.ok(!e.message.includes("\n"), `${what}: ${e.message}`);
  }
  assert.match(trap.message, /^the guest trapped: .*unreachable/i);
  assert.match(trap.detail, /_start|wasm/, "the stack is kept apart");
  assert.match(module.message, /^the module cannot run: /);
  assert.match(missing.message, /^preopen \/data \(http:\/\/127\.0\.0\.1:\d+\/fixtures\/none\.pack\): /);
  assert.match(damaged.message, /^preopen \/: /);
  assert.equal(aborted.kind, "aborted");
  assert.equal(aborted.name, "AbortError");
  assert.equal(aborted.cause, "Error", "the signal's reason is the cause");
});

test("a preopen's pack options reach the pack: verifyOnRead", { timeout: 120_000 }, async () => {
  // One byte of a.txt's stored bytes flipped, the index left as it was.
  const run = (by, pack) =>
    onPage(
      async (runP1, m, ended, { by, pack }) => {
        const module = await (await fetch("/guests/toolbox.wasm")).arrayBuffer();
        const url = "/fixtures/damaged.pack";
        const source = by === "url" ? { url } : { bytes: new Uint8Array(await (await fetch(url)).arrayBuffer()) };
        const out = [], err = [];
        const r = await ended(
          runP1(module, {
            args: ["toolbox", "cat", "/d/a.txt"],
            preopens: [{ path: "/d", kind: "pack", ...source, pack }],
            stdout: (b) => out.push(...b),
            stderr: (b) => err.push(...b),
          }),
        );
        const text = (v) => new TextDecoder().decode(new Uint8Array(v));
        return { exitCode: r.resolved?.exitCode, error: r.message ?? text(err), stdout: text(out) };
      },
      { by, pack },
    );
  // Checked: the damage is EIO, not the guest's bytes. Bytes fetched by URL
  // are always checked before they are kept; bytes given whole only when
  // asked (Pack.fromBytes's default is not to).
  for (const [by, pack] of [["url", undefined], ["url", { verifyOnRead: false, persist: false }], ["bytes", { verifyOnRead: true }]]) {
    const r = await run(by, pack);
    assert.notEqual(r.exitCode, 0, `${by} ${JSON.stringify(pack)}: ${JSON.stringify(r)}`);
    assert.match(r.error, /errno 29/, `${by}: EIO`);
    assert.equal(r.stdout, "");
  }
  // Not checked: the bytes as stored, damage and all.
  for (const pack of [undefined, { verifyOnRead: false }]) {
    const r = await run("bytes", pack);
    assert.equal(r.exitCode, 0, r.error);
    assert.equal(r.stdout, DAMAGED_TEXT);
  }
});

// A guest filling an unbounded mem tree took packfs-web to wasm32's 4 GiB,
// where an allocation failed: reported as the guest's trap
// ("unreachable"), and the warm runner kept the 4 GiB worker.
test("a guest filling packfs-web's memory is said so, and the runner goes on in a new worker", { timeout: 300_000 }, async () => {
  const r = await onPage(async (runP1, m, ended, _, createRunner) => {
    const toolbox = await (await fetch("/guests/toolbox.wasm")).arrayBuffer();
    const runner = createRunner();
    const fill = Array.from({ length: 12 }, (_, i) => ["fill", `/m/f${i}`, "448"]).flat();
    const full = await ended(runner.run(toolbox, { args: ["toolbox", ...fill], preopens: [{ path: "/m", kind: "mem" }] }));
    let out = "";
    const next = await ended(
      runner.run(toolbox, { args: ["toolbox", "echo", "again"], stdout: (b) => (out += new TextDecoder().decode(b)) }),
    );
    runner.close();
    return { full, next: next.resolved?.exitCode, out };
  });
  assert.equal(r.full.kind, "io", JSON.stringify(r.full));
  assert.match(r.full.message, /packfs-web ran out of memory/);
  assert.equal(r.next, 0);
  assert.equal(r.out, "again\n");
});

test("a warm runner: each run clean, runs in turn, a timeout or close ends only its own", { timeout: 120_000 }, async () => {
  const r = await onPage(async (runP1, m, ended, _, createRunner) => {
    const toolbox = await (await fetch("/guests/toolbox.wasm")).arrayBuffer();
    const runner = createRunner();
    const dec = new TextDecoder();
    const run = async (args, env) => {
      let out = "";
      const r = await ended(
        runner.run(toolbox, {
          args: ["toolbox", ...args],
          env,
          preopens: [{ path: "/m", kind: "mem" }],
          stdout: (b) => (out += dec.decode(b)),
        }),
      );
      return { exitCode: r.resolved?.exitCode, error: r.message, out };
    };
    // Guests that catch 20,000 refused calls each: they run, and leave
    // the worker whole for the next (two overran its shadow stack, and
    // every later run failed with "memory access out of bounds").
    const caught = [];
    for (let i = 0; i < 2; i++) {
      let out = "";
      const r = await ended(runner.run(m.catching, { stdout: (b) => (out += dec.decode(b)) }));
      caught.push({ exitCode: r.resolved?.exitCode, error: r.message, out });
    }
    const wrote = await run(["write", "/m/x", "hello"]);
    const fresh = await run(["cat", "/m/x"]);
    // Asked for together, run one after the other, each with its own stdout.
    const together = await Promise.all([run(["env", "K"], { K: "one" }), run(["env", "K"], { K: "two" })]);
    const timedOut = await ended(runner.run(m.sleeper, { timeout: 300 }));
    const after = await run(["echo", "again"]);
    const sleeping = ended(runner.run(m.sleeper));
    const waiting = ended(runner.run(m.nothing));
    await new Promise((done) => setTimeout(done, 300));
    runner.close();
    const closed = [await sleeping, await waiting, await ended(runner.run(m.nothing))];
    return { caught, wrote, fresh, together, timedOut, after, closed };
  });
  for (const c of r.caught) assert.deepEqual(c, { exitCode: 0, error: undefined, out: "ok\n" });
  assert.equal(r.wrote.exitCode, 0, r.wrote.error);
  assert.notEqual(r.fresh.exitCode, 0, "the last run's mem preopen is gone");
  assert.deepEqual(r.together.map((t) => t.out), ["one\n", "two\n"]);
  assert.equal(r.timedOut.kind, "timeout");
  assert.equal(r.after.exitCode, 0, r.after.error);
  assert.equal(r.after.out, "again\n");
  for (const c of r.closed) {
    assert.equal(c.kind, "aborted", JSON.stringify(c));
    assert.match(c.message, /the runner was closed/);
  }
});
