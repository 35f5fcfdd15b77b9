// Where a small read's time goes on PackFS: bench_workload's create and
// read phases in this worker, set up as pkg/worker.js sets up runP1 (a
// MemFs at "/", its imports as imports.js makes them), then the read
// phase's calls made again straight from JavaScript. See profile.mjs.
//
// Message in: { module, n }; out: the figures (below) or { error }.

import init, { MemFs, Preview1 } from "../pkg/packfs_web.js";
import { imports as wasiImports } from "../pkg/imports.js";

/** A wasm module exporting f(12 × f64) → i32 0. */
const EMPTY = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
  0x01, 0x11, 0x01, 0x60, 0x0c, ...Array(12).fill(0x7c), 0x01, 0x7f, // type
  0x03, 0x02, 0x01, 0x00, // function
  0x07, 0x05, 0x01, 0x01, 0x66, 0x00, 0x00, // export "f"
  0x0a, 0x06, 0x01, 0x04, 0x00, 0x41, 0x00, 0x0b, // code: i32.const 0
]);
const names = [];

/** Runs the guest's create and read phases; `watch(name, f)` may wrap
 *  each import. Returns the phases, the guest's state and its imports. */
async function guest(module, n, watch) {
  let stdout = "";
  const dec = new TextDecoder();
  const p1 = new Preview1({
    args: ["bench_workload", "create,read", String(n), "/work"],
    stdout: (b) => {
      stdout += dec.decode(b, { stream: true });
      watch?.printed(stdout);
    },
    stderr: (b) => (stdout += dec.decode(b)),
  });
  p1.preopen("/", new MemFs());
  const imports = await wasiImports(p1, Preview1, wasm);
  if (watch) for (const name of names) imports[name] = watch.wrap(name, imports[name]);
  const instance = await WebAssembly.instantiate(module, { wasi_snapshot_preview1: imports });
  const memory = instance.exports.memory;
  watch?.start(memory);
  p1.start(memory);
  try {
    instance.exports._start();
  } catch (e) {
    if (typeof e?.exitCode !== "number") throw e;
  }
  if (!stdout.endsWith("done\n")) throw new Error(`the guest failed:\n${stdout}`);
  const phases = {};
  for (const m of stdout.matchAll(/^phase (\w+) (\d+) (\d+)$/gm)) phases[m[1]] = Number(m[2]);
  return { phases, imports, memory };
}

/** Counts and times each call of the read phase, and keeps the first
 *  file's calls with their arguments (and each fd_read's buffer size). */
function watcher() {
  let reading = false;
  let done = false;
  let memory;
  const calls = {};
  const first = [];
  return {
    calls,
    first,
    start: (m) => (memory = m),
    printed: (stdout) => (reading = stdout.includes("phase create") && !stdout.includes("phase read")),
    wrap: (name, f) => (...a) => {
      if (!reading) return f(...a);
      const t = performance.now();
      const r = f(...a);
      const c = (calls[name] ??= { count: 0, ms: 0 });
      c.count++;
      c.ms += performance.now() - t;
      done ||= name === "path_open" && first.some((x) => x.name === "fd_close");
      if (!done) {
        const iovLen = name === "fd_read" ? new DataView(memory.buffer).getUint32(a[1] + 4, true) : undefined;
        first.push({ name, args: a.map((x) => (typeof x === "bigint" ? `${x}n` : x)), iovLen, errno: r });
      }
      return r;
    },
  };
}

/** The median of `k` timings of `f`, in ms. */
function time(k, f) {
  const t = [];
  for (let i = 0; i < k; i++) {
    const s = performance.now();
    f();
    t.push(performance.now() - s);
  }
  return t.sort((a, b) => a - b)[k >> 1];
}

let wasm;

