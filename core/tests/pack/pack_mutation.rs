//! Hostile bytes: thousands of deterministic mutants of real packs — bytes
//! flipped, cut short, ranges spliced over or duplicated, index fields set to
//! edge values — each opened, walked, read and verified under
//! `catch_unwind`. A corrupt pack must give an error, never a panic (and
//! never an out-of-bounds read, which would panic in safe Rust).
//!
//! Half the mutants get their checksums recomputed (`fuzzing::reseal`), so
//! that they pass the checksums and reach the structural checks behind them.

use std::panic::{AssertUnwindSafe, catch_unwind};

use packfs_core::FileSystem;
use packfs_core::pack::{Compression, PackOptions, fuzzing};

use crate::common::*;

/// One mutation of `base`, described for the failure report.
fn mutate(rng: &mut Rng, base: &[u8]) -> (Vec<u8>, String) {
    let mut b = base.to_vec();
    let len = b.len() as u64;
    let what = match rng.below(6) {
        0 => {
            let n = 1 + rng.below(4);
            for _ in 0..n {
                let at = rng.below(len) as usize;
                b[at] ^= 1 << rng.below(8);
            }
            format!("flip {n} bits")
        }
        1 => {
            let at = rng.below(len) as usize;
            b.truncate(at);
            format!("truncate to {at}")
        }
        2 => {
            let (from, to) = (rng.below(len), rng.below(len));
            let n = rng.below(64).min(len - from.max(to));
            b.copy_within(from as usize..(from + n) as usize, to as usize);
            format!("copy {n} bytes from {from} over {to}")
        }
        3 => {
            let (from, to) = (rng.below(len), rng.below(len));
            let n = rng.below(200).min(len - from);
            let piece = b[from as usize..(from + n) as usize].to_vec();
            b.splice(to as usize..to as usize, piece);
            format!("insert {n} bytes from {from} at {to}")
        }
        _ => {
            // An 8-aligned little-endian field in the last half (index and
            // trailer) set to an edge value.
            let at = (len / 2 + rng.below(len / 2)) & !7;
            let v = match rng.below(8) {
                0 => 0,
                1 => 1,
                2 => u64::MAX,
                3 => u64::from(u32::MAX),
                4 => len,
                5 => rng.below(len),
                6 => 1 << 63,
                _ => rng.below(64),
            };
            let width = [1usize, 2, 4, 8][rng.below(4) as usize];
            let end = (at as usize + width).min(b.len());
            let bytes = v.to_le_bytes();
            b[at as usize..end].copy_from_slice(&bytes[..end - at as usize]);
            format!("set {width} bytes at {at} to {v}")
        }
    };
    if rng.chance(50) {
        fuzzing::reseal(&mut b);
        (b, format!("{what}, resealed"))
    } else {
        (b, what)
    }
}

#[test]
fn pack_mutants_never_panic() {
    let mut trees = vec![
        random_tree_with(11, 20, false, true),
        random_tree_with(12, 60, false, true),
        random_tree_with(13, 120, false, true),
    ];
    let edge = fixed_fs();
    let d = edge.mkdir(edge.root(), "d", 0o755).unwrap();
    let f = write_file(&edge, d, "f", b"x");
    edge.link(f, edge.root(), "hard").unwrap();
    edge.symlink(d, "s", "../hard").unwrap();
    trees.push(edge);

    let mut bases: Vec<Vec<u8>> = trees.iter().map(|t| pack_bytes(t)).collect();
    let mut aligned = Vec::new();
    PackOptions::new().align(64).write(&trees[1], &mut aligned).unwrap();
    bases.push(aligned);
    // Version 2: compressed chunks, small ones so that files span several.
    for c in [Compression::zstd(3), Compression::lz4()] {
        let mut v2 = Vec::new();
        PackOptions::new().compress(Some(c)).chunk_size(4096).write(&trees[1], &mut v2).unwrap();
        // Its index decoded too, so that mutations reach the chunk table.
        bases.push(fuzzing::plain_index(&v2));
        bases.push(v2);
    }

    let mut rng = Rng::new(0x5eed);
    let (mut runs, mut opened) = (0, 0);
    let mut panics = Vec::new();
    for base in &bases {
        assert!(fuzzing::exercise(base), "the unmutated pack must open");
        for _ in 0..2000 {
            let (bytes, what) = mutate(&mut rng, base);
            runs += 1;
            match catch_unwind(AssertUnwindSafe(|| fuzzing::exercise(&bytes))) {
                Ok(true) => opened += 1,
                Ok(false) => {}
                Err(_) => panics.push(what),
            }
        }
    }
    eprintln!("{runs} mutants, {opened} still opened, {} panicked", panics.len());
    assert!(
        panics.is_empty(),
        "{} of {runs} mutants panicked, e.g. {:?}",
        panics.len(),
        &panics[..panics.len().min(5)]
    );
    // The mutants must reach past the checksums, or they test little.
    assert!(opened > runs / 50, "only {opened} of {runs} mutants opened");
}
