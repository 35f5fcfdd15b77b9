//! # packfs-web
//!
//! PackFS in the browser: the in-memory and pack backends and the overlay of
//! `packfs-core`, bound to JavaScript with wasm-bindgen.
//!
//! ```js
//! import init, { MemFs, Pack, Overlay } from "./pkg/packfs_web.js";
//! await init();
//! const pack = await Pack.fromUrl("assets.pack"); // index only; blobs on read
//! const text = new TextDecoder().decode(await pack.readFile("docs/readme.md"));
//! const fs = new Overlay(pack, { maxBytes: 1 << 20 });
//! await fs.writeFile("notes.txt", "changed");
//! const bytes = await fs.compact(); // a new pack, as a Uint8Array
//! ```
//!
//! Three classes share one set of path methods ([`fs_methods!`]): `MemFs`
//! (writable, in memory), `Pack` (read-only; from bytes, or from a URL by
//! HTTP Range requests, fetching each file's bytes on its first read) and
//! `Overlay` (a `MemFs` over a `Pack`: changes stay in memory). Methods that
//! may need bytes still on the network return promises (`readFile`,
//! `writeFile`, `compact`, `verify`); the rest answer at once from the
//! index. Errors are `Error`s with `code` (the WASI `error-code` name, see
//! [`error`]) and `errno`.
//!
//! The Rust side: [`ops`] holds the path operations (host-tested), [`fetch`]
//! the pack whose bytes arrive piece by piece over HTTP (core's
//! `Partial` holds them),
//! [`p1`] WASI preview1 guests over these filesystems (run in a Web Worker
//! by `runner.js`'s `runP1`).
//!
//! Every argument from JavaScript is checked ([`arg`]): one of the wrong
//! type is a `TypeError` naming it (`path must be a string`), thrown or, by
//! a method returning a promise, rejected with, before anything is done.

#![forbid(unsafe_code)]

pub mod error;
pub mod fetch;
mod glue;
pub mod ops;
pub mod p1;
mod persist;

use std::rc::Rc;
use std::sync::Arc;

use js_sys::{Array, Object, Reflect, Uint8Array};
use packfs_core::mem::Limits;
use packfs_core::pack::{Compression, DEFAULT_CHUNK_SIZE, PackOptions, ReadOptions, VerifyReport, is_chunk_size};
use packfs_core::{Clock, FileType, MemFs as CoreMemFs, Metadata, Timestamp};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::error::{js_error, to_js};
use crate::fetch::LazyPack;
use crate::fetch::Remote;
use crate::ops::Backend;

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
/** A preview1 guest's arguments, environment and stdio (`Preview1`). */
export interface Preview1Options {
  args?: string[];
  env?: Record<string, string>;
  stdin?: Uint8Array;
  stdout?: (bytes: Uint8Array) => void;
  stderr?: (bytes: Uint8Array) => void;
}

/** What an entry is. */
export type FileKind = "file" | "dir" | "symlink";

/** One entry of `readdir`. */
export interface DirEntry {
  name: string;
  kind: FileKind;
  /** Bytes of content (a symlink: of its target; a directory: 0). */
  size: number;
}

/** What `stat` and `lstat` return. Times are milliseconds since the epoch. */
export interface Stats {
  kind: FileKind;
  size: number;
  /** Permission bits, e.g. 0o644. */
  mode: number;
  nlink: number;
  ino: number;
  mtimeMs: number;
  atimeMs: number;
  ctimeMs: number;
}

/** Limits of a writable filesystem (`MemFs`, the upper of an `Overlay`). */
export interface FsOptions {
  /** Most bytes of file content and symlink targets. */
  maxBytes?: number;
  /** Most inodes, the root included. */
  maxInodes?: number;
}

/** How to open a pack. */
export interface PackOptions {
  /** Check each file's checksum on its first read (default: true for
   *  `fromUrl`, false for `fromBytes`). */
  verifyOnRead?: boolean;
  /** `fromUrl`: keep fetched chunks in the Cache API, keyed by content,
   *  so that later page loads read them without fetching (default: true
   *  where the Cache API exists). */
  persist?: boolean;
}

export interface MkdirOptions {
  /** Create missing parents; an existing directory is no error. */
  recursive?: boolean;
}

/** Current size of a writable filesystem, in the units of `FsOptions`. */
export interface Usage {
  bytes: number;
  inodes: number;
}

