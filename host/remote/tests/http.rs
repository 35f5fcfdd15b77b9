//! Remote packs over plain HTTP (the crate's file server), through the
//! fault proxy: what opening costs, reads against the tree, one fetch per
//! extent under concurrency, the host-wide cache and its sharing, a pack
//! replaced under its readers, and every kind of bad reply.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use packfs_core::pack::layout::{HEADER_LEN, TRAILER_LEN};
use packfs_core::pack::{Layout, PackFs, TAIL_LEN};
use packfs_core::{Code, FileSystem};
use packfs_remote::{Location, NetOptions, RemoteOptions};
use packfs_testnet::{Fault, FileServer, Proxy};

struct Served {
    dir: tempfile::TempDir,
    _server: FileServer,
    proxy: Proxy,
}

impl Served {
    fn new(packs: &[(&str, &[u8])]) -> Served {
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes) in packs {
            std::fs::write(dir.path().join(name), bytes).unwrap();
        }
        let server = FileServer::start(dir.path());
        let proxy = Proxy::start(server.addr());
        Served { dir, _server: server, proxy }
    }

    fn url(&self, name: &str) -> String {
        format!("{}/{name}", self.proxy.url())
    }
}

#[test]
fn opening_costs_two_round_trips_and_at_most_a_tail_of_file_data() {
    for compress in [false, true] {
        let (fs, _) = tree(1, &[]);
        let bytes = pack(&fs, compress);
        let s = Served::new(&[("p.pack", &bytes)]);
        let p = open(&s.url("p.pack"), &options(None));
        let len = bytes.len() as u64;
        let layout = Layout::from_trailer(&bytes[(len - TRAILER_LEN) as usize..]).unwrap();
        let tail_start = len - TAIL_LEN;
        // The tail; then the header, with the rest of the index region if
        // the tail did not hold all of it.
        let (requests, fetched) = match layout.index_offset >= tail_start {
            true => (2, HEADER_LEN + TAIL_LEN),
            false => (3, HEADER_LEN + len - layout.index_offset),
        };
        let st = s.proxy.stats();
        assert_eq!(st.requests, requests, "compress {compress}");
        assert_eq!(st.bytes, fetched, "compress {compress}: only header, tail and index");
        assert_eq!(p.source().stats().requests, requests);
        assert_eq!(p.info().inodes, PackFs::open(&bytes[..]).unwrap().info().inodes);
    }
}

#[test]
fn reads_give_the_trees_bytes_and_fetch_once() {
    for compress in [false, true] {
        let (fs, files) = tree(2, &[]);
        let bytes = pack(&fs, compress);
        let s = Served::new(&[("p.pack", &bytes)]);
        let p = open(&s.url("p.pack"), &options(None));
        for (i, (path, want)) in files.iter().enumerate() {
            let got = read(&p, path, [4096, 7919, 1 << 20][i % 3]).unwrap();
            assert!(got == *want, "{path} (compress {compress})");
        }
        let after = s.proxy.stats();
        // Every byte fetched at most once, but for the part of an extent
        // the open's tail cut (the extent is fetched whole).
        assert!(after.bytes <= bytes.len() as u64 + TAIL_LEN, "{} fetched of {}", after.bytes, bytes.len());
        for (path, want) in &files {
            assert!(read(&p, path, 65536).unwrap() == *want);
        }
        assert_eq!(s.proxy.stats().requests, after.requests, "second reads fetch nothing");
    }
}

