// The project's p2 guests, as host/tests/guests.rs leaves them in
// target/guest-tests/browser/p2/ (component, native transcript, tree),
// transpiled by jco (web/package-lock.json) with `--instantiation async`.

import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** Where the guests, their transcripts and the starting packs are. */
export const DIR = fileURLToPath(new URL("../../target/guest-tests/browser/", import.meta.url));
const JCO = fileURLToPath(new URL("../node_modules/.bin/jco", import.meta.url));

/** The p2 guests' names. */
export const GUESTS = readdirSync(join(DIR, "p2"))
  .filter((f) => f.endsWith(".wasm"))
  .map((f) => f.slice(0, -5))
  .sort();

/** Transpiles the component `wasm` into `dir/name/name.js` (with
 *  `--instantiation async`, and `extra` arguments). */
export function transpileOne(wasm, dir, name, extra = []) {
  execFileSync(JCO, ["transpile", wasm, "-o", join(dir, name), "--instantiation", "async", "--name", name, "-q", ...extra]);
}

/** Transpiles every p2 guest into a new temporary directory (`DIR/NAME/NAME.js`); returns it. */
export function transpile() {
  const out = mkdtempSync(join(tmpdir(), "packfs-jco-"));
  for (const name of GUESTS) transpileOne(join(DIR, "p2", `${name}.wasm`), out, name);
  return out;
}
