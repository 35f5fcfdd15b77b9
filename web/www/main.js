// The PackFS demo page: open a pack (file picker, drag and drop, or URL),
// browse it, view text and images, edit or add files in an overlay, check
// checksums, run a WASI guest over it, and download the result as a new
// pack. No bundler: this module imports the wasm-bindgen package directly.

import init, { MemFs, Pack } from "../pkg/packfs_web.js";
import { runP1 } from "../pkg/runner.js";

const $ = (id) => document.getElementById(id);
const IMAGE_TYPES = { png: "image/png", jpg: "image/jpeg", jpeg: "image/jpeg", gif: "image/gif", webp: "image/webp", svg: "image/svg+xml" };

const state = {
  pack: null, // Pack, or null for a fresh MemFs
  fs: null, // a MemFs over the pack, or one of its own
  name: "",
  expanded: new Set([""]),
  changed: new Set(),
  selected: null,
  imageUrl: null,
};
// For tests and the console.
window.packfsDemo = state;

function human(n) {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let i = -1;
  do {
    n /= 1024;
    i++;
  } while (n >= 1024 && i < units.length - 1);
  return `${n.toFixed(n < 10 ? 1 : 0)} ${units[i]}`;
}

function status(text, error = false) {
  const s = $("status");
  s.textContent = text;
  s.classList.toggle("error", error);
}

function fail(e) {
  console.error(e);
  status(e && e.code ? `${e.message}` : `error: ${e}`, true);
}

const join = (dir, name) => (dir ? `${dir}/${name}` : name);
const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
const parentOf = (path) => path.split("/").slice(0, -1).join("/");

// ---- opening ---------------------------------------------------------------

function adopt(pack, fs, name) {
  state.pack = pack;
  state.fs = fs;
  state.name = name;
  state.expanded = new Set([""]);
  state.changed = new Set();
  state.selected = null;
  $("summary").hidden = false;
  $("workspace").hidden = false;
  $("pack-name").textContent = name;
  setBadge("checksums not checked", "");
  $("verify").disabled = !pack;
  showEmpty();
  renderTree();
  updateSummary();
}

async function openBytes(bytes, name) {
  try {
    status(`Opening ${name}…`);
    const pack = Pack.fromBytes(bytes);
    adopt(pack, new MemFs({ lower: pack }), name);
    status(`Opened ${name} (${human(bytes.length)}).`);
    // The bytes are all here: checking them costs no network.
    await verify();
  } catch (e) {
    fail(e);
  }
}

async function openUrl(url) {
  try {
    status(`Opening ${url}…`);
    const pack = await Pack.fromUrl(new URL(url, location.href).href);
    adopt(pack, new MemFs({ lower: pack }), url.split("/").pop() || url);
    const got = `${human(pack.bytesFetched)} in ${plural(pack.requests, "request")}`;
    status(
      pack.isComplete
        ? `Opened ${url}: small enough to come whole (${got}).`
        : `Opened ${url}: read its index (${got}); each file is fetched when opened.`,
    );
  } catch (e) {
    fail(e);
  }
}

function openEmpty() {
  adopt(null, new MemFs(), "new filesystem");
  status("Started an empty in-memory filesystem.");
}

// ---- summary ---------------------------------------------------------------

function setBadge(text, cls) {
  const b = $("checksum");
  b.textContent = text;
  b.className = `badge ${cls}`;
}

function updateSummary() {
  const { pack, fs } = state;
  if (pack) {
    const i = pack.info();
    // A compressed pack: each codec's share and ratio, e.g. "zstd 3.8x".
    const codecs = i.codecs
      .filter((c) => c.codec !== "raw" || i.codecs.length === 1)
      .map((c) => `${c.codec} ${(c.content / Math.max(c.stored, 1)).toFixed(1)}x`);
    const stored = codecs.length ? ` · ${codecs.join(", ")}` : "";
    $("info").textContent = `${human(i.packLen)} · ${i.inodes} inodes · ${i.blobs} blobs · v${i.version}${stored}`;
    $("fetched").textContent = pack.url ? `fetched ${human(pack.bytesFetched)} in ${plural(pack.requests, "request")}` : "";
  } else {
    const u = fs.usage();
    $("info").textContent = `${human(u.bytes)} · ${u.inodes} inodes`;
    $("fetched").textContent = "";
  }
  $("changes").textContent = state.changed.size ? `${state.changed.size} changed` : "";
}

async function verify() {
  if (!state.pack) return;
  try {
    setBadge("verifying…", "");
    const r = await state.pack.verify();
    if (r.ok) setBadge(`✓ checksums OK (${r.blobs} blobs, ${human(r.bytes)})`, "ok");
    else {
      const named = r.bad.slice(0, 5).map((b) => b.path || "(unnamed blob)");
      const more = r.bad.length + r.unlisted - named.length;
      setBadge(`✗ ${r.bad.length + r.unlisted} damaged: ${named.join(", ")}${more > 0 ? `, and ${more} more` : ""}`, "bad");
    }
    updateSummary();
  } catch (e) {
    setBadge(`✗ ${e.code ?? "error"}`, "bad");
    fail(e);
  }
}