#[test]
fn concurrent_readers_of_one_file_cause_one_fetch_each() {
    let (fs, files) = tree(3, &[]);
    let bytes = pack(&fs, true);
    let s = Served::new(&[("p.pack", &bytes)]);
    s.proxy.set_delay(Duration::from_millis(20));
    let p = Arc::new(open(&s.url("p.pack"), &options(None)));
    let opened = s.proxy.stats();
    let want = &files[0].1;
    std::thread::scope(|scope| {
        for t in 0..8 {
            let p = Arc::clone(&p);
            scope.spawn(move || assert!(read(&*p, "big.bin", 4096 + t * 1000).unwrap() == *want));
        }
    });
    let st = s.proxy.stats();
    let data = st.bytes - opened.bytes;
    let stored: u64 = (p.extents_of(packfs_core::resolve::resolve(&*p, p.root(), "big.bin", true).unwrap()).unwrap())
        .map(|k| p.extent(k).map(|(a, b)| b - a).unwrap())
        .sum();
    assert_eq!(data, stored, "each of big.bin's chunks came once, with no other bytes");
}

#[test]
fn the_cache_serves_later_opens_and_shares_content_between_packs() {
    let cache = tempfile::tempdir().unwrap();
    let shared = content(77, 2 << 20);
    let (a_fs, a_files) = tree(4, &[("shared.bin", shared.clone())]);
    let (b_fs, b_files) = tree(5, &[("shared.bin", shared.clone())]);
    let (a, b) = (pack(&a_fs, true), pack(&b_fs, true));
    let s = Served::new(&[("a.pack", &a), ("b.pack", &b)]);
    {
        let p = open(&s.url("a.pack"), &options(Some(cache.path())));
        for (path, want) in &a_files {
            assert!(read(&p, path, 65536).unwrap() == *want);
        }
        assert_eq!(p.source().stats().from_cache, 0);
    }
    // A new process, as far as the cache can tell: a new `Cache`.
    s.proxy.reset_stats();
    let p = open(&s.url("a.pack"), &options(Some(cache.path())));
    let opened = s.proxy.stats().requests;
    for (path, want) in &a_files {
        assert!(read(&p, path, 65536).unwrap() == *want);
    }
    assert_eq!(s.proxy.stats().requests, opened, "only the open's requests: every extent from the cache");
    assert!(p.source().stats().from_cache > 0);
    // Pack b shares shared.bin: its chunks are not fetched again.
    s.proxy.reset_stats();
    let q = open(&s.url("b.pack"), &options(Some(cache.path())));
    let opened = s.proxy.stats().bytes;
    for (path, want) in &b_files {
        assert!(read(&q, path, 65536).unwrap() == *want);
    }
    let fetched = s.proxy.stats().bytes - opened;
    // All of b but shared.bin's chunks, which came from the cache.
    let whole = PackFs::open(&b[..]).unwrap();
    let ino = packfs_core::resolve::resolve(&whole, whole.root(), "shared.bin", true).unwrap();
    let shared_stored: u64 = whole.extents_of(ino).unwrap().map(|k| whole.extent(k).map(|(a, e)| e - a).unwrap()).sum();
    assert!(shared_stored > 100_000);
    assert!(fetched + shared_stored <= b.len() as u64, "{fetched} fetched of {}", b.len());
    assert!(q.source().stats().from_cache > 0);
}

#[test]
fn a_damaged_cache_entry_is_never_served() {
    let cache = tempfile::tempdir().unwrap();
    let (fs, files) = tree(6, &[]);
    let bytes = pack(&fs, true);
    let s = Served::new(&[("p.pack", &bytes)]);
    {
        let p = open(&s.url("p.pack"), &options(Some(cache.path())));
        assert!(read(&p, "big.bin", 1 << 20).unwrap() == files[0].1);
    }
    // Tear or flip every entry, as a crash or a bad disk might.
    let mut damaged = 0;
    for e in walk(cache.path()) {
        let name = e.file_name().unwrap().to_string_lossy().into_owned();
        if name.contains('-') && !name.ends_with(".lock") && e.parent().unwrap().file_name().unwrap() != "tmp" {
            let mut b = std::fs::read(&e).unwrap();
            if damaged % 2 == 0 {
                b.truncate(b.len() / 2);
            } else {
                b[0] ^= 1;
            }
            std::fs::write(&e, b).unwrap();
            damaged += 1;
        }
    }
    assert!(damaged > 10);
    let opts = options(Some(cache.path()));
    let p = open(&s.url("p.pack"), &opts);
    assert!(read(&p, "big.bin", 1 << 20).unwrap() == files[0].1);
    assert_eq!(p.source().stats().from_cache, 0);
    let stats = opts.cache.as_ref().unwrap().stats();
    assert!(stats.damaged > 0, "{stats:?}");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out
}

