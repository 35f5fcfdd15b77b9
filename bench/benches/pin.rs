//! What pinning a pack costs (`docs/pack-format.md` §18): opening and
//! reading every file of a pinned pack against the same pack unpinned, in
//! one run, and how fast `verify` checks a pack by digest.
//!
//! 1. **Mapped** (the host's local packs): a fresh open of a pack file,
//!    mapped, then every file read whole, in path order, for a version 1
//!    pack and a version 2 (zstd) one: unpinned (nothing checked but the
//!    index and compressed chunks, the default), unpinned with
//!    `verify_on_read` (xxh3 on first read, what `packfs cat` does), and
//!    pinned (BLAKE3 on first read).
//! 2. **Remote** (packs over HTTP, on loopback, no cache): a fresh lazy
//!    open, then every file read: the pack unpinned and pinned, and the
//!    same tree packed without digests (its extents checked by xxh3 as they
//!    arrive, where a pack with digests has them checked by BLAKE3).
//! 3. **Verify**: `PackFs::verify` of a 1 GiB version 1 pack (1 MiB files
//!    of incompressible bytes) in memory, with digests and without: GB/s
//!    on one core.
//!
//! Each figure is the median of 7 runs, the configurations taking turns.
//! `cargo bench -p packfs-bench --bench pin`; `cargo test` runs it on
//! small packs, as a check that it works.

use std::time::{Duration, Instant};

use packfs_bench::trees::Rng;
use packfs_core::pack::{Compression, PackFs, PackOptions, ReadOptions};
use packfs_core::{FileSystem, MemFs, OpenOptions};
use packfs_remote::{Location, RemoteOptions};
use packfs_testnet::FileServer;

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (files, big) = if full { (2000, 1 << 30) } else { (40, 8 << 20) };
    let runs = if full { 7 } else { 1 };
    let fs = tree(files);
    let dir = tempfile::tempdir().unwrap();
    packfs_bench::outln!("## Pinned against unpinned: a fresh open, then every file read\n");
    packfs_bench::outln!("{} files, {} of content; medians of {runs} runs.\n", files, mib(content_len(&fs)));
    packfs_bench::outln!("| pack | reader | unpinned | verify_on_read (xxh3) | pinned (BLAKE3) | pinned ÷ unpinned |");
    packfs_bench::outln!("|---|---|--:|--:|--:|--:|");
    for (name, compress) in [("version 1", None), ("version 2, zstd 3", Some(Compression::zstd(3)))] {
        let path = dir.path().join("p.pack");
        let mut out = Vec::new();
        let stats = PackOptions::new().compress(compress).write(&fs.snapshot(), &mut out).unwrap();
        std::fs::write(&path, &out).unwrap();
        let pin = stats.digest;
        let path = path.as_path();
        let mapped = |read: ReadOptions| move || read_all(&packfs_os::mmap::open_pack_with(path, read).unwrap());
        let t = medians(
            runs,
            &mut [
                &mut mapped(ReadOptions::new()),
                &mut mapped(ReadOptions::new().verify_on_read(true)),
                &mut mapped(ReadOptions::new().pin(pin)),
            ],
        );
        row(name, "mapped file", &t);

        let mut plain = Vec::new();
        PackOptions::new().compress(compress).digests(false).write(&fs.snapshot(), &mut plain).unwrap();
        let served = tempfile::tempdir().unwrap();
        std::fs::write(served.path().join("p.pack"), &out).unwrap();
        std::fs::write(served.path().join("plain.pack"), &plain).unwrap();
        let server = FileServer::start(served.path());
        let remote = |file: &str, read: ReadOptions| {
            let url = format!("{}/{file}", server.url());
            move || {
                let options = RemoteOptions { read, ..RemoteOptions::default() };
                read_all(&packfs_remote::open(&Location::parse(&url).unwrap().unwrap(), &options).unwrap())
            }
        };
        let t = medians(
            runs,
            &mut [
                &mut remote("p.pack", ReadOptions::new()),
                &mut remote("plain.pack", ReadOptions::new()),
                &mut remote("p.pack", ReadOptions::new().pin(pin)),
            ],
        );
        packfs_bench::outln!(
            "| {name} | HTTP, loopback | {} | {} (no digests: xxh3 on arrival) | {} | **{:.3}x** |",
            ms(t[0]),
            ms(t[1]),
            ms(t[2]),
            t[2].as_secs_f64() / t[0].as_secs_f64()
        );
    }

    packfs_bench::outln!("\n## Verify: one core\n");
    packfs_bench::outln!("| pack | size | verify | GB/s |");
    packfs_bench::outln!("|---|--:|--:|--:|");
    let big_fs = incompressible(big);
    for (name, digests) in [("version 1, digests (BLAKE3)", true), ("version 1, no digests (xxh3)", false)] {
        let mut bytes = Vec::new();
        PackOptions::new().digests(digests).write(&big_fs, &mut bytes).unwrap();
        let p = PackFs::open(&bytes[..]).unwrap();
        let t = medians(runs.min(3), &mut [&mut || assert!(p.verify().unwrap().is_ok())])[0];
        let gbs = bytes.len() as f64 / t.as_secs_f64() / 1e9;
        packfs_bench::outln!("| {name} | {} | {} | **{gbs:.2}** |", mib(bytes.len() as u64), ms(t));
    }
    packfs_bench::results::printed_done(
        "pin",
        "cargo bench -p packfs-bench --bench pin",
        &["bench/benches/pin.rs", "core/src/pack", "host/remote/src"],
        None,
    );
}

