// packfs-web without a page: e2e/runtime/suite.mjs (init, the runner over
// lazy URL and file packs, Node streams, RunError kinds, the warm runner,
// the WASI class) in Node, Deno and Bun, each a process of its own. Deno
// and Bun come from npm (web/package-lock.json); the p1 guests, their
// native transcripts and starting packs from host/tests/guests.rs, as for
// p1.test.mjs.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

import { startServer, parseRange } from "./server.mjs";
import { packfs } from "./fixtures.mjs";
import { DIR, GUESTS, transpile } from "./jco.mjs";

const TARGET = fileURLToPath(new URL("../../target/guest-tests/", import.meta.url));
const SUITE = fileURLToPath(new URL("./runtime/suite.mjs", import.meta.url));
const BIN = fileURLToPath(new URL("../node_modules/.bin/", import.meta.url));

const P2RUN = fileURLToPath(new URL("./runtime/p2run.mjs", import.meta.url));
const launch = (script) => ({
  node: [process.execPath, script],
  deno: [`${BIN}deno`, "run", "--allow-all", "--no-prompt", "--quiet", script],
  bun: [`${BIN}bun`, script],
});
const RUNTIMES = launch(SUITE);

let server, flood, jco;

/** The suite's big pack (24 files of 200,000 bytes, as suite.mjs makes it). */
async function bigPack() {
  const { MemFs } = await packfs();
  const fs = new MemFs();
  fs.mkdir("f");
  let x = 0x9e3779b9;
  for (let i = 0; i < 24; i++) {
    const b = new Uint8Array(200_000);
    for (let k = 0; k < b.length; k++) {
      x ^= x << 13; x ^= x >>> 17; x ^= x << 5;
      b[k] = x & 0xff;
    }
    fs.writeFileSync(`f/${i}.bin`, b);
  }
  return Buffer.from(await fs.compact({ compress: "none" }));
}

before(async () => {
  jco = transpile();
  const big = await bigPack();
  server = await startServer({
    files: {
      "/fixtures/seed.pack": readFileSync(`${TARGET}browser/seed.pack`),
      "/fixtures/ro.pack": readFileSync(`${TARGET}browser/ro.pack`),
      "/big.pack": big,
    },
  });
  // /flood/big.pack: the pack's tail and header as asked (it opens), and
  // to any other range, a 200 whose body never ends.
  flood = createServer((req, res) => {
    const r = parseRange(req.headers.range, big.length);
    if (Array.isArray(r) && (r[0] === 0 || r[1] === big.length)) {
      res.writeHead(206, { "Content-Range": `bytes ${r[0]}-${r[1] - 1}/${big.length}`, "Content-Length": r[1] - r[0] });
      res.end(big.subarray(r[0], r[1]));
      return;
    }
    res.writeHead(200, { "Content-Type": "application/octet-stream" });
    const zeros = Buffer.alloc(1 << 16);
    const pour = () => {
      while (!res.destroyed && res.write(zeros));
    };
    res.on("drain", pour);
    pour();
  });
  await new Promise((ok) => flood.listen(0, "127.0.0.1", ok));
});

after(async () => {
  flood?.closeAllConnections();
  flood?.close();
  await server?.close();
});

/** Runs the suite in `runtime`; its exit status and output. */
function suite(runtime) {
  const [cmd, ...args] = RUNTIMES[runtime];
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      env: { ...process.env, PACKFS_SERVER: server.url, PACKFS_FLOOD: `http://127.0.0.1:${flood.address().port}`, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, out }));
  });
}

for (const runtime of Object.keys(RUNTIMES)) {
  test(`packfs-web's runtime suite passes in ${runtime}`, async (ctx) => {
    const { code, out } = await suite(runtime);
    for (const line of out.split("\n").filter((l) => /^(not )?ok - /.test(l))) ctx.diagnostic(line);
    assert.equal(code, 0, out);
    assert.match(out, /^ok - /m);
    assert.doesNotMatch(out, /^not ok/m);
  });
}

/** Runs p2 guest `name` (transpiled by jco) in `runtime` through
 *  packfs-web/preview2 (e2e/runtime/p2run.mjs); its stdout and stderr. */
function p2(runtime, name) {
  const [cmd, ...args] = launch(P2RUN)[runtime];
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, [...args, jco, name, DIR], { env: { ...process.env, NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] });
    let [stdout, stderr] = ["", ""];
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

for (const runtime of Object.keys(RUNTIMES)) {
  test(`the p2 guests, transpiled by jco, print their native transcripts through packfs-web/preview2 in ${runtime}`, async () => {
    for (const name of GUESTS) {
      const { code, stdout, stderr } = await p2(runtime, name);
      assert.equal(code, 0, `${name}: ${stderr}`);
      assert.match(stderr, /^status 0$/m, name);
      assert.equal(stdout, readFileSync(`${DIR}p2/${name}.txt`, "utf8"), name);
    }
  });
}
