//! PackFS core benchmarks: `MemFs` against the host filesystem (a disk-backed
//! temp dir and tmpfs), the `vfs` crate's `MemoryFS`, and a plain
//! `BTreeMap<String, Vec<u8>>`, all in one run.
//!
//! ```sh
//! cargo bench -p packfs-bench --bench core
//! cargo run -p packfs-bench --release --bin report   # the tables of BENCH.md
//! ```
//!
//! Every benchmark uses `iter_custom`: one criterion iteration is one whole
//! phase (for example 20,000 creates), and the set-up it needs (an empty or a
//! populated directory) and the tear-down after it run outside the timed
//! region.
//!
//! Clock: the single-threaded phases are timed in the CPU time of the thread
//! running them (`CLOCK_THREAD_CPUTIME_ID`: user and kernel time, system
//! calls included), so that other jobs on a shared machine do not inflate
//! them; time spent blocked (an ext4 journal wait) is not counted, which can
//! only flatter the disk baseline. `PACKFS_BENCH_CLOCK=wall` times them in
//! wall-clock time instead. The concurrent phase is always wall-clock time.
//!
//! Backends, by their criterion names:
//!
//! - `packfs_mem`: `MemFs` through the inode API of the `FileSystem` trait;
//!   the working directory's inode is looked up once, as a directory handle
//!   holds it (the host resolves the same path in the kernel).
//! - `btreemap`: a `BTreeMap<String, Vec<u8>>` keyed by full path, no lock
//!   (one `Mutex` around it in the concurrent phase): the near-limit for an
//!   in-memory map.
//! - `vfs_memoryfs`: `vfs::MemoryFS` (vfs 0.12) with full paths; files are
//!   written through its `Write` handle and closed by dropping it.
//! - `std_tmp`: `std::fs` in a temp dir under `std::env::temp_dir()` (disk;
//!   `PACKFS_BENCH_DISK=0` leaves it out, the slowest part of the run).
//! - `std_shm`: `std::fs` in a temp dir under `/dev/shm` (tmpfs).
//!
//! Names and paths are built before the timed region for every backend. A
//! phase that needs a filled directory fills it just before (untimed), so
//! every backend works on data it has just touched.

#![allow(missing_docs, reason = "criterion_group! makes an undocumented public function")]

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::hint::black_box;
use std::io::{Read, Write};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use packfs_core::{FileSystem, Ino, MemFs, OpenOptions};
use rustix::time::{ClockId, clock_gettime};
use vfs::FileSystem as VfsFileSystem;

/// Small files per phase.
const N_FILES: usize = 20_000;
/// Bytes per small file.
const SMALL: usize = 128;
/// Directories for mkdir / rmdir.
const N_DIRS: usize = 4_000;
/// Write and read size of the sequential phases.
const CHUNK: usize = 64 * 1024;
/// File sizes of the sequential phases, in MiB.
const SEQ_MIB: [usize; 3] = [1, 16, 64];
/// Concurrent phase: threads x rounds of (create+write+close,
/// open+read+close, unlink).
const THREADS: usize = 8;
const ROUNDS: usize = 4_000;
/// Scaling series: directory sizes, each 4x the one before.
const SCALE_N: [usize; 4] = [15_625, 62_500, 250_000, 1_000_000];
/// Operations per iteration of the scaling series.
const SCALE_K: usize = 4_096;

mod stores;

use stores::*;

// ---- harness helpers --------------------------------------------------------

fn group<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(name);
    g.sampling_mode(SamplingMode::Flat);
    g
}

/// Benchmarks `timed` as `id` on the single-threaded clock, with `setup`
/// before and `teardown` after each iteration, both untimed. Set-up that
/// only some benchmarks need belongs in `setup` (which runs only when the
/// benchmark is selected), not before.
fn phase<S: ?Sized>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    id: BenchmarkId,
    state: &mut S,
    setup: impl FnMut(&mut S),
    timed: impl FnMut(&mut S),
    teardown: impl FnMut(&mut S),
) {
    phase_on(Clock::single_threaded(), g, id, state, setup, timed, teardown);
}