/** A pack's header and trailer, and how it stores its contents. */
export interface PackInfo {
  version: number;
  /** Blob alignment in bytes. */
  align: number;
  inodes: number;
  dirents: number;
  /** Distinct contents. */
  blobs: number;
  /** Bytes of distinct content. */
  contentLen: number;
  dataLen: number;
  packLen: number;
  /** Version 2: the chunk size (0 in version 1). */
  chunkSize: number;
  /** Version 2: how each codec stores the chunks (empty in version 1). */
  codecs: { codec: "raw" | "zstd" | "lz4"; chunks: number; content: number; stored: number }[];
}

/** How `compact` writes its pack. */
export interface CompactOptions {
  /** "zstd" (level 3 with the browser's encoder), "lz4", or "none" (a
   * version 1 pack; the default). */
  compress?: "zstd" | "lz4" | "none";
  /** A compressed pack's chunk size: a power of two from 4096 to 1048576. */
  chunkSize?: number;
}

/** What `verify` found. */
export interface VerifyReport {
  ok: boolean;
  /** Blobs checked. */
  blobs: number;
  /** Bytes checked. */
  bytes: number;
  /** Files whose content fails its checksum (the first 1000). */
  bad: { path: string; error: string }[];
  /** Further files whose content fails, not listed in `bad`. */
  unlisted: number;
}

/** The WASI `error-code` names carried by thrown errors' `code`. */
export type ErrorCode =
  | "no-entry" | "exist" | "not-directory" | "is-directory" | "not-empty"
  | "access" | "not-permitted" | "read-only" | "loop" | "name-too-long"
  | "insufficient-space" | "quota" | "cross-device" | "invalid"
  | "file-too-large" | "bad-descriptor" | "too-many-links" | "busy"
  | "unsupported" | "io" | "would-block";

/** Every method throws (or rejects with) one of these. An argument of the
 *  wrong type (`readdir(5)`) is a `TypeError` naming it, `code` "invalid". */
export interface PackFsError extends Error {
  code: ErrorCode;
  /** The POSIX name, e.g. "ENOENT". */
  errno: string;
}
"#;

type JsResult<T> = Result<T, JsValue>;

/// The clock of writable filesystems: `Date.now()` in the browser (the core
/// has none on wasm32-unknown-unknown), the system clock elsewhere.
fn clock() -> Clock {
    #[cfg(target_arch = "wasm32")]
    {
        Arc::new(|| {
            let ms = js_sys::Date::now().max(0.0);
            Timestamp::new((ms / 1000.0) as u64, ((ms % 1000.0) * 1e6) as u32)
        })
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        packfs_core::system_clock()
    }
}

fn ms(t: Timestamp) -> f64 {
    t.secs as f64 * 1000.0 + f64::from(t.nanos) / 1e6
}

fn set(o: &Object, k: &str, v: impl Into<JsValue>) {
    // Setting a property on a plain fresh object cannot fail.
    let _ = Reflect::set(o, &k.into(), &v.into());
}

fn kind_index(k: FileType) -> u8 {
    match k {
        FileType::File => 0,
        FileType::Dir => 1,
        FileType::Symlink => 2,
    }
}

fn stats(md: &Metadata) -> JsValue {
    glue::make_stats(
        kind_index(md.kind),
        md.size as f64,
        md.mode,
        md.nlink as f64,
        md.ino as f64,
        ms(md.mtime),
        ms(md.atime),
        ms(md.ctime),
    )
}

fn report(r: &VerifyReport) -> JsValue {
    let o = Object::new();
    set(&o, "ok", r.is_ok());
    set(&o, "blobs", r.blobs as f64);
    set(&o, "bytes", r.bytes as f64);
    let bad = Array::new();
    for b in &r.bad {
        let e = Object::new();
        set(&e, "path", b.path.as_str());
        set(&e, "error", b.error.to_string());
        bad.push(&e);
    }
    set(&o, "bad", bad);
    set(&o, "unlisted", r.unlisted as f64);
    o.into()
}

/// A number option, if present: a non-negative integer.
fn opt_u64(options: &Option<JsValue>, key: &str) -> JsResult<Option<u64>> {
    let v = arg::field(options, key)?;
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    let n = v.as_f64().ok_or_else(|| arg::type_error(&format!("options.{key} must be a number")))?;
    whole(n)
        .map(Some)
        .ok_or_else(|| js_error("invalid", "EINVAL", &format!("invalid: option {key} must be a non-negative integer")))
}

/// A boolean option, if present: `true` or `false`, nothing else.
fn opt_bool(options: &Option<JsValue>, key: &str) -> JsResult<Option<bool>> {
    let v = arg::field(options, key)?;
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    v.as_bool().map(Some).ok_or_else(|| arg::type_error(&format!("options.{key} must be true or false")))
}

