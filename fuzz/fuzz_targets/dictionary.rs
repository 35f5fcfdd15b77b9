//! Arbitrary bytes as a pack's zstd dictionary and a chunk decoded with
//! it: two bytes give the dictionary's length, the next two the chunk's
//! declared length (in units of 16 bytes), then the dictionary's bytes and
//! the chunk's. Loading must fail or give a dictionary, decoding with it
//! fail or give exactly the declared length; neither may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use packfs_core::pack::fuzzing::load_dictionary;

fuzz_target!(|data: &[u8]| {
    let Some((dict_len, rest)) = data.split_first_chunk::<2>() else { return };
    let Some((len, rest)) = rest.split_first_chunk::<2>() else { return };
    let (dict, stored) = rest.split_at(usize::from(u16::from_le_bytes(*dict_len)).min(rest.len()));
    load_dictionary(dict, stored, usize::from(u16::from_le_bytes(*len)) * 16);
});