/// [`phase`] on a given clock.
fn phase_on<S: ?Sized>(
    clock: Clock,
    g: &mut BenchmarkGroup<'_, WallTime>,
    id: BenchmarkId,
    state: &mut S,
    mut setup: impl FnMut(&mut S),
    mut timed: impl FnMut(&mut S),
    mut teardown: impl FnMut(&mut S),
) {
    g.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                setup(state);
                total += clock.time(|| timed(state));
                teardown(state);
            }
            total
        })
    });
}

fn nothing<S: ?Sized>(_: &mut S) {}

/// How a phase is timed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Clock {
    /// CPU time of the calling thread.
    ThreadCpu,
    /// Wall-clock time.
    Wall,
}

impl Clock {
    /// The clock of the single-threaded phases: `PACKFS_BENCH_CLOCK=wall`
    /// or thread CPU time.
    fn single_threaded() -> Clock {
        match std::env::var("PACKFS_BENCH_CLOCK").as_deref() {
            Ok("wall") => Clock::Wall,
            _ => Clock::ThreadCpu,
        }
    }

    /// Runs `f`, returning how long it took on this clock.
    fn time(self, f: impl FnOnce()) -> Duration {
        match self {
            Clock::Wall => {
                let t = Instant::now();
                f();
                t.elapsed()
            }
            Clock::ThreadCpu => {
                let cpu = || {
                    let t = clock_gettime(ClockId::ThreadCPUTime);
                    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
                };
                let t = cpu();
                f();
                cpu() - t
            }
        }
    }
}

/// Makes a new working directory with `files` in it current.
fn filled(b: &mut dyn Backend, files: &Arc<Vec<String>>, data: &[u8]) {
    b.reset(files);
    b.create_files(data);
}

// ---- the phases -------------------------------------------------------------

fn small_files(c: &mut Criterion) {
    let files = names("f", N_FILES);
    let data = [0x5Au8; SMALL];
    let mut buf = vec![0u8; 4096];
    let want = (N_FILES * SMALL) as u64;
    let mut all = backends(true);
    let mut g = group(c, "small");
    g.throughput(Throughput::Elements(N_FILES as u64));

    for b in all.iter_mut() {
        let id = BenchmarkId::new("create", b.label());
        phase(&mut g, id, &mut **b, |b| b.reset(&files), |b| b.create_files(&data), |b| b.clear());
    }
    // The read-only phases share one filled directory per backend.
    let fill = |b: &mut Dyn| {
        if !b.ready() {
            filled(b, &files, &data);
        }
    };
    for b in all.iter_mut() {
        let id = BenchmarkId::new("read", b.label());
        phase(&mut g, id, &mut **b, fill, |b| assert_eq!(b.read_files(&mut buf), want), nothing);
    }
    for b in all.iter_mut() {
        let id = BenchmarkId::new("stat", b.label());
        phase(&mut g, id, &mut **b, fill, |b| assert_eq!(b.stat_files(), want), nothing);
    }
    for b in all.iter_mut() {
        let id = BenchmarkId::new("readdir", b.label());
        phase(&mut g, id, &mut **b, fill, |b| assert_eq!(b.list_dir(), N_FILES), nothing);
    }
    for b in all.iter_mut() {
        b.clear();
        let id = BenchmarkId::new("unlink", b.label());
        phase(&mut g, id, &mut **b, |b| filled(b, &files, &data), |b| b.unlink_files(), |b| b.clear());
    }
    g.finish();
}

fn directories(c: &mut Criterion) {
    let dirs = names("d", N_DIRS);
    // No disk baseline: an ext4 rmdir costs milliseconds here, which would
    // make this group alone take minutes (see BENCH.md).
    let mut all = backends(false);
    let mut g = group(c, "dirs");
    g.throughput(Throughput::Elements(N_DIRS as u64));
    for b in all.iter_mut() {
        let id = BenchmarkId::new("mkdir", b.label());
        phase(&mut g, id, &mut **b, |b| b.reset(&dirs), |b| b.mkdirs(), |b| b.clear());
    }
    for b in all.iter_mut() {
        let id = BenchmarkId::new("rmdir", b.label());
        let setup = |b: &mut Dyn| {
            b.reset(&dirs);
            b.mkdirs();
        };
        phase(&mut g, id, &mut **b, setup, |b| b.rmdirs(), |b| b.clear());
    }
    g.finish();
}

