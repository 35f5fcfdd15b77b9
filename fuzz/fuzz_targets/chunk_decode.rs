//! Arbitrary bytes as one compressed chunk of a version 2 pack: the first
//! byte picks the codec, the next two the declared length (in units of 16
//! bytes, up to 1 MiB), the rest are the stored bytes. Decoding must fail
//! or give exactly the declared length, never panic or run away. A first
//! byte with its top bit set makes the stored bytes a zstd frame by hand
//! (`fuzzing::frame_from`): a header declaring any window and content
//! size, over blocks of up to 16 MiB, so that what headers claim is tried
//! (run it with `-rss_limit_mb`: a claim honoured is an allocation).
#![no_main]

use libfuzzer_sys::fuzz_target;
use packfs_core::pack::fuzzing::{decode_chunk, frame_from};

fuzz_target!(|data: &[u8]| {
    let Some((&codec, rest)) = data.split_first() else { return };
    let Some((len, stored)) = rest.split_first_chunk::<2>() else { return };
    let len = usize::from(u16::from_le_bytes(*len)) * 16;
    match frame_from(stored) {
        Some((frame, _)) if codec & 0x80 != 0 => decode_chunk(1, &frame, len),
        _ => decode_chunk(codec % 3, stored, len),
    };
});
