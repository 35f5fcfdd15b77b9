//! What a lazy read of 5% of a tree's files fetches from a pack written
//! with the defaults a user gets (`packfs pack`: zstd:9, 128 KiB chunks,
//! a dictionary when the small files hold enough), against the same read
//! of an uncompressed pack; over several samples (disjoint slices of a
//! shuffled order), since which files are read moves the ratio. Writes
//! its tables into bench/compress-results.md (block `lazy`).
//!
//! `cargo run -p packfs-bench --release --example lazy_probe -- [TREE...]`
//! (default: `/usr/include/linux`, `/usr/lib/python3.11`, `/usr/include`)

use std::path::Path;

use packfs_bench::lazy::{files, lazy_fetched};
use packfs_bench::outln;
use packfs_bench::results::Results;
use packfs_core::pack::{Compression, PackOptions};
use packfs_os::dir::DirFs;

/// Samples measured (fewer when the tree is too small for them).
const SAMPLES: usize = 10;
const PERCENT: usize = 5;

fn main() {
    let mut trees: Vec<String> = std::env::args().skip(1).collect();
    let whole = trees.is_empty();
    if whole {
        trees = ["/usr/include/linux", "/usr/lib/python3.11", "/usr/include"].map(String::from).to_vec();
    }
    for tree in &trees {
        probe(tree);
    }
    if whole {
        let mut results = Results::new(
            "compress",
            "cargo run -p packfs-bench --release --example lazy_probe",
            &["bench/examples/lazy_probe.rs", "bench/src/lazy.rs", "core/src/pack"],
        )
        .variant("lazy");
        results.printed();
        results.write().unwrap_or_else(|e| panic!("writing bench/compress-results.md: {e}"));
    }
}

fn probe(tree: &str) {
    let src = DirFs::open(Path::new(tree), true).unwrap();
    let order = files(Path::new(tree));
    let n = (order.len() * PERCENT).div_ceil(100);
    let samples: Vec<&[String]> = order.chunks_exact(n).take(SAMPLES).collect();
    let pack = |options: PackOptions| {
        let mut out = Vec::new();
        options.write(&src, &mut out).unwrap();
        out
    };
    let plain = pack(PackOptions::new());
    let base: Vec<f64> = samples.iter().map(|s| lazy_fetched(&plain, s) as f64).collect();
    outln!(
        "\n`{tree}`: {} files; {} samples of {n} ({PERCENT}%), bytes fetched ÷ the uncompressed pack's\n",
        order.len(),
        samples.len()
    );
    outln!("| pack | pack bytes | the open fetches | all ÷ uncompressed: median [min–max] |");
    outln!("|---|--:|--:|--:|");
    for (name, options) in [
        ("uncompressed", PackOptions::new()),
        ("**defaults** (zstd:9, a dictionary)", PackOptions::new().compress(Some(Compression::zstd(9)))),
        ("zstd:9, no dictionary", PackOptions::new().compress(Some(Compression::zstd(9))).dictionary(false)),
        ("lz4", PackOptions::new().compress(Some(Compression::lz4()))),
    ] {
        let p = pack(options);
        let mut ratios: Vec<f64> = samples.iter().zip(&base).map(|(s, b)| lazy_fetched(&p, s) as f64 / b).collect();
        ratios.sort_by(f64::total_cmp);
        let open = lazy_fetched(&p, &[]);
        let (lo, mid, hi) = (ratios[0], ratios[ratios.len() / 2], ratios[ratios.len() - 1]);
        outln!("| {name} | {} | {open} | {mid:.2}x [{lo:.2}x–{hi:.2}x] |", p.len());
    }
}
