//! `wasi:filesystem` 0.2 descriptors over this crate's filesystems, for
//! components transpiled by jco: [`WasiDescriptor`] is core's descriptor
//! model ([`packfs_core::wasi::descriptor`], the one the host serves 0.2
//! and 0.3 with), and `js/preview2.js` makes it the filesystem adapter of
//! jco's `@bytecodealliance/preview2-shim`, whose `wasi:io` streams and
//! resource classes the component holds.
//!
//! Errors are thrown as their WIT `error-code` names (`"no-entry"`), as
//! jco's bindings take a `result`'s error. A read of a lazy pack's bytes not
//! here yet waits for them where waiting is possible (a Worker, a
//! JavaScript runtime given a blocking transport: [`Pack::set_blocking_get`])
//! and is `io` where it is not (a page's own thread): never wrong bytes.
//!
//! [`Pack::set_blocking_get`]: crate::Pack::set_blocking_get

// Sizes and offsets are 64 bits here and in WIT: a silent truncation
// reads or writes the wrong bytes.
#![warn(clippy::cast_possible_truncation)]

use std::rc::Rc;
use std::sync::Arc;

use js_sys::{Array, Reflect, Uint8Array};
use packfs_core::wasi::Access;
use packfs_core::wasi::descriptor::{Descriptor, Flags, OpenFlags};
use packfs_core::{Error, FileSystem, FileType, Metadata, SetTime, Timestamp};
use wasm_bindgen::prelude::*;

use crate::arg;
use crate::error::type_error;
use crate::fetch::Remote;
use crate::inner::Inner;
use crate::mem_fs::MemFs;
use crate::overlay::Overlay;
use crate::pack::Pack;

/// The most bytes one `read` returns, as the host's 0.2 (`MAX_IO_CHUNK`).
const MAX_READ: u64 = 1 << 20;

/// The most entries one [`WasiDescriptor::read_dir`] returns.
const DIR_PAGE: u32 = 256;

type Result<T> = std::result::Result<T, JsValue>;

thread_local! {
    /// [`WasiDescriptor::read`]'s buffer, grown to the largest read (1 MiB).
    static READ_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A `descriptor` of `wasi:filesystem/types` 0.2 (the adapter's
/// implementation; components see the shim's class around it).
#[wasm_bindgen]
pub struct WasiDescriptor {
    d: Descriptor,
    /// The lazy pack under it, whose missing bytes a call waits for.
    remote: Option<Rc<Remote>>,
}

/// Runs `op`; while it fails for want of a lazy pack's bytes, fetches them
/// (blocking) and runs it again. An error is thrown as its `error-code`.
fn run<T>(remote: &Option<Rc<Remote>>, mut op: impl FnMut() -> packfs_core::Result<T>) -> Result<T> {
    match remote {
        Some(r) => r.run_blocking(op),
        None => op(),
    }
    .map_err(|e| code(&e))
}

fn code(e: &Error) -> JsValue {
    JsValue::from_str(e.code().name())
}

fn kind_name(kind: FileType) -> &'static str {
    match kind {
        FileType::File => "regular-file",
        FileType::Dir => "directory",
        FileType::Symlink => "symbolic-link",
    }
}

/// A `descriptor-stat` as `preview2.js` builds it: type (0 file, 1
/// directory, 2 symlink), link count, size, then each time's seconds and
/// nanoseconds (access, modification, status change). One array, not an
/// object built property by property across the boundary.
fn stat(m: &Metadata) -> Vec<u64> {
    let kind = match m.kind {
        FileType::File => 0,
        FileType::Dir => 1,
        FileType::Symlink => 2,
    };
    let t = |t: Timestamp| [t.secs, u64::from(t.nanos)];
    let [a, m2, c] = [t(m.atime), t(m.mtime), t(m.ctime)];
    vec![kind, m.nlink, m.size, a[0], a[1], m2[0], m2[1], c[0], c[1]]
}

/// A `new-timestamp`: `{ tag: "no-change" | "now" }` or
/// `{ tag: "timestamp", val: { seconds, nanoseconds } }`.
fn new_timestamp(v: &JsValue) -> Result<SetTime> {
    let tag = Reflect::get(v, &"tag".into()).ok().and_then(|t| t.as_string());
    match tag.as_deref() {
        Some("no-change") => Ok(SetTime::Keep),
        Some("now") => Ok(SetTime::Now),
        Some("timestamp") => {
            let val = Reflect::get(v, &"val".into()).unwrap_or(JsValue::UNDEFINED);
            let secs = Reflect::get(&val, &"seconds".into()).ok().and_then(|s| u64::try_from(s).ok());
            let nanos = Reflect::get(&val, &"nanoseconds".into()).ok().and_then(|n| n.as_f64());
            match (secs, nanos) {
                (Some(secs), Some(n)) if n.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&n) =>
                {
                    #[allow(clippy::cast_possible_truncation, reason = "checked to be a u32 just above")]
                    Ok(SetTime::At(Timestamp::new(secs, n as u32)))
                }
                _ => Err(type_error("a timestamp's seconds must be a u64 bigint, its nanoseconds a u32")),
            }
        }
        _ => Err(type_error("a new-timestamp's tag must be \"no-change\", \"now\" or \"timestamp\"")),
    }
}

