//! Mount table scaling: mount, resolve and unmount with 500 to 32,000
//! mounts. The C implementation's table copied itself on every change and
//! went O(n^2) (8,000 mounts: 16,200 resolves/s); ours must stay
//! O(depth x log m).
//!
//! Run: `cargo bench -p packfs-bench --bench mount`

#![allow(missing_docs, reason = "criterion_group! makes an undocumented public function")]

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};
use packfs_core::mount::MountTable;
use packfs_core::{FileSystem, MemFs, OpenOptions};

const SIZES: [usize; 4] = [500, 2_000, 8_000, 32_000];

/// A table with `n` mounts at /m0 .. /m{n-1}, each holding one file "f".
fn table(n: usize) -> MountTable {
    let t = MountTable::new(Arc::new(MemFs::new()), false);
    for i in 0..n {
        let fs = MemFs::new();
        fs.close(fs.open(fs.root(), "f", &OpenOptions::create()).unwrap());
        t.mount(&format!("/m{i}"), Arc::new(fs), false).unwrap();
    }
    t
}

fn mounts(c: &mut Criterion) {
    let mut g = c.benchmark_group("mount");
    g.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    for n in SIZES {
        let paths: Vec<String> = (0..n).map(|i| format!("/m{i}")).collect();
        let fss: Vec<Arc<dyn FileSystem>> = (0..n).map(|_| Arc::new(MemFs::new()) as Arc<dyn FileSystem>).collect();
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function(BenchmarkId::new("mount", n), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let t = MountTable::new(Arc::new(MemFs::new()), false);
                    let start = Instant::now();
                    for (p, fs) in paths.iter().zip(&fss) {
                        t.mount(p, fs.clone(), false).unwrap();
                    }
                    total += start.elapsed();
                }
                total
            })
        });
        g.bench_function(BenchmarkId::new("unmount", n), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let t = table(n);
                    let start = Instant::now();
                    for p in &paths {
                        black_box(t.unmount(p).unwrap());
                    }
                    total += start.elapsed();
                }
                total
            })
        });
        let t = table(n);
        let root = t.root();
        // Resolve "m{i}/f" for i spread over all mounts: one mount-point
        // check per component and one lookup inside the mount.
        let files: Vec<String> = (0..1024).map(|k| format!("m{}/f", (k * 7919) % n)).collect();
        g.throughput(Throughput::Elements(files.len() as u64));
        g.bench_function(BenchmarkId::new("resolve", n), |b| {
            b.iter(|| {
                for f in &files {
                    black_box(t.resolve(&root, f, true).unwrap());
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, mounts);
fn main() {
    let since = std::time::SystemTime::now();
    benches();
    Criterion::default().configure_from_args().final_summary();
    packfs_bench::results::criterion_done("mount", &["bench/benches/mount.rs", "core/src"], since);
}
