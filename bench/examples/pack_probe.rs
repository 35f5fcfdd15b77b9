//! Where the pack's read path and writer spend their time: a diagnostic for
//! bench/pack-results.md, not a benchmark (single process, best of several
//! interleaved rounds, no statistics). The trees are those of
//! `benches/pack.rs`.
//!
//! ```sh
//! cargo run -p packfs-bench --release --example pack_probe -- read [ROUNDS]
//! cargo run -p packfs-bench --release --example pack_probe -- compact [ROUNDS]
//! # one pass of one part, for `valgrind --tool=callgrind`:
//! target/release/examples/pack_probe once-read | once-compact N unique|identical [TIMES]
//! # open against the first lookup (which builds the hash index):
//! target/release/examples/pack_probe first-lookup
//! ```

use std::collections::HashMap;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use packfs_bench::trees::{Rng, compaction_tree, flat_memfs, memfs, read_tree};
use packfs_core::pack::{PackFs, PackOptions};
use packfs_core::{FileSystem, Snapshot, resolve};
use packfs_os::mmap::open_pack;

fn time(mut f: impl FnMut()) -> Duration {
    let t = Instant::now();
    f();
    t.elapsed()
}

fn per(d: Duration, n: usize) -> f64 {
    d.as_secs_f64() * 1e9 / n as f64
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg").map(|s| s.split(' ').next().unwrap_or("?").to_owned()).unwrap_or_default()
}

