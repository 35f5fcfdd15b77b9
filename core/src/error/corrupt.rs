//! [`CorruptPack`]: what is wrong with a pack, and where.
//!
//! Every check a reader makes on untrusted bytes fails with one of these: the
//! byte offset of the structure that failed and a [`CorruptKind`] naming the
//! check, with the expected and actual values where there are two. It
//! travels inside [`Error::Corrupt`](crate::Error::Corrupt) (errno `EIO`).

use std::fmt;

use crate::digest::Digest;

/// A pack failed a check: `kind` says which, `offset` is the absolute byte
/// offset in the pack of the structure (header, record, blob) that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorruptPack {
    /// Byte offset in the pack of the structure that failed the check.
    pub offset: u64,
    /// The check that failed.
    pub kind: CorruptKind,
}

impl CorruptPack {
    pub(crate) fn new(offset: u64, kind: CorruptKind) -> Self {
        CorruptPack { offset, kind }
    }
}

impl fmt::Display for CorruptPack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            // Not damage: a pack too large for the reader it was given to.
            CorruptKind::TooLarge { .. } => write!(f, "pack refused at byte {}: {}", self.offset, self.kind),
            // Not damage either: not the pack the caller pinned.
            CorruptKind::Pinned { .. } | CorruptKind::NoDigests => write!(f, "pack refused: {}", self.kind),
            _ => write!(f, "corrupt pack at byte {}: {}", self.offset, self.kind),
        }
    }
}

/// Which structure of a pack failed which check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Structure {
    /// The fixed header at offset 0.
    Header,
    /// The fixed trailer at the end.
    Trailer,
    /// The index region (inode, dirent, blob and string tables).
    Index,
    /// One record of the inode table.
    Inode,
    /// One record of the dirent table.
    Dirent,
    /// One record of the blob table.
    BlobRecord,
    /// The bytes of one blob in the data section.
    Blob,
    /// One record of the chunk table (version 2).
    ChunkRecord,
    /// The stored bytes of one chunk in the data section (version 2).
    Chunk,
    /// The digest table (compat flag `DIGESTS`).
    Digests,
    /// Version 2's zstd dictionary (incompat flag `DICTIONARY`).
    Dictionary,
}

impl fmt::Display for Structure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Structure::Header => "header",
            Structure::Trailer => "trailer",
            Structure::Index => "index",
            Structure::Inode => "inode record",
            Structure::Dirent => "dirent record",
            Structure::BlobRecord => "blob record",
            Structure::Blob => "blob",
            Structure::ChunkRecord => "chunk record",
            Structure::Chunk => "chunk",
            Structure::Digests => "digest table",
            Structure::Dictionary => "dictionary",
        })
    }
}

/// What a lazily opened pack may not have more of than
/// [`layout`](crate::pack::layout) allows ([`CorruptKind::TooLarge`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Limit {
    /// Bytes of the index region with the trailer, fetched to open:
    /// [`MAX_FETCHED_INDEX`](crate::pack::layout::MAX_FETCHED_INDEX). Refused on
    /// the trailer alone, before any of it is fetched.
    FetchedIndex,
    /// Bytes of the index region once decoded (a version 2 pack's
    /// `index_len`): [`MAX_DECODED_INDEX`](crate::pack::layout::MAX_DECODED_INDEX).
    DecodedIndex,
    /// Extents, the pieces fetched one by one (blobs in version 1, chunks in
    /// version 2): [`MAX_EXTENTS`](crate::pack::layout::MAX_EXTENTS).
    Extents,
}