/// `files` files of 1 KiB to 256 KiB, one in ten of 4 MiB, half of them
/// text that compresses, half noise; no two alike.
fn tree(files: usize) -> MemFs {
    let fs = MemFs::new();
    let mut rng = Rng::new(27);
    let dirs: Vec<_> = (0..20).map(|i| fs.mkdir(fs.root(), &format!("d{i:02}"), 0o755).unwrap()).collect();
    for i in 0..files {
        let len = match i % 10 {
            0 => 4 << 20,
            1..=4 => 1024 + rng.below(16 << 10) as usize,
            _ => 1024 + rng.below(256 << 10) as usize,
        };
        // Every file's content its own (no dedup): words at random, or noise.
        let bytes: Vec<u8> = if i % 2 == 0 {
            const WORDS: [&[u8]; 8] =
                [b"pinned ", b"packs ", b"are ", b"checked ", b"by ", b"digest ", b"and ", b"so\n"];
            let mut text = Vec::with_capacity(len + 8);
            while text.len() < len {
                text.extend_from_slice(WORDS[rng.below(8) as usize]);
            }
            text.truncate(len);
            text
        } else {
            (0..len).map(|_| rng.next() as u8).collect()
        };
        write(&fs, dirs[i % dirs.len()], &format!("f{i:05}"), &bytes);
    }
    fs
}

/// `total` bytes of noise in files of 1 MiB.
fn incompressible(total: u64) -> MemFs {
    let fs = MemFs::new();
    let mut rng = Rng::new(31);
    for i in 0..total >> 20 {
        let bytes: Vec<u8> = (0..1 << 17).flat_map(|_| rng.next().to_le_bytes()).collect();
        write(&fs, fs.root(), &format!("b{i:05}"), &bytes);
    }
    fs
}

fn write(fs: &MemFs, dir: u64, name: &str, bytes: &[u8]) {
    let f = fs.open(dir, name, &OpenOptions::create()).unwrap();
    fs.write_at(f, 0, bytes).unwrap();
    fs.close(f);
}

fn content_len(fs: &dyn FileSystem) -> u64 {
    let mut total = 0;
    walk(fs, fs.root(), &mut |_, size| total += size);
    total
}

/// Calls `visit(ino, size)` for every file, in path order.
fn walk(fs: &dyn FileSystem, dir: u64, visit: &mut dyn FnMut(u64, u64)) {
    for e in fs.read_dir(dir, None, usize::MAX).unwrap() {
        let m = fs.metadata(e.ino).unwrap();
        match m.kind {
            packfs_core::FileType::Dir => walk(fs, e.ino, visit),
            _ => visit(e.ino, m.size),
        }
    }
}

/// Reads every file whole through one 1 MiB buffer.
fn read_all(fs: &dyn FileSystem) {
    let mut buf = vec![0u8; 1 << 20];
    let mut files = Vec::new();
    walk(fs, fs.root(), &mut |ino, size| files.push((ino, size)));
    for (ino, size) in files {
        let mut at = 0;
        while at < size {
            let n = fs.read_at(ino, at, &mut buf).unwrap();
            assert!(n > 0);
            at += n as u64;
        }
    }
}

/// The median time of each of `jobs`, run `runs` times in turn.
fn medians(runs: usize, jobs: &mut [&mut dyn FnMut()]) -> Vec<Duration> {
    let mut times = vec![Vec::new(); jobs.len()];
    for _ in 0..runs {
        for (job, t) in jobs.iter_mut().zip(&mut times) {
            let start = Instant::now();
            job();
            t.push(start.elapsed());
        }
    }
    times
        .into_iter()
        .map(|mut t| {
            t.sort();
            t[t.len() / 2]
        })
        .collect()
}

fn row(name: &str, reader: &str, t: &[Duration]) {
    let ratio = t[2].as_secs_f64() / t[0].as_secs_f64();
    packfs_bench::outln!("| {name} | {reader} | {} | {} | {} | **{ratio:.3}x** |", ms(t[0]), ms(t[1]), ms(t[2]));
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn mib(n: u64) -> String {
    format!("{:.1} MiB", n as f64 / f64::from(1 << 20))
}