/// `n` as a count of bytes: a non-negative integer JavaScript holds exactly.
fn whole(n: f64) -> Option<u64> {
    (n >= 0.0 && n.fract() == 0.0 && n <= 2f64.powi(53)).then_some(n as u64)
}

/// `compact`'s options.
fn pack_options(options: &Option<JsValue>) -> JsResult<PackOptions> {
    let bad = |what: &str| js_error("invalid", "EINVAL", &format!("invalid: {what}"));
    let compress = arg::field(options, "compress")?;
    let compress = match compress.as_string() {
        Some(c) => Some(c),
        None if compress.is_undefined() || compress.is_null() => None,
        None => return Err(arg::type_error("options.compress must be a string")),
    };
    // The browser's zstd encoder has one level, about zstd's 1.
    let compression = Compression::parse(compress.as_deref().unwrap_or("none"), 3)
        .map_err(|e| bad(&format!("option compress: {e}")))?;
    let chunk = opt_u64(options, "chunkSize")?.unwrap_or(DEFAULT_CHUNK_SIZE);
    if !is_chunk_size(chunk) {
        return Err(bad("option chunkSize must be a power of two from 4096 to 1048576"));
    }
    Ok(PackOptions::new().compress(compression).chunk_size(chunk))
}

fn limits(options: &Option<JsValue>) -> JsResult<Limits> {
    Ok(Limits { max_bytes: opt_u64(options, "maxBytes")?, max_inodes: opt_u64(options, "maxInodes")? })
}

fn read_options(options: &Option<JsValue>, default: bool) -> JsResult<ReadOptions> {
    Ok(ReadOptions::new().verify_on_read(opt_bool(options, "verifyOnRead")?.unwrap_or(default)))
}

/// Argument `len` of `truncate`: a file length, a non-negative integer.
fn length(len: &JsValue) -> JsResult<u64> {
    whole(arg::number(len, "len")?)
        .ok_or_else(|| js_error("invalid", "EINVAL", "invalid: a length must be a non-negative integer"))
}

/// `bytes` copied into this module's memory, `insufficient-space` when it
/// has no room for them (rather than an abort).
fn copied(bytes: &Uint8Array) -> JsResult<Vec<u8>> {
    let len = bytes.length() as usize;
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| js_error("insufficient-space", "ENOSPC", "insufficient-space: no memory for the data"))?;
    v.resize(len, 0);
    bytes.copy_to(&mut v);
    Ok(v)
}

/// Arguments from JavaScript, checked and converted: every entry point
/// takes `JsValue`s and passes them through here, and a value of the wrong
/// type is a `TypeError` naming the argument.
///
/// Not wasm-bindgen's typed parameters: for a `&str` or `String` its glue
/// trusts the value to be a string. Given a number or an object it reads
/// an `undefined` length, asks the module's allocator for 0 bytes, then
/// has it resize a pointer it never handed out, and the allocator faults
/// (`RuntimeError: memory access out of bounds`); given `undefined` or
/// `null` it throws a message naming no argument. A class parameter
/// (`&Pack`) is checked by the glue, but with a plain `Error` ("expected
/// instance of Pack").
mod arg {
    use js_sys::{Function, Reflect, Uint8Array};
    use wasm_bindgen::convert::TryFromJsValue;
    use wasm_bindgen::{JsCast, JsValue};

    use super::JsResult;

    /// A `TypeError` with `message`, `code` "invalid", `errno` "EINVAL".
    pub(crate) fn type_error(message: &str) -> JsValue {
        crate::glue::make_type_error(message)
    }

    /// Argument `name`, a string.
    pub(crate) fn string(v: &JsValue, name: &str) -> JsResult<String> {
        v.as_string().ok_or_else(|| type_error(&format!("{name} must be a string")))
    }

    /// Argument `name`, a number (its range is the caller's to check).
    pub(crate) fn number(v: &JsValue, name: &str) -> JsResult<f64> {
        v.as_f64().ok_or_else(|| type_error(&format!("{name} must be a number")))
    }

    /// Field `key` of an `options` argument: `undefined` when there are no
    /// options (`undefined` or `null`); an options value that is not an
    /// object is a `TypeError`.
    pub(crate) fn field(options: &Option<JsValue>, key: &str) -> JsResult<JsValue> {
        match options {
            None => Ok(JsValue::UNDEFINED),
            Some(o) if o.is_object() => Reflect::get(o, &key.into()),
            Some(_) => Err(type_error("options must be an object")),
        }
    }

