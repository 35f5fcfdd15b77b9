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

fn names(prefix: &str, n: usize) -> Arc<Vec<String>> {
    Arc::new((0..n).map(|i| format!("{prefix}{i:07}")).collect())
}

/// A storage backend of the single-threaded phases. A `Work` is one working
/// directory, prepared for one list of names.
trait Store {
    type Work;
    fn label(&self) -> &'static str;
    /// A new, empty working directory (untimed).
    fn open_work(&mut self, names: &Arc<Vec<String>>) -> Self::Work;
    /// Disposes of a working directory (untimed).
    fn close_work(&mut self, _w: Self::Work) {}
    /// Create, write `data`, close — per name.
    fn create_files(w: &mut Self::Work, data: &[u8]);
    /// Open, read to end of file, close — per name. Returns bytes read.
    fn read_files(w: &mut Self::Work, buf: &mut [u8]) -> u64;
    /// Metadata by name — per name. Returns the sum of the sizes.
    fn stat_files(w: &mut Self::Work) -> u64;
    /// Lists the working directory whole. Returns the entry count.
    fn list_dir(w: &mut Self::Work) -> usize;
    fn unlink_files(w: &mut Self::Work);
    fn mkdirs(w: &mut Self::Work);
    fn rmdirs(w: &mut Self::Work);
    /// Creates the first name and writes `chunk` to it `count` times.
    fn write_seq(w: &mut Self::Work, chunk: &[u8], count: usize);
    /// Reads the first name whole, `buf.len()` bytes per read.
    fn read_seq(w: &mut Self::Work, buf: &mut [u8]) -> u64;
}

// ---- packfs MemFs -----------------------------------------------------------

struct Mem;

struct MemWork {
    fs: MemFs,
    dir: Ino,
    names: Arc<Vec<String>>,
}

fn mem_read_whole(fs: &MemFs, f: Ino, buf: &mut [u8]) -> u64 {
    let mut off = 0u64;
    loop {
        let k = fs.read_at(f, off, buf).expect("read");
        if k == 0 {
            return off;
        }
        black_box(&buf[..k]);
        off += k as u64;
    }
}

impl Store for Mem {
    type Work = MemWork;

    fn label(&self) -> &'static str {
        "packfs_mem"
    }

    fn open_work(&mut self, names: &Arc<Vec<String>>) -> MemWork {
        let fs = MemFs::new();
        let dir = fs.mkdir(fs.root(), "bench", 0o755).expect("mkdir");
        MemWork { fs, dir, names: names.clone() }
    }

    fn create_files(w: &mut MemWork, data: &[u8]) {
        let opts = OpenOptions::create();
        for n in w.names.iter() {
            let f = w.fs.open(w.dir, n, &opts).expect("create");
            w.fs.write_at(f, 0, data).expect("write");
            w.fs.close(f);
        }
    }

    fn read_files(w: &mut MemWork, buf: &mut [u8]) -> u64 {
        let opts = OpenOptions::read();
        let mut total = 0;
        for n in w.names.iter() {
            let f = w.fs.open(w.dir, n, &opts).expect("open");
            total += mem_read_whole(&w.fs, f, buf);
            w.fs.close(f);
        }
        total
    }

    fn stat_files(w: &mut MemWork) -> u64 {
        let mut sum = 0;
        for n in w.names.iter() {
            let ino = w.fs.lookup(w.dir, n).expect("lookup");
            sum += w.fs.metadata(ino).expect("metadata").size;
        }
        sum
    }

    fn list_dir(w: &mut MemWork) -> usize {
        let entries = w.fs.read_dir(w.dir, None, usize::MAX).expect("read_dir");
        black_box(&entries);
        entries.len()
    }

    fn unlink_files(w: &mut MemWork) {
        for n in w.names.iter() {
            w.fs.unlink(w.dir, n).expect("unlink");
        }
    }

    fn mkdirs(w: &mut MemWork) {
        for n in w.names.iter() {
            w.fs.mkdir(w.dir, n, 0o755).expect("mkdir");
        }
    }

    fn rmdirs(w: &mut MemWork) {
        for n in w.names.iter() {
            w.fs.rmdir(w.dir, n).expect("rmdir");
        }
    }

    fn write_seq(w: &mut MemWork, chunk: &[u8], count: usize) {
        let f = w.fs.open(w.dir, &w.names[0], &OpenOptions::create()).expect("create");
        let mut off = 0u64;
        for _ in 0..count {
            off += w.fs.write_at(f, off, chunk).expect("write") as u64;
        }
        w.fs.close(f);
    }

    fn read_seq(w: &mut MemWork, buf: &mut [u8]) -> u64 {
        let f = w.fs.open(w.dir, &w.names[0], &OpenOptions::read()).expect("open");
        let n = mem_read_whole(&w.fs, f, buf);
        w.fs.close(f);
        n
    }
}

