//! What a lazy read of 5% of a tree's files fetches from a pack written
//! with the defaults a user gets (`packfs pack`: zstd:9, 128 KiB chunks,
//! a dictionary when the small files hold enough), against the same read
//! of an uncompressed pack; over several samples (disjoint slices of a
//! shuffled order), since which files are read moves the ratio.
//!
//! `cargo run -p packfs-bench --release --example lazy_probe -- TREE [PERCENT]`

use std::path::Path;

use packfs_bench::lazy::{files, lazy_fetched};
use packfs_core::pack::{Compression, PackOptions};
use packfs_os::dir::DirFs;

/// Samples measured (fewer when the tree is too small for them).
const SAMPLES: usize = 10;

fn main() {
    let tree = std::env::args().nth(1).unwrap_or_else(|| "/usr/include/linux".into());
    let percent: usize = std::env::args().nth(2).and_then(|p| p.parse().ok()).unwrap_or(5);
    let src = DirFs::open(Path::new(&tree), true).unwrap();
    let order = files(Path::new(&tree));
    let n = (order.len() * percent).div_ceil(100);
    let samples: Vec<&[String]> = order.chunks_exact(n).take(SAMPLES).collect();
    let pack = |options: PackOptions| {
        let mut out = Vec::new();
        options.write(&src, &mut out).unwrap();
        out
    };
    let plain = pack(PackOptions::new());
    let base: Vec<f64> = samples.iter().map(|s| lazy_fetched(&plain, s) as f64).collect();
    println!("{tree}: {} files; {} samples of {n} ({percent}%)", order.len(), samples.len());
    println!("| pack | pack bytes | the open fetches | all ÷ uncompressed: median [min–max] |");
    println!("|---|--:|--:|--:|");
    for (name, options) in [
        ("uncompressed", PackOptions::new()),
        ("defaults (zstd:9, a dictionary)", PackOptions::new().compress(Some(Compression::zstd(9)))),
        ("zstd:9, no dictionary", PackOptions::new().compress(Some(Compression::zstd(9))).dictionary(false)),
        ("lz4", PackOptions::new().compress(Some(Compression::lz4()))),
    ] {
        let p = pack(options);
        let mut ratios: Vec<f64> = samples.iter().zip(&base).map(|(s, b)| lazy_fetched(&p, s) as f64 / b).collect();
        ratios.sort_by(f64::total_cmp);
        let open = lazy_fetched(&p, &[]);
        let (lo, mid, hi) = (ratios[0], ratios[ratios.len() / 2], ratios[ratios.len() - 1]);
        println!("| {name} | {} | {open} | {mid:.2}x [{lo:.2}x–{hi:.2}x] |", p.len());
    }
}
