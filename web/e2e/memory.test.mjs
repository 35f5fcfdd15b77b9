// How packfs-web reaches a guest, in headless Chromium: each guest's
// imports call packfs-web through a trampoline that names the guest, so
// two guests of one thread each reach their own state and memory, and an
// instance whose Preview1 was freed reaches none, not a later guest's, and
// its refused calls, thrown from the trampoline, leave packfs-web whole; a
// callback that calls its guest again, through Preview1.call or a direct
// export, is refused with an Error and the guest goes on; a shared memory (which the wasm copier cannot import) is reached through
// JavaScript, and its growth seen.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { ISOLATED, startServer } from "./server.mjs";
import { launch, newPage } from "./browser.mjs";
import { pkgOverride } from "./pkg.mjs";
import { catchingGuest, growingGuest, writingGuest } from "./wasm.mjs";

let plain, isolated, browser;

before(async () => {
  plain = await startServer({ files: pkgOverride() });
  isolated = await startServer({ files: pkgOverride(), headers: ISOLATED });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await plain?.close();
  await isolated?.close();
});

test("two guests of one thread reach their own state, and a freed guest's instance reaches none", async () => {
  const { page, context, errors } = await newPage(browser);
  await page.goto(`${plain.url}/www/`);
  const modules = ["guest a\n", "guest b\n", "guest c\n"].map((t) => Array.from(writingGuest(t)));
  const r = await page.evaluate(async (modules) => {
    const web = await import("/pkg/packfs_web.js");
    const wasm = await web.default();
    const { imports } = await import("/pkg/imports.js");
    const guest = async (bytes) => {
      const out = [];
      const p1 = new web.Preview1({ stdout: (b) => out.push(...b) });
      const { instance } = await WebAssembly.instantiate(new Uint8Array(bytes), {
        wasi_snapshot_preview1: await imports(p1, web.Preview1, wasm),
      });
      p1.start(instance.exports.memory);
      return { p1, id: p1.id, run: () => instance.exports._start(), out: () => new TextDecoder().decode(new Uint8Array(out)) };
    };
    const [a, b] = [await guest(modules[0]), await guest(modules[1])];
    a.run();
    b.run();
    a.run();
    b.run();
    const before = [a.out(), b.out()];
    a.p1.free();
    const c = await guest(modules[2]);
    const stale = (() => {
      try {
        a.run();
        return "ran";
      } catch (e) {
        return e.message;
      }
    })();
    c.run();
    b.run();
    return { before, stale, c: c.out(), b: b.out(), ids: [a.id, b.id, c.id] };
  }, modules);
  await context.close();
  assert.deepEqual(errors, []);
  assert.deepEqual(r.before, ["guest a\nguest a\n", "guest b\nguest b\n"]);
  assert.match(r.stale, /no started Preview1/);
  assert.equal(r.c, "guest c\n");
  assert.equal(r.b, "guest b\nguest b\nguest b\n");
  assert.equal(new Set(r.ids).size, 3, `ids ${r.ids}`);
});

// A refused call threw from within packfs-web's frames, which skipped
// giving back the 96 bytes of shadow stack its export had taken: 12,000
// refusals caught by a guest overran the stack, and an unrelated MemFs
// became unreadable (RuntimeError). They are thrown from the trampoline now.
test("20,000 refused calls caught by a freed guest's instance leave packfs-web whole", async () => {
  const { page, context, errors } = await newPage(browser);
  await page.goto(`${plain.url}/www/`);
  const bytes = Array.from(catchingGuest({ calls: 20_000 }));
  const r = await page.evaluate(async (bytes) => {
    const web = await import("/pkg/packfs_web.js");
    const wasm = await web.default();
    const { imports } = await import("/pkg/imports.js");
    const out = [];
    const p1 = new web.Preview1({ stdout: (b) => out.push(...b) });
    const { instance } = await WebAssembly.instantiate(new Uint8Array(bytes), {
      wasi_snapshot_preview1: await imports(p1, web.Preview1, wasm),
    });
    p1.start(instance.exports.memory);
    instance.exports._start();
    p1.free();
    let refused;
    try {
      instance.exports.hammer();
      refused = "caught";
    } catch (e) {
      refused = e.message;
    }
    // A stale call not caught says why, as before.
    let stale;
    try {
      instance.exports._start();
    } catch (e) {
      stale = e.message;
    }
    const fs = new web.MemFs();
    fs.writeFileSync("a.txt", "still here");
    return {
      out: new TextDecoder().decode(new Uint8Array(out)),
      refused,
      stale,
      read: new TextDecoder().decode(fs.readFileSync("a.txt")),
      inDoubt: web.Preview1.inDoubt(),
    };
  }, bytes);
  await context.close();
  assert.deepEqual(errors, []);
  assert.equal(r.out, "ok\n");
  assert.equal(r.refused, "caught");
  assert.match(r.stale, /no started Preview1/);
  assert.equal(r.read, "still here");
  assert.equal(r.inDoubt, false);
});