    /// Argument `name`, an `ArrayBuffer` or `ArrayBufferView`: its bytes.
    pub(crate) fn binary(v: &JsValue, name: &str) -> JsResult<Vec<u8>> {
        buffer(v)?.ok_or_else(|| type_error(&format!("{name} must be an ArrayBufferView or an ArrayBuffer")))
    }

    /// Argument `name`, data to write: binary as [`binary`], or a string
    /// (UTF-8).
    pub(crate) fn data(v: &JsValue, name: &str) -> JsResult<Vec<u8>> {
        if let Some(s) = v.as_string() {
            return Ok(s.into_bytes());
        }
        buffer(v)?.ok_or_else(|| type_error(&format!("{name} must be an ArrayBufferView, an ArrayBuffer or a string")))
    }

    /// The bytes of a binary value: an `ArrayBuffer` or any `ArrayBufferView`
    /// (typed array or `DataView`); `None` for anything else.
    fn buffer(v: &JsValue) -> JsResult<Option<Vec<u8>>> {
        if v.is_instance_of::<js_sys::ArrayBuffer>() {
            return super::copied(&Uint8Array::new(v)).map(Some);
        }
        if js_sys::ArrayBuffer::is_view(v) {
            // Any typed array or DataView: its bytes, whatever its element type
            // (`new Uint8Array(view)` would convert elements instead).
            let get = |key: &str| Reflect::get(v, &key.into());
            let (offset, len) = (get("byteOffset")?.as_f64(), get("byteLength")?.as_f64());
            if let (Some(offset), Some(len)) = (offset, len) {
                let view = Uint8Array::new_with_byte_offset_and_length(&get("buffer")?, offset as u32, len as u32);
                return super::copied(&view).map(Some);
            }
        }
        Ok(None)
    }

    /// Argument `name`, an object of class `T` (`MemFs`, `Pack` or
    /// `Overlay`, called `class` in the message): a second handle on it.
    /// wasm-bindgen lends Rust a class's object only through a typed
    /// parameter; from a `JsValue` it can only move the object out of the
    /// caller's hands. So this asks the object for a handle of its own (the
    /// hidden `__share` every class has) and takes that, checked to be a `T`.
    pub(crate) fn shared<T: TryFromJsValue>(v: &JsValue, name: &str, class: &str) -> JsResult<T> {
        let wrong = || type_error(&format!("{name} must be a {class}"));
        if !v.is_object() {
            return Err(wrong());
        }
        let share: Function = Reflect::get(v, &"__share".into())?.dyn_into().map_err(|_| wrong())?;
        T::try_from_js_value(share.call0(v)?).map_err(|_| wrong())
    }
}

/// What every class holds: the filesystem, and the remote pack whose bytes
/// it may still need (the pack itself, or an overlay's lower).
#[derive(Clone)]
struct Inner {
    backend: Backend,
    remote: Option<Rc<Remote>>,
}

impl Inner {
    fn fs(&self) -> &dyn packfs_core::FileSystem {
        self.backend.fs()
    }

    /// Runs a synchronous operation that may read pack content: a read of
    /// content not fetched yet is `would-block` (use the async method).
    fn now<T>(&self, path: Option<&str>, op: impl FnOnce() -> packfs_core::Result<T>) -> JsResult<T> {
        op().map_err(|e| match &self.remote {
            Some(r) if r.pack.has_wanted() => {
                r.pack.take_wanted();
                let msg = format!(
                    "would-block: pack content not loaded yet{}",
                    path.map(|p| format!(": {p}")).unwrap_or_default()
                );
                js_error("would-block", "EAGAIN", &msg)
            }
            _ => to_js(&e, path),
        })
    }

    /// Runs an operation that may read pack content, fetching what it needs.
    async fn fetching<T>(&self, path: Option<&str>, op: impl FnMut() -> packfs_core::Result<T>) -> JsResult<T> {
        match &self.remote {
            None => self.now(path, op),
            Some(r) => r.run(op).await.map_err(|e| to_js(&e, path)),
        }
    }

    async fn load_all(&self) -> JsResult<()> {
        if let Some(r) = &self.remote {
            r.load_all().await.map_err(|e| to_js(&e, None))?;
        }
        Ok(())
    }

    fn read_file(&self, path: JsValue) -> js_sys::Promise {
        let this = self.clone();
        future_to_promise(async move {
            let path = arg::string(&path, "path")?;
            let bytes = this.fetching(Some(&path), || ops::read_file(this.fs(), &path)).await?;
            Ok(Uint8Array::from(&bytes[..]).into())
        })
    }

