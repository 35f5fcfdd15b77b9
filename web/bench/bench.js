// Random reads of every entry of a 20,000-file tree, in one page, one run:
// packfs-web (a Pack from bytes, an Overlay over it, a MemFs holding the
// same files) against @bjorn3/browser_wasi_shim's in-memory filesystem and
// @zenfs/core's InMemory backend. Each round reads all files once, in a
// fixed pseudo-random order, whole, into a fresh Uint8Array; rounds of the
// implementations are interleaved. Also: `stat` of every file, same order.
//
// Driven by bench/run.mjs, which serves the pack and the file list and
// collects window.benchResults.

import init, { MemFs, Overlay, Pack } from "../pkg/packfs_web.js";
import { shim, configure, InMemory, zenfs } from "./dist/peers.js";

const out = document.getElementById("out");
const log = (s) => (out.textContent += `\n${s}`);

const params = new URLSearchParams(location.search);
const ROUNDS = Number(params.get("rounds") ?? 7);

function permutation(n, seed) {
  const p = Array.from({ length: n }, (_, i) => i);
  let s = seed >>> 0;
  for (let i = n - 1; i > 0; i--) {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    const j = s % (i + 1);
    [p[i], p[j]] = [p[j], p[i]];
  }
  return p;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  out.textContent = "loading…";
  await init();
  const [packBytes, paths] = await Promise.all([
    fetch("/bench/tree.pack").then((r) => r.arrayBuffer()).then((b) => new Uint8Array(b)),
    fetch("/bench/paths.json").then((r) => r.json()),
  ]);
  const pack = Pack.fromBytes(packBytes);
  const overlay = new Overlay(pack);
  log(`pack: ${paths.length} files, ${packBytes.length} bytes`);

  // The same files in every other filesystem (setup, not measured).
  const mem = new MemFs();
  await configure({ mounts: { "/": InMemory } });
  const shimRoot = new shim.Directory(new Map());
  let total = 0;
  for (const p of paths) {
    const data = pack.readFileSync(p);
    total += data.length;
    const parts = p.split("/");
    const dir = parts.slice(0, -1).join("/");
    mem.mkdir(dir, { recursive: true });
    mem.writeFileSync(p, data);
    zenfs.mkdirSync("/" + dir, { recursive: true });
    zenfs.writeFileSync("/" + p, data);
    let d = shimRoot;
    for (const part of parts.slice(0, -1)) {
      let next = d.contents.get(part);
      if (!next) {
        next = new shim.Directory(new Map());
        next.parent = d;
        d.contents.set(part, next);
      }
      d = next;
    }
    d.contents.set(parts.at(-1), new shim.File(data));
  }
  const shimFs = new shim.PreopenDirectory(".", shimRoot.contents);
  log(`loaded ${total} bytes into each filesystem`);

  const readers = {
    "packfs Pack.readFileSync": (p) => pack.readFileSync(p),
    "packfs Pack.readFile (async)": (p) => pack.readFile(p),
    "packfs Overlay.readFileSync": (p) => overlay.readFileSync(p),
    "packfs MemFs.readFileSync": (p) => mem.readFileSync(p),
    "browser_wasi_shim path_open+fd_read": (p) => {
      const { ret, fd_obj } = shimFs.path_open(0, p, 0, 0n, 0n, 0);
      if (ret !== 0) throw new Error(`shim: ${p}: errno ${ret}`);
      return fd_obj.fd_read(Number(fd_obj.fd_filestat_get().filestat.size)).data;
    },
    "zenfs readFileSync": (p) => zenfs.readFileSync("/" + p),
  };
  const statters = {
    "packfs Pack.stat": (p) => pack.stat(p).size,
    "packfs Overlay.stat": (p) => overlay.stat(p).size,
    "packfs MemFs.stat": (p) => mem.stat(p).size,
    "browser_wasi_shim path_filestat_get": (p) => Number(shimFs.path_filestat_get(0, p).filestat.size),
    "zenfs statSync": (p) => zenfs.statSync("/" + p).size,
  };

  const order = permutation(paths.length, 20251129).map((i) => paths[i]);
  async function run(fns, kind, order) {
    const times = Object.fromEntries(Object.keys(fns).map((k) => [k, []]));
    const sums = {};
    for (let round = 0; round <= ROUNDS; round++) {
      for (const [name, fn] of Object.entries(fns)) {
        const isAsync = name.includes("async");
        let sum = 0;
        const t0 = performance.now();
        if (kind === "read" || kind === "compressed") {
          for (const p of order) {
            const b = isAsync ? await fn(p) : fn(p);
            sum += b.length + b[0];
          }
        } else {
          for (const p of order) sum += fn(p);
        }
        const t = performance.now() - t0;
        if (round > 0) times[name].push(t); // round 0 warms up
        sums[name] = sum;
      }
      await new Promise((r) => setTimeout(r, 0));
    }
    const distinct = new Set(Object.values(sums));
    if (distinct.size !== 1) throw new Error(`implementations disagree: ${JSON.stringify(sums)}`);
    return Object.entries(times).map(([name, ts]) => ({
      name,
      kind,
      ops: order.length,
      medianMs: median(ts),
      minMs: Math.min(...ts),
      maxMs: Math.max(...ts),
    }));
  }

  const results = [...(await run(readers, "read", order)), ...(await run(statters, "stat", order))];

  // Compressed packs against the stored one, on a compressible tree.
  const textPaths = await fetch("/bench/text-paths.json").then((r) => r.json());
  const textBytes = {};
  const textPack = {};
  for (const kind of ["stored", "zstd", "lz4"]) {
    textBytes[kind] = new Uint8Array(await fetch(`/bench/text-${kind}.pack`).then((r) => r.arrayBuffer()));
    textPack[kind] = Pack.fromBytes(textBytes[kind]);
  }
  const textOrder = permutation(textPaths.length, 20261201).map((i) => textPaths[i]);
  let textTotal = 0;
  for (const p of textPaths) textTotal += textPack.stored.stat(p).size;
  results.push(
    ...(await run(
      {
        "stored (version 1)": (p) => textPack.stored.readFileSync(p),
        "zstd (version 2)": (p) => textPack.zstd.readFileSync(p),
        "lz4 (version 2)": (p) => textPack.lz4.readFileSync(p),
      },
      "compressed",
      textOrder,
    )),
  );
  for (const r of results) log(`${r.kind} ${r.name}: ${r.medianMs.toFixed(1)} ms`);
  const text = {
    files: textPaths.length,
    bytes: textTotal,
    sizes: { stored: textBytes.stored.length, zstd: textBytes.zstd.length, lz4: textBytes.lz4.length },
  };
  window.benchResults = { files: paths.length, bytes: total, packBytes: packBytes.length, rounds: ROUNDS, results, text, ua: navigator.userAgent };
}

main().catch((e) => {
  log(`error: ${e.stack ?? e}`);
  window.benchResults = { error: String(e.stack ?? e) };
});