// Preview1.call took the guest's state with RefCell::borrow_mut: called
// from a stdout callback while a direct export held it, it panicked (a
// RuntimeError, "unreachable"), and the Preview1 stayed borrowed, so every
// later call failed too.
test("a callback that calls its guest again is refused, by Preview1.call as by the direct exports, and the guest goes on", async () => {
  const { page, context, errors } = await newPage(browser);
  await page.goto(`${plain.url}/www/`);
  const r = await page.evaluate(async (bytes) => {
    const web = await import("/pkg/packfs_web.js");
    const wasm = await web.default();
    const { imports } = await import("/pkg/imports.js");
    const schedYield = web.Preview1.functions().indexOf("sched_yield");
    const callYield = () => p1.call(schedYield, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    const seen = [];
    const attempt = (what, f) => {
      try {
        seen.push({ what, returned: f() });
      } catch (e) {
        seen.push({ what, threw: e.constructor.name, message: e.message });
      }
    };
    const out = [];
    let wasi;
    const p1 = new web.Preview1({
      stdout: (b) => {
        out.push(...b);
        attempt("call", callYield);
        // The guest's own import: the trampoline throws for the refusal.
        attempt("direct", () => wasi.sched_yield());
        // The export itself throws nothing: it answers with the refusal.
        attempt("export", () => wasm.direct_sched_yield(p1.id));
      },
    });
    wasi = await imports(p1, web.Preview1, wasm);
    const { instance } = await WebAssembly.instantiate(new Uint8Array(bytes), { wasi_snapshot_preview1: wasi });
    p1.start(instance.exports.memory);
    instance.exports._start();
    instance.exports._start();
    const during = seen.splice(0);
    // Outside a call, a call is taken.
    attempt("after", callYield);
    return { during, after: seen[0], out: new TextDecoder().decode(new Uint8Array(out)) };
  }, Array.from(writingGuest("hello\n")));
  await context.close();
  assert.deepEqual(errors, []);
  assert.deepEqual(r.during.map((s) => s.what), ["call", "direct", "export", "call", "direct", "export"], JSON.stringify(r.during));
  for (const s of r.during) {
    if (s.what === "export") {
      assert.equal(s.returned, -2, JSON.stringify(s));
      continue;
    }
    assert.equal(s.threw, "Error", JSON.stringify(s));
    assert.match(s.message, /a guest call from within one of its own calls/, JSON.stringify(s));
  }
  assert.equal(r.out, "hello\nhello\n");
  assert.deepEqual(r.after, { what: "after", returned: 0 });
});

test("a guest whose memory is shared reads and writes it, and sees it grow", async () => {
  const { page, context, errors } = await newPage(browser);
  await page.goto(`${isolated.url}/www/`);
  const [isolatedPage, exitCode, out] = await page.evaluate(async (bytes) => {
    const { runP1 } = await import("/pkg/runner.js");
    const chunks = [];
    const r = await runP1(new Uint8Array(bytes), { stdout: (b) => chunks.push(...b) });
    return [crossOriginIsolated, r.exitCode, new TextDecoder().decode(new Uint8Array(chunks))];
  }, Array.from(growingGuest({ shared: true })));
  await context.close();
  assert.deepEqual(errors, []);
  assert.ok(isolatedPage, "a shared memory needs a cross-origin isolated page");
  assert.equal(exitCode, 0);
  assert.equal(out, "ok\ngrew\n");
});