fn sequential(c: &mut Criterion) {
    let file = names("big", 1);
    let chunk: Vec<u8> = (0..CHUNK).map(|i| (i * 31 % 251) as u8).collect();
    let mut buf = vec![0u8; CHUNK];
    let mut all = backends(true);
    let mut g = group(c, "seq");
    for mib in SEQ_MIB {
        let bytes = mib << 20;
        let count = bytes / CHUNK;
        g.throughput(Throughput::Bytes(bytes as u64));
        for b in all.iter_mut() {
            let id = BenchmarkId::new(format!("write_{mib}MiB"), b.label());
            phase(&mut g, id, &mut **b, |b| b.reset(&file), |b| b.write_seq(&chunk, count), |b| b.clear());
        }
        for b in all.iter_mut() {
            let id = BenchmarkId::new(format!("read_{mib}MiB"), b.label());
            let setup = |b: &mut Dyn| {
                if !b.ready() {
                    b.reset(&file);
                    b.write_seq(&chunk, count);
                }
            };
            phase(&mut g, id, &mut **b, setup, |b| assert_eq!(b.read_seq(&mut buf), bytes as u64), nothing);
            b.clear();
        }
    }
    g.finish();
}

// ---- concurrency ------------------------------------------------------------

/// Runs `work(thread)` on `THREADS` threads and waits for all of them.
fn on_threads(work: impl Fn(usize) + Sync) {
    thread::scope(|s| {
        for t in 0..THREADS {
            let work = &work;
            s.spawn(move || work(t));
        }
    });
}

fn concurrent(c: &mut Criterion) {
    let files = names("f", ROUNDS);
    let data = [0x5Au8; SMALL];
    let mut g = group(c, "concurrent");
    // Three operations per round: create+write+close, open+read+close, unlink.
    g.throughput(Throughput::Elements((THREADS * ROUNDS * 3) as u64));

    // MemFs: one Arc<MemFs> shared by all threads, a directory per thread.
    let mut mem: (Arc<MemFs>, Vec<Ino>) = (Arc::new(MemFs::new()), Vec::new());
    phase_on(
        Clock::Wall,
        &mut g,
        BenchmarkId::new("mixed", "packfs_mem"),
        &mut mem,
        |(fs, dirs)| {
            *fs = Arc::new(MemFs::new());
            *dirs = (0..THREADS).map(|t| fs.mkdir(fs.root(), &format!("t{t}"), 0o755).expect("mkdir")).collect();
        },
        |(fs, dirs)| {
            on_threads(|t| {
                let (fs, dir) = (&**fs, dirs[t]);
                let mut buf = [0u8; 4096];
                for n in files.iter() {
                    let f = fs.open(dir, n, &OpenOptions::create()).expect("create");
                    fs.write_at(f, 0, &data).expect("write");
                    fs.close(f);
                    let f = fs.open(dir, n, &OpenOptions::read()).expect("open");
                    assert_eq!(mem_read_whole(fs, f, &mut buf), SMALL as u64);
                    fs.close(f);
                    fs.unlink(dir, n).expect("unlink");
                }
            })
        },
        nothing,
    );

    // BTreeMap behind one Mutex, full paths.
    let paths: Vec<Vec<String>> = (0..THREADS).map(|t| files.iter().map(|n| format!("/t{t}/{n}")).collect()).collect();
    let mut map = Mutex::new(BTreeMap::<String, Vec<u8>>::new());
    phase_on(
        Clock::Wall,
        &mut g,
        BenchmarkId::new("mixed", "btreemap"),
        &mut map,
        |m| *m = Mutex::new(BTreeMap::new()),
        |m| {
            let m = &*m;
            on_threads(|t| {
                let mut buf = [0u8; 4096];
                for p in &paths[t] {
                    m.lock().expect("lock").insert(p.clone(), data.to_vec());
                    {
                        let guard = m.lock().expect("lock");
                        let v = guard.get(p).expect("get");
                        buf[..v.len()].copy_from_slice(v);
                        black_box(&buf[..v.len()]);
                    }
                    m.lock().expect("lock").remove(p).expect("remove");
                }
            })
        },
        nothing,
    );

    // vfs MemoryFS: one instance shared by all threads, a directory per thread.
    let mut vfs_fs = vfs::MemoryFS::new();
    phase_on(
        Clock::Wall,
        &mut g,
        BenchmarkId::new("mixed", "vfs_memoryfs"),
        &mut vfs_fs,
        |fs| {
            *fs = vfs::MemoryFS::new();
            for t in 0..THREADS {
                fs.create_dir(&format!("/t{t}")).expect("create_dir");
            }
        },
        |fs| {
            let fs = &*fs;
            on_threads(|t| {
                let mut buf = [0u8; 4096];
                for p in &paths[t] {
                    fs.create_file(p).expect("create").write_all(&data).expect("write");
                    assert_eq!(read_to_end(&mut fs.open_file(p).expect("open"), &mut buf), SMALL as u64);
                    fs.remove_file(p).expect("remove_file");
                }
            })
        },
        nothing,
    );

    // std::fs: a directory per thread.
    let mut hosts = vec![(PathBuf::from("/dev/shm"), "std_shm")];
    if disk_wanted() {
        hosts.insert(0, (std::env::temp_dir(), "std_tmp"));
    }
    for (parent, label) in hosts {
        let root = tempfile::Builder::new().prefix("packfs-bench-").tempdir_in(&parent).expect("tempdir");
        let dirs: Vec<PathBuf> = (0..THREADS).map(|t| root.path().join(format!("t{t}"))).collect();
        let host_paths: Vec<Vec<PathBuf>> = dirs.iter().map(|d| files.iter().map(|n| d.join(n)).collect()).collect();
        let mut unit = ();
        phase_on(
            Clock::Wall,
            &mut g,
            BenchmarkId::new("mixed", label),
            &mut unit,
            |_| dirs.iter().for_each(|d| fs::create_dir(d).expect("create_dir")),
            |_| {
                on_threads(|t| {
                    let mut buf = [0u8; 4096];
                    for p in &host_paths[t] {
                        File::create(p).expect("create").write_all(&data).expect("write");
                        assert_eq!(read_to_end(&mut File::open(p).expect("open"), &mut buf), SMALL as u64);
                        fs::remove_file(p).expect("remove_file");
                    }
                })
            },
            |_| dirs.iter().for_each(|d| fs::remove_dir(d).expect("remove_dir")),
        );
    }
    g.finish();
}

