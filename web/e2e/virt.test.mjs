// Components made by `packfs virt` on jco's stock preview2-shim in Node,
// with no PackFS adapter: each guest of host/tests/virt (Rust for
// wasm32-wasip2 and wasm32-wasip1, C for preview1), composed with the
// virtual filesystem over the packs of the starting trees, as that test
// leaves it in target/guest-tests/virt/ with its transcript and tree on
// PackFS natively. `jco run` must print the native transcript, and the
// pack the component saves to the one directory it is given (/out) must
// hold the native tree, hash for hash. A `-hostpacks` component reads its
// packs from that directory (`host:/out/seed.pack`), through the shim's
// filesystem.

import { test, before } from "node:test";
import assert from "node:assert/strict";
import { execFile, execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createServer as createHttpServer } from "node:http";
import { createServer as createNetServer } from "node:net";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);

const DIR = fileURLToPath(new URL("../../target/guest-tests/virt/", import.meta.url));
const JCO = fileURLToPath(new URL("../node_modules/.bin/jco", import.meta.url));
const PREOPENS = fileURLToPath(new URL("./runtime/virt-preopens.mjs", import.meta.url));
const COMPONENTS = readdirSync(DIR)
  .filter((f) => f.endsWith(".wasm"))
  .map((f) => f.slice(0, -5))
  .sort();
let packfs;

before(async () => {
  packfs = await import(new URL("../pkg/index.js", import.meta.url).href);
  await packfs.default();
});

/** Every path under `fs`'s root, as host/tests/virt writes a tree. */
function treeOf(fs) {
  const lines = [];
  const walk = (dir) => {
    for (const e of fs.readdir(dir || "/")) {
      const path = `${dir}/${e.name}`;
      if (e.kind === "dir") {
        lines.push(`${path} Dir`);
        walk(path);
      } else if (e.kind === "symlink") {
        lines.push(`${path} Symlink(${JSON.stringify(fs.readlink(path))})`);
      } else {
        lines.push(`${path} file ${createHash("sha256").update(fs.readFileSync(path)).digest("hex")}`);
      }
    }
  };
  walk("");
  return lines.sort().join("\n");
}

test("there are components to run", () => {
  assert.ok(COMPONENTS.length >= 30, COMPONENTS.join(", "));
  assert.ok(COMPONENTS.filter((c) => c.endsWith("-hostpacks")).length >= 15, COMPONENTS.join(", "));
});