#[test]
fn a_pack_replaced_in_the_store_is_never_mixed_with_the_old_one() {
    let (fs, files) = tree(7, &[]);
    let (other_fs, _) = tree(8, &[]);
    let bytes = pack(&fs, true);
    let s = Served::new(&[("p.pack", &bytes)]);
    let p = open(&s.url("p.pack"), &options(None));
    assert!(read(&p, "mid0.bin", 65536).unwrap() == files[1].1);
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(s.dir.path().join("p.pack"), pack(&other_fs, true)).unwrap();
    let err = read(&p, "big.bin", 65536).unwrap_err();
    assert_eq!(err.code(), Code::Io, "{err}");
    let why = p.source().last_error().unwrap();
    assert!(why.contains("changed in the store"), "{why}");
    // What was read before stays readable, and right.
    assert!(read(&p, "mid0.bin", 65536).unwrap() == files[1].1);
}

#[test]
fn bad_replies_are_retried_or_fail_never_served() {
    let faults = [
        Fault::Drop,
        Fault::Truncate,
        Fault::Corrupt,
        Fault::Whole,
        Fault::WrongRange,
        Fault::LongLength,
        Fault::Flood,
        Fault::Status(503),
        Fault::Status(500),
    ];
    for fault in faults {
        for compress in [false, true] {
            let (fs, files) = tree(9, &[]);
            let bytes = pack(&fs, compress);
            let s = Served::new(&[("p.pack", &bytes)]);
            // No pause after a failure: the reads after it fetch again.
            let mut opts = options(None);
            opts.net.fail_fast = Duration::ZERO;
            let p = open(&s.url("p.pack"), &opts);
            // Every read, the first with a bad reply, ends right or in EIO.
            s.proxy.inject(&[fault]);
            for (path, want) in &files {
                match read(&p, path, 65536) {
                    Ok(got) => assert!(got == *want, "{fault:?}: wrong bytes served for {path}"),
                    Err(e) => {
                        assert_eq!(e.code(), Code::Io, "{fault:?}: {e}");
                        eprintln!("{fault:?}: {}", p.source().last_error().unwrap());
                    }
                }
            }
            assert_eq!(s.proxy.pending(), 0, "{fault:?} was used");
            // A reply claiming a terabyte is cut off soon after the range
            // it was asked for: the host never buffers more.
            assert!(s.proxy.stats().bytes < bytes.len() as u64 + (16 << 20), "{fault:?}: {:?}", s.proxy.stats());
            // Once the fault is past, everything reads.
            for (path, want) in &files {
                assert!(read(&p, path, 65536).unwrap() == *want, "{fault:?} {path}");
            }
        }
    }
}

#[test]
fn a_stalled_store_fails_a_read_once_its_retries_are_spent() {
    let (fs, _) = tree(10, &[]);
    let bytes = pack(&fs, true);
    let s = Served::new(&[("p.pack", &bytes)]);
    let mut opts = options(None);
    opts.net.timeout = Duration::from_millis(500);
    opts.net.retries = 1;
    opts.net.retry_timeout = Duration::from_secs(2);
    let p = open(&s.url("p.pack"), &opts);
    s.proxy.inject(&[Fault::Stall(Duration::from_secs(30)); 8]);
    let err = read(&p, "big.bin", 65536).unwrap_err();
    assert_eq!(err.code(), Code::Io);
    // It gave up once the configured retry was spent, each try cut off by
    // the request timeout, not for an answer.
    let why = p.source().last_error().unwrap();
    assert!(why.contains("after 1 retries"), "{why}");
}

