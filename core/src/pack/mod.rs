//! The pack format: a read-only, random-access, checksummed archive of a
//! whole tree, and its writer, reader and verifier. The normative spec is
//! `docs/pack-format.md`; each on-disk structure has its own module here,
//! opening with its byte layout.
//!
//! ```text
//!  0        64                                   index_offset          len-128   len
//!  ┌────────┬──────────────────────────────────────┬──────────────────────┬─────────┐
//!  │ header │ data: blobs, each aligned, checksum'd │ inodes·dirents·blobs │ trailer │
//!  │        │                                      │ ·strings (checksum'd)│         │
//!  └────────┴──────────────────────────────────────┴──────────────────────┴─────────┘
//! ```
//!
//! - Writing ([`PackOptions`], [`write_pack`]) streams: the header, then the
//!   data as the walk meets it, then the index and the trailer. Memory is
//!   O(entries); the output is never sought. Equal contents share a blob
//!   only after a byte-by-byte comparison.
//! - Reading ([`PackFs`]) works in place over any [`ByteSource`]: a slice,
//!   a mapped file, or a [`Partial`] pack whose blobs arrive as reads ask
//!   for them. Opening reads the header, the trailer and the index region
//!   and checks them — O(entries), never O(data) — so a corrupt or hostile
//!   pack is an [`Error::Corrupt`] (or [`Error::UnsupportedVersion`]),
//!   never a panic.
//! - [`PackFs::verify`] also checks every blob; [`ReadOptions`] can check
//!   each blob on its first read.
//!
//! What it does not do: write files or publish them atomically (core has no
//! OS I/O; the host does), or change a pack in place.
//!
//! [`Error::Corrupt`]: crate::Error::Corrupt
//! [`Error::UnsupportedVersion`]: crate::Error::UnsupportedVersion

// Format fields are fixed-width and the web build's usize is 32 bits: a silent
// truncation here reads or writes the wrong bytes.
#![warn(clippy::cast_possible_truncation)]

mod blob;
mod chunk;
mod chunk_cache;
mod content;
mod cursor;
mod dictionary;
mod dirent;
mod frame;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
mod hash_index;
mod header;
mod index;
mod inode;
pub mod layout;
mod lazy_open;
mod limits;
mod partial;
mod pieces;
mod reader;
mod source;
mod trailer;
mod verify;
mod writer;

pub use crate::digest::{Digest, DigestError, split_pin};
pub use crate::error::corrupt::{CorruptKind, CorruptPack, Limit, Structure};
pub use blob::checksum;
pub use chunk::{Codec, Compression, DEFAULT_CHUNK_SIZE, is_chunk_size};
pub use layout::{CodecStats, ContentStats, Layout};
pub use lazy_open::{LazyOpen, OpenStep, TAIL_LEN};
pub use partial::{MERGE_GAP, Merged, Partial, merge_ranges, until_loaded, until_loaded_async};
pub use pieces::Pieces;
pub use reader::{PackFs, PackInfo, ReadOptions};
pub use source::ByteSource;
pub use verify::{BadEntry, VerifyReport};
pub use writer::{PackOptions, PackStats, WriteError, write_pack};

/// The newest format version this crate writes and reads; it reads every
/// version from 1. Uncompressed packs are written as version 1, compressed
/// ones as version 2.
pub const FORMAT_VERSION: u32 = 2;