/// `descriptor-flags` bits as `preview2.js` passes them.
const READ: u32 = 1;
const WRITE: u32 = 2;
const FILE_SYNC: u32 = 4;
const DATA_SYNC: u32 = 8;
const READ_SYNC: u32 = 16;
const MUTATE_DIRECTORY: u32 = 32;

/// `open-flags` bits.
const CREATE: u32 = 1;
const DIRECTORY: u32 = 2;
const EXCLUSIVE: u32 = 4;
const TRUNCATE: u32 = 8;

fn flags_of(bits: u32) -> Flags {
    Flags {
        read: bits & READ != 0,
        write: bits & WRITE != 0,
        mutate_directory: bits & MUTATE_DIRECTORY != 0,
        file_sync: bits & FILE_SYNC != 0,
        data_sync: bits & DATA_SYNC != 0,
        read_sync: bits & READ_SYNC != 0,
    }
}

fn bits_of(f: Flags) -> u32 {
    [
        (f.read, READ),
        (f.write, WRITE),
        (f.mutate_directory, MUTATE_DIRECTORY),
        (f.file_sync, FILE_SYNC),
        (f.data_sync, DATA_SYNC),
        (f.read_sync, READ_SYNC),
    ]
    .into_iter()
    .filter(|(on, _)| *on)
    .fold(0, |acc, (_, bit)| acc | bit)
}

/// A `metadata-hash-value` as `[lower, upper]`.
fn hash(h: (u64, u64)) -> Vec<u64> {
    vec![h.0, h.1]
}

impl WasiDescriptor {
    fn root(inner: &Inner, fs: Arc<dyn FileSystem>, access: Access, device: f64) -> Result<WasiDescriptor> {
        if !(device.fract() == 0.0 && (1.0..=f64::from(u32::MAX)).contains(&device)) {
            return Err(type_error("device must be a whole number from 1"));
        }
        #[allow(clippy::cast_possible_truncation, reason = "checked to be a u32 just above")]
        let d = run(&inner.remote, || Descriptor::preopen(&fs, access, device as u64))?;
        Ok(WasiDescriptor { d, remote: inner.remote.clone() })
    }

    fn run<T>(&self, op: impl FnMut() -> packfs_core::Result<T>) -> Result<T> {
        run(&self.remote, op)
    }

    /// Reads up to `len` bytes (at most 1 MiB) at `offset` through `run`
    /// (which waits for a lazy pack's bytes, or not), into one buffer kept
    /// for every read and then copied out once: no allocation or zeroing
    /// per read. Taken, not borrowed: a blocking fetch's JavaScript may
    /// read again meanwhile.
    fn read_with(
        &self,
        len: u64,
        offset: u64,
        run: impl FnOnce(&mut dyn FnMut() -> packfs_core::Result<usize>) -> Result<usize>,
    ) -> Result<Uint8Array> {
        #[allow(clippy::cast_possible_truncation, reason = "at most 1 MiB")]
        let len = len.min(MAX_READ) as usize;
        let mut buf = READ_BUF.take();
        buf.resize(buf.len().max(len), 0);
        let n = run(&mut || self.d.read_into(&mut buf[..len], offset));
        let read = n.map(|n| Uint8Array::from(&buf[..n]));
        READ_BUF.set(buf);
        read
    }

    /// A descriptor opened from this one, under the same lazy pack. Both
    /// must be of one filesystem for a two-descriptor call to pass (the
    /// model says `cross-device` otherwise).
    fn opened(&self, d: Descriptor) -> WasiDescriptor {
        WasiDescriptor { d, remote: self.remote.clone() }
    }
}

fn access(read_only: bool) -> Access {
    if read_only { Access::ReadOnly } else { Access::ReadWrite }
}

#[wasm_bindgen]
impl WasiDescriptor {
    /// The root of `fs`, preopened; `device` tells the guest's filesystems
    /// apart (1, 2, ... one per distinct filesystem).
    #[wasm_bindgen(js_name = rootMemFs)]
    pub fn root_memfs(
        #[wasm_bindgen(unchecked_param_type = "MemFs")] fs: JsValue,
        read_only: bool,
        device: f64,
    ) -> Result<WasiDescriptor> {
        let fs: MemFs = arg::shared(&fs, "fs", "MemFs")?;
        Self::root(&fs.inner, fs.mem.clone(), access(read_only), device)
    }

