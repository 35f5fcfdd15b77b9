//! Arbitrary bytes as a pack: open, walk, read every file, verify. The first
//! byte picks whether the rest gets its checksums recomputed first (odd), so
//! that mutations reach the structural checks behind the checksums.
#![no_main]

use libfuzzer_sys::fuzz_target;
use packfs_core::pack::fuzzing::{exercise, reseal};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let mut bytes = rest.to_vec();
    if mode & 1 == 1 {
        reseal(&mut bytes);
    }
    exercise(&bytes);
});