    fn read_file_sync(&self, path: &JsValue) -> JsResult<Vec<u8>> {
        let path = arg::string(path, "path")?;
        self.now(Some(&path), || ops::read_file(self.fs(), &path))
    }

    fn write_file(&self, path: JsValue, data: JsValue) -> js_sys::Promise {
        let this = self.clone();
        future_to_promise(async move {
            let (path, data) = (arg::string(&path, "path")?, arg::data(&data, "data")?);
            this.fetching(Some(&path), || ops::write_file(&this.backend, &path, &data)).await?;
            Ok(JsValue::UNDEFINED)
        })
    }

    fn write_file_sync(&self, path: &JsValue, data: &JsValue) -> JsResult<()> {
        let (path, data) = (arg::string(path, "path")?, arg::data(data, "data")?);
        self.now(Some(&path), || ops::write_file(&self.backend, &path, &data))
    }

    fn truncate(&self, path: JsValue, len: JsValue) -> js_sys::Promise {
        let this = self.clone();
        future_to_promise(async move {
            let (path, len) = (arg::string(&path, "path")?, length(&len)?);
            this.fetching(Some(&path), || ops::truncate(this.fs(), &path, len)).await?;
            Ok(JsValue::UNDEFINED)
        })
    }

    fn truncate_sync(&self, path: &JsValue, len: &JsValue) -> JsResult<()> {
        let (path, len) = (arg::string(path, "path")?, length(len)?);
        self.now(Some(&path), || ops::truncate(self.fs(), &path, len))
    }

    fn mkdir(&self, path: &JsValue, options: &Option<JsValue>) -> JsResult<()> {
        let path = arg::string(path, "path")?;
        let recursive = opt_bool(options, "recursive")?.unwrap_or(false);
        ops::mkdir(self.fs(), &path, recursive).map_err(|e| to_js(&e, Some(&path)))
    }

    fn readdir(&self, path: &JsValue) -> JsResult<Array> {
        let path = arg::string(path, "path")?;
        let entries = ops::readdir(self.fs(), &path).map_err(|e| to_js(&e, Some(&path)))?;
        // One call into JavaScript for the whole listing: names joined by
        // NUL (which no name contains), kinds and sizes as arrays.
        let mut names = String::new();
        let (mut kinds, mut sizes) = (Vec::with_capacity(entries.len()), Vec::with_capacity(entries.len()));
        for (i, e) in entries.iter().enumerate() {
            if i > 0 {
                names.push('\0');
            }
            names.push_str(&e.name);
            kinds.push(kind_index(e.kind));
            sizes.push(e.size as f64);
        }
        Ok(glue::make_entries(&names, &kinds, &sizes))
    }

    fn stat(&self, path: &JsValue, follow: bool) -> JsResult<JsValue> {
        let path = arg::string(path, "path")?;
        ops::stat(self.fs(), &path, follow).map(|md| stats(&md)).map_err(|e| to_js(&e, Some(&path)))
    }

    fn exists(&self, path: &JsValue) -> JsResult<bool> {
        Ok(ops::lookup(self.fs(), &arg::string(path, "path")?, true).is_ok())
    }

    fn unlink(&self, path: &JsValue) -> JsResult<()> {
        let path = arg::string(path, "path")?;
        ops::unlink(self.fs(), &path).map_err(|e| to_js(&e, Some(&path)))
    }

    fn rmdir(&self, path: &JsValue) -> JsResult<()> {
        let path = arg::string(path, "path")?;
        ops::rmdir(self.fs(), &path).map_err(|e| to_js(&e, Some(&path)))
    }

    fn rename(&self, from: &JsValue, to: &JsValue) -> JsResult<()> {
        let (from, to) = (arg::string(from, "from")?, arg::string(to, "to")?);
        ops::rename(self.fs(), &from, &to).map_err(|e| to_js(&e, Some(&format!("{from} -> {to}"))))
    }

    fn symlink(&self, target: &JsValue, path: &JsValue) -> JsResult<()> {
        let (target, path) = (arg::string(target, "target")?, arg::string(path, "path")?);
        ops::symlink(self.fs(), &target, &path).map_err(|e| to_js(&e, Some(&path)))
    }

    fn readlink(&self, path: &JsValue) -> JsResult<String> {
        let path = arg::string(path, "path")?;
        ops::readlink(self.fs(), &path).map_err(|e| to_js(&e, Some(&path)))
    }