    /// The root of `pack`, read-only.
    #[wasm_bindgen(js_name = rootPack)]
    pub fn root_pack(
        #[wasm_bindgen(unchecked_param_type = "Pack")] pack: JsValue,
        device: f64,
    ) -> Result<WasiDescriptor> {
        let pack: Pack = arg::shared(&pack, "pack", "Pack")?;
        Self::root(&pack.inner, pack.pack.clone(), Access::ReadOnly, device)
    }

    /// The root of `overlay`.
    #[wasm_bindgen(js_name = rootOverlay)]
    pub fn root_overlay(
        #[wasm_bindgen(unchecked_param_type = "Overlay")] overlay: JsValue,
        read_only: bool,
        device: f64,
    ) -> Result<WasiDescriptor> {
        let fs: Overlay = arg::shared(&overlay, "overlay", "Overlay")?;
        Self::root(&fs.inner, fs.mem.clone(), access(read_only), device)
    }

    /// `"directory"` or `"regular-file"`.
    #[wasm_bindgen(js_name = getType)]
    pub fn get_type(&self) -> String {
        kind_name(if self.d.is_dir() { FileType::Dir } else { FileType::File }).into()
    }

    /// The `descriptor-flags` as bits (see `preview2.js`).
    #[wasm_bindgen(js_name = getFlags)]
    pub fn get_flags(&self) -> u32 {
        bits_of(self.d.flags())
    }

    /// `stat`: a `descriptor-stat`, as the array `preview2.js` reads.
    pub fn stat(&self) -> Result<Vec<u64>> {
        self.run(|| self.d.stat()).map(|m| stat(&m))
    }

    /// `stat-at`.
    #[wasm_bindgen(js_name = statAt)]
    pub fn stat_at(&self, follow: bool, path: &str) -> Result<Vec<u64>> {
        self.run(|| self.d.stat_at(follow, path, None)).map(|(_, m)| stat(&m))
    }

    /// `set-times`, each time a `new-timestamp`.
    #[wasm_bindgen(js_name = setTimes)]
    pub fn set_times(&self, atime: JsValue, mtime: JsValue) -> Result<()> {
        let (atime, mtime) = (new_timestamp(&atime)?, new_timestamp(&mtime)?);
        self.run(|| self.d.set_times(atime, mtime))
    }

    /// `set-times-at`.
    #[wasm_bindgen(js_name = setTimesAt)]
    pub fn set_times_at(&self, follow: bool, path: &str, atime: JsValue, mtime: JsValue) -> Result<()> {
        let (atime, mtime) = (new_timestamp(&atime)?, new_timestamp(&mtime)?);
        self.run(|| self.d.set_times_at(follow, path, atime, mtime))
    }

    /// `set-size`.
    #[wasm_bindgen(js_name = setSize)]
    pub fn set_size(&self, size: u64) -> Result<()> {
        self.run(|| self.d.set_size(size))
    }

    /// Up to `len` bytes (at most 1 MiB) at `offset`; none at the end of
    /// the file (which is how wasmtime-wasi tells it).
    pub fn read(&self, len: u64, offset: u64) -> Result<Uint8Array> {
        self.read_with(len, offset, |read| self.run(read))
    }

    /// [`read`](Self::read) that never waits: `undefined` when a lazy
    /// pack's bytes are not here yet (then await
    /// [`fetchWanted`](Self::fetch_wanted) and read again). For a
    /// component transpiled for JSPI, whose reads may await.
    #[wasm_bindgen(js_name = readOrWant)]
    pub fn read_or_want(&self, len: u64, offset: u64) -> Result<Option<Uint8Array>> {
        let Some(remote) = &self.remote else { return self.read(len, offset).map(Some) };
        remote.pack.take_wanted();
        let wanted = || remote.pack.has_wanted();
        // `null` stands for "its bytes are not here yet", never an error code.
        match self.read_with(len, offset, |read| read().map_err(|e| if wanted() { JsValue::NULL } else { code(&e) })) {
            Err(e) if e.is_null() => Ok(None),
            other => other.map(Some),
        }
    }

