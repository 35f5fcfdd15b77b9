// One p2 guest (transpiled by jco into argv[2]) on packfs-web/preview2 in
// this runtime: an overlay over the seed pack at `/`, the read-only pack at
// `/ro`; prints the guest's stdout, then its exit status on stderr.
import init, { MemFs, Pack } from "../../pkg/index.js";
import { wasiImports } from "../../pkg/preview2.js";

const [dir, name, packs] = (globalThis.Deno ? Deno.args : process.argv.slice(2));
const read = async (path) => new Uint8Array(await (await import("node:fs/promises")).readFile(path));
await init();
const root = new MemFs({ lower: Pack.fromBytes(await read(`${packs}/seed.pack`)) });
const ro = Pack.fromBytes(await read(`${packs}/ro.pack`));
const out = [];
const imports = await wasiImports({ preopens: { "/": root, "/ro": ro }, args: [name], stdout: (b) => out.push(b) });
const { instantiate } = await import(new URL(`file://${dir}/${name}/${name}.js`).href);
let status = 0;
try {
  (await instantiate(undefined, imports)).run.run();
} catch (e) {
  if (!e?.exitError) throw e;
  status = e.code;
}
const { writeSync } = await import("node:fs");
for (const b of out) writeSync(1, b);
console.error(`status ${status}`);
