//! Packs to serve, and reading them back.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use packfs_core::pack::{Compression, PackOptions};
use packfs_core::{FileSystem, MemFs, OpenOptions, resolve};
use packfs_remote::{Cache, Location, NetOptions, RemoteOptions, RemotePack};

/// Bytes that compress somewhat (runs of a few values), from `seed`.
pub(crate) fn content(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let run = (x % 7 + 1) as usize;
        out.extend(std::iter::repeat_n((x >> 8) as u8 % 16, run.min(len - out.len())));
    }
    out
}

/// A tree: a 3 MiB file, five of 300 KiB, fifty small ones in a directory,
/// and the files `(path, bytes)` given.
pub(crate) fn tree(seed: u64, extra: &[(&str, Vec<u8>)]) -> (MemFs, Vec<(String, Vec<u8>)>) {
    let fs = MemFs::new();
    let dir = fs.mkdir(fs.root(), "dir", 0o755).unwrap();
    let mut files = vec![("big.bin".to_owned(), content(seed, 3 << 20))];
    for i in 0..5 {
        files.push((format!("mid{i}.bin"), content(seed + 10 + i, 300 << 10)));
    }
    for i in 0..50 {
        files.push((format!("dir/s{i:02}.txt"), content(seed + 100 + i, 100 + 37 * i as usize)));
    }
    files.extend(extra.iter().map(|(p, b)| (p.to_string(), b.clone())));
    for (path, bytes) in &files {
        let (parent, name) = match path.rsplit_once('/') {
            Some(("dir", name)) => (dir, name),
            _ => (fs.root(), path.as_str()),
        };
        let f = fs.open(parent, name, &OpenOptions::create()).unwrap();
        fs.write_at(f, 0, bytes).unwrap();
        fs.close(f);
    }
    (fs, files)
}

/// The pack of `fs`: version 2 with zstd, or version 1 (`compress` off).
pub(crate) fn pack(fs: &MemFs, compress: bool) -> Vec<u8> {
    pack_with(fs, compress, true)
}

/// [`pack`], with a digest table or (`digests` false) without, as packs
/// were before digests: its extents are then cached per origin.
pub(crate) fn pack_with(fs: &MemFs, compress: bool, digests: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let c = compress.then(|| Compression::zstd(3));
    PackOptions::new().compress(c).digests(digests).write(fs, &mut out).unwrap();
    out
}

/// A file's bytes, read in pieces of `step`.
pub(crate) fn read(fs: &dyn FileSystem, path: &str, step: usize) -> packfs_core::Result<Vec<u8>> {
    let ino = resolve::resolve(fs, fs.root(), path, true)?;
    let mut out = Vec::new();
    let mut buf = vec![0; step];
    loop {
        let n = fs.read_at(ino, out.len() as u64, &mut buf)?;
        if n == 0 {
            return Ok(out);
        }
        out.extend_from_slice(&buf[..n]);
    }
}

pub(crate) fn options(cache: Option<&Path>) -> RemoteOptions {
    RemoteOptions {
        cache: cache.map(|d| Arc::new(Cache::open(d, 1 << 30).unwrap())),
        net: NetOptions {
            timeout: std::time::Duration::from_secs(5),
            connect_timeout: std::time::Duration::from_secs(2),
            retries: 2,
            retry_timeout: std::time::Duration::from_secs(10),
            ..NetOptions::default()
        },
        ..RemoteOptions::default()
    }
}

pub(crate) fn open(url: &str, options: &RemoteOptions) -> RemotePack {
    let location = Location::parse(url).expect("a URL").expect("a good URL");
    packfs_remote::open(&location, options).unwrap_or_else(|e| panic!("open {url}: {e}"))
}
