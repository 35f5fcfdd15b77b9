//! The pack format end to end: round trips, determinism, dedup, the reader
//! as a `FileSystem`, integrity checks, hostile bytes, and the golden pack.

mod common;
mod pack_dictionary;
mod pack_golden;
mod pack_lazy_guest;
mod pack_lazy_open;
mod pack_limits;
mod pack_mutation;
mod pack_partial;
mod pack_pin;
mod pack_reader;
mod pack_roundtrip;
mod pack_stream;
mod pack_v2;