// ---- scaling ------------------------------------------------------------------

/// One store of the scaling series, filled with N files in one directory.
/// Its operations take the indices of the names they work on.
trait Scale {
    /// Creates (and writes `data` to) the extra names (the `SCALE_K` names
    /// after the N the directory holds).
    fn create_extra(&mut self, data: &[u8]);
    fn unlink_extra(&mut self);
    /// Metadata of the existing names `idx`.
    fn stat(&mut self, idx: &[usize]) -> u64;
    fn create(&mut self, idx: &[usize], data: &[u8]);
    fn unlink(&mut self, idx: &[usize]);
}

/// MemFs with `names` in `/bench`, and the names after them.
struct MemScale {
    w: MemWork,
    extra: Vec<String>,
}

impl Scale for MemScale {
    fn create_extra(&mut self, data: &[u8]) {
        mem_create(&self.w, self.extra.iter().map(String::as_str), data);
    }

    fn unlink_extra(&mut self) {
        self.extra.iter().for_each(|n| self.w.fs.unlink(self.w.dir, n).expect("unlink"));
    }

    fn stat(&mut self, idx: &[usize]) -> u64 {
        let w = &self.w;
        idx.iter().map(|&i| w.fs.metadata(w.fs.lookup(w.dir, &w.names[i]).expect("lookup")).expect("stat").size).sum()
    }

    fn create(&mut self, idx: &[usize], data: &[u8]) {
        mem_create(&self.w, idx.iter().map(|&i| self.w.names[i].as_str()), data);
    }

    fn unlink(&mut self, idx: &[usize]) {
        idx.iter().for_each(|&i| self.w.fs.unlink(self.w.dir, &self.w.names[i]).expect("unlink"));
    }
}

fn mem_create<'a>(w: &MemWork, names: impl Iterator<Item = &'a str>, data: &[u8]) {
    let opts = OpenOptions::create();
    for n in names {
        let f = w.fs.open(w.dir, n, &opts).expect("create");
        w.fs.write_at(f, 0, data).expect("write");
        w.fs.close(f);
    }
}

