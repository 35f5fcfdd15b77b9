// A guest's stdin from a function or a ReadableStream, in headless
// Chromium: where the page is cross-origin isolated each read waits for
// the next piece (the guest answers a line before the next is asked for),
// else the source is read to its end first; every byte arrives, across
// the 64 KiB piece the page hands the worker at a time; a source that
// fails is EIO to the guest (isolated) or a RunError of kind "io" (read
// first); a stream is cancelled when the run ends; a guest waiting on
// stdin still ends at its timeout.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

import { ISOLATED, startServer } from "./server.mjs";
import { launch, newPage } from "./browser.mjs";
import { pkgOverride } from "./pkg.mjs";

const TARGET = fileURLToPath(new URL("../../target/guest-tests/", import.meta.url));
const TOOLBOX = readFileSync(`${TARGET}wasm32-wasip1/release/toolbox.wasm`);
let plain, isolated, browser;

before(async () => {
  const files = { "/guests/toolbox.wasm": TOOLBOX, ...pkgOverride() };
  plain = await startServer({ files });
  isolated = await startServer({ files, headers: ISOLATED });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await plain?.close();
  await isolated?.close();
});

/** Runs `script(run, arg)` on a fresh page of `server`, where `run(args,
 *  options)` runs the toolbox and resolves to `{ exitCode, out, err,
 *  events }` or the RunError's `{ kind, name, message }`. */
async function onPage(server, script, arg) {
  const { page, context, errors } = await newPage(browser);
  await page.goto(`${server.url}/www/`);
  const out = await page.evaluate(
    async ({ script, arg }) => {
      const { runP1 } = await import("/pkg/runner.js");
      const module = new Uint8Array(await (await fetch("/guests/toolbox.wasm")).arrayBuffer());
      const events = [];
      const text = (b) => new TextDecoder().decode(b);
      const run = (args, options = {}) => {
        let out = "", err = "";
        return runP1(module, {
          args: ["toolbox", ...args],
          stdout: (b) => {
            out += text(b);
            events.push(`out ${text(b).trim()}`);
          },
          stderr: (b) => (err += text(b)),
          ...options,
        }).then(
          (r) => ({ exitCode: r.exitCode, out, err, events }),
          (e) => ({ kind: e.kind, name: e.name, message: e.message, out, err, events }),
        );
      };
      const isolated = crossOriginIsolated;
      return { isolated, ...(await new Function("run", "events", "arg", `return (${script})(run, events, arg)`)(run, events, arg)) };
    },
    { script: script.toString(), arg },
  );
  await context.close();
  assert.deepEqual(errors, []);
  return out;
}

// A function giving two lines, then the end; it notes each call.
const lines = async (run, events) =>
  run(["lines"], {
    stdin: () => {
      const next = ["first\n", new TextEncoder().encode("second\n"), null][events.filter((e) => e === "pull").length];
      events.push("pull");
      return Promise.resolve(next);
    },
  });

for (const [name, server, isolatedPage, events] of [
  ["isolated: each read waits for the next piece, pulled as the guest reads", () => isolated, true,
    ["pull", "out > first", "pull", "out > second", "pull"]],
  ["not isolated: the function is read to its end before the guest starts", () => plain, false,
    ["pull", "pull", "pull", "out > first", "out > second"]],
]) {
  test(name, async () => {
    const r = await onPage(server(), lines);
    assert.equal(r.isolated, isolatedPage);
    assert.equal(r.exitCode, 0, r.err);
    assert.equal(r.out, "> first\n> second\n");
    assert.deepEqual(r.events, events);
  });
}

// Bytes through a stream in uneven pieces, strings and bytes mixed, past
// several of the 64 KiB pieces the page hands over at a time; copied to a
// file by the guest and read back.
const DATA = randomBytes(200_000 + 17).toString("base64");
const sha = (s) => createHash("sha256").update(s).digest("hex");
const copy = async (run, _events, data) => {
  const sizes = [1, 65535, 65536, 65537, 3, 100000];
  let at = 0, i = 0;
  const stream = new ReadableStream({
    pull(c) {
      if (at >= data.length) return c.close();
      const n = sizes[i++ % sizes.length];
      const part = data.slice(at, at + n);
      c.enqueue(i % 2 ? part : new TextEncoder().encode(part));
      if (i % 3 === 0) c.enqueue(new Uint8Array(0));
      at += n;
    },
  });
  return run(["mkdir", "/t", "stdin", "/t/copy", "cat", "/t/copy"], { stdin: stream, preopens: [{ path: "/t", kind: "mem" }] });
};

for (const [name, server] of [["isolated", () => isolated], ["not isolated", () => plain]]) {
  test(`${name}: every byte of a ReadableStream reaches the guest`, async () => {
    const r = await onPage(server(), copy, DATA);
    assert.equal(r.exitCode, 0, r.err);
    assert.equal(r.out.length, DATA.length);
    assert.equal(sha(r.out), sha(DATA));
  });
}

const failing = async (run) => ({
  thrown: await run(["stdin", "/t/x"], { stdin: () => { throw new Error("no more input here"); }, preopens: [{ path: "/t", kind: "mem" }] }),
  wrong: await run(["stdin", "/t/x"], { stdin: () => 42, preopens: [{ path: "/t", kind: "mem" }] }),
});

test("isolated: a source that fails is EIO to the guest", async () => {
  const r = await onPage(isolated, failing);
  for (const got of [r.thrown, r.wrong]) {
    assert.equal(got.exitCode, 1);
    assert.match(got.err, /^toolbox: stdin \/t\/x: .*\(errno 29\)/, "EIO is errno 29");
  }
});

test("not isolated: a source that fails rejects the run with kind io", async () => {
  const r = await onPage(plain, failing);
  assert.equal(r.thrown.kind, "io");
  assert.match(r.thrown.message, /^reading stdin: no more input here/);
  assert.equal(r.wrong.kind, "io");
  assert.match(r.wrong.message, /^reading stdin: stdin gave number, not a Uint8Array/);
});

test("isolated: a stream is cancelled when the run ends; a guest waiting for input ends at its timeout", async () => {
  const r = await onPage(isolated, async (run) => {
    let cancelled = false;
    const endless = new ReadableStream({ pull: (c) => c.enqueue("y\n"), cancel: () => (cancelled = true) });
    const unread = await run(["echo", "hi"], { stdin: endless });
    const waiting = await run(["lines"], { stdin: () => new Promise(() => {}), timeout: 500 });
    return { unread, cancelled, waiting };
  });
  assert.equal(r.unread.exitCode, 0);
  assert.equal(r.unread.out, "hi\n");
  assert.equal(r.cancelled, true);
  assert.equal(r.waiting.kind, "timeout");
});

test("stdin of the wrong type is a TypeError naming it", async () => {
  const r = await onPage(plain, async () => {
    const { runP1 } = await import("/pkg/runner.js");
    try {
      await runP1(new Uint8Array(8), { stdin: "text" });
      return { threw: false };
    } catch (e) {
      return { threw: true, type: e.constructor.name, message: e.message };
    }
  });
  assert.equal(r.type, "TypeError");
  assert.match(r.message, /^stdin must be a Uint8Array, an ArrayBuffer, a ReadableStream, an async iterable \(a Node stream\) or a function, not "text"/);
});