    fn compact(&self, options: Option<JsValue>) -> js_sys::Promise {
        let this = self.clone();
        future_to_promise(async move {
            let packing = pack_options(&options)?;
            this.load_all().await?;
            let bytes = this.fetching(None, || ops::compact(&this.backend, &packing)).await?;
            Ok(Uint8Array::from(&bytes[..]).into())
        })
    }
}

/// The path methods every class has, written once. (wasm-bindgen has no
/// inheritance; this stamps the same methods onto each class.)
macro_rules! fs_methods {
    ($class:ident) => {
        #[wasm_bindgen]
        impl $class {
            /// A second handle on the same filesystem, for [`arg::shared`]
            /// to take over.
            #[doc(hidden)]
            #[wasm_bindgen(js_name = __share, skip_typescript)]
            pub fn share(&self) -> $class {
                self.clone()
            }

            /// A file's content. Fetches it first when it is still on the
            /// network (a pack opened by URL).
            #[wasm_bindgen(js_name = readFile, unchecked_return_type = "Promise<Uint8Array>")]
            pub fn read_file(&self, #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue) -> js_sys::Promise {
                self.inner.read_file(path)
            }

            /// A file's content, now; `would-block` when it is still on the
            /// network.
            #[wasm_bindgen(js_name = readFileSync)]
            pub fn read_file_sync(
                &self,
                #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
            ) -> JsResult<Vec<u8>> {
                self.inner.read_file_sync(&path)
            }

            /// Replaces (or creates) a file, atomically. A string is written
            /// as UTF-8. `read-only` on a pack.
            #[wasm_bindgen(js_name = writeFile, unchecked_return_type = "Promise<void>")]
            pub fn write_file(
                &self,
                #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
                #[wasm_bindgen(unchecked_param_type = "ArrayBufferView | ArrayBuffer | string")] data: JsValue,
            ) -> js_sys::Promise {
                self.inner.write_file(path, data)
            }

            /// `writeFile`, now.
            #[wasm_bindgen(js_name = writeFileSync)]
            pub fn write_file_sync(
                &self,
                #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
                #[wasm_bindgen(unchecked_param_type = "ArrayBufferView | ArrayBuffer | string")] data: JsValue,
            ) -> JsResult<()> {
                self.inner.write_file_sync(&path, &data)
            }

            /// Cuts a file to `len` bytes, or extends it with zeros.
            #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
            pub fn truncate(
                &self,
                #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
                #[wasm_bindgen(unchecked_param_type = "number")] len: JsValue,
            ) -> js_sys::Promise {
                self.inner.truncate(path, len)
            }

            /// `truncate`, now; `would-block` when it needs bytes of an
            /// overlay's pack still on the network.
            #[wasm_bindgen(js_name = truncateSync)]
            pub fn truncate_sync(
                &self,
                #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
                #[wasm_bindgen(unchecked_param_type = "number")] len: JsValue,
            ) -> JsResult<()> {
                self.inner.truncate_sync(&path, &len)
            }

            /// Creates a directory (`{ recursive: true }`: and its parents).
            pub fn mkdir(
                &self,
                #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
                #[wasm_bindgen(unchecked_optional_param_type = "MkdirOptions")] options: Option<JsValue>,
            ) -> JsResult<()> {
                self.inner.mkdir(&path, &options)
            }

            /// A directory's entries, in name order.
            #[wasm_bindgen(unchecked_return_type = "DirEntry[]")]
            pub fn readdir(&self, #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue) -> JsResult<Array> {
                self.inner.readdir(&path)
            }

            /// Metadata, following symlinks.
            #[wasm_bindgen(unchecked_return_type = "Stats")]
            pub fn stat(&self, #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue) -> JsResult<JsValue> {
                self.inner.stat(&path, true)
            }

            /// Metadata of a symlink itself.
            #[wasm_bindgen(unchecked_return_type = "Stats")]
            pub fn lstat(&self, #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue) -> JsResult<JsValue> {
                self.inner.stat(&path, false)
            }

            /// True when `path` names something (following symlinks).
            pub fn exists(&self, #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue) -> JsResult<bool> {
                self.inner.exists(&path)
            }

            /// Removes a file or symlink.
            pub fn unlink(&self, #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue) -> JsResult<()> {
                self.inner.unlink(&path)
            }

            /// Removes an empty directory.
            pub fn rmdir(&self, #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue) -> JsResult<()> {
                self.inner.rmdir(&path)
            }

            /// Moves `from` to `to`, replacing a file or empty directory there.
            pub fn rename(
                &self,
                #[wasm_bindgen(unchecked_param_type = "string")] from: JsValue,
                #[wasm_bindgen(unchecked_param_type = "string")] to: JsValue,
            ) -> JsResult<()> {
                self.inner.rename(&from, &to)
            }

            /// Creates a symlink at `path` pointing at `target`, which is
            /// relative to the symlink's directory (an absolute target is
            /// `not-permitted`: no path leaves the root).
            pub fn symlink(
                &self,
                #[wasm_bindgen(unchecked_param_type = "string")] target: JsValue,
                #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
            ) -> JsResult<()> {
                self.inner.symlink(&target, &path)
            }

            /// A symlink's target.
            pub fn readlink(&self, #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue) -> JsResult<String> {
                self.inner.readlink(&path)
            }

            /// The whole tree as a new pack (deduplicated, checksummed;
            /// compressed if asked).
            #[wasm_bindgen(unchecked_return_type = "Promise<Uint8Array>")]
            pub fn compact(
                &self,
                #[wasm_bindgen(unchecked_optional_param_type = "CompactOptions")] options: Option<JsValue>,
            ) -> js_sys::Promise {
                self.inner.compact(options)
            }
        }
    };
}

