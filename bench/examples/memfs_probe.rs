//! Where a `MemFs` operation's time goes: heap allocations per operation
//! and micro-timings of its parts, next to the same lookups on a bare
//! `Treap` and a `BTreeMap`. A diagnostic for BENCH.md, not a benchmark:
//! single process, best of several rounds, no statistics.
//!
//! ```sh
//! cargo run -p packfs-bench --release --example memfs_probe [-- <files>]
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use packfs_core::treap::Treap;
use packfs_core::{FileSystem, Ino, MemFs, OpenOptions};

/// Counts allocations and allocated bytes.
struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards every call unchanged to the system allocator; the
// counters are plain atomics.
#[allow(unsafe_code, reason = "a counting allocator is a GlobalAlloc")]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(layout.size() as u64, Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        BYTES.fetch_add(new_size as u64, Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `op` once per item and prints allocations and bytes per call.
fn allocs<T>(label: &str, items: &[T], mut op: impl FnMut(&T)) {
    let (a, b) = (ALLOCS.load(Relaxed), BYTES.load(Relaxed));
    for it in items {
        op(it);
    }
    let n = items.len() as f64;
    let (da, db) = (ALLOCS.load(Relaxed) - a, BYTES.load(Relaxed) - b);
    println!("  {label:<34} {:6.1} allocations {:7.0} bytes", da as f64 / n, db as f64 / n);
}

