// Every entry point of packfs-web checks its arguments: a value of the wrong
// type (a number, an object, undefined, null, ...) is a TypeError naming the
// argument, thrown, or rejected with by a method that returns a promise,
// before anything is done; never a crash of the module. (wasm-bindgen's glue
// for a `&str` parameter, given a number or an object, made the module's
// allocator resize a pointer it never handed out: `RuntimeError: memory
// access out of bounds`.) Each class's methods are found on its prototype,
// so a new method with arguments fails here until it is listed.
//
// PACKFS_WEB_PKG=DIR runs it on the build in DIR instead of web/pkg
// (pkg.mjs).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";

import { startServer } from "./server.mjs";
import { launch, newPage } from "./browser.mjs";
import { pkgOverride } from "./pkg.mjs";

let server, browser;

before(async () => {
  server = await startServer({ files: pkgOverride() });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/**
 * Calls every entry point of `classes` (names in packfs_web.js) once per
 * argument and wrong value, the other arguments right; returns each
 * outcome, and the entry points with arguments that no case covered.
 */
async function outcomes(classes) {
  const { page, context, errors } = await newPage(browser);
  await page.goto(`${server.url}/www/`);
  const r = await page.evaluate(async (classes) => {
    const mod = await import("/pkg/packfs_web.js");
    await mod.default();
    const { MemFs, Pack, Overlay, Preview1 } = mod;
    const mem = new MemFs();
    mem.writeFileSync("f", "x");
    const bytes = await mem.compact();
    const pack = Pack.fromBytes(bytes);
    const overlay = new Overlay(pack);
    const memory = new WebAssembly.Memory({ initial: 1 });

    // What each argument is, by name, and values of the wrong type for it.
    const WRONG = {
      string: [5, {}, undefined, null],
      data: [5, {}, undefined, null],
      number: ["1", {}, undefined, null],
      options: [5, "x", true],
      bytes: [5, {}, undefined, null, "bytes"],
      boolean: [1, "yes", {}],
      Pack: [5, {}, undefined, null, mem],
      MemFs: [5, {}, undefined, null, pack],
      Overlay: [5, {}, undefined, null, mem],
      tree: [5, {}, undefined, null, "/tmp"],
      Memory: [5, {}, undefined, null],
      function: [5, {}, "f"],
    };
    const ARGS = {
      path: ["string", "f"],
      from: ["string", "f"],
      to: ["string", "g"],
      target: ["string", "f"],
      url: ["string", "/nothing.pack"],
      name: ["string", "notes"],
      data: ["data", "x"],
      len: ["number", 0],
      options: ["options", undefined],
      bytes: ["bytes", bytes],
      lower: ["Pack", pack],
      pack: ["Pack", pack],
      fs: ["MemFs", mem],
      overlay: ["Overlay", overlay],
      tree: ["tree", mem],
      readOnly: ["boolean", undefined],
      memory: ["Memory", memory],
      get: ["function", null],
    };
    const FS = {
      readFile: ["path"],
      readFileSync: ["path"],
      writeFile: ["path", "data"],
      writeFileSync: ["path", "data"],
      truncate: ["path", "len"],
      truncateSync: ["path", "len"],
      mkdir: ["path", "options"],
      readdir: ["path"],
      stat: ["path"],
      lstat: ["path"],
      exists: ["path"],
      unlink: ["path"],
      rmdir: ["path"],
      rename: ["from", "to"],
      symlink: ["target", "path"],
      readlink: ["path"],
      compact: ["options"],
    };
    // Entry points: [class, name, parameters, call(...args)].
    const fsOf = (cls, obj) => Object.entries(FS).map(([m, params]) => [cls, m, params, (...a) => obj[m](...a)]);
    const ENTRIES = [
      ["MemFs", "constructor", ["options"], (...a) => new MemFs(...a)],
      ["MemFs", "openJournal", ["name", "options"], (...a) => MemFs.openJournal(...a)],
      ...fsOf("MemFs", mem),
      ["Pack", "fromBytes", ["bytes", "options"], (...a) => Pack.fromBytes(...a)],
      ["Pack", "fromUrl", ["url", "options"], (...a) => Pack.fromUrl(...a)],
      ["Pack", "setBlockingGet", ["get"], (...a) => Pack.setBlockingGet(...a)],
      ...fsOf("Pack", pack),
      ["Overlay", "constructor", ["lower", "options"], (...a) => new Overlay(...a)],
      ...fsOf("Overlay", overlay),
      ["Preview1", "constructor", ["options"], (...a) => new Preview1(...a)],
      ["Preview1", "preopen", ["path", "tree", "readOnly"], (...a) => new Preview1({}).preopen(...a)],
      ...["preopenMemFs", "preopenPack", "preopenOverlay"].map((m) => {
        const params = { preopenMemFs: ["path", "fs", "readOnly"], preopenPack: ["path", "pack"] }[m] ?? [
          "path",
          "overlay",
          "readOnly",
        ];
        return ["Preview1", m, params, (...a) => new Preview1({})[m](...a)];
      }),
      ["Preview1", "start", ["memory"], (...a) => new Preview1({}).start(...a)],
    ].filter(([cls]) => classes.includes(cls));

    const show = (v) => {
      if (v === undefined) return "undefined";
      if (typeof v === "string" || v?.constructor === Object) return JSON.stringify(v);
      return v instanceof Object ? v.constructor.name : String(v);
    };
    const results = [];
    for (const [cls, name, params, call] of ENTRIES) {
      for (let i = 0; i < params.length; i++) {
        const [kind] = ARGS[params[i]];
        for (const value of WRONG[kind]) {
          const args = params.map((p) => ARGS[p][1]);
          args[i] = value;
          let outcome;
          try {
            const r = call(...args);
            outcome = r instanceof Promise ? await r.then(() => "resolved", (e) => e) : "returned";
          } catch (e) {
            outcome = e;
          }
          const error =
            outcome instanceof Error
              ? { name: outcome.name, message: outcome.message, code: outcome.code }
              : { name: outcome };
          results.push({ call: `${cls}.${name}(${params.join(", ")})`, arg: params[i], value: show(value), ...error });
        }
      }
    }

    // Option fields of the wrong type (with the filesystems' cases).
    const fields = [
      ["options.recursive", () => mem.mkdir("d", { recursive: "yes" })],
      ["options.maxBytes", () => new MemFs({ maxBytes: "1" })],
      ["options.maxInodes", () => new Overlay(pack, { maxInodes: {} })],
      ["options.lower", () => new MemFs({ lower: mem })],
      ["options.verifyOnRead", () => Pack.fromBytes(bytes, { verifyOnRead: 1 })],
      ["options.digest", () => Pack.fromBytes(bytes, { digest: 1 })],
      ["options.persist", () => Pack.fromUrl("/nothing.pack", { persist: "no" })],
      ["options.compress", () => mem.compact({ compress: 5 })],
      ["options.chunkSize", () => mem.compact({ compress: "lz4", chunkSize: "4096" })],
    ].filter(() => classes.includes("MemFs"));
    for (const [field, call] of fields) {
      let outcome;
      try {
        const r = call();
        outcome = r instanceof Promise ? await r.then(() => "resolved", (e) => e) : "returned";
      } catch (e) {
        outcome = e;
      }
      const error = outcome instanceof Error ? { name: outcome.name, message: outcome.message } : { name: outcome };
      results.push({ call: field, arg: field, value: "wrong type", ...error });
    }

    // Every method or constructor that takes arguments has a case, but
    // Preview1.call: the guest's imports call it (worker.js's `lower`),
    // with numbers only, once per preview1 call.
    const covered = new Set([...ENTRIES.map(([cls, name]) => `${cls}.${name}`), "Preview1.call"]);
    const missing = [];
    for (const cls of classes) {
      const C = mod[cls];
      const own = (o) => Object.getOwnPropertyNames(o).filter((n) => n !== "constructor" && n !== "prototype");
      if (C.length > 0 && !covered.has(`${cls}.constructor`)) missing.push(`${cls}.constructor`);
      const methods = [
        ...own(C).map((n) => [n, C[n]]),
        ...own(C.prototype).map((n) => [n, Object.getOwnPropertyDescriptor(C.prototype, n).value]),
      ];
      // (`__` names are wasm-bindgen's own, `__wrap`, and the hidden `__share`.)
      for (const [n, f] of methods) {
        if (typeof f !== "function" || f.length === 0 || n.startsWith("__")) continue;
        if (!covered.has(`${cls}.${n}`)) missing.push(`${cls}.${n}`);
      }
    }

    // The module still works after all that.
    const after = new MemFs();
    after.writeFileSync("still", "works");
    const still = new TextDecoder().decode(after.readFileSync("still"));
    return { results, missing, still };
  }, classes);
  await context.close();
  return { ...r, errors };
}

/** The outcomes that are not a TypeError naming the argument. */
function wrong(results) {
  return results
    .filter((r) => !(r.name === "TypeError" && r.message.startsWith(`${r.arg} must be`)))
    .map((r) => `${r.call} with ${r.arg} = ${r.value}: ${r.name}${r.message ? `: ${r.message}` : ""}`);
}

test("MemFs, Pack and Overlay: an argument of the wrong type is a TypeError naming it", async (ctx) => {
  const r = await outcomes(["MemFs", "Pack", "Overlay"]);
  ctx.diagnostic(`${r.results.length} calls with a wrong argument`);
  assert.deepEqual(r.missing, [], "entry points with arguments and no case here");
  assert.deepEqual(wrong(r.results), []);
  // They carry the code every error of the API has.
  assert.ok(r.results.filter((x) => x.code !== undefined).every((x) => x.code === "invalid"));
  assert.equal(r.still, "works");
  assert.deepEqual(r.errors, []);
});

test("Preview1: an argument of the wrong type is a TypeError naming it", async () => {
  const r = await outcomes(["Preview1"]);
  assert.deepEqual(r.missing, [], "entry points with arguments and no case here");
  assert.deepEqual(wrong(r.results), []);
});