fn read(rounds: usize, once: bool) {
    let spec = read_tree();
    let (dirs, files) = (&spec.dirs, &spec.files);
    let mut rng = Rng::new(42);
    let mut order: Vec<usize> = (0..files.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let paths: Vec<&str> = order.iter().map(|&i| files[i].0.as_str()).collect();
    let tmp = tempfile::Builder::new().prefix("packfs-probe-").tempdir_in("/tmp").unwrap();
    let pack_path = tmp.path().join("tree.pack");
    PackOptions::new().write(&memfs(&spec).snapshot(), std::fs::File::create(&pack_path).unwrap()).unwrap();
    let pack = open_pack(&pack_path).unwrap();
    let one = |pack: &PackFs<_>| {
        for p in &paths {
            let ino = resolve::resolve(pack, 1, p, true).unwrap();
            black_box(pack.file_bytes(ino).unwrap());
        }
    };
    one(&pack);
    if once {
        return;
    }
    let shm = tempfile::Builder::new().prefix("packfs-probe-").tempdir_in("/dev/shm").unwrap();
    for d in dirs {
        std::fs::create_dir(shm.path().join(d)).unwrap();
    }
    for (f, data) in files {
        std::fs::write(shm.path().join(f), data).unwrap();
    }
    let shm_paths: Vec<PathBuf> = paths.iter().map(|p| shm.path().join(p)).collect();
    let n = paths.len();
    println!("random reads of {n} files: ns per read (load {})", load());
    let inos: Vec<u64> = paths.iter().map(|p| resolve::resolve(&pack, 1, p, true).unwrap()).collect();
    let mut sorted = paths.clone();
    sorted.sort_unstable();
    // The tar baseline's structure: a HashMap from the whole path to where the bytes lie.
    let map: HashMap<&str, (usize, usize)> = paths.iter().map(|p| (*p, (p.len(), 1))).collect();
    println!(
        "{:>6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8}",
        "round", "pack", "lookups", "resolve", "file_bytes", "sorted", "hashmap", "shm", "shm/pack"
    );
    let (mut best_pack, mut best_shm) = (f64::MAX, f64::MAX);
    for r in 0..rounds {
        let p = per(time(|| one(&pack)), n);
        let l = per(
            time(|| {
                for p in &paths {
                    let ino = p.split('/').try_fold(1, |dir, name| pack.lookup(dir, name)).unwrap();
                    black_box(pack.file_bytes(ino).unwrap());
                }
            }),
            n,
        );
        let rs = per(
            time(|| {
                for p in &paths {
                    black_box(resolve::resolve(&pack, 1, p, true).unwrap());
                }
            }),
            n,
        );
        let fb = per(
            time(|| {
                for &ino in &inos {
                    black_box(pack.file_bytes(ino).unwrap());
                }
            }),
            n,
        );
        let o = per(
            time(|| {
                for p in &sorted {
                    let ino = resolve::resolve(&pack, 1, p, true).unwrap();
                    black_box(pack.file_bytes(ino).unwrap());
                }
            }),
            n,
        );
        let h = per(
            time(|| {
                for p in &paths {
                    black_box(map[*p]);
                }
            }),
            n,
        );
        let s = per(
            time(|| {
                for p in &shm_paths {
                    black_box(std::fs::read(p).unwrap());
                }
            }),
            n,
        );
        best_pack = best_pack.min(p);
        best_shm = best_shm.min(s);
        println!("{r:>6} {p:>10.1} {l:>10.1} {rs:>10.1} {fb:>10.1} {o:>10.1} {h:>10.1} {s:>10.1} {:>7.1}x", s / p);
    }
    println!("best: pack {best_pack:.1} ns, shm {best_shm:.1} ns, {:.1}x (load {})", best_shm / best_pack, load());
}

fn compact(rounds: usize) {
    println!("compaction into io::sink(): ns per entry (load {})", load());
    for unique in [true, false] {
        let snaps: Vec<(usize, Snapshot)> =
            [20_000, 80_000, 320_000].map(|n| (n, compaction_tree(n, unique).snapshot())).into();
        let mut best = [f64::MAX; 3];
        for _ in 0..rounds {
            for (k, (n, snap)) in snaps.iter().enumerate() {
                let d = time(|| {
                    black_box(PackOptions::new().write(snap, std::io::sink()).unwrap());
                });
                best[k] = best[k].min(per(d, *n));
            }
        }
        println!(
            "{}: {:.0} / {:.0} / {:.0} ns per entry at 20k / 80k / 320k; {:.2}M / {:.2}M / {:.2}M entries/s; steps {:.2}x {:.2}x (load {})",
            if unique { "unique" } else { "identical" },
            best[0],
            best[1],
            best[2],
            1e3 / best[0],
            1e3 / best[1],
            1e3 / best[2],
            4.0 * best[1] / best[0],
            4.0 * best[2] / best[1],
            load()
        );
    }
}

/// What the first lookup costs (it builds the hash index) next to open, at
/// the sizes of the open benchmark.
fn first_lookup() {
    println!("open and first lookup, files of 16 B in directories of 100 (load {})", load());
    for n in [10_000, 100_000, 1_000_000] {
        let mut bytes = Vec::new();
        let snap = flat_memfs(n, |i, buf| buf.extend_from_slice(&(i as u128).to_le_bytes())).snapshot();
        PackOptions::new().write(&snap, &mut bytes).unwrap();
        let (mut open, mut first, mut next) = (f64::MAX, f64::MAX, f64::MAX);
        for _ in 0..5 {
            let t = Instant::now();
            let pack = PackFs::open(&bytes[..]).unwrap();
            open = open.min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            black_box(pack.lookup(1, "d0000").unwrap());
            first = first.min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            black_box(pack.lookup(1, "d0001").unwrap());
            next = next.min(t.elapsed().as_secs_f64());
        }
        println!(
            "{n:>9} files: open {:.2} ms ({:.0} ns/entry), first lookup {:.2} ms ({:.0} ns/entry), next lookup {:.2} us",
            open * 1e3,
            open * 1e9 / n as f64,
            first * 1e3,
            first * 1e9 / n as f64,
            next * 1e6
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds = args.get(1).and_then(|r| r.parse().ok()).unwrap_or(7);
    match args.first().map(String::as_str) {
        Some("read") => read(rounds, false),
        Some("compact") => compact(rounds),
        Some("once-read") => read(0, true),
        Some("first-lookup") => first_lookup(),
        Some("once-compact") => {
            let n = args.get(1).and_then(|r| r.parse().ok()).unwrap_or(20_000);
            let snap = compaction_tree(n, args.get(2).map(String::as_str) != Some("identical")).snapshot();
            let times = args.get(3).and_then(|r| r.parse().ok()).unwrap_or(1);
            for _ in 0..times {
                black_box(PackOptions::new().write(&snap, std::io::sink()).unwrap());
            }
        }
        _ => eprintln!("usage: pack_probe read|compact [ROUNDS] | once-read | once-compact N unique|identical [TIMES]"),
    }
}