async function profile({ module, n }) {
  wasm = await init();
  names.push(...Preview1.functions());
  // The read phase as the bench runs it, and watched.
  const plain = [];
  for (let i = 0; i < 3; i++) plain.push((await guest(module, n)).phases.read);
  const w = watcher();
  const watched = (await guest(module, n, w)).phases.read;

  // The same calls from JavaScript, for every file, on a fresh tree: the
  // host's share of a read with no guest code and no guest → JS crossing.
  const g = await guest(module, n);
  const im = g.imports;
  const base = g.memory.grow(1) * 65536;
  const U8 = Uint8Array;
  const u8 = () => new U8(g.memory.buffer);
  const dv = () => new DataView(g.memory.buffer);
  const enc = new TextEncoder();
  const paths = Array.from({ length: n }, (_, i) => enc.encode(`work/d/f${String(i).padStart(5, "0")}`));
  const open = w.first.find((c) => c.name === "path_open");
  const big = (x) => (typeof x === "string" ? BigInt(x.slice(0, -1)) : x);
  const oa = open.args.map(big);
  const after = w.first.slice(w.first.indexOf(open) + 1);
  // The descriptor the guest's file had, to stand for the replay's.
  const guestFd = after[0].args[0];
  const replay = () => {
    for (const p of paths) {
      u8().set(p, base);
      im.path_open(oa[0], oa[1], base, p.length, oa[4], oa[5], oa[6], oa[7], base + 64);
      const opened = dv().getUint32(base + 64, true);
      for (const c of after) {
        const fd = c.args[0] === guestFd ? opened : c.args[0];
        if (c.name === "fd_read") {
          dv().setUint32(base + 256, base + 1024, true);
          dv().setUint32(base + 260, c.iovLen, true);
          im.fd_read(fd, base + 256, 1, base + 272);
        } else if (c.name === "fd_filestat_get") im.fd_filestat_get(fd, base + 128);
        else if (c.name === "fd_close") im.fd_close(fd);
        else if (c.name === "fd_seek") im.fd_seek(fd, big(c.args[1]), c.args[2], base + 300);
        else if (c.name === "fd_tell") im.fd_tell(fd, base + 300);
        else if (c.name === "fd_fdstat_get") im.fd_fdstat_get(fd, base + 128);
        else throw new Error(`no replay for ${c.name}`);
      }
    }
  };
  const replayMs = time(5, replay);
  // The typed arrays a replayed file costs: packfs-web reaches the guest's
  // memory through a view of its buffer per access, and wasm-bindgen a view
  // of its own memory per copy.
  let arrays = 0;
  globalThis.Uint8Array = class extends U8 {
    constructor(...a) {
      super(...a);
      arrays++;
    }
  };
  try {
    replay();
  } finally {
    globalThis.Uint8Array = U8;
  }
  // A call that does nothing: close a descriptor that is not open.
  const nullMs = time(5, () => {
    for (let i = 0; i < n * 5; i++) im.fd_close(99999);
  });
  // One that writes 24 bytes to the guest's memory (one view, one copy).
  const statMs = time(5, () => {
    for (let i = 0; i < n * 5; i++) im.fd_fdstat_get(1, base + 128);
  });
  // A bare JavaScript → wasm call with Preview1.call's twelve numbers, into
  // a module whose one function returns 0: the crossing alone.
  const empty = new WebAssembly.Instance(new WebAssembly.Module(EMPTY)).exports.f;
  const crossingMs = time(5, () => {
    for (let i = 0; i < n * 5; i++) empty(i, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  });
  return {
    n,
    crossingUs: (crossingMs * 1000) / (n * 5),
    readNs: plain.sort((a, b) => a - b)[1],
    watchedReadNs: watched,
    calls: w.calls,
    first: w.first,
    replayMs,
    arraysPerFile: arrays / n,
    nullCallUs: (nullMs * 1000) / (n * 5),
    fdstatCallUs: (statMs * 1000) / (n * 5),
  };
}

self.onmessage = (e) => {
  profile(e.data).then(
    (r) => self.postMessage(r),
    (err) => self.postMessage({ error: String(err?.stack ?? err) }),
  );
};
