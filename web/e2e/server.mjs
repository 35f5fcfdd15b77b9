// A small static file server for the demo page and the browser tests:
// serves web/ (so /www/ is the demo and /pkg/ the package) plus in-memory
// files, answers single HTTP Range requests (`bytes=A-B`, `bytes=A-`,
// `bytes=-N`) with 206 and Content-Range, and counts the body bytes it sends
// for each path, so tests can check what a page actually fetched.
//
// Listens on 127.0.0.1 only.

import { createServer } from "node:http";
import { readFile, stat } from "node:fs/promises";
import { extname, join, normalize, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".wasm": "application/wasm",
  ".png": "image/png",
  ".svg": "image/svg+xml",
  ".ts": "text/plain; charset=utf-8",
  ".md": "text/markdown; charset=utf-8",
};

export const WEB_ROOT = resolve(fileURLToPath(new URL("..", import.meta.url)));

/** Headers that make a page cross-origin isolated (for startServer's
 *  `headers`): SharedArrayBuffer and a shared wasm memory, blocking
 *  Atomics.wait, and a precise performance.now() need it. */
export const ISOLATED = {
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Embedder-Policy": "require-corp",
  "Cross-Origin-Resource-Policy": "same-origin",
};

/** Parses one `Range` header against a body of `size` bytes: [start, end) or
 *  "bad" (416) or null (no usable range: send everything). */
export function parseRange(header, size) {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return null; // multi-range etc.: ignore
  let start, end;
  if (m[1] === "") {
    const n = Number(m[2]);
    if (n === 0) return "bad";
    start = Math.max(0, size - n);
    end = size;
  } else {
    start = Number(m[1]);
    end = m[2] === "" ? size : Math.min(size, Number(m[2]) + 1);
    if (start >= size || end <= start) return "bad";
  }
  return [start, end];
}

/**
 * Starts the server. `files` maps URL paths ("/fixtures/a.pack") to
 * Buffers served from memory; everything else comes from web/. `headers`
 * go on every response (the guest benchmark's cross-origin isolation).
 * Returns { url, stats, reset(), setFile(path, buf), close() }; `stats` maps
 * a path to { requests, bytes, ranges: [[start, end)] }.
 */
export async function startServer({ files = {}, port = 0, headers: extra = {} } = {}) {
  const mem = new Map(Object.entries(files));
  const stats = new Map();
  const count = (path, start, end) => {
    let s = stats.get(path);
    if (!s) stats.set(path, (s = { requests: 0, bytes: 0, ranges: [] }));
    s.requests += 1;
    s.bytes += end - start;
    s.ranges.push([start, end]);
  };

  const server = createServer(async (req, res) => {
    try {
      const url = new URL(req.url, "http://localhost");
      const path = decodeURIComponent(url.pathname);
      let body = mem.get(path);
      if (!body) {
        const file = normalize(join(WEB_ROOT, path));
        if (!file.startsWith(WEB_ROOT + sep) || file.includes(`${sep}node_modules${sep}.bin`)) {
          res.writeHead(403).end();
          return;
        }
        let st;
        try {
          st = await stat(file);
        } catch {
          res.writeHead(404, { "Content-Type": "text/plain" }).end("not found");
          return;
        }
        if (st.isDirectory()) {
          if (!path.endsWith("/")) {
            res.writeHead(301, { Location: path + "/" }).end();
            return;
          }
          body = await readFile(join(file, "index.html"));
        } else {
          body = await readFile(file);
        }
      }
      const type = TYPES[extname(path)] ?? "application/octet-stream";
      const headers = {
        "Content-Type": path.endsWith("/") ? TYPES[".html"] : type,
        "Accept-Ranges": "bytes",
        "Cache-Control": "no-store",
        "Access-Control-Allow-Origin": "*",
        "Access-Control-Expose-Headers": "Content-Range, Content-Length",
        ...extra,
      };
      const range = req.method === "GET" ? parseRange(req.headers.range, body.length) : null;
      if (range === "bad") {
        res.writeHead(416, { ...headers, "Content-Range": `bytes */${body.length}` }).end();
        return;
      }
      const [start, end] = range ?? [0, body.length];
      if (range) headers["Content-Range"] = `bytes ${start}-${end - 1}/${body.length}`;
      headers["Content-Length"] = String(end - start);
      res.writeHead(range ? 206 : 200, headers);
      if (req.method === "HEAD") {
        res.end();
        return;
      }
      count(path, start, end);
      res.end(body.subarray(start, end));
    } catch (e) {
      res.writeHead(500).end(String(e));
    }
  });
  await new Promise((ok) => server.listen(port, "127.0.0.1", ok));
  const { port: p } = server.address();
  return {
    url: `http://127.0.0.1:${p}`,
    stats,
    reset: () => stats.clear(),
    setFile: (path, buf) => mem.set(path, buf),
    close: () =>
      new Promise((ok) => {
        server.closeAllConnections?.();
        server.close(ok);
      }),
  };
}