/// A writable in-memory filesystem.
#[wasm_bindgen]
#[derive(Clone)]
pub struct MemFs {
    inner: Inner,
    mem: Arc<CoreMemFs>,
}

#[wasm_bindgen]
impl MemFs {
    /// An empty filesystem, with optional quotas.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_optional_param_type = "FsOptions")] options: Option<JsValue>,
    ) -> JsResult<MemFs> {
        let mem = Arc::new(CoreMemFs::with_options(limits(&options)?, clock()));
        Ok(MemFs { inner: Inner { backend: Backend::Mem(mem.clone()), remote: None }, mem })
    }

    /// Bytes and inodes in use.
    #[wasm_bindgen(unchecked_return_type = "Usage")]
    pub fn usage(&self) -> JsValue {
        usage(&self.mem)
    }
}

fn usage(m: &CoreMemFs) -> JsValue {
    let u = m.usage();
    let o = Object::new();
    set(&o, "bytes", u.bytes as f64);
    set(&o, "inodes", u.inodes as f64);
    o.into()
}

/// A read-only pack.
#[wasm_bindgen]
#[derive(Clone)]
pub struct Pack {
    inner: Inner,
    pack: Arc<LazyPack>,
}

#[wasm_bindgen]
impl Pack {
    /// Opens the pack in `bytes` (copied; any `ArrayBufferView` or an
    /// `ArrayBuffer`). Checks the header, trailer and index; throws `io` for
    /// a damaged pack, `unsupported` for an unknown version.
    #[wasm_bindgen(js_name = fromBytes)]
    pub fn from_bytes(
        #[wasm_bindgen(unchecked_param_type = "Uint8Array")] bytes: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "PackOptions")] options: Option<JsValue>,
    ) -> JsResult<Pack> {
        let bytes = arg::binary(&bytes, "bytes")?;
        let pack = crate::fetch::complete(bytes, read_options(&options, false)?).map_err(|e| to_js(&e, None))?;
        let pack = Arc::new(pack);
        Ok(Pack { inner: Inner { backend: Backend::Pack(pack.clone()), remote: None }, pack })
    }

    /// Opens the pack at `url` with HTTP Range requests: the header, index
    /// and trailer now (kilobytes, whatever the pack's size), each file's
    /// bytes on its first read.
    #[wasm_bindgen(js_name = fromUrl, unchecked_return_type = "Promise<Pack>")]
    pub fn from_url(
        #[wasm_bindgen(unchecked_param_type = "string")] url: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "PackOptions")] options: Option<JsValue>,
    ) -> js_sys::Promise {
        future_to_promise(async move {
            let url = arg::string(&url, "url")?;
            let opts = read_options(&options, true)?;
            let persist = opt_bool(&options, "persist")?.unwrap_or(true);
            let remote = Remote::open(url.clone(), opts, persist).await.map_err(|e| to_js(&e, Some(&url)))?;
            let pack = remote.pack.clone();
            Ok(Pack { inner: Inner { backend: Backend::Pack(pack.clone()), remote: Some(Rc::new(remote)) }, pack }
                .into())
        })
    }

