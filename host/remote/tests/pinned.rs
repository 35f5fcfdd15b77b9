//! Pinned packs in a store (`docs/pack-format.md` §18): a pack re-sealed
//! by whoever can write to the store is refused, a chunk swapped on the
//! way is never served or cached, and the host cache, addressed by
//! digest, serves a chunk that two origins' packs share once.

mod common;

use std::sync::Arc;

use common::*;
use packfs_core::pack::{Digest, PackFs, ReadOptions};
use packfs_core::{Error, FileSystem};
use packfs_remote::{Cache, Location, RemoteError, RemoteOptions};
use packfs_testnet::{FileServer, Proxy};

/// One pack on a web server of its own (so an origin of its own), through
/// a proxy.
struct Served {
    _dir: tempfile::TempDir,
    _server: FileServer,
    proxy: Proxy,
}

impl Served {
    fn new(bytes: &[u8]) -> Served {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("p.pack"), bytes).unwrap();
        let server = FileServer::start(dir.path());
        let proxy = Proxy::start(server.addr());
        Served { _dir: dir, _server: server, proxy }
    }

    fn url(&self) -> String {
        format!("{}/p.pack", self.proxy.url())
    }
}

fn digest(bytes: &[u8]) -> Digest {
    PackFs::open(bytes).unwrap().digest().expect("a digest table")
}

fn pinned(options: RemoteOptions, pin: Digest) -> RemoteOptions {
    RemoteOptions { read: ReadOptions::new().pin(Some(pin)), ..options }
}

fn try_open(url: &str, options: &RemoteOptions) -> Result<packfs_remote::RemotePack, RemoteError> {
    packfs_remote::open(&Location::parse(url).unwrap().unwrap(), options)
}

#[test]
fn a_resealed_pack_in_the_store_is_refused_when_pinned() {
    for compress in [false, true] {
        let (fs, files) = tree(40, &[]);
        let good = pack(&fs, compress);
        let pin = digest(&good);
        // The store's writer changes one file and writes the pack again:
        // every checksum and digest in it agrees with the new bytes.
        let forged_big = content(99, 3 << 20);
        let (forged_fs, _) = tree(40, &[("big.bin", forged_big.clone())]);
        let forged = pack(&forged_fs, compress);
        let s = Served::new(&forged);
        match try_open(&s.url(), &pinned(options(None), pin)) {
            Err(RemoteError::Pack { error: Error::Corrupt(c), .. }) => {
                assert!(matches!(c.kind, packfs_core::pack::CorruptKind::Pinned { expected, .. } if expected == pin))
            }
            other => panic!("compress {compress}: {:?}", other.map(|_| ())),
        }
        // Only the open's requests were made: no byte of a file came.
        assert!(s.proxy.stats().requests <= 3);
        // Unpinned, it opens and serves the forged bytes: nothing could tell.
        let p = try_open(&s.url(), &options(None)).unwrap();
        assert!(p.pinned().is_none());
        assert!(read(&p, "big.bin", 1 << 20).unwrap() == forged_big);
        // The pack pinned, served as it was made: every file reads.
        let s = Served::new(&good);
        let p = try_open(&s.url(), &pinned(options(None), pin)).unwrap();
        assert_eq!(p.pinned(), Some(pin));
        for (path, want) in &files {
            assert!(read(&p, path, 65536).unwrap() == *want, "{path}");
        }
    }
}

/// Every entry the cache holds under a digest has bytes that hash to it.
fn shared_entries(cache: &std::path::Path) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let Ok(fans) = std::fs::read_dir(cache.join("blake3")) else { return out };
    for fan in fans.flatten() {
        for e in std::fs::read_dir(fan.path()).unwrap().flatten() {
            let name = e.file_name().into_string().unwrap();
            if let Some((hex, _)) = name.split_once('-').filter(|_| !name.ends_with(".lock")) {
                let bytes = std::fs::read(e.path()).unwrap();
                out.push((name.clone(), Digest::of(&bytes).hex() == hex));
            }
        }
    }
    out
}