async function download() {
  try {
    status("Compacting…");
    const bytes = await state.fs.compact();
    const a = document.createElement("a");
    a.href = URL.createObjectURL(new Blob([bytes], { type: "application/octet-stream" }));
    a.download = `${state.name.replace(/\.pack$/, "")}-edited.pack`;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 60_000);
    updateSummary();
    status(`Downloaded ${a.download} (${human(bytes.length)}).`);
  } catch (e) {
    fail(e);
  }
}

// ---- running a guest -------------------------------------------------------

let guest = null;

/** Runs the bundled guest in a worker over this tree (an overlay over the
 *  pack by URL, fetching only what the guest reads, when nothing was
 *  changed here; else over this tree compacted); what it left becomes
 *  the page's tree. */
async function runGuest() {
  const out = $("run-output");
  const result = $("run-result");
  out.textContent = "";
  result.textContent = "running…";
  $("run-start").disabled = true;
  try {
    guest ??= await (await fetch("../pkg/demo.wasm")).arrayBuffer();
    const lazy = state.pack?.url && state.changed.size === 0;
    const root = lazy
      ? { path: "/", kind: "overlay", url: state.pack.url, save: true }
      : { path: "/", kind: "overlay", bytes: await state.fs.compact(), save: true };
    const args = ["demo", ...$("run-args").value.split(/\s+/).filter(Boolean)];
    const dec = new TextDecoder();
    const show = (bytes) => (out.textContent += dec.decode(bytes, { stream: true }));
    const r = await runP1(guest, { args, preopens: [root], stdout: show, stderr: show });
    const fetched = lazy ? ` · the guest fetched ${human(r.bytesFetched)} in ${plural(r.requests, "request")}` : "";
    result.textContent = `exit status ${r.exitCode}${fetched}`;
    const pack = Pack.fromBytes(r.saved[0].pack);
    adopt(pack, new MemFs({ lower: pack }), state.name);
    $("run-panel").hidden = false;
    status(`The guest exited with status ${r.exitCode}; the tree is as it left it.`);
  } catch (e) {
    result.textContent = "failed";
    fail(e);
  } finally {
    $("run-start").disabled = false;
  }
}

// ---- tree ------------------------------------------------------------------

const ICONS = { dir: "▸", open: "▾", file: "·", symlink: "↪" };

function renderDir(path, into) {
  for (const e of state.fs.readdir(path)) {
    const full = join(path, e.name);
    const li = document.createElement("li");
    li.setAttribute("role", "treeitem");
    const b = document.createElement("button");
    b.type = "button";
    b.className = "entry";
    b.dataset.path = full;
    b.dataset.kind = e.kind;
    if (state.changed.has(full)) b.classList.add("changed");
    if (state.selected === full) b.classList.add("selected");
    const open = e.kind === "dir" && state.expanded.has(full);
    b.innerHTML = `<span class="icon"></span><span class="label"></span><span class="size"></span>`;
    b.querySelector(".icon").textContent = e.kind === "dir" ? (open ? ICONS.open : ICONS.dir) : ICONS[e.kind];
    b.querySelector(".label").textContent = e.name;
    b.querySelector(".size").textContent = e.kind === "dir" ? "" : human(e.size);
    b.addEventListener("click", () => select(full, e.kind));
    li.append(b);
    if (open) {
      const ul = document.createElement("ul");
      ul.setAttribute("role", "group");
      renderDir(full, ul);
      li.append(ul);
    }
    into.append(li);
  }
}

function renderTree() {
  const tree = $("tree");
  tree.replaceChildren();
  try {
    renderDir("", tree);
  } catch (e) {
    fail(e);
  }
}

// ---- viewer ----------------------------------------------------------------

function showEmpty(text = "Select a file to view it.") {
  $("viewer-path").textContent = "Select a file";
  $("viewer-meta").textContent = "";
  $("save").hidden = true;
  $("delete").hidden = true;
  const p = document.createElement("p");
  p.className = "empty";
  p.textContent = text;
  $("viewer").replaceChildren(p);
}

function hexdump(bytes) {
  const lines = [];
  for (let i = 0; i < Math.min(bytes.length, 1024); i += 16) {
    const row = bytes.subarray(i, i + 16);
    const hex = Array.from(row, (b) => b.toString(16).padStart(2, "0")).join(" ");
    const asc = Array.from(row, (b) => (b >= 32 && b < 127 ? String.fromCharCode(b) : ".")).join("");
    lines.push(`${i.toString(16).padStart(8, "0")}  ${hex.padEnd(48)}  ${asc}`);
  }
  if (bytes.length > 1024) lines.push(`… ${human(bytes.length)} in all`);
  return lines.join("\n");
}