    /// Header and trailer facts.
    #[wasm_bindgen(unchecked_return_type = "PackInfo")]
    pub fn info(&self) -> JsValue {
        let i = self.pack.info();
        let content = self.pack.content_stats().unwrap_or_default();
        let o = Object::new();
        set(&o, "version", i.version);
        set(&o, "align", i.align as f64);
        set(&o, "inodes", i.inodes as f64);
        set(&o, "dirents", i.dirents as f64);
        set(&o, "blobs", i.blobs as f64);
        set(&o, "dataLen", i.data_len as f64);
        set(&o, "packLen", i.pack_len as f64);
        set(&o, "contentLen", content.blob_bytes as f64);
        set(&o, "chunkSize", i.chunk_size as f64);
        let codecs = Array::new();
        for c in &content.codecs {
            let e = Object::new();
            set(&e, "codec", c.codec.name());
            set(&e, "chunks", c.chunks as f64);
            set(&e, "content", c.content as f64);
            set(&e, "stored", c.stored as f64);
            codecs.push(&e);
        }
        set(&o, "codecs", codecs);
        o.into()
    }

    /// Checks every checksum (fetching the whole pack first if it came
    /// from a URL). The first 1000 damaged files are listed, the rest
    /// counted in `unlisted`; a damaged index rejects.
    #[wasm_bindgen(unchecked_return_type = "Promise<VerifyReport>")]
    pub fn verify(&self) -> js_sys::Promise {
        verify(self.inner.clone(), self.pack.clone())
    }

    /// Fetches every byte not fetched yet.
    #[wasm_bindgen(js_name = loadAll, unchecked_return_type = "Promise<void>")]
    pub fn load_all(&self) -> js_sys::Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            inner.load_all().await?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// True once every byte is here.
    #[wasm_bindgen(getter, js_name = isComplete)]
    pub fn is_complete(&self) -> bool {
        self.pack.is_complete()
    }

    /// Bytes received from the network so far (0 for `fromBytes`).
    #[wasm_bindgen(getter, js_name = bytesFetched)]
    pub fn bytes_fetched(&self) -> f64 {
        self.inner.remote.as_ref().map_or(0.0, |r| r.bytes_fetched() as f64)
    }

    /// HTTP requests made so far (0 for `fromBytes`).
    #[wasm_bindgen(getter)]
    pub fn requests(&self) -> u32 {
        self.inner.remote.as_ref().map_or(0, |r| r.requests())
    }

    /// The URL it was opened from, if any.
    #[wasm_bindgen(getter)]
    pub fn url(&self) -> Option<String> {
        self.inner.remote.as_ref().map(|r| r.url().to_owned())
    }
}

fn verify(inner: Inner, pack: Arc<LazyPack>) -> js_sys::Promise {
    future_to_promise(async move {
        inner.load_all().await?;
        let r = pack.verify().map_err(|e| to_js(&e, None))?;
        Ok(report(&r))
    })
}

/// A writable in-memory filesystem over a pack: reads see the pack until a
/// path is changed; changes stay here (the pack is never modified).
#[wasm_bindgen]
#[derive(Clone)]
pub struct Overlay {
    inner: Inner,
    mem: Arc<CoreMemFs>,
    lower: Arc<LazyPack>,
    lower_inner: Inner,
}

#[wasm_bindgen]
impl Overlay {
    /// An empty upper over `lower`, with optional quotas on what the upper
    /// holds.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "Pack")] lower: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "FsOptions")] options: Option<JsValue>,
    ) -> JsResult<Overlay> {
        let lower: Pack = arg::shared(&lower, "lower", "Pack")?;
        let mem = CoreMemFs::overlay_with_options(lower.pack.clone(), limits(&options)?, clock())
            .map_err(|e| to_js(&e, None))?;
        let mem = Arc::new(mem);
        let inner = Inner { backend: Backend::Mem(mem.clone()), remote: lower.inner.remote.clone() };
        Ok(Overlay { inner, mem, lower: lower.pack.clone(), lower_inner: lower.inner.clone() })
    }

    /// Bytes and inodes the upper holds (what the pack holds is free).
    #[wasm_bindgen(unchecked_return_type = "Usage")]
    pub fn usage(&self) -> JsValue {
        usage(&self.mem)
    }

    /// Verifies the pack under the overlay.
    #[wasm_bindgen(unchecked_return_type = "Promise<VerifyReport>")]
    pub fn verify(&self) -> js_sys::Promise {
        verify(self.lower_inner.clone(), self.lower.clone())
    }
}

fs_methods!(MemFs);
fs_methods!(Pack);
fs_methods!(Overlay);
