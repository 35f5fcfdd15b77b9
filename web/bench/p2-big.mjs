// A lazy pack by URL under the toolbox component (bench/p2.mjs's 1 GiB
// row): opens the pack, then has the component `cat` one file through
// packfs-web/preview2; prints one line of JSON: the requests and bytes
// fetched after the open and after the read, and whether the bytes the
// component printed are the file's.
//
//   node bench/p2-big.mjs URL TOOLBOX_DIR

import { execFileSync } from "node:child_process";

const [url, dir] = process.argv.slice(2);
const { default: init, MemFs, Pack } = await import("../pkg/index.js");
const { wasiImports } = await import("../pkg/preview2.js");
await init();

// This thread may not wait for a URL's bytes: a blocking transport that
// fetches them in a child process (as the runner's worker waits on its
// page), for the component's reads.
const FETCH = `
const [u, range] = process.argv.slice(1);
const r = await fetch(u, { headers: { Range: range } });
const body = Buffer.from(await r.arrayBuffer()).toString("base64");
process.stdout.write(JSON.stringify({ status: r.status, contentRange: r.headers.get("content-range"),
  validator: r.headers.get("etag") ?? r.headers.get("last-modified"), body }));`;
Pack.setBlockingGet((u, range) => {
  const r = JSON.parse(execFileSync(process.execPath, ["--input-type=module", "-e", FETCH, u, range], { maxBuffer: 1 << 26, encoding: "utf8" }));
  return { ...r, body: new Uint8Array(Buffer.from(r.body, "base64")) };
});

const pack = await Pack.fromUrl(url);
const open = { requests: pack.requests, bytes: pack.bytesFetched };
const chunks = [];
const imports = await wasiImports({ preopens: [{ path: "/", fs: new MemFs({ lower: pack }) }], args: ["toolbox", "cat", "/f/7.bin"], stdout: (b) => chunks.push(b) });
const { instantiate } = await import(new URL(`file://${dir}/toolbox.js`).href);
try {
  (await instantiate(undefined, imports)).run.run();
} catch (e) {
  if (!e?.exitError || e.code !== 0) throw e;
}
const read = { requests: pack.requests, bytes: pack.bytesFetched };
const printed = Buffer.concat(chunks);
const file = await new MemFs({ lower: pack }).readFile("f/7.bin");
process.stdout.write(`${JSON.stringify({ open, read, same: printed.length === 1 << 20 && printed.equals(Buffer.from(file)) })}\n`);