async function select(path, kind) {
  if (kind === "dir") {
    if (state.expanded.has(path)) state.expanded.delete(path);
    else state.expanded.add(path);
    renderTree();
    return;
  }
  state.selected = path;
  renderTree();
  try {
    const st = state.fs.lstat(path);
    const when = new Date(st.mtimeMs).toISOString().replace("T", " ").slice(0, 19);
    let meta = `${human(st.size)} · mode ${st.mode.toString(8).padStart(4, "0")} · ${when}`;
    if (st.kind === "symlink") meta = `→ ${state.fs.readlink(path)} · ${meta}`;
    $("viewer-path").textContent = path;
    $("viewer-meta").textContent = meta;
    $("delete").hidden = false;
    const bytes = await state.fs.readFile(path);
    if (state.selected !== path) return; // another file was picked meanwhile
    show(path, bytes);
    updateSummary();
  } catch (e) {
    fail(e);
  }
}

function show(path, bytes) {
  const viewer = $("viewer");
  if (state.imageUrl) URL.revokeObjectURL(state.imageUrl);
  state.imageUrl = null;
  const ext = path.split(".").pop().toLowerCase();
  $("save").hidden = true;
  if (IMAGE_TYPES[ext]) {
    const img = document.createElement("img");
    state.imageUrl = URL.createObjectURL(new Blob([bytes], { type: IMAGE_TYPES[ext] }));
    img.src = state.imageUrl;
    img.alt = path;
    viewer.replaceChildren(img);
    if (ext !== "svg") return;
    // An SVG is text too: show it below the picture, editable.
  } else {
    viewer.replaceChildren();
  }
  let text = null;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    if (text.includes("\0")) text = null;
  } catch {
    text = null;
  }
  if (text === null) {
    const pre = document.createElement("pre");
    pre.textContent = hexdump(bytes);
    viewer.append(pre);
    return;
  }
  const ta = document.createElement("textarea");
  ta.id = "editor";
  ta.spellcheck = false;
  ta.value = text;
  viewer.append(ta);
  $("save").hidden = false;
}

async function save() {
  const path = state.selected;
  const ta = $("editor");
  if (!path || !ta) return;
  try {
    await state.fs.writeFile(path, ta.value);
    state.changed.add(path);
    renderTree();
    updateSummary();
    status(`Saved ${path} in the overlay (${human(state.fs.stat(path).size)}).`);
  } catch (e) {
    fail(e);
  }
}

async function addFile(path) {
  path = path.trim().replace(/^\/+/, "");
  if (!path) return;
  try {
    const dir = parentOf(path);
    if (dir) state.fs.mkdir(dir, { recursive: true });
    if (state.fs.exists(path)) throw Object.assign(new Error(`exist: file exists: ${path}`), { code: "exist" });
    await state.fs.writeFile(path, "");
    state.changed.add(path);
    let d = "";
    for (const part of dir ? dir.split("/") : []) state.expanded.add((d = join(d, part)));
    $("new-path").value = "";
    await select(path, "file");
    status(`Added ${path}: type its content and press Save.`);
  } catch (e) {
    fail(e);
  }
}

function remove() {
  const path = state.selected;
  if (!path) return;
  try {
    state.fs.unlink(path);
    state.changed.add(parentOf(path) || "/");
    state.selected = null;
    renderTree();
    updateSummary();
    showEmpty(`Deleted ${path}.`);
    status(`Deleted ${path} in the overlay.`);
  } catch (e) {
    fail(e);
  }
}

// ---- wiring ----------------------------------------------------------------

function wire() {
  $("file-input").addEventListener("change", async (ev) => {
    const file = ev.target.files[0];
    if (file) await openBytes(new Uint8Array(await file.arrayBuffer()), file.name);
    ev.target.value = "";
  });
  $("open-url-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const url = $("url-input").value.trim();
    if (url) openUrl(url);
  });
  $("new-empty").addEventListener("click", openEmpty);
  $("verify").addEventListener("click", verify);
  $("download").addEventListener("click", download);
  $("run").addEventListener("click", () => ($("run-panel").hidden = !$("run-panel").hidden));
  $("run-start").addEventListener("click", runGuest);
  $("save").addEventListener("click", save);
  $("delete").addEventListener("click", remove);
  $("new-file-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    addFile($("new-path").value);
  });

  let depth = 0;
  const overlay = $("drop-overlay");
  window.addEventListener("dragenter", (ev) => {
    ev.preventDefault();
    depth++;
    overlay.hidden = false;
  });
  window.addEventListener("dragleave", () => {
    if (--depth <= 0) overlay.hidden = true;
  });
  window.addEventListener("dragover", (ev) => ev.preventDefault());
  window.addEventListener("drop", async (ev) => {
    ev.preventDefault();
    depth = 0;
    overlay.hidden = true;
    const file = ev.dataTransfer.files[0];
    if (file) await openBytes(new Uint8Array(await file.arrayBuffer()), file.name);
  });
}

await init();
wire();
document.body.dataset.ready = "true";
const fromQuery = new URLSearchParams(location.search).get("url");
if (fromQuery) {
  $("url-input").value = fromQuery;
  await openUrl(fromQuery);
}
