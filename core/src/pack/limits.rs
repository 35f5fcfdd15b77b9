//! The limits a lazily opened pack is held to (documented, and
//! re-exported, in [`layout`](super::layout)); apart from it so that the
//! index, which checks them, needs nothing else of the layout.

/// The largest index region (with the trailer) a lazy reader fetches to
/// open a pack: 1 GiB, the index of some ten million entries. A trailer
/// claiming more is refused before anything is fetched, so a hostile pack
/// cannot make a reader hold its whole length.
pub const MAX_FETCHED_INDEX: u64 = 1 << 30;

/// The largest a lazily opened pack's index region may be once decoded:
/// the same 1 GiB as [`MAX_FETCHED_INDEX`]. Any index a lazy reader would
/// take stored as it is, it takes compressed too (the writer compresses
/// an index whenever that saves space, so a lower limit would refuse packs
/// whose plain index it fetches), and compressing cannot make it hold
/// more than the largest plain index. The format alone allows 4 GiB, at
/// most 256 times the stored bytes: 4 MiB fetched could claim 1 GiB, 16 MiB
/// the whole 4 GiB. Checked on the trailer's `index_len` before anything
/// is allocated for it.
pub const MAX_DECODED_INDEX: u64 = MAX_FETCHED_INDEX;

/// The most extents (blobs in version 1, chunks in version 2) a lazily
/// opened pack may have: 2^24, 16,777,216. A lazy reader keeps a slot per
/// extent (24 bytes in a [`Partial`](super::Partial), about 73 in the
/// host's remote source), which a compressed chunk table makes cheap to
/// claim: nearly 2^25 chunk records fit in a [`MAX_DECODED_INDEX`] index,
/// from 4 MiB fetched. 2^24 is more blobs than a version 1 index within
/// [`MAX_FETCHED_INDEX`] can hold (each blob the writer stores is named by
/// a file: at least 89 bytes of records and name, some 12 million in
/// 1 GiB), and 2 TiB of content in the default 128 KiB chunks (16 TiB in
/// 1 MiB ones, past the 5 TiB of S3's largest object). The slots then take
/// at most 384 MiB in a `Partial`, 1.1 GiB in the remote source.
pub const MAX_EXTENTS: u64 = 1 << 24;