// ---- BTreeMap<String, Vec<u8>> ---------------------------------------------

/// Full paths (`/bench/<name>`) and directory keys (the same plus `/`),
/// shared by every working map made for one list of names.
struct MapKeys {
    names: Arc<Vec<String>>,
    paths: Vec<String>,
    dir_keys: Vec<String>,
}

#[derive(Default)]
struct Map {
    keys: Option<Arc<MapKeys>>,
}

struct MapWork {
    map: BTreeMap<String, Vec<u8>>,
    keys: Arc<MapKeys>,
}

const MAP_DIR: &str = "/bench/";

impl Store for Map {
    type Work = MapWork;

    fn label(&self) -> &'static str {
        "btreemap"
    }

    fn open_work(&mut self, names: &Arc<Vec<String>>) -> MapWork {
        let keys = match &self.keys {
            Some(k) if Arc::ptr_eq(&k.names, names) => k.clone(),
            _ => {
                let k = Arc::new(MapKeys {
                    names: names.clone(),
                    paths: names.iter().map(|n| format!("{MAP_DIR}{n}")).collect(),
                    dir_keys: names.iter().map(|n| format!("{MAP_DIR}{n}/")).collect(),
                });
                self.keys = Some(k.clone());
                k
            }
        };
        let mut map = BTreeMap::new();
        map.insert(MAP_DIR.to_string(), Vec::new());
        MapWork { map, keys }
    }

    fn create_files(w: &mut MapWork, data: &[u8]) {
        for p in &w.keys.paths {
            w.map.insert(p.clone(), data.to_vec());
        }
    }

    fn read_files(w: &mut MapWork, buf: &mut [u8]) -> u64 {
        let mut total = 0;
        for p in &w.keys.paths {
            let v = w.map.get(p).expect("get");
            buf[..v.len()].copy_from_slice(v);
            black_box(&buf[..v.len()]);
            total += v.len() as u64;
        }
        total
    }

    fn stat_files(w: &mut MapWork) -> u64 {
        w.keys.paths.iter().map(|p| w.map.get(p).expect("get").len() as u64).sum()
    }

    fn list_dir(w: &mut MapWork) -> usize {
        let names: Vec<&str> = w
            .map
            .range::<str, _>((Bound::Excluded(MAP_DIR), Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(MAP_DIR))
            .map(|(k, _)| &k[MAP_DIR.len()..])
            .collect();
        black_box(&names);
        names.len()
    }

    fn unlink_files(w: &mut MapWork) {
        for p in &w.keys.paths {
            w.map.remove(p).expect("remove");
        }
    }

    fn mkdirs(w: &mut MapWork) {
        for k in &w.keys.dir_keys {
            w.map.insert(k.clone(), Vec::new());
        }
    }

    fn rmdirs(w: &mut MapWork) {
        for k in &w.keys.dir_keys {
            let empty = w
                .map
                .range::<str, _>((Bound::Excluded(k.as_str()), Bound::Unbounded))
                .next()
                .is_none_or(|(next, _)| !next.starts_with(k.as_str()));
            assert!(empty, "directory not empty");
            w.map.remove(k).expect("remove");
        }
    }

    fn write_seq(w: &mut MapWork, chunk: &[u8], count: usize) {
        let p = &w.keys.paths[0];
        w.map.insert(p.clone(), Vec::new());
        for _ in 0..count {
            w.map.get_mut(p).expect("get").extend_from_slice(chunk);
        }
    }

    fn read_seq(w: &mut MapWork, buf: &mut [u8]) -> u64 {
        let v = w.map.get(&w.keys.paths[0]).expect("get");
        for part in v.chunks(buf.len()) {
            buf[..part.len()].copy_from_slice(part);
            black_box(&buf[..part.len()]);
        }
        v.len() as u64
    }
}

// ---- vfs MemoryFS -----------------------------------------------------------

struct Vfs;

struct VfsWork {
    fs: vfs::MemoryFS,
    paths: Vec<String>,
}

