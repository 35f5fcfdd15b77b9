//! The first operations in an overlay over a pack whose one directory holds
//! 100,000 files: what a change to a big lower directory costs. A
//! diagnostic for BENCH.md, not a benchmark (single process, best of 5).
//!
//! ```sh
//! cargo run -p packfs-bench --release --example overlay_probe
//! ```

use std::sync::Arc;
use std::time::Instant;

use packfs_core::pack::{PackFs, PackOptions};
use packfs_core::{FileSystem, MemFs, OpenOptions};

const N: usize = 100_000;

fn main() {
    let base = MemFs::new();
    let d = base.mkdir(base.root(), "big", 0o755).expect("mkdir");
    for i in 0..N {
        let f = base.open(d, &format!("f{i:06}"), &OpenOptions::create()).expect("create");
        base.write_at(f, 0, b"0123456789abcdef").expect("write");
        base.close(f);
    }
    let mut bytes = Vec::new();
    PackOptions::new().write(&base.snapshot(), &mut bytes).expect("pack");
    let pack: Arc<dyn FileSystem> = Arc::new(PackFs::open(bytes).expect("open"));
    let mut best = [f64::MAX; 4];
    for _ in 0..5 {
        let fs = MemFs::overlay(pack.clone()).expect("overlay");
        let t = Instant::now();
        let big = fs.lookup(fs.root(), "big").expect("lookup");
        let f = fs.lookup(big, "f054321").expect("lookup");
        fs.read_at(f, 0, &mut [0; 16]).expect("read");
        best[0] = best[0].min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        fs.unlink(big, "f012345").expect("unlink");
        best[1] = best[1].min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        for i in 0..1000 {
            fs.unlink(big, &format!("f{:06}", 20_000 + i)).expect("unlink");
        }
        best[2] = best[2].min(t.elapsed().as_secs_f64() / 1000.0);
        let t = Instant::now();
        let (mut after, mut count): (Option<Arc<str>>, usize) = (None, 0);
        loop {
            let page = fs.read_dir(big, after.as_deref(), 256).expect("read_dir");
            let Some(last) = page.last() else { break };
            after = Some(last.name.clone());
            count += page.len();
        }
        assert_eq!(count, N - 1001);
        best[3] = best[3].min(t.elapsed().as_secs_f64());
    }
    packfs_bench::outln!("overlay over a pack, one directory of {N} files (best of 5):");
    packfs_bench::outln!("  first lookup + read of a file   {:10.1} µs", best[0] * 1e6);
    packfs_bench::outln!("  first unlink                    {:10.1} µs", best[1] * 1e6);
    packfs_bench::outln!("  the next 1,000 unlinks, each    {:10.2} µs", best[2] * 1e6);
    packfs_bench::outln!("  listing all, pages of 256       {:10.2} ms", best[3] * 1e3);
    // Only an optimized build's figures are the results file's (its
    // command says `--release`).
    if cfg!(debug_assertions) {
        return;
    }
    let mut results = packfs_bench::results::Results::new(
        "overlay",
        "cargo run -p packfs-bench --release --example overlay_probe",
        &["bench/examples/overlay_probe.rs", "core/src"],
    );
    results.push("```text");
    results.printed();
    results.push("```");
    results.write().unwrap_or_else(|e| panic!("writing bench/overlay-results.md: {e}"));
}