#[test]
fn a_chunk_swapped_on_the_way_is_never_served_or_cached() {
    let cache = tempfile::tempdir().unwrap();
    // Version 1: mid0.bin and mid1.bin are one blob each, of one length.
    let (fs, files) = tree(41, &[]);
    let bytes = pack(&fs, false);
    let pin = digest(&bytes);
    let (mid0, mid1) = (&files[1], &files[2]);
    assert_eq!((mid0.0.as_str(), mid1.0.as_str(), mid0.1.len()), ("mid0.bin", "mid1.bin", mid1.1.len()));
    let s = Served::new(&bytes);
    s.proxy.swap(&mid0.1, &mid1.1);
    let mut opts = pinned(options(Some(cache.path())), pin);
    // Reads after the failure go on at once, rather than failing fast.
    opts.net.fail_fast = std::time::Duration::ZERO;
    let p = try_open(&s.url(), &opts).unwrap();
    let e = read(&p, "mid0.bin", 65536).unwrap_err();
    assert_eq!(e.errno_name(), "EIO");
    assert!(p.source().last_error().is_some_and(|e| e.contains("digest")), "{:?}", p.source().last_error());
    // The other files read; the cache holds no byte that is not its name's.
    for (path, want) in files.iter().filter(|(p, _)| p != "mid0.bin") {
        assert!(read(&p, path, 65536).unwrap() == *want, "{path}");
    }
    let name = format!("{}-{}", Digest::of(&mid0.1).hex(), mid0.1.len());
    let entries = shared_entries(cache.path());
    assert!(entries.len() >= 5 && entries.iter().all(|(_, good)| *good), "{entries:?}");
    assert!(!entries.iter().any(|(n, _)| *n == name), "mid0.bin's digest holds no bytes");
    // With the swap gone, a new open reads it, and caches it.
    s.proxy.swap(&[], &[]);
    let p = try_open(&s.url(), &opts).unwrap();
    assert!(read(&p, "mid0.bin", 65536).unwrap() == mid0.1);
    assert!(shared_entries(cache.path()).contains(&(name, true)));
}

#[test]
fn a_chunk_two_origins_share_is_fetched_once() {
    let shared = content(77, 2 << 20);
    for digests in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let cache = Arc::new(Cache::open(dir.path(), 1 << 30).unwrap());
        let (a_fs, _) = tree(42, &[("shared.bin", shared.clone())]);
        let (b_fs, _) = tree(43, &[("shared.bin", shared.clone())]);
        let (a, b) = (pack_with(&a_fs, true, digests), pack_with(&b_fs, true, digests));
        let (sa, sb) = (Served::new(&a), Served::new(&b));
        let opts = RemoteOptions { cache: Some(Arc::clone(&cache)), ..options(None) };
        let p = try_open(&sa.url(), &opts).unwrap();
        assert!(read(&p, "shared.bin", 1 << 20).unwrap() == shared);
        // The other origin's pack: its copy of the file comes from the
        // cache when the packs have digests, and from its store when not.
        let q = try_open(&sb.url(), &opts).unwrap();
        let opened = sb.proxy.stats().bytes;
        assert!(read(&q, "shared.bin", 1 << 20).unwrap() == shared);
        let fetched = sb.proxy.stats().bytes - opened;
        let whole = PackFs::open(&b[..]).unwrap();
        let ino = packfs_core::resolve::resolve(&whole, whole.root(), "shared.bin", true).unwrap();
        let stored: u64 = whole.extents_of(ino).unwrap().map(|k| whole.extent(k).map(|(s, e)| e - s).unwrap()).sum();
        match digests {
            true => {
                // From the cache, but for what came with b's open (its tail).
                assert_eq!(fetched, 0, "shared.bin came from the cache");
                assert!(q.source().stats().from_cache > 0);
            }
            // All of it but what came with the open (at most its tail).
            false => assert!(
                fetched + packfs_core::pack::TAIL_LEN >= stored,
                "origins share nothing without digests: {fetched} of {stored}"
            ),
        }
    }
}
