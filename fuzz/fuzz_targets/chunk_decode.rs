//! Arbitrary bytes as one compressed chunk of a version 2 pack: the first
//! byte picks the codec, the next two the declared length (in units of 16
//! bytes, up to 1 MiB), the rest are the stored bytes. Decoding must fail
//! or give exactly the declared length, never panic or run away.
#![no_main]

use libfuzzer_sys::fuzz_target;
use packfs_core::pack::fuzzing::decode_chunk;

fuzz_target!(|data: &[u8]| {
    let Some((&codec, rest)) = data.split_first() else { return };
    let Some((len, stored)) = rest.split_first_chunk::<2>() else { return };
    decode_chunk(codec % 3, stored, usize::from(u16::from_le_bytes(*len)) * 16);
});
