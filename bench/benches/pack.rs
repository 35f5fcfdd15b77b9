//! Pack benchmarks: random reads from a mapped pack against the host
//! filesystem and the archive formats users would otherwise pick, compaction
//! throughput, and open time — every baseline measured in the same run.
//!
//! ```sh
//! cargo bench -p packfs-bench --bench pack
//! ```
//!
//! Groups (criterion names), each tree built once per group, outside the
//! timed region:
//!
//! - `pack_random_read`: one iteration reads all 20,000 files of a tree of
//!   20 x 16 directories (`tNN/sNN/fNNNNNN.dat`, 128 B to 4 KiB each,
//!   unique content), in one fixed shuffled order, by path:
//!   Every reader delivers each file's bytes into memory of its own, as
//!   `std::fs::read` does (a reused buffer where it can):
//!   - `packfs_mmap`: `resolve` the path in a pack mapped by
//!     `packfs_os::mmap::open_pack`, then `read_at` into a buffer, as a
//!     caller of the `FileSystem` trait (the WASI host) reads;
//!   - `packfs_mmap_lookup`: the same without `resolve`: one
//!     `FileSystem::lookup` per component (the cost of the walk itself);
//!   - `packfs_mmap_slice`: `resolve`, then `file_bytes`, the zero-copy
//!     slice, its bytes not touched: what a caller that reads in place pays
//!     before it reads (for the record, not a like-for-like read);
//!   - `std_tmp` / `std_shm`: `std::fs::read` of the path under a temp dir
//!     in `/tmp` (disk) and in `/dev/shm` (tmpfs), page cache warm;
//!   - `zip_mmap`: `ZipArchive::by_name` + `read_to_end` in a stored
//!     (uncompressed) zip, mapped (zip 2; it checks each entry's CRC-32
//!     as it reads, which is its integrity check);
//!   - `tar_mmap_index`: a `HashMap<path, (offset, len)>` built by one pass
//!     over a mapped tar, then the bytes copied out of the mapping
//!     (building the index is timed on its own, `pack_tar_index_build`).
//! - `pack_compact_unique` / `pack_compact_identical`: `PackOptions::write` of a
//!   `MemFs` snapshot into `io::sink()`, N files of 128 B in directories of
//!   100; unique contents, or all the same bytes (every file a dedup
//!   candidate, shared only after a byte compare). The three trees are
//!   built before any is measured, one after the other: built between
//!   measurements, the largest landed in the holes the smaller sizes' runs
//!   had freed, and its step measured the allocator's history as well.
//!   Each compaction starts with cold caches (a read of [`EVICT_BYTES`]
//!   outside the timed region): left warm, the 20k tree (16 MB) stayed in
//!   the last-level cache between iterations while 80k and 320k could
//!   not, and the 4x step measured the cache's size — more or less so
//!   depending on which group had run before.
//! - `pack_open`: `PackFs::open` over the bytes in memory (`mem`) and
//!   `open_pack` of a file (`mmap`: open, map, check the index) at 10k,
//!   100k and 1M files of 16 B; `mem_4KiB` opens 10k files of 4 KiB, 256x
//!   the data of `mem/10000`, to show that open does not read the data.

#![allow(missing_docs, reason = "criterion_group! makes an undocumented public function")]

use std::collections::HashMap;
use std::hint::black_box;
use std::io::{Cursor, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup, BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group};
use packfs_bench::trees::{Rng, Spec, compaction_tree, flat_memfs, memfs, read_tree};
use packfs_core::pack::{PackFs, PackOptions};
use packfs_core::{FileSystem, resolve};
use packfs_os::mmap::{MappedFile, open_pack};

fn group<'c>(c: &'c mut Criterion, name: &str) -> BenchmarkGroup<'c, WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sampling_mode(SamplingMode::Flat);
    g
}

/// Writes `spec` under `root` on the host filesystem.
fn write_host(spec: &Spec, root: &Path) {
    for d in &spec.dirs {
        std::fs::create_dir(root.join(d)).unwrap();
    }
    for (f, data) in &spec.files {
        std::fs::write(root.join(f), data).unwrap();
    }
}

fn zip_bytes(spec: &Spec) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (f, data) in &spec.files {
        w.start_file(f.as_str(), opts).unwrap();
        w.write_all(data).unwrap();
    }
    w.finish().unwrap().into_inner()
}

fn tar_bytes(spec: &Spec) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (f, data) in &spec.files {
        let mut h = tar::Header::new_ustar();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::Regular);
        b.append_data(&mut h, f, &data[..]).unwrap();
    }
    b.into_inner().unwrap()
}

