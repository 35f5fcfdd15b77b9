//! Arbitrary bytes as a pack's zstd dictionary and a chunk decoded with
//! it: two bytes give the dictionary's length, the next two the chunk's
//! declared length (in units of 16 bytes), then the dictionary's bytes and
//! the chunk's (a frame by hand, `fuzzing::frame_from`, when the top bit of
//! the first length byte is set). Loading must fail or give a dictionary,
//! decoding with it fail or give exactly the declared length; neither may
//! panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use packfs_core::pack::fuzzing::{frame_from, load_dictionary};

fuzz_target!(|data: &[u8]| {
    let Some((dict_len, rest)) = data.split_first_chunk::<2>() else { return };
    let Some((len, rest)) = rest.split_first_chunk::<2>() else { return };
    let by_hand = dict_len[1] & 0x80 != 0;
    let dict_len = usize::from(u16::from_le_bytes(*dict_len) & 0x7fff);
    let (dict, stored) = rest.split_at(dict_len.min(rest.len()));
    let len = usize::from(u16::from_le_bytes(*len)) * 16;
    match frame_from(stored) {
        Some((frame, _)) if by_hand => load_dictionary(dict, &frame, len),
        _ => load_dictionary(dict, stored, len),
    };
});