/// The BTreeMap with `names` under `/bench/`, and the paths after them.
struct MapScale {
    w: MapWork,
    extra: Vec<String>,
}

impl Scale for MapScale {
    fn create_extra(&mut self, data: &[u8]) {
        self.extra.iter().for_each(|p| drop(self.w.map.insert(p.clone(), data.to_vec())));
    }

    fn unlink_extra(&mut self) {
        self.extra.iter().for_each(|p| drop(self.w.map.remove(p).expect("remove")));
    }

    fn stat(&mut self, idx: &[usize]) -> u64 {
        idx.iter().map(|&i| self.w.map.get(&self.w.keys.paths[i]).expect("get").len() as u64).sum()
    }

    fn create(&mut self, idx: &[usize], data: &[u8]) {
        idx.iter().for_each(|&i| drop(self.w.map.insert(self.w.keys.paths[i].clone(), data.to_vec())));
    }

    fn unlink(&mut self, idx: &[usize]) {
        idx.iter().for_each(|&i| drop(self.w.map.remove(&self.w.keys.paths[i]).expect("remove")));
    }
}

/// A scaling store, filled on first use so that a filtered run fills only
/// what it measures.
struct Lazy<'a> {
    fill: Box<dyn Fn() -> Box<dyn Scale> + 'a>,
    store: Option<Box<dyn Scale>>,
}

impl Lazy<'_> {
    fn get(&mut self) -> &mut dyn Scale {
        let fill = &self.fill;
        &mut **self.store.get_or_insert_with(|| fill())
    }
}

/// Cost per operation in a directory of N files (filled once per N,
/// untimed, through the same API, names `f0000000` ... in order): each
/// iteration creates the `SCALE_K` names after the N, or stats or unlinks
/// `SCALE_K` consecutive names from the middle, as the small-file phases do;
/// its tear-down puts the directory back as it was (untimed).
fn scaling(c: &mut Criterion) {
    let data = [0x5Au8; SMALL];
    let all_names = names("f", SCALE_N[SCALE_N.len() - 1] + SCALE_K);
    let want = (SCALE_K * SMALL) as u64;
    let mut g = group(c, "scale");
    g.throughput(Throughput::Elements(SCALE_K as u64));
    for n in SCALE_N {
        let files = Arc::new(all_names[..n].to_vec());
        let idx: Vec<usize> = (n / 2..n / 2 + SCALE_K).collect();
        let extra: Vec<String> = all_names[n..n + SCALE_K].to_vec();
        let (files, extra, data) = (&files, &extra, &data);
        let stores = [
            Lazy {
                fill: Box::new(move || {
                    let mut w = Mem.open_work(files);
                    Mem::create_files(&mut w, data);
                    Box::new(MemScale { w, extra: extra.clone() })
                }),
                store: None,
            },
            Lazy {
                fill: Box::new(move || {
                    let mut w = Map::default().open_work(files);
                    Map::create_files(&mut w, data);
                    let extra = extra.iter().map(|f| format!("{MAP_DIR}{f}")).collect();
                    Box::new(MapScale { w, extra })
                }),
                store: None,
            },
        ];
        for (mut lazy, label) in stores.into_iter().zip(["packfs_mem", "btreemap"]) {
            let l = &mut lazy;
            phase(
                &mut g,
                BenchmarkId::new(format!("create_{label}"), n),
                l,
                nothing,
                |l| l.get().create_extra(data),
                |l| l.get().unlink_extra(),
            );
            phase(
                &mut g,
                BenchmarkId::new(format!("stat_{label}"), n),
                l,
                nothing,
                |l| assert_eq!(l.get().stat(&idx), want),
                nothing,
            );
            phase(
                &mut g,
                BenchmarkId::new(format!("unlink_{label}"), n),
                l,
                nothing,
                |l| l.get().unlink(&idx),
                |l| l.get().create(&idx, data),
            );
        }
    }
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_millis(1500))
        .without_plots()
}

criterion_group! {
    name = benches;
    config = config();
    targets = small_files, directories, sequential, concurrent, scaling
}
criterion_main!(benches);
