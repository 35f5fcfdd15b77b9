// One run of bench_workload as a WASI 0.2 component (transpiled by jco
// with --instantiation async) in this Node process:
//
//   node bench/p2-run.mjs CONFIG JCO_DIR PHASES N BIG_MIB [TIMES]
//
// CONFIG: packfs (packfs-web/preview2's adapter over an empty MemFs at
// "/") or shim (preview2-shim's own InMemoryFilesystemAdapter over an
// empty directory, its documented browser filesystem). Everything else
// the component imports is the same: the shim's browser build. Runs it
// TIMES (1) times, each on a fresh filesystem, and prints one line of
// JSON: for each run the guest's stdout and stderr, and its exit code.
//
// With SPLIT=1, every method of the shim's Descriptor, DirectoryEntryStream
// and stream classes (the filesystem's whole work, the shim's own wrappers
// included, the same on both sides) is timed, and each run also gives
// `inside`: per phase, the nanoseconds spent in them. What is left of a
// phase is jco's bindings and the guest: what no adapter can make faster.

const [config, dir, phases, n, big, times = "1"] = process.argv.slice(2);
const args = ["bench_workload", phases, n, "/work", big];
const dec = new TextDecoder();

const { default: init, MemFs } = await import("../pkg/index.js");
const { wasiImports } = await import("../pkg/preview2.js");
await init();
const shim = await import(new URL("../node_modules/@bytecodealliance/preview2-shim/dist/browser/index.js", import.meta.url).href);
const { instantiate } = await import(new URL(`file://${dir}/bench_workload/bench_workload.js`).href);

/** Nanoseconds spent in the filesystem's methods (SPLIT), and the totals
 *  when each phase line was printed. */
let inside = 0;
let marks = [];
if (process.env.SPLIT) {
  const { filesystem, io } = shim;
  let depth = 0;
  const classes = [filesystem.types.Descriptor, filesystem.types.DirectoryEntryStream, io.streams.InputStream, io.streams.OutputStream];
  for (const proto of classes.map((c) => c.prototype)) {
    for (const key of Object.getOwnPropertyNames(proto)) {
      const f = proto[key];
      if (key === "constructor" || typeof f !== "function") continue;
      proto[key] = function (...args) {
        if (depth++) {
          try {
            return f.apply(this, args);
          } finally {
            depth--;
          }
        }
        const t = process.hrtime.bigint();
        try {
          return f.apply(this, args);
        } finally {
          depth--;
          inside += Number(process.hrtime.bigint() - t);
        }
      };
    }
  }
}

async function run() {
  const out = { stdout: "", stderr: "" };
  inside = 0;
  marks = [];
  const stdout = (b) => {
    out.stdout += dec.decode(b, { stream: true });
    marks.push(inside);
  };
  const stderr = (b) => (out.stderr += dec.decode(b, { stream: true }));
  const imports = await wasiImports({ preopens: [{ path: "/", fs: new MemFs() }], args, stdout, stderr, shim });
  if (config === "shim") {
    const fs = shim.filesystem.createFilesystem({
      adapter: new shim.filesystem.InMemoryFilesystemAdapter(),
      preopens: { "/": { dir: {} } },
    });
    imports["wasi:filesystem/types"] = fs.types;
    // wasiImports has the shim's descriptors forward their drops to
    // PackFS's adapter; the shim's own adapter is measured as it ships.
    delete shim.filesystem.types.Descriptor.prototype[Symbol.dispose ?? Symbol.for("dispose")];
    imports["wasi:filesystem/preopens"] = fs.preopens;
  } else if (config !== "packfs") {
    throw new Error(`no config ${config}`);
  }
  let exitCode = 0;
  try {
    (await instantiate(undefined, imports)).run.run();
  } catch (e) {
    if (!e?.exitError) throw e;
    exitCode = e.code;
  }
  return { ...out, exitCode, ...(process.env.SPLIT && { inside: marks }) };
}

const all = [];
for (let i = 0; i < Number(times); i++) all.push(await run());
process.stdout.write(`${JSON.stringify(all)}\n`);
