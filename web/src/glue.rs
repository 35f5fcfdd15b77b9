//! Small JavaScript helpers that build a result object in one call across
//! the wasm boundary (setting properties one `Reflect.set` at a time costs a
//! crossing and a key string each: most of a `stat`).

use wasm_bindgen::prelude::*;

#[wasm_bindgen(inline_js = r#"
const KINDS = ["file", "dir", "symlink"];
export function make_stats(kind, size, mode, nlink, ino, mtimeMs, atimeMs, ctimeMs) {
  return { kind: KINDS[kind], size, mode, nlink, ino, mtimeMs, atimeMs, ctimeMs };
}
export function make_entries(names, kinds, sizes) {
  if (kinds.length === 0) return [];
  const split = names.split("\0");
  const out = new Array(kinds.length);
  for (let i = 0; i < kinds.length; i++) out[i] = { name: split[i], kind: KINDS[kinds[i]], size: sizes[i] };
  return out;
}
export function make_error(message, code, errno) {
  const e = new Error(message);
  e.code = code;
  e.errno = errno;
  return e;
}
export function make_type_error(message, code, errno) {
  const e = new TypeError(message);
  e.code = code;
  e.errno = errno;
  return e;
}
"#)]
extern "C" {
    /// A `Stats` object; `kind` indexes `["file", "dir", "symlink"]`.
    #[allow(clippy::too_many_arguments)]
    pub fn make_stats(
        kind: u8,
        size: f64,
        mode: u32,
        nlink: f64,
        ino: f64,
        mtime_ms: f64,
        atime_ms: f64,
        ctime_ms: f64,
    ) -> JsValue;

    /// `DirEntry[]` from NUL-joined names, kinds and sizes.
    pub fn make_entries(names: &str, kinds: &[u8], sizes: &[f64]) -> js_sys::Array;

    /// An `Error` with `code` and `errno`.
    pub fn make_error(message: &str, code: &str, errno: &str) -> JsValue;

    /// A `TypeError` (an argument of the wrong type), with `code` and
    /// `errno` as every other error has them.
    pub fn make_type_error(message: &str, code: &str, errno: &str) -> JsValue;
}