/// How many extents `source`, over `pack`, has fetched once `trace` is
/// prefetched: the traced ones, but those in the open's tail, which came
/// with the open as the others there did.
fn traced_fetches(trace: &packfs_remote::trace::Trace, pack: &[u8], source: &packfs_remote::RemoteSource) -> u64 {
    let tail_start = pack.len() as u64 - TAIL_LEN;
    let in_tail = trace.entries().iter().filter(|e| e.start >= tail_start).count();
    (trace.len() - in_tail) as u64 + source.stats().opened
}

#[test]
fn a_trace_prefetches_what_the_last_run_read() {
    let (fs, files) = tree(11, &[]);
    let bytes = pack(&fs, true);
    let s = Served::new(&[("p.pack", &bytes)]);
    let p = open(&s.url("p.pack"), &options(None));
    for path in ["mid3.bin", "dir/s07.txt", "big.bin"] {
        read(&p, path, 65536).unwrap();
    }
    let trace = packfs_remote::RemoteSource::record([p.source()]);
    let text = trace.to_text();
    assert_eq!(packfs_remote::trace::Trace::parse(&text).unwrap(), trace);
    assert!(!trace.is_empty());
    // A new run: prefetching brings all of it before any read asks.
    let q = open(&s.url("p.pack"), &options(None));
    assert_eq!(q.source().prefetch(&trace), trace.len());
    let deadline = Instant::now() + Duration::from_secs(10);
    let want = traced_fetches(&trace, &bytes, q.source());
    while q.source().stats().fetched < want && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(q.source().stats().fetched, want);
    let before = s.proxy.stats().requests;
    assert!(read(&q, "mid3.bin", 65536).unwrap() == files[4].1);
    assert_eq!(s.proxy.stats().requests, before, "the traced file was here already");
    // What the trace did not list is fetched on demand.
    assert!(read(&q, "mid1.bin", 65536).unwrap() == files[2].1);
    assert!(packfs_remote::trace::Trace::parse("packfs-trace 1\n1 2\n").is_err());
    assert!(packfs_remote::trace::Trace::parse("nope\n").is_err());
}

#[test]
fn the_cache_stays_under_its_size_and_eviction_spares_open_readers() {
    let cache_dir = tempfile::tempdir().unwrap();
    let (fs, files) = tree(12, &[]);
    let bytes = pack(&fs, false);
    let s = Served::new(&[("p.pack", &bytes)]);
    let limit = 1 << 20;
    let cache = Arc::new(packfs_remote::Cache::open(cache_dir.path(), limit).unwrap());
    let opts = packfs_remote::RemoteOptions { cache: Some(Arc::clone(&cache)), ..options(None) };
    let p = open(&s.url("p.pack"), &opts);
    for (path, want) in &files {
        assert!(read(&p, path, 65536).unwrap() == *want);
    }
    let stats = cache.stats();
    assert!(stats.evicted > 0, "{stats:?}");
    // Stores and evictions may still be under way in the background: a
    // file gone between the listing and its metadata is not on disk.
    let on_disk: u64 = walk(cache_dir.path()).iter().filter_map(|f| std::fs::metadata(f).ok()).map(|m| m.len()).sum();
    // Eviction runs each time an eighth of the limit was stored.
    assert!(on_disk <= limit + limit / 8 + (3 << 20), "{on_disk} bytes in a cache of {limit}");
    // The pack open still has every byte it read.
    let before = s.proxy.stats().requests;
    for (path, want) in &files {
        assert!(read(&p, path, 65536).unwrap() == *want);
    }
    assert_eq!(s.proxy.stats().requests, before);
}

