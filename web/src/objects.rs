//! What the methods return, as the objects types.d.ts declares: `Stats`,
//! `DirEntry[]`, `Usage`, `PackInfo` and `VerifyReport` from core's types.
//! Numbers are JavaScript's: `f64`, milliseconds for times.

use js_sys::{Array, Object, Reflect};
use packfs_core::mem::Usage;
use packfs_core::pack::{ContentStats, PackInfo, VerifyReport};
use packfs_core::{FileType, Metadata, Timestamp};
use wasm_bindgen::JsValue;

use crate::glue;
use crate::ops::Entry;

fn ms(t: Timestamp) -> f64 {
    t.secs as f64 * 1000.0 + f64::from(t.nanos) / 1e6
}

fn set(o: &Object, k: &str, v: impl Into<JsValue>) {
    // Setting a property on a plain fresh object cannot fail.
    let _ = Reflect::set(o, &k.into(), &v.into());
}

/// `kind` as glue.rs's `KINDS` numbers it.
fn kind_index(k: FileType) -> u8 {
    match k {
        FileType::File => 0,
        FileType::Dir => 1,
        FileType::Symlink => 2,
    }
}

/// `stat`'s `Stats`.
pub(crate) fn stats(md: &Metadata) -> JsValue {
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

/// `readdir`'s `DirEntry[]`, made in one call into JavaScript: names
/// joined by NUL (which no name contains), kinds and sizes as arrays.
pub(crate) fn entries(entries: &[Entry]) -> Array {
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
    glue::make_entries(&names, &kinds, &sizes)
}

/// `usage`'s `Usage`.
pub(crate) fn usage(u: &Usage) -> JsValue {
    let o = Object::new();
    set(&o, "bytes", u.bytes as f64);
    set(&o, "inodes", u.inodes as f64);
    o.into()
}

/// `info`'s `PackInfo`.
pub(crate) fn pack_info(i: &PackInfo, content: &ContentStats) -> JsValue {
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

/// `verify`'s `VerifyReport`.
pub(crate) fn report(r: &VerifyReport) -> JsValue {
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