for (const name of COMPONENTS) {
  test(`${name}, virtualized, on jco's stock shim`, () => {
    const out = mkdtempSync(join(tmpdir(), "packfs-virt-"));
    if (name.endsWith("-hostpacks")) {
      for (const pack of ["seed.pack", "ro.pack"]) copyFileSync(join(DIR, pack), join(out, pack));
    }
    try {
      const stdout = execFileSync(JCO, ["run", "--jco-import", PREOPENS, join(DIR, `${name}.wasm`)], {
        env: { ...process.env, PACKFS_VIRT_OUT: out },
        stdio: ["ignore", "pipe", "pipe"],
        encoding: "utf8",
      });
      assert.equal(stdout, readFileSync(join(DIR, `${name}.txt`), "utf8"));
      const saved = packfs.Pack.fromBytes(readFileSync(join(out, "after.pack")));
      const want = readFileSync(join(DIR, `${name}.tree`), "utf8").trim().split("\n").sort().join("\n");
      assert.equal(treeOf(saved), want);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
}

/** Names, contents and times of a directory's entries. */
function snapshot(dir) {
  return readdirSync(dir)
    .sort()
    .map((name) => {
      const s = lstatSync(join(dir, name));
      return [name, s.isFile() ? readFileSync(join(dir, name)).toString("hex") : "", s.mtimeMs];
    });
}

// host/tests/virt/hostile.rs leaves a component whose `/ro` is a dir-ro:
// host directory and `/` a dir: one, and the p2_script ops that try every
// change to `/ro` (through files opened from it too, with the empty path,
// which the shim takes as the file itself), then make a file in `/`.
test("a dir-ro: directory stays as it was whatever the guest does, on jco's stock shim", () => {
  const attack = join(DIR, "attack");
  const out = mkdtempSync(join(tmpdir(), "packfs-virt-"));
  try {
    mkdirSync(join(out, "rw"));
    mkdirSync(join(out, "ro", "sub"), { recursive: true });
    writeFileSync(join(out, "ro", "f.txt"), "f");
    writeFileSync(join(out, "ro", "sub", "in.txt"), "in");
    const before = [snapshot(join(out, "ro")), snapshot(join(out, "ro", "sub"))];
    const args = readFileSync(join(attack, "dir-ro.args"), "utf8").split("\n");
    const stdout = execFileSync(JCO, ["run", "--jco-import", PREOPENS, join(attack, "dir-ro.wasm"), ...args], {
      env: { ...process.env, PACKFS_VIRT_OUT: out },
      stdio: ["ignore", "pipe", "pipe"],
      encoding: "utf8",
    });
    assert.deepEqual([snapshot(join(out, "ro")), snapshot(join(out, "ro", "sub"))], before);
    // The escapes (`..` from the dir: preopen to its sibling, directly and
    // through a symlink) all fail; only the symlink itself is made.
    const escapes = readFileSync(join(attack, "dir-ro.escapes"), "utf8").split("\n");
    const opOf = (l) => l.slice(l.indexOf(" ") + 1).split(": ")[0];
    const reports = stdout.split("\n").filter((l) => escapes.includes(opOf(l)));
    assert.equal(reports.length, escapes.length, stdout);
    // The one op that succeeds: the symlink's making.
    for (const line of reports) assert.ok(line.includes(": err ") || opOf(line).startsWith("symlink|"), line);
    assert.deepEqual(readdirSync(join(out, "rw")).sort(), ["escape", "made.txt"]);
    assert.equal(readFileSync(join(out, "rw", "made.txt")).length, 5);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

// Guests using wasi:http beside their files (host/tests/virt/http.rs
// leaves them in target/guest-tests/virt-http/ with what they did on the
// `wasmtime` command): on jco's stock shim, `http_fetch` against a server
// that answers as that test's must print the same transcript, and
// `http_serve` under `jco serve` must answer each request the same.
const HTTP = fileURLToPath(new URL("../../target/guest-tests/virt-http/", import.meta.url));

/** A port nothing listens on (now). */
async function freePort() {
  const server = createNetServer();
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  const { port } = server.address();
  await new Promise((ok) => server.close(ok));
  return port;
}

/** `a`-`z` in capitals, every other byte as it is. */
const capitals = (bytes) => Buffer.from(bytes.map((b) => (b >= 97 && b <= 122 ? b - 32 : b)));

test("http_fetch, virtualized, on jco's stock shim", async () => {
  // As http.rs's: a POST's body in capitals, with `x-echo` naming its
  // `x-packfs` header and length; anything else a greeting.
  const server = createHttpServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const tag = req.headers["x-packfs"] ?? "";
      const [echo, reply] =
        req.method === "POST" ? [`${tag};${body.length}`, capitals(body)] : [`${tag};get`, Buffer.from("hello from the server")];
      res.writeHead(200, { "content-length": reply.length, "x-echo": echo });
      res.end(reply);
    });
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  const out = mkdtempSync(join(tmpdir(), "packfs-virt-"));
  try {
    const url = `http://127.0.0.1:${server.address().port}/echo`;
    const refused = `http://127.0.0.1:${await freePort()}/`;
    const { stdout } = await execFileAsync(JCO, ["run", "--jco-import", PREOPENS, join(HTTP, "http_fetch.wasm"), url, refused], {
      env: { ...process.env, PACKFS_VIRT_OUT: out },
    });
    assert.equal(stdout, readFileSync(join(HTTP, "http_fetch.txt"), "utf8"));
  } finally {
    server.close();
    rmSync(out, { recursive: true, force: true });
  }
});

test("http_serve, virtualized, under jco serve on its stock shim", async () => {
  const port = await freePort();
  const out = mkdtempSync(join(tmpdir(), "packfs-virt-"));
  const serve = spawn(JCO, ["serve", "--jco-import", PREOPENS, "--host", "127.0.0.1", "--port", `${port}`, join(HTTP, "http_serve.wasm")], {
    env: { ...process.env, PACKFS_VIRT_OUT: out },
    stdio: ["ignore", "pipe", "pipe"],
    // Its own process group: jco serves from a child of its own.
    detached: true,
  });
  try {
    // It says when it listens (on stderr, from jco 1.35).
    await new Promise((ok, fail) => {
      let said = "";
      const hear = (d) => (said += d).includes("listening") && ok();
      serve.stdout.on("data", hear);
      serve.stderr.on("data", hear);
      serve.on("exit", (code) => fail(new Error(`jco serve ended (${code}) before it listened: ${said}`)));
    });
    const asks = readFileSync(join(HTTP, "http_serve.txt"), "utf8").trim().split("\n");
    assert.ok(asks.length >= 5, asks.join("\n"));
    for (const [i, line] of asks.entries()) {
      const [method, path, status] = line.split(" ");
      const body = method === "POST" ? readFileSync(join(HTTP, `ask-${i}.in`)) : undefined;
      const res = await fetch(`http://127.0.0.1:${port}${path}`, { method, body });
      const got = Buffer.from(await res.arrayBuffer());
      assert.equal(`${res.status}`, status, `${method} ${path}`);
      assert.ok(got.equals(readFileSync(join(HTTP, `ask-${i}.out`))), `${method} ${path}: ${got.length} bytes`);
    }
  } finally {
    process.kill(-serve.pid, "SIGKILL");
    serve.stdout.destroy();
    serve.stderr.destroy();
    rmSync(out, { recursive: true, force: true });
  }
});