fn read_to_end(r: &mut impl Read, buf: &mut [u8]) -> u64 {
    let mut total = 0u64;
    loop {
        let k = r.read(buf).expect("read");
        if k == 0 {
            return total;
        }
        black_box(&buf[..k]);
        total += k as u64;
    }
}

impl Store for Vfs {
    type Work = VfsWork;

    fn label(&self) -> &'static str {
        "vfs_memoryfs"
    }

    fn open_work(&mut self, names: &Arc<Vec<String>>) -> VfsWork {
        let fs = vfs::MemoryFS::new();
        fs.create_dir("/bench").expect("create_dir");
        VfsWork { fs, paths: names.iter().map(|n| format!("/bench/{n}")).collect() }
    }

    fn create_files(w: &mut VfsWork, data: &[u8]) {
        for p in &w.paths {
            let mut f = w.fs.create_file(p).expect("create");
            f.write_all(data).expect("write");
        }
    }

    fn read_files(w: &mut VfsWork, buf: &mut [u8]) -> u64 {
        let mut total = 0;
        for p in &w.paths {
            let mut f = w.fs.open_file(p).expect("open");
            total += read_to_end(&mut f, buf);
        }
        total
    }

    fn stat_files(w: &mut VfsWork) -> u64 {
        w.paths.iter().map(|p| w.fs.metadata(p).expect("metadata").len).sum()
    }

    fn list_dir(w: &mut VfsWork) -> usize {
        let names: Vec<String> = w.fs.read_dir("/bench").expect("read_dir").collect();
        black_box(&names);
        names.len()
    }

    fn unlink_files(w: &mut VfsWork) {
        for p in &w.paths {
            w.fs.remove_file(p).expect("remove_file");
        }
    }

    fn mkdirs(w: &mut VfsWork) {
        for p in &w.paths {
            w.fs.create_dir(p).expect("create_dir");
        }
    }

    fn rmdirs(w: &mut VfsWork) {
        for p in &w.paths {
            w.fs.remove_dir(p).expect("remove_dir");
        }
    }

    fn write_seq(w: &mut VfsWork, chunk: &[u8], count: usize) {
        let mut f = w.fs.create_file(&w.paths[0]).expect("create");
        for _ in 0..count {
            f.write_all(chunk).expect("write");
        }
    }

    fn read_seq(w: &mut VfsWork, buf: &mut [u8]) -> u64 {
        let mut f = w.fs.open_file(&w.paths[0]).expect("open");
        read_to_end(&mut f, buf)
    }
}

// ---- std::fs ----------------------------------------------------------------

struct Host {
    label: &'static str,
    root: tempfile::TempDir,
    counter: u64,
}

struct HostWork {
    dir: PathBuf,
    paths: Vec<PathBuf>,
}

impl Host {
    fn new(label: &'static str, parent: &Path) -> Self {
        let root = tempfile::Builder::new().prefix("packfs-bench-").tempdir_in(parent).expect("tempdir");
        Host { label, root, counter: 0 }
    }
}

impl Store for Host {
    type Work = HostWork;

    fn label(&self) -> &'static str {
        self.label
    }

    fn open_work(&mut self, names: &Arc<Vec<String>>) -> HostWork {
        self.counter += 1;
        let dir = self.root.path().join(format!("r{}", self.counter));
        fs::create_dir(&dir).expect("create_dir");
        let paths = names.iter().map(|n| dir.join(n)).collect();
        HostWork { dir, paths }
    }

    fn close_work(&mut self, w: HostWork) {
        fs::remove_dir_all(w.dir).expect("remove_dir_all");
    }

    fn create_files(w: &mut HostWork, data: &[u8]) {
        for p in &w.paths {
            let mut f = File::create(p).expect("create");
            f.write_all(data).expect("write");
        }
    }

    fn read_files(w: &mut HostWork, buf: &mut [u8]) -> u64 {
        let mut total = 0;
        for p in &w.paths {
            let mut f = File::open(p).expect("open");
            total += read_to_end(&mut f, buf);
        }
        total
    }

    fn stat_files(w: &mut HostWork) -> u64 {
        w.paths.iter().map(|p| fs::metadata(p).expect("metadata").len()).sum()
    }

    fn list_dir(w: &mut HostWork) -> usize {
        let names: Vec<_> = fs::read_dir(&w.dir).expect("read_dir").map(|e| e.expect("entry").file_name()).collect();
        black_box(&names);
        names.len()
    }

    fn unlink_files(w: &mut HostWork) {
        for p in &w.paths {
            fs::remove_file(p).expect("remove_file");
        }
    }

    fn mkdirs(w: &mut HostWork) {
        for p in &w.paths {
            fs::create_dir(p).expect("create_dir");
        }
    }

    fn rmdirs(w: &mut HostWork) {
        for p in &w.paths {
            fs::remove_dir(p).expect("remove_dir");
        }
    }

    fn write_seq(w: &mut HostWork, chunk: &[u8], count: usize) {
        let mut f = File::create(&w.paths[0]).expect("create");
        for _ in 0..count {
            f.write_all(chunk).expect("write");
        }
    }

    fn read_seq(w: &mut HostWork, buf: &mut [u8]) -> u64 {
        let mut f = File::open(&w.paths[0]).expect("open");
        read_to_end(&mut f, buf)
    }
}