/// Best of `rounds` runs of `f` (which does `n` operations), in ns per op.
fn time(label: &str, rounds: usize, n: usize, mut f: impl FnMut()) {
    let mut best = f64::MAX;
    for _ in 0..rounds {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!("  {label:<44} {:7.0} ns/op", best / n as f64 * 1e9);
}

fn filled(names: &[String], data: &[u8]) -> (MemFs, Ino, Vec<Ino>) {
    let fs = MemFs::new();
    let dir = fs.mkdir(fs.root(), "bench", 0o755).expect("mkdir");
    let inos = names
        .iter()
        .map(|n| {
            let f = fs.open(dir, n, &OpenOptions::create()).expect("create");
            fs.write_at(f, 0, data).expect("write");
            fs.close(f);
            f
        })
        .collect();
    (fs, dir, inos)
}

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let names: Vec<String> = (0..n).map(|i| format!("f{i:07}")).collect();
    let data = [0x5Au8; 128];
    let mut buf = [0u8; 4096];

    // Resident memory first, while the heap holds nothing freed that a fill
    // could reuse unseen.
    let before = resident_kib();
    let (fs, _, _) = filled(&names, &data);
    let per_file = (resident_kib().saturating_sub(before) * 1024) as f64 / n as f64;
    drop(fs);

    println!("{n} files of 128 B in one directory: {per_file:.0} bytes of resident memory per file (VmRSS delta)");
    println!("\nheap allocations per call:");
    let fs = MemFs::new();
    let dir = fs.mkdir(fs.root(), "bench", 0o755).expect("mkdir");
    let mut inos = Vec::with_capacity(n);
    allocs("open(create) of a new name", &names, |n| {
        inos.push(fs.open(dir, n, &OpenOptions::create()).expect("create"))
    });
    allocs("write_at 128 B at 0", &inos, |&f| {
        fs.write_at(f, 0, &data).expect("write");
    });
    allocs("close", &inos, |&f| fs.close(f));
    allocs("lookup + metadata", &names, |n| {
        black_box(fs.metadata(fs.lookup(dir, n).expect("lookup")).expect("metadata"));
    });
    allocs("open(read) + read_at + close", &names, |n| {
        let f = fs.open(dir, n, &OpenOptions::read()).expect("open");
        black_box(fs.read_at(f, 0, &mut buf).expect("read"));
        fs.close(f);
    });
    allocs("set_mode (one commit, one inode)", &inos, |&f| fs.set_mode(f, 0o600).expect("set_mode"));
    allocs("unlink", &names, |n| fs.unlink(dir, n).expect("unlink"));
    drop(fs);

    let rounds = 7;
    println!("\nMemFs, best of {rounds} rounds:");
    let (fs, dir, inos) = filled(&names, &data);
    time("lookup + metadata (the `stat` phase)", rounds, n, || {
        for name in &names {
            black_box(fs.metadata(fs.lookup(dir, name).expect("lookup")).expect("metadata"));
        }
    });
    time("lookup", rounds, n, || {
        for name in &names {
            black_box(fs.lookup(dir, name).expect("lookup"));
        }
    });
    time("metadata by inode number", rounds, n, || {
        for &i in &inos {
            black_box(fs.metadata(i).expect("metadata"));
        }
    });
    time("open(read) + close", rounds, n, || {
        for name in &names {
            fs.close(fs.open(dir, name, &OpenOptions::read()).expect("open"));
        }
    });
    time("read_at 128 B (whole file)", rounds, n, || {
        for &i in &inos {
            black_box(fs.read_at(i, 0, &mut buf).expect("read"));
        }
    });
    time("read_at at end of file (returns 0)", rounds, n, || {
        for &i in &inos {
            black_box(fs.read_at(i, 128, &mut buf).expect("read"));
        }
    });
    time("set_mode (one commit, one inode path)", rounds, n, || {
        for &i in &inos {
            fs.set_mode(i, 0o644).expect("set_mode");
        }
    });
    drop(fs);
    let mut t_open = f64::MAX;
    let mut t_write = f64::MAX;
    for _ in 0..rounds {
        let fs = MemFs::new();
        let dir = fs.mkdir(fs.root(), "bench", 0o755).expect("mkdir");
        let t = Instant::now();
        let inos: Vec<Ino> = names.iter().map(|n| fs.open(dir, n, &OpenOptions::create()).expect("create")).collect();
        let open = t.elapsed().as_secs_f64();
        let t = Instant::now();
        for &f in &inos {
            fs.write_at(f, 0, &data).expect("write");
        }
        t_write = t_write.min(t.elapsed().as_secs_f64());
        t_open = t_open.min(open);
    }
    println!("  {:<44} {:7.0} ns/op", "open(create) of a new name", t_open / n as f64 * 1e9);
    println!("  {:<44} {:7.0} ns/op", "write_at 128 B into a new file", t_write / n as f64 * 1e9);

    // 4 KiB: the pieces a p1 guest's writes reach the host in (the
    // preview1 adapter writes at most 4 KiB per stream call).
    for piece in [64 << 10, 4 << 10] {
        println!(
            "\n64 MiB written in {} KiB writes to a new file of a new MemFs (wall time, minor page faults, heap allocations):",
            piece >> 10
        );
        let chunk = vec![7u8; piece];
        let count = (64 << 20) / piece as u64;
        for round in 0..3 {
            let fs = MemFs::new();
            let f = fs.open(fs.root(), "big", &OpenOptions::create()).expect("create");
            let faults = minor_faults();
            let allocs = ALLOCS.load(Relaxed);
            let t = Instant::now();
            for i in 0..count {
                fs.write_at(f, i * piece as u64, &chunk).expect("write");
            }
            let el = t.elapsed();
            println!(
                "  round {round}: {:7.2} ms ({:.0} ns/write), {} minor faults, {:.1} allocations/write",
                el.as_secs_f64() * 1e3,
                el.as_secs_f64() * 1e9 / count as f64,
                minor_faults() - faults,
                (ALLOCS.load(Relaxed) - allocs) as f64 / count as f64
            );
            fs.close(f);
        }
    }

    println!("\nthe same lookups on bare structures:");
    let mut t_ino: Treap<u64, [u64; 13]> = Treap::new();
    let mut b_ino: BTreeMap<u64, [u64; 13]> = BTreeMap::new();
    let mut t_dir: Treap<(u64, Arc<str>), u64> = Treap::new();
    let mut b_dir: BTreeMap<(u64, Arc<str>), u64> = BTreeMap::new();
    for (k, name) in names.iter().enumerate() {
        t_ino.insert(k as u64, [k as u64; 13]);
        b_ino.insert(k as u64, [k as u64; 13]);
        t_dir.insert((2, name.as_str().into()), k as u64);
        b_dir.insert((2, name.as_str().into()), k as u64);
    }
    time("Treap<u64, 104 B>::get", rounds, n, || {
        for k in 0..n as u64 {
            black_box(t_ino.get(&k));
        }
    });
    time("BTreeMap<u64, 104 B>::get", rounds, n, || {
        for k in 0..n as u64 {
            black_box(b_ino.get(&k));
        }
    });
    time("Treap<(u64, Arc<str>), u64>::get_with", rounds, n, || {
        for name in &names {
            black_box(t_dir.get_with(|(d, s)| d.cmp(&2).then_with(|| (**s).cmp(name.as_str()))));
        }
    });
    let keys: Vec<(u64, Arc<str>)> = names.iter().map(|s| (2, s.as_str().into())).collect();
    time("BTreeMap<(u64, Arc<str>), u64>::get", rounds, n, || {
        for k in &keys {
            black_box(b_dir.get(k));
        }
    });
    let cmps = std::cell::Cell::new(0u64);
    for name in &names {
        t_dir.get_with(|(d, s)| {
            cmps.set(cmps.get() + 1);
            d.cmp(&2).then_with(|| (**s).cmp(name.as_str()))
        });
    }
    println!("  treap nodes visited per name lookup: {:.1}", cmps.get() as f64 / n as f64);
}

/// This process's minor page faults so far (`/proc/self/stat`, field 10).
fn minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name, which is in parentheses.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    rest.split_whitespace().nth(7).and_then(|f| f.parse().ok()).unwrap_or(0)
}

/// This process's resident set size in KiB (`/proc/self/status`, `VmRSS`).
fn resident_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap_or("");
    line.split_whitespace().nth(1).and_then(|k| k.parse().ok()).unwrap_or(0)
}
