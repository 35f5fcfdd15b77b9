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

const [config, dir, phases, n, big, times = "1"] = process.argv.slice(2);
const args = ["bench_workload", phases, n, "/work", big];
const dec = new TextDecoder();

const { default: init, MemFs } = await import("../pkg/index.js");
const { wasiImports } = await import("../pkg/preview2.js");
await init();
const shim = await import(new URL("../node_modules/@bytecodealliance/preview2-shim/dist/browser/index.js", import.meta.url).href);
const { instantiate } = await import(new URL(`file://${dir}/bench_workload/bench_workload.js`).href);

async function run() {
  const out = { stdout: "", stderr: "" };
  const stdout = (b) => (out.stdout += dec.decode(b, { stream: true }));
  const stderr = (b) => (out.stderr += dec.decode(b, { stream: true }));
  const imports = await wasiImports({ preopens: { "/": new MemFs() }, args, stdout, stderr, shim });
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
  return { ...out, exitCode };
}

const all = [];
for (let i = 0; i < Number(times); i++) all.push(await run());
process.stdout.write(`${JSON.stringify(all)}\n`);
