//! The host-directory backend at scale: listing a directory of 10,000 to
//! 160,000 entries through `DirFs::read_dir` in pages of 256 (what a WASI
//! directory stream asks for), and renaming every file of a tree under a
//! directory the backend has seen, against `std::fs` doing the same in the
//! same run, and against cap-std (what wasmtime-wasi confines a preopen
//! with: each path resolved beneath the directory, by `openat2`'s
//! `RESOLVE_BENEATH` where the kernel has it), the confined peer. Each
//! must stay O(n) per pass: a 4x step in n costs about 4x.
//! (They were O(n²): every page re-read and sorted the whole directory, and
//! every rename rewrote the path of every inode the backend remembered.)
//!
//! Run: `cargo bench -p packfs-bench --bench dir`

#![allow(missing_docs, reason = "criterion_group! makes an undocumented public function")]

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group};
use packfs_core::FileSystem;
use packfs_os::dir::DirFs;

const SIZES: [usize; 3] = [10_000, 40_000, 160_000];

/// The sizes to run: under `cargo test` (no `--bench`), a smoke run of
/// small ones.
fn sizes() -> [usize; 3] {
    if std::env::args().any(|a| a == "--bench") { SIZES } else { SIZES.map(|n| n / 100) }
}
/// Entries per `read_dir` call (the WASI host's directory-stream batch).
const PAGE: usize = 256;

/// A directory under `/dev/shm` (tmpfs: the disk's noise stays out) holding
/// `n` empty files.
fn tree(n: usize) -> tempfile::TempDir {
    let dir = tempfile::Builder::new().prefix("packfs-bench-dir-").tempdir_in("/dev/shm").unwrap();
    for i in 0..n {
        std::fs::write(dir.path().join(format!("f{i:07}")), b"").unwrap();
    }
    dir
}

fn list(fs: &DirFs) -> usize {
    let mut after: Option<std::sync::Arc<str>> = None;
    let mut n = 0;
    loop {
        let page = fs.read_dir(fs.root(), after.as_deref(), PAGE).unwrap();
        let Some(last) = page.last() else { return n };
        n += page.len();
        after = Some(last.name.clone());
    }
}

fn std_list(root: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(root).unwrap() {
        black_box(e.unwrap().file_name());
        n += 1;
    }
    n
}

fn cap_list(dir: &cap_std::fs::Dir) -> usize {
    let mut n = 0;
    for e in dir.entries().unwrap() {
        black_box(e.unwrap().file_name());
        n += 1;
    }
    n
}

fn group<'c>(c: &'c mut Criterion, name: &str) -> BenchmarkGroup<'c, WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    g
}

fn listing(c: &mut Criterion) {
    let mut g = group(c, "dir_list");
    for n in sizes() {
        let dir = tree(n);
        let fs = DirFs::open(dir.path(), true).unwrap();
        assert_eq!(list(&fs), n);
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function(BenchmarkId::new("dirfs_pages", n), |b| b.iter(|| list(&fs)));
        g.bench_function(BenchmarkId::new("std_read_dir", n), |b| b.iter(|| std_list(dir.path())));
        let cap = cap_std::fs::Dir::open_ambient_dir(dir.path(), cap_std::ambient_authority()).unwrap();
        assert_eq!(cap_list(&cap), n);
        g.bench_function(BenchmarkId::new("cap_std_entries", n), |b| b.iter(|| cap_list(&cap)));
    }
    g.finish();
}

/// Renames every file of a directory to a new name and back, after the
/// backend has listed (so remembers) all of them.
fn renames(c: &mut Criterion) {
    let mut g = group(c, "dir_rename");
    for n in sizes() {
        let dir = tree(n);
        let fs = DirFs::open(dir.path(), false).unwrap();
        assert_eq!(list(&fs), n);
        let names: Vec<(String, String)> = (0..n).map(|i| (format!("f{i:07}"), format!("g{i:07}"))).collect();
        g.throughput(Throughput::Elements(2 * n as u64));
        g.bench_function(BenchmarkId::new("dirfs", n), |b| {
            b.iter(|| {
                let root = fs.root();
                for (f, g) in &names {
                    fs.rename(root, f, root, g).unwrap();
                }
                for (f, g) in &names {
                    fs.rename(root, g, root, f).unwrap();
                }
            })
        });
        g.bench_function(BenchmarkId::new("std_fs", n), |b| {
            b.iter(|| {
                let root = dir.path();
                for (f, g) in &names {
                    std::fs::rename(root.join(f), root.join(g)).unwrap();
                }
                for (f, g) in &names {
                    std::fs::rename(root.join(g), root.join(f)).unwrap();
                }
            })
        });
        let cap = cap_std::fs::Dir::open_ambient_dir(dir.path(), cap_std::ambient_authority()).unwrap();
        g.bench_function(BenchmarkId::new("cap_std", n), |b| {
            b.iter(|| {
                for (f, g) in &names {
                    cap.rename(f, &cap, g).unwrap();
                }
                for (f, g) in &names {
                    cap.rename(g, &cap, f).unwrap();
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, listing, renames);
fn main() {
    let since = std::time::SystemTime::now();
    benches();
    Criterion::default().configure_from_args().final_summary();
    packfs_bench::results::criterion_done("dir", &["bench/benches/dir.rs", "core/src", "host/os/src"], since);
}