// ---- one object-safe face for every store --------------------------------------

/// A store with its current working directory.
trait Backend {
    fn label(&self) -> &'static str;
    /// Makes a new, empty working directory current (disposing of the old).
    fn reset(&mut self, names: &Arc<Vec<String>>);
    /// True when there is a current working directory.
    fn ready(&self) -> bool;
    /// Disposes of the current working directory.
    fn clear(&mut self);
    fn create_files(&mut self, data: &[u8]);
    fn read_files(&mut self, buf: &mut [u8]) -> u64;
    fn stat_files(&mut self) -> u64;
    fn list_dir(&mut self) -> usize;
    fn unlink_files(&mut self);
    fn mkdirs(&mut self);
    fn rmdirs(&mut self);
    fn write_seq(&mut self, chunk: &[u8], count: usize);
    fn read_seq(&mut self, buf: &mut [u8]) -> u64;
}

struct Slot<S: Store> {
    store: S,
    cur: Option<S::Work>,
}

impl<S: Store> Slot<S> {
    fn new(store: S) -> Self {
        Slot { store, cur: None }
    }

    fn work(&mut self) -> &mut S::Work {
        self.cur.as_mut().expect("no working directory")
    }
}

impl<S: Store> Drop for Slot<S> {
    fn drop(&mut self) {
        self.clear();
    }
}

impl<S: Store> Backend for Slot<S> {
    fn label(&self) -> &'static str {
        self.store.label()
    }

    fn reset(&mut self, names: &Arc<Vec<String>>) {
        self.clear();
        self.cur = Some(self.store.open_work(names));
    }

    fn ready(&self) -> bool {
        self.cur.is_some()
    }

    fn clear(&mut self) {
        if let Some(w) = self.cur.take() {
            self.store.close_work(w);
        }
    }

    fn create_files(&mut self, data: &[u8]) {
        S::create_files(self.work(), data)
    }

    fn read_files(&mut self, buf: &mut [u8]) -> u64 {
        S::read_files(self.work(), buf)
    }

    fn stat_files(&mut self) -> u64 {
        S::stat_files(self.work())
    }

    fn list_dir(&mut self) -> usize {
        S::list_dir(self.work())
    }

    fn unlink_files(&mut self) {
        S::unlink_files(self.work())
    }

    fn mkdirs(&mut self) {
        S::mkdirs(self.work())
    }

    fn rmdirs(&mut self) {
        S::rmdirs(self.work())
    }

    fn write_seq(&mut self, chunk: &[u8], count: usize) {
        S::write_seq(self.work(), chunk, count)
    }

    fn read_seq(&mut self, buf: &mut [u8]) -> u64 {
        S::read_seq(self.work(), buf)
    }
}

/// What the phase closures see (`Box<dyn Backend>` holds `'static` ones).
type Dyn = dyn Backend + 'static;

/// Whether to measure the disk baseline (`PACKFS_BENCH_DISK=0`: no).
fn disk_wanted() -> bool {
    std::env::var("PACKFS_BENCH_DISK").as_deref() != Ok("0")
}

/// The backends of the single-threaded phases, in report order.
fn backends(with_disk: bool) -> Vec<Box<dyn Backend>> {
    let with_disk = with_disk && disk_wanted();
    let mut v: Vec<Box<dyn Backend>> =
        vec![Box::new(Slot::new(Mem)), Box::new(Slot::new(Map::default())), Box::new(Slot::new(Vfs))];
    if with_disk {
        v.push(Box::new(Slot::new(Host::new("std_tmp", &std::env::temp_dir()))));
    }
    v.push(Box::new(Slot::new(Host::new("std_shm", Path::new("/dev/shm")))));
    v
}

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
