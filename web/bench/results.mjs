// The stamp a benchmark writes into its results page: the commit, date,
// machine and measured code, in the words bench/src/results.rs writes and
// `cargo run -p packfs-bench --bin results -- stale` reads.

import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url));

const git = (...args) => {
  try {
    return execFileSync("git", args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return null;
  }
};

/** The stamp's paragraph: `command` measured the code under `code`
 *  (paths from the repository's root), on this checkout and machine, now. */
export function stamp(command, code) {
  const commit = git("rev-parse", "HEAD") ?? "unknown";
  const status = git("status", "--porcelain", "--", ...code);
  const dirty = status !== "" ? " (with uncommitted changes to the measured code)" : "";
  const d = new Date();
  const date = `${d.toISOString().slice(0, 10)} ${d.toISOString().slice(11, 16)} UTC`;
  const cpu = os.cpus()[0]?.model?.trim() ?? os.arch();
  const mem = Math.round(os.totalmem() / 2 ** 30);
  const machine = `${cpu} (${os.cpus().length} cores, ${mem} GiB, ${os.platform()} ${os.release()})`;
  return `Measured at commit \`${commit}\`${dirty} on ${date}, by \`${command}\`, on ${machine}. Measured code: ${code.map((c) => `\`${c}\``).join(", ")}.`;
}

/** `md` (a page: its title line first) with the stamp after the title. */
export function stamped(md, command, code) {
  const at = md.indexOf("\n");
  return `${md.slice(0, at)}\n\n${stamp(command, code)}\n${md.slice(at)}`;
}

/** Rewrites the block `name` of the page `file` (appending it if the page
 *  has none): `md` under the stamp, the rest of the page kept. */
export function writeBlock(file, name, md, command, code) {
  const [begin, end] = [`<!-- measured ${name}: begin -->`, `<!-- measured ${name}: end -->`];
  // The markers must be the only ones: none inside what is written, one
  // begin and one end after it (or none) in the page; else it is left.
  for (const text of [command, md, ...code]) {
    if (text.includes("<!--") || text.includes("-->")) throw new Error(`an HTML comment in the block: ${text.slice(0, 60)}`);
  }
  const block = `${begin}\n<!-- Written by the benchmark: edits here are lost. -->\n\n${stamp(command, code)}\n\n${md.trim()}\n${end}\n`;
  let old = "";
  try {
    old = readFileSync(file, "utf8");
  } catch (e) {
    if (e.code !== "ENOENT") throw e;
  }
  const count = (m) => old.split(m).length - 1;
  let page;
  if (count(begin) === 1 && count(end) === 1 && old.indexOf(end) > old.indexOf(begin)) {
    const [b, e] = [old.indexOf(begin), old.indexOf(end)];
    page = old.slice(0, b) + block + old.slice(e + end.length).replace(/^\n+/, "");
  } else if (count(begin) === 0 && count(end) === 0) {
    page = `${old.trimEnd()}\n\n${block}`;
  } else {
    throw new Error(`${file}: its ${name} markers are not one begin and one end after it`);
  }
  writeFileSync(file, page);
}

/** What the web benchmarks measure. */
export const WEB_CODE = ["web/src", "web/js", "core/src", "web/bench", "Cargo.lock", "web/package-lock.json"];