#[test]
fn a_trace_given_at_open_is_fetched_with_the_trailer_and_checked_by_the_index() {
    let (fs, files) = tree(13, &[]);
    let (other_fs, other_files) = tree(14, &[]);
    let (bytes, other) = (pack(&fs, true), pack(&other_fs, true));
    let s = Served::new(&[("p.pack", &bytes), ("q.pack", &other)]);
    let p = open(&s.url("p.pack"), &options(None));
    for path in ["mid2.bin", "dir/s03.txt", "big.bin"] {
        read(&p, path, 65536).unwrap();
    }
    let trace = Arc::new(packfs_remote::RemoteSource::record([p.source()]));
    for cached in [false, true] {
        let cache = tempfile::tempdir().unwrap();
        let mut opts = options(cached.then(|| cache.path()));
        opts.prefetch = Some(Arc::clone(&trace));
        s.proxy.reset_stats();
        let q = open(&s.url("p.pack"), &opts);
        let deadline = Instant::now() + Duration::from_secs(10);
        let want = traced_fetches(&trace, &bytes, q.source());
        while q.source().stats().fetched < want && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(q.source().stats().fetched, want);
        let before = s.proxy.stats().requests;
        for (i, path) in [(3, "mid2.bin"), (0, "big.bin")] {
            assert!(read(&q, path, 65536).unwrap() == files[i].1);
        }
        assert_eq!(s.proxy.stats().requests, before, "traced files were here already");
        assert!(read(&q, "mid4.bin", 65536).unwrap() == files[5].1);
    }
    // Another pack: the trace's entries match nothing of it and are dropped.
    let mut opts = options(None);
    opts.prefetch = Some(trace);
    let r = open(&s.url("q.pack"), &opts);
    for (path, want) in &other_files {
        assert!(read(&r, path, 65536).unwrap() == *want, "{path}");
    }
}

/// A traced open on a warm cache asks the store for the open's pieces
/// alone, with or without digests: the trace names each extent by the
/// address the cache holds it under (its digest, where the pack has a
/// digest table), so its early requests skip what is cached.
#[test]
fn a_traced_open_on_a_warm_cache_fetches_nothing_more() {
    for digests in [false, true] {
        let (fs, files) = tree(15, &[]);
        let bytes = pack_with(&fs, true, digests);
        let s = Served::new(&[("p.pack", &bytes)]);
        let cache = tempfile::tempdir().unwrap();
        let shared = Arc::new(packfs_remote::Cache::open(cache.path(), 1 << 30).unwrap());
        let opts = RemoteOptions { cache: Some(Arc::clone(&shared)), ..options(None) };
        let p = open(&s.url("p.pack"), &opts);
        for (path, want) in &files {
            assert!(read(&p, path, 65536).unwrap() == *want);
        }
        let trace = packfs_remote::RemoteSource::record([p.source()]);
        assert_eq!(trace.entries().iter().all(|e| e.digest.is_some()), digests);
        // Every extent read is in the cache (those of the open's tail are
        // written in the background).
        let deadline = Instant::now() + Duration::from_secs(10);
        while shared.stats().stored < trace.len() as u64 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(shared.stats().stored, trace.len() as u64);
        drop(p);
        s.proxy.reset_stats();
        drop(open(&s.url("p.pack"), &options(None)));
        let opening = s.proxy.stats().requests;
        s.proxy.reset_stats();
        let traced = RemoteOptions { prefetch: Some(Arc::new(trace)), ..options(Some(cache.path())) };
        let q = open(&s.url("p.pack"), &traced);
        for (path, want) in &files {
            assert!(read(&q, path, 65536).unwrap() == *want);
        }
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(s.proxy.stats().requests, opening, "digests {digests}: the open's requests alone");
    }
}

