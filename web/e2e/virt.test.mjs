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
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

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
    execFileSync(JCO, ["run", "--jco-import", PREOPENS, join(attack, "dir-ro.wasm"), ...args], {
      env: { ...process.env, PACKFS_VIRT_OUT: out },
      stdio: ["ignore", "pipe", "pipe"],
      encoding: "utf8",
    });
    assert.deepEqual([snapshot(join(out, "ro")), snapshot(join(out, "ro", "sub"))], before);
    assert.deepEqual(readdirSync(join(out, "rw")), ["made.txt"]);
    assert.equal(readFileSync(join(out, "rw", "made.txt")).length, 5);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