/// One pass over a tar: path -> (offset, length) of each file's bytes.
fn tar_index(bytes: &[u8]) -> HashMap<String, (usize, usize)> {
    let mut archive = tar::Archive::new(bytes);
    let mut index = HashMap::new();
    for e in archive.entries().unwrap() {
        let e = e.unwrap();
        let path = e.path().unwrap().to_str().unwrap().to_owned();
        index.insert(path, (e.raw_file_position() as usize, e.size() as usize));
    }
    index
}

fn random_read(c: &mut Criterion) {
    let spec = read_tree();
    let mut rng = Rng::new(42);
    let mut order: Vec<usize> = (0..spec.files.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let paths: Vec<&str> = order.iter().map(|&i| spec.files[i].0.as_str()).collect();

    let tmp = tempfile::Builder::new().prefix("packfs-bench-pack-").tempdir_in("/tmp").unwrap();
    let shm = tempfile::Builder::new().prefix("packfs-bench-pack-").tempdir_in("/dev/shm").unwrap();
    let archives = tmp.path().join("archives");
    std::fs::create_dir(&archives).unwrap();
    let host_tmp = tmp.path().join("tree");
    std::fs::create_dir(&host_tmp).unwrap();
    write_host(&spec, &host_tmp);
    write_host(&spec, shm.path());

    let pack_path = archives.join("tree.pack");
    PackOptions::new().write(&memfs(&spec).snapshot(), std::fs::File::create(&pack_path).unwrap()).unwrap();
    let pack = open_pack(&pack_path).unwrap();
    let zip_path = archives.join("tree.zip");
    std::fs::write(&zip_path, zip_bytes(&spec)).unwrap();
    let zip_map = MappedFile::open(&zip_path).unwrap();
    let mut zip = zip::ZipArchive::new(Cursor::new(zip_map.bytes())).unwrap();
    let tar_path = archives.join("tree.tar");
    std::fs::write(&tar_path, tar_bytes(&spec)).unwrap();
    let tar_map = MappedFile::open(&tar_path).unwrap();
    let tar_idx = tar_index(tar_map.bytes());
    eprintln!(
        "pack_random_read: {} files, {} dirs, {} bytes of content; pack {} B, zip {} B, tar {} B",
        spec.files.len(),
        spec.dirs.len(),
        spec.files.iter().map(|f| f.1.len()).sum::<usize>(),
        pack.source().len(),
        zip_map.len(),
        tar_map.len()
    );
    // Every reader sees every file with its content.
    for (f, data) in &spec.files {
        let ino = resolve::resolve(&pack, pack.root(), f, true).unwrap();
        assert_eq!(pack.file_bytes(ino).unwrap(), &data[..]);
        let mut buf = Vec::new();
        zip.by_name(f).unwrap().read_to_end(&mut buf).unwrap();
        assert_eq!(&buf, data);
        let (off, len) = tar_idx[f.as_str()];
        assert_eq!(&tar_map.bytes()[off..off + len], &data[..]);
        assert_eq!(&std::fs::read(shm.path().join(f)).unwrap(), data);
    }
    let host_paths = |root: &Path| -> Vec<PathBuf> { paths.iter().map(|p| root.join(p)).collect() };
    let tmp_paths = host_paths(&host_tmp);
    let shm_paths = host_paths(shm.path());

    let mut g = group(c, "pack_random_read");
    g.measurement_time(Duration::from_secs(3));
    let n = paths.len();
    g.throughput(Throughput::Elements(n as u64));
    // Files are at most 4 KiB: one `read_at` reads a file whole.
    g.bench_function(BenchmarkId::new("packfs_mmap", n), |b| {
        let mut buf = vec![0; 4096];
        b.iter(|| {
            for p in &paths {
                let ino = resolve::resolve(&pack, 1, p, true).unwrap();
                black_box(pack.read_at(ino, 0, &mut buf).unwrap());
            }
        })
    });
    g.bench_function(BenchmarkId::new("packfs_mmap_lookup", n), |b| {
        let mut buf = vec![0; 4096];
        b.iter(|| {
            for p in &paths {
                let ino = p.split('/').try_fold(1, |dir, name| pack.lookup(dir, name)).unwrap();
                black_box(pack.read_at(ino, 0, &mut buf).unwrap());
            }
        })
    });
    g.bench_function(BenchmarkId::new("packfs_mmap_slice", n), |b| {
        b.iter(|| {
            for p in &paths {
                let ino = resolve::resolve(&pack, 1, p, true).unwrap();
                black_box(pack.file_bytes(ino).unwrap());
            }
        })
    });
    g.bench_function(BenchmarkId::new("std_tmp", n), |b| {
        b.iter(|| {
            for p in &tmp_paths {
                black_box(std::fs::read(p).unwrap());
            }
        })
    });
    g.bench_function(BenchmarkId::new("std_shm", n), |b| {
        b.iter(|| {
            for p in &shm_paths {
                black_box(std::fs::read(p).unwrap());
            }
        })
    });
    g.bench_function(BenchmarkId::new("zip_mmap", n), |b| {
        let mut buf = Vec::with_capacity(4096);
        b.iter(|| {
            for p in &paths {
                buf.clear();
                zip.by_name(p).unwrap().read_to_end(&mut buf).unwrap();
                black_box(&buf);
            }
        })
    });
    g.bench_function(BenchmarkId::new("tar_mmap_index", n), |b| {
        let bytes = tar_map.bytes();
        let mut buf = vec![0; 4096];
        b.iter(|| {
            for p in &paths {
                let (off, len) = tar_idx[*p];
                buf[..len].copy_from_slice(&bytes[off..off + len]);
                black_box(&buf[..len]);
            }
        })
    });
    g.finish();

    // The one-off cost of the tar index, for the record.
    let mut g = group(c, "pack_tar_index_build");
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function(BenchmarkId::new("tar_mmap", n), |b| b.iter(|| black_box(tar_index(tar_map.bytes()))));
    g.finish();
}

const COMPACT_SIZES: [usize; 3] = [20_000, 80_000, 320_000];

/// Bytes read before each compaction to evict the tree from the caches:
/// four times this machine's 32 MiB last-level cache.
const EVICT_BYTES: usize = 128 << 20;

fn compaction(c: &mut Criterion) {
    // Written once, so that reading it touches real pages, not the zero page.
    let evictor: Vec<u64> = (0..EVICT_BYTES as u64 / 8).collect();
    for (name, unique) in [("pack_compact_unique", true), ("pack_compact_identical", false)] {
        let mut g = group(c, name);
        let snaps = COMPACT_SIZES.map(|n| compaction_tree(n, unique).snapshot());
        for (n, snap) in COMPACT_SIZES.into_iter().zip(snaps) {
            let stats = PackOptions::new().write(&snap, std::io::sink()).unwrap();
            assert_eq!(stats.blobs, if unique { n as u64 } else { 1 });
            g.throughput(Throughput::Elements(n as u64));
            g.bench_function(BenchmarkId::from_parameter(n), |b| {
                // Each eviction runs untimed, just before its compaction.
                b.iter_batched(
                    || black_box(evictor.iter().fold(0u64, |a, &b| a.wrapping_add(b))),
                    |_| PackOptions::new().write(&snap, std::io::sink()).unwrap(),
                    BatchSize::PerIteration,
                )
            });
        }
        g.finish();
    }
}

const OPEN_SIZES: [usize; 3] = [10_000, 100_000, 1_000_000];

fn open(c: &mut Criterion) {
    let dir = tempfile::Builder::new().prefix("packfs-bench-open-").tempdir_in("/tmp").unwrap();
    let mut g = group(c, "pack_open");
    let mut cases = Vec::new();
    for n in OPEN_SIZES {
        cases.push(("mem", n, 16));
    }
    cases.push(("mem_4KiB", 10_000, 4096));
    for (name, n, size) in cases {
        let mut bytes = Vec::new();
        PackOptions::new()
            .write(
                &flat_memfs(n, |i, buf| {
                    buf.extend_from_slice(&(i as u64).to_le_bytes());
                    buf.resize(size, 0);
                })
                .snapshot(),
                &mut bytes,
            )
            .unwrap();
        eprintln!("pack_open: {name}/{n}: pack of {} bytes", bytes.len());
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function(BenchmarkId::new(name, n), |b| b.iter(|| black_box(PackFs::open(&bytes[..]).unwrap().info())));
        if name == "mem" {
            let path = dir.path().join(format!("{n}.pack"));
            std::fs::write(&path, &bytes).unwrap();
            drop(bytes);
            g.bench_function(BenchmarkId::new("mmap", n), |b| b.iter(|| black_box(open_pack(&path).unwrap().info())));
        }
    }
    g.finish();
}

criterion_group!(benches, random_read, compaction, open);
fn main() {
    let since = std::time::SystemTime::now();
    benches();
    Criterion::default().configure_from_args().final_summary();
    packfs_bench::results::criterion_done(
        "pack",
        &["bench/benches/pack.rs", "core/src", "host/os/src/mmap.rs", "host/os/src/pack.rs"],
        since,
    );
}