/// A trace published beside the pack (`PACK.trace`) is asked for with the
/// open's first request and prefetched once it comes: reads of what it
/// lists then wait for no request of their own. A pack with none costs
/// that one request and nothing more.
#[test]
fn a_trace_published_beside_the_pack_is_found_and_prefetched() {
    let (fs, files) = tree(9, &[]);
    let bytes = pack(&fs, true);
    let s = Served::new(&[("p.pack", &bytes)]);
    let find = RemoteOptions { find_trace: true, ..options(None) };
    // Without a trace: the open's requests and the trace's, no data more.
    let plain = open(&s.url("p.pack"), &options(None));
    let baseline = s.proxy.stats();
    drop(plain);
    s.proxy.reset_stats();
    let p = open(&s.url("p.pack"), &find);
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.proxy.stats().requests < baseline.requests + 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(s.proxy.stats().requests, baseline.requests + 1, "one request more, for the trace");
    assert_eq!(s.proxy.stats().bytes, baseline.bytes, "and no bytes: there is none");
    assert_eq!(p.source().published_trace(), None);
    // A run's trace, published.
    let wanted: Vec<_> = files.iter().filter(|(path, _)| path.starts_with("mid") || path.ends_with("7.txt")).collect();
    for (path, want) in &wanted {
        assert!(read(&p, path, 65536).unwrap() == **want);
    }
    let trace = packfs_remote::RemoteSource::record([p.source()]);
    std::fs::write(s.dir.path().join("p.pack.trace"), trace.to_text()).unwrap();
    drop(p);
    s.proxy.reset_stats();
    let p = open(&s.url("p.pack"), &find);
    let deadline = Instant::now() + Duration::from_secs(10);
    while p.source().published_trace().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(p.source().published_trace(), Some(trace.len() as u64));
    // Prefetched: once it has landed (every extent it lists fetched, not
    // a pause in the requests, which a loaded machine can make anywhere),
    // the reads ask for nothing.
    let deadline = Instant::now() + Duration::from_secs(30);
    let want = traced_fetches(&trace, &bytes, p.source());
    while p.source().stats().fetched < want && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(p.source().stats().fetched, want);
    let last = s.proxy.stats();
    for (path, want) in &wanted {
        assert!(read(&p, path, 65536).unwrap() == **want);
    }
    assert_eq!(s.proxy.stats(), last, "every read was prefetched");
    assert!(p.source().stats().fetched >= trace.len() as u64);
}

/// `download` writes the object's bytes whole, streamed or in ranged
/// pieces at once, at lengths around the piece size.
#[test]
fn a_download_writes_the_whole_object_streamed_or_in_pieces() {
    let piece = 64 << 10;
    for len in [0, 1, piece - 1, piece, piece + 1, 5 * piece + 7] {
        let bytes: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
        let s = Served::new(&[("o.bin", &bytes)]);
        let location = Location::parse(&s.url("o.bin")).unwrap().unwrap();
        for parallel in [1, 3] {
            let to = tempfile::tempfile().unwrap();
            let n = packfs_remote::download(&location, &NetOptions::default(), &to, parallel, piece as u64).unwrap();
            assert_eq!(n, len as u64, "{len} bytes, {parallel} at once");
            let mut got = Vec::new();
            std::io::Read::read_to_end(&mut &to, &mut got).unwrap();
            assert!(got == bytes, "{len} bytes, {parallel} at once: the bytes differ");
        }
    }
}

/// A bad reply to a download's piece is retried or fails: the call
/// never returns success over a file that is not the object.
#[test]
fn a_download_never_succeeds_with_wrong_bytes() {
    let piece = 64u64 << 10;
    let bytes: Vec<u8> = (0..(4 * piece as usize + 100)).map(|i| (i % 253) as u8).collect();
    for fault in [Fault::Drop, Fault::Truncate, Fault::WrongRange, Fault::Whole, Fault::LongLength, Fault::Status(500)]
    {
        let s = Served::new(&[("o.bin", &bytes)]);
        let location = Location::parse(&s.url("o.bin")).unwrap().unwrap();
        let net = NetOptions { retries: 1, ..NetOptions::default() };
        s.proxy.inject(&[fault]);
        let to = tempfile::tempfile().unwrap();
        match packfs_remote::download(&location, &net, &to, 2, piece) {
            Ok(n) => {
                let mut got = Vec::new();
                std::io::Read::read_to_end(&mut &to, &mut got).unwrap();
                assert_eq!(n, bytes.len() as u64, "{fault:?}");
                assert!(got == bytes, "{fault:?}: a download that succeeded wrote wrong bytes");
            }
            Err(e) => eprintln!("{fault:?}: {e}"),
        }
    }
}
