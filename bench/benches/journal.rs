//! Durable creates: a journaled MemFs (fdatasync per change, or group
//! commit across 8 threads) against the host filesystem creating each file
//! with an fsync — in the same run, on the same disk-backed directory.
//! (The C implementation's fsync-per-create ran at 172 ops/s.)
//!
//! Run: `cargo bench -p packfs-bench --bench journal`

#![allow(missing_docs, reason = "criterion_group! makes an undocumented public function")]

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};
use packfs_core::mem::Quota;
use packfs_core::{FileSystem, MemFs, OpenOptions};
use packfs_os::journal::{Journal, SyncPolicy};

const FILES: usize = 400;
const THREADS: usize = 8;
const DATA: [u8; 128] = [7; 128];

/// One durable create: open with create, write 128 bytes (two journal records).
fn create(fs: &MemFs, dir: u64, name: &str) {
    let f = fs.open(dir, name, &OpenOptions::create_new()).unwrap();
    fs.write_at(f, 0, &DATA).unwrap();
    fs.close(f);
}

fn journaled(policy: SyncPolicy, threads: usize) -> Duration {
    let tmp = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let journal = Journal::open(tmp.path(), policy, Quota::default()).unwrap();
    let fs = journal.fs().clone();
    let start = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let fs = fs.clone();
            std::thread::spawn(move || {
                let dir = fs.mkdir(fs.root(), &format!("t{t}"), 0o755).unwrap();
                for i in 0..FILES / threads {
                    create(&fs, dir, &format!("f{i}"));
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    start.elapsed()
}

fn host_fsync(threads: usize) -> Duration {
    let tmp = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let root = Arc::new(tmp.path().to_path_buf());
    let start = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let root = root.clone();
            std::thread::spawn(move || {
                let dir = root.join(format!("t{t}"));
                std::fs::create_dir(&dir).unwrap();
                for i in 0..FILES / threads {
                    let mut f = std::fs::File::create_new(dir.join(format!("f{i}"))).unwrap();
                    f.write_all(&DATA).unwrap();
                    f.sync_all().unwrap();
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    start.elapsed()
}

fn durable_creates(c: &mut Criterion) {
    let mut g = c.benchmark_group("durable-create");
    g.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(5));
    g.throughput(Throughput::Elements(FILES as u64));
    for threads in [1, THREADS] {
        g.bench_function(BenchmarkId::new("host-fs+fsync", threads), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| host_fsync(threads)).sum())
        });
        g.bench_function(BenchmarkId::new("journal-every-op", threads), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| journaled(SyncPolicy::EveryOp, threads)).sum())
        });
        g.bench_function(BenchmarkId::new("journal-group-commit", threads), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| journaled(SyncPolicy::GroupCommit, threads)).sum())
        });
    }
    g.finish();
}

criterion_group!(benches, durable_creates);
fn main() {
    let since = std::time::SystemTime::now();
    benches();
    Criterion::default().configure_from_args().final_summary();
    packfs_bench::results::criterion_done(
        "journal",
        &["bench/benches/journal.rs", "core/src", "host/os/src/journal"],
        since,
    );
}
