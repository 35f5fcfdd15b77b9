// Test packs, built with packfs-web itself (web/pkg, loaded in Node): a small
// demo tree with text, images and a symlink, and a multi-megabyte pack of
// many files for the range-laziness test and the benchmark.
//
//   node e2e/fixtures.mjs DIR    writes DIR/demo.pack and DIR/big.pack

import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { deflateSync } from "node:zlib";
import { fileURLToPath } from "node:url";

const pkgUrl = new URL("../pkg/packfs_web.js", import.meta.url);
let mod;

/** The packfs-web module, initialized (once). */
export async function packfs() {
  if (!mod) {
    mod = await import(pkgUrl.href);
    const wasm = readFileSync(fileURLToPath(new URL("../pkg/packfs_web_bg.wasm", import.meta.url)));
    await mod.default({ module_or_path: wasm });
  }
  return mod;
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** A `w`×`h` RGB PNG whose pixels come from `pixel(x, y) -> [r, g, b]`. */
export function png(w, h, pixel) {
  const raw = Buffer.alloc((w * 3 + 1) * h);
  for (let y = 0; y < h; y++) {
    const row = y * (w * 3 + 1);
    for (let x = 0; x < w; x++) raw.set(pixel(x, y), row + 1 + x * 3);
  }
  const chunk = (type, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(td));
    return Buffer.concat([len, td, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", deflateSync(raw)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

/** A ring on a gradient: easy to recognise in a screenshot. */
export function logo() {
  return png(160, 120, (x, y) => {
    const d = Math.hypot(x - 80, y - 60);
    if (d > 30 && d < 45) return [250, 250, 250];
    return [Math.round((x / 160) * 255), 90, Math.round((y / 120) * 255)];
  });
}

export const README = `# PackFS demo pack

This pack was opened in your browser by **packfs-web**.

- \`docs/\` holds text,
- \`images/\` holds a PNG and an SVG,
- \`readme\` is a symlink to this file.
`;

/** The demo tree's files: path -> content. */
export function demoFiles() {
  return {
    "docs/README.md": README,
    "docs/notes.txt": "Remember: opening a pack by URL fetches only its index.\n",
    "docs/guide/ranges.txt": "Each file's bytes are fetched with one HTTP Range request, on first read.\n",
    "images/logo.png": logo(),
    "images/icon.svg":
      '<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64"><circle cx="32" cy="32" r="28" fill="#3a7"/></svg>\n',
    "src/main.rs": 'fn main() {\n    println!("hello from a pack");\n}\n',
    "data/numbers.csv": Array.from({ length: 50 }, (_, i) => `${i},${i * i}`).join("\n") + "\n",
    "data/log.txt": Array.from({ length: 300 }, (_, i) => `2026-12-01T12:${String(i % 60).padStart(2, "0")}:00Z read chunk ${i % 7} of demo.pack (${100 + ((i * 37) % 900)} bytes)`).join("\n") + "\n",
  };
}

/** Builds the demo pack, compressed (version 2) unless `compress` says
 * "none". */
export async function demoPack(compress = "zstd") {
  const { MemFs } = await packfs();
  const fs = new MemFs();
  for (const [path, body] of Object.entries(demoFiles())) {
    fs.mkdir(path.split("/").slice(0, -1).join("/"), { recursive: true });
    fs.writeFileSync(path, body);
  }
  fs.mkdir("empty");
  fs.symlink("docs/README.md", "readme");
  // Chunks small enough that the files share a few.
  return Buffer.from(await fs.compact({ compress, chunkSize: 4096 }));
}

/** Deterministic pseudo-random bytes (xorshift32). */
export function noise(n, seed) {
  const out = Buffer.alloc(n);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    out[i] = s & 0xff;
  }
  return out;
}

/** `count` files of about `size` bytes each (incompressible), in 20 dirs. */
export function bigFiles(count = 400, size = 20_000) {
  const files = {};
  for (let i = 0; i < count; i++) {
    const n = size + ((i * 997) % 2000);
    files[`d${String(i % 20).padStart(2, "0")}/f${String(i).padStart(5, "0")}.bin`] = noise(n, i + 1);
  }
  return files;
}

/** Packs `files` (path -> string | Buffer). */
export async function packOf(files) {
  const { MemFs } = await packfs();
  const fs = new MemFs();
  for (const [path, body] of Object.entries(files)) {
    const dir = path.split("/").slice(0, -1).join("/");
    if (dir) fs.mkdir(dir, { recursive: true });
    fs.writeFileSync(path, body);
  }
  return Buffer.from(await fs.compact());
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2] ?? ".";
  mkdirSync(dir, { recursive: true });
  writeFileSync(`${dir}/demo.pack`, await demoPack());
  writeFileSync(`${dir}/big.pack`, await packOf(bigFiles()));
  console.log(`wrote ${dir}/demo.pack and ${dir}/big.pack`);
}
