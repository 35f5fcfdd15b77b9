//! Arbitrary bytes as a pack: open, walk, read every file, verify. The first
//! byte picks whether the rest gets its checksums recomputed first (bit 0),
//! so that mutations reach the structural checks behind the checksums, and
//! whether the pack's index region is replaced by a zstd frame by hand
//! (bit 1: `fuzzing::frame_from`, then 4 bytes of the `index_len` it is
//! said to decode to, then the pack), so that what a frame's header claims
//! reaches the index decoder behind the checksums.
#![no_main]

use libfuzzer_sys::fuzz_target;
use packfs_core::pack::fuzzing::{exercise, frame_from, reseal, with_index};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let mut bytes = match frame_from(rest) {
        Some((frame, rest)) if mode & 2 != 0 => {
            let Some((len, pack)) = rest.split_first_chunk::<4>() else { return };
            with_index(pack, &frame, u32::from_le_bytes(*len))
        }
        _ => rest.to_vec(),
    };
    if mode & 1 == 1 {
        reseal(&mut bytes);
    }
    exercise(&bytes);
});