    /// Fetches what the last [`readOrWant`](Self::read_or_want) wanted: a
    /// promise of whether there was anything; rejected with `io` when
    /// the fetch fails.
    #[wasm_bindgen(js_name = fetchWanted, unchecked_return_type = "Promise<boolean>")]
    pub fn fetch_wanted(&self) -> js_sys::Promise {
        let remote = self.remote.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            match remote {
                Some(r) => r.fetch_wanted().await.map(JsValue::from).map_err(|e| code(&e)),
                None => Ok(JsValue::FALSE),
            }
        })
    }

    /// Writes all of `data` at `offset`; returns its length.
    pub fn write(&self, data: &[u8], offset: u64) -> Result<u64> {
        self.run(|| self.d.write(data, offset)).map(|n| n as u64)
    }

    /// Writes all of `data` at the end; returns the file's new length.
    pub fn append(&self, data: &[u8]) -> Result<u64> {
        self.run(|| self.d.append(data))
    }

    /// Checks that a stream may read from `offset` (`read-via-stream`).
    #[wasm_bindgen(js_name = checkReader)]
    pub fn check_reader(&self, offset: u64) -> Result<()> {
        self.run(|| self.d.reader_at(offset).map(drop))
    }

    /// Checks that a stream may write (`write-via-stream`,
    /// `append-via-stream`).
    #[wasm_bindgen(js_name = checkWriter)]
    pub fn check_writer(&self) -> Result<()> {
        self.run(|| self.d.writer().map(drop))
    }

    /// Up to 256 entries after `after` (from the start when absent), each
    /// `[name, type]`, in name order; fewer at the end.
    #[wasm_bindgen(js_name = readDir)]
    pub fn read_dir(&self, after: Option<String>) -> Result<Array> {
        let node = self.run(|| self.d.lister().cloned())?;
        let entries = self.run(|| node.fs.read_dir(node.ino, after.as_deref(), DIR_PAGE as usize))?;
        Ok(entries.iter().map(|e| Array::of2(&(*e.name).into(), &kind_name(e.kind).into())).collect())
    }

    /// `sync` and `sync-data`.
    pub fn sync(&self) -> Result<()> {
        self.run(|| self.d.sync())
    }

    /// `advise`: a hint, taken.
    pub fn advise(&self) -> Result<()> {
        self.run(|| self.d.advise())
    }

    /// `create-directory-at`.
    #[wasm_bindgen(js_name = createDirectoryAt)]
    pub fn create_directory_at(&self, path: &str) -> Result<()> {
        self.run(|| self.d.create_directory_at(path))
    }

    /// `remove-directory-at`.
    #[wasm_bindgen(js_name = removeDirectoryAt)]
    pub fn remove_directory_at(&self, path: &str) -> Result<()> {
        self.run(|| self.d.remove_directory_at(path))
    }

    /// `unlink-file-at`.
    #[wasm_bindgen(js_name = unlinkFileAt)]
    pub fn unlink_file_at(&self, path: &str) -> Result<()> {
        self.run(|| self.d.unlink_file_at(path))
    }

    /// `symlink-at`: a link at `path` to `target`.
    #[wasm_bindgen(js_name = symlinkAt)]
    pub fn symlink_at(&self, target: &str, path: &str) -> Result<()> {
        self.run(|| self.d.symlink_at(target, path))
    }

    /// `readlink-at`.
    #[wasm_bindgen(js_name = readlinkAt)]
    pub fn readlink_at(&self, path: &str) -> Result<String> {
        self.run(|| self.d.readlink_at(path))
    }

    /// `link-at`.
    #[wasm_bindgen(js_name = linkAt)]
    pub fn link_at(&self, follow: bool, old: &str, new_dir: &WasiDescriptor, new: &str) -> Result<()> {
        self.run(|| self.d.link_at(follow, old, &new_dir.d, new))
    }

    /// `rename-at`.
    #[wasm_bindgen(js_name = renameAt)]
    pub fn rename_at(&self, old: &str, new_dir: &WasiDescriptor, new: &str) -> Result<()> {
        self.run(|| self.d.rename_at(old, &new_dir.d, new))
    }

    /// `open-at`, with `open-flags` and `descriptor-flags` as bits (see
    /// `preview2.js`).
    #[wasm_bindgen(js_name = openAt)]
    pub fn open_at(&self, follow: bool, path: &str, open: u32, flags: u32) -> Result<WasiDescriptor> {
        let open = OpenFlags {
            create: open & CREATE != 0,
            directory: open & DIRECTORY != 0,
            exclusive: open & EXCLUSIVE != 0,
            truncate: open & TRUNCATE != 0,
        };
        let d = self.run(|| self.d.open_at(follow, path, open, flags_of(flags)))?;
        Ok(self.opened(d))
    }

    /// `is-same-object`.
    #[wasm_bindgen(js_name = isSameObject)]
    pub fn is_same_object(&self, other: &WasiDescriptor) -> bool {
        self.d.is_same_object(&other.d)
    }

    /// `metadata-hash`: `[lower, upper]`.
    #[wasm_bindgen(js_name = metadataHash)]
    pub fn metadata_hash(&self) -> Vec<u64> {
        hash(self.d.metadata_hash())
    }

    /// `metadata-hash-at`: `[lower, upper]`.
    #[wasm_bindgen(js_name = metadataHashAt)]
    pub fn metadata_hash_at(&self, follow: bool, path: &str) -> Result<Vec<u64>> {
        self.run(|| self.d.metadata_hash_at(follow, path, None)).map(|(h, _, _)| hash(h))
    }
}