/// The check a pack failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CorruptKind {
    /// The bytes are shorter than the structure being read.
    Truncated {
        /// Bytes the structure needs.
        needed: u64,
        /// Bytes that were there.
        available: u64,
    },
    /// The magic number is wrong: this is not a pack (or not its header or
    /// trailer).
    BadMagic(Structure),
    /// A checksum does not match the bytes it covers.
    Checksum {
        /// What the checksum covers.
        of: Structure,
        /// The checksum stored in the pack.
        expected: u64,
        /// The checksum of the bytes as they are.
        actual: u64,
    },
    /// A field holds a value the format does not allow.
    BadField {
        /// The structure holding the field.
        of: Structure,
        /// The field's name as the spec (`docs/pack-format.md`) spells it.
        field: &'static str,
        /// The value found.
        value: u64,
    },
    /// A range (offset, length) points outside the region it must lie in,
    /// or its end overflows.
    OutOfBounds {
        /// The structure holding the range.
        of: Structure,
        /// The field's name as the spec spells it.
        field: &'static str,
        /// Start of the range.
        start: u64,
        /// Length of the range.
        len: u64,
        /// End of the region it must lie in.
        limit: u64,
    },
    /// The header and trailer disagree on the format version.
    VersionMismatch {
        /// The header's version.
        header: u32,
        /// The trailer's version.
        trailer: u32,
    },
    /// The trailer's `pack_len` is not the length of the bytes.
    LengthMismatch {
        /// `pack_len` from the trailer.
        expected: u64,
        /// The length of the bytes.
        actual: u64,
    },
    /// A name or symlink target is not valid UTF-8, or not a valid name.
    BadName,
    /// A directory's entries are not in strictly increasing byte order of
    /// their names (out of order, or a name twice).
    Unsorted,
    /// The directories' entry runs do not tile the dirent table in order.
    BadRun {
        /// Where the run should start (after the last run: the table's end).
        expected: u64,
        /// Where it starts (after the last run: where that run ended).
        actual: u64,
    },
    /// The tree's shape is wrong: a directory named twice or never, a
    /// directory named by an entry before it (which could make a cycle), a
    /// parent pointer that disagrees with the entries, an inode no entry
    /// names, or the root named by an entry.
    BadTree {
        /// The inode index at fault.
        inode: u64,
    },
    /// A compressed chunk does not decode to exactly its declared length.
    Decode {
        /// The chunk's index in the chunk table.
        chunk: u64,
    },
    /// The pack needs more than a lazily opened pack may have (one read
    /// over a network, or from bytes a page fetched): the reader refuses
    /// it before allocating for it. The pack may well be sound; opened from
    /// a local file it is held to the format's limits only.
    TooLarge {
        /// What there is too much of.
        what: Limit,
        /// How much the pack has or declares.
        value: u64,
        /// The most a lazily opened pack may have.
        limit: u64,
    },
    /// A lazy reader's ranged fetch brought bytes it did not ask for (the
    /// offset is where they start): at another offset, more than asked,
    /// past the pack's end, or a second reply to one request. Bytes short
    /// of a range asked for are [`Truncated`](Self::Truncated).
    Unasked {
        /// How many bytes came.
        len: u64,
    },
    /// An extent of a pinned pack does not match its BLAKE3 digest.
    Digest {
        /// The blob or chunk.
        of: Structure,
        /// Its digest in the digest table.
        expected: Digest,
        /// The digest of the bytes as they are.
        actual: Digest,
    },
    /// A pinned pack's digest (of its header, index region and trailer)
    /// is not the pin: this is not the pack that was pinned.
    Pinned {
        /// The pin.
        expected: Digest,
        /// The digest of the pack as it is.
        actual: Digest,
    },
    /// The pack's zstd dictionary is not one zstd loads.
    BadDictionary,
    /// A pack was pinned, but it has no digest table (written before
    /// digests, or without them): its extents could not be checked.
    NoDigests,
    /// A stored link count disagrees with the entries.
    LinkCount {
        /// The inode index.
        inode: u64,
        /// `nlink` as stored.
        expected: u64,
        /// The count the entries give.
        actual: u64,
    },
}

impl fmt::Display for CorruptKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            CorruptKind::Truncated { needed, available } => {
                write!(f, "truncated: needs {needed} bytes, {available} available")
            }
            CorruptKind::BadMagic(s) => write!(f, "bad {s} magic"),
            CorruptKind::Checksum { of, expected, actual } => {
                write!(f, "{of} checksum mismatch: stored {expected:#018x}, computed {actual:#018x}")
            }
            CorruptKind::BadField { of, field, value } => write!(f, "{of} field {field} has invalid value {value}"),
            CorruptKind::OutOfBounds { of, field, start, len, limit } => {
                write!(f, "{of} field {field}: range {start}+{len} exceeds {limit}")
            }
            CorruptKind::VersionMismatch { header, trailer } => {
                write!(f, "header version {header} != trailer version {trailer}")
            }
            CorruptKind::LengthMismatch { expected, actual } => {
                write!(f, "trailer says {expected} bytes, pack has {actual}")
            }
            CorruptKind::BadName => f.write_str("invalid name or symlink target"),
            CorruptKind::Unsorted => f.write_str("directory entries not strictly sorted"),
            CorruptKind::BadRun { expected, actual } => {
                write!(f, "directory run starts at entry {actual}, expected {expected}")
            }
            CorruptKind::BadTree { inode } => write!(f, "malformed tree at inode index {inode}"),
            CorruptKind::Decode { chunk } => write!(f, "chunk {chunk} does not decode to its declared length"),
            CorruptKind::TooLarge { what: Limit::FetchedIndex, value, limit } => {
                write!(f, "the index region is {value} bytes, more than a lazily opened pack may have ({limit})")
            }
            CorruptKind::TooLarge { what: Limit::DecodedIndex, value, limit } => {
                write!(f, "the index decodes to {value} bytes, more than a lazily opened pack may have ({limit})")
            }
            CorruptKind::TooLarge { what: Limit::Extents, value, limit } => {
                write!(
                    f,
                    "the pack has {value} extents (blobs or chunks), more than a lazily opened pack may have ({limit})"
                )
            }
            CorruptKind::Unasked { len } => write!(f, "a reply of {len} bytes that were not asked for"),
            CorruptKind::Digest { of, expected, actual } => {
                // Enough of each to tell them apart; the error holds both.
                let (e, a) = (expected.hex(), actual.hex());
                write!(
                    f,
                    "{of} digest mismatch: the index says blake3:{}…, the bytes are blake3:{}…",
                    &e[..16],
                    &a[..16]
                )
            }
            CorruptKind::Pinned { expected, actual } => {
                write!(f, "not the pinned pack: pinned {expected}, the pack is {actual}")
            }
            CorruptKind::BadDictionary => f.write_str("the zstd dictionary does not load"),
            CorruptKind::NoDigests => {
                f.write_str("pinned, but the pack has no extent digests to check (write it again with packfs pack)")
            }
            CorruptKind::LinkCount { inode, expected, actual } => {
                write!(f, "inode index {inode} stores nlink {expected}, entries give {actual}")
            }
        }
    }
}
