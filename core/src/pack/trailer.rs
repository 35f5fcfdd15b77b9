//! The trailer: 128 bytes at the very end of a pack, written last, so a
//! writer never seeks. It says where the data section and each index table
//! lie and carries the index checksum.
//!
//! ```text
//! offset size field             meaning
//!      0    8 magic             89 50 41 43 4B 45 4E 44  ("\x89PACKEND")
//!      8    4 version           equal to the header's
//!     12    4 index_len         version 2: the index region's length once
//!                               decoded, if it is stored as a zstd frame
//!                               (0: stored as it is); version 1: reserved
//!     16    8 pack_len          length of the whole pack, trailer included;
//!                               a multiple of 8
//!     24    8 data_offset       start of the data section (>= 64)
//!     32    8 data_len          its length
//!     40    8 index_offset      start of the index region (multiple of 8)
//!     48    8 index_checksum    xxh3-64 of bytes index_offset..pack_len-128
//!     56    8 inodes_offset     inode table: inode_count records of 48 bytes
//!     64    8 inode_count       1..=2^32-1 (the root is inode 0)
//!     72    8 dirents_offset    dirent table: dirent_count records of 16 bytes
//!     80    8 dirent_count      0..=2^32-1
//!     88    8 blobs_offset      blob table: blob_count records of 24 bytes
//!     96    8 blob_count        0..=2^32-1
//!    104    8 strings_offset    string pool: names and symlink targets
//!    112    8 strings_len
//!    120    8 trailer_checksum  xxh3-64 of bytes 0..120
//! ```
//!
//! [`Trailer::decode`] checks the geometry once, so that everything after it
//! may rely on: `64 <= data_offset`, `data_offset + data_len <=
//! index_offset`, and the four tables lie inside the index region, in this
//! order, without overlap, the three record tables at multiples of 8. No sum
//! or product of these fields overflows after it.

use xxhash_rust::xxh3::xxh3_64;

use super::cursor::{Cursor, bad_field, range, width};
use super::header::{HEADER_LEN, Header};
use crate::error::corrupt::{CorruptKind, CorruptPack, Structure};

/// The trailer's size in bytes.
pub const TRAILER_LEN: u64 = 128;
/// The trailer's first eight bytes.
pub(crate) const MAGIC: [u8; 8] = *b"\x89PACKEND";
/// Bytes covered by `trailer_checksum`, which follows them.
pub(crate) const CHECKED_LEN: usize = 120;
/// Where `pack_len` lies in the trailer.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) const PACK_LEN_AT: usize = 16;
/// Where `index_len` lies in the trailer.
pub(crate) const INDEX_LEN_AT: usize = 12;
/// Where `index_offset` lies in the trailer.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) const INDEX_OFFSET_AT: usize = 40;
/// Where `index_checksum` lies in the trailer.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) const INDEX_CHECKSUM_AT: usize = 48;
/// Most records in any table: indices are 32-bit.
pub(crate) const MAX_COUNT: u64 = u32::MAX as u64;
/// A compressed index region decodes to at most this many times its stored
/// length (the writer stores it as it is otherwise): what a small pack can
/// make a reader allocate is in proportion to it.
pub(crate) const MAX_INDEX_RATIO: u64 = 256;

/// A table of fixed-size records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Table {
    pub(crate) offset: u64,
    pub(crate) count: u64,
}

/// A decoded trailer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Trailer {
    pub(crate) version: u32,
    /// Version 2: the decoded length of a compressed index region; 0 for
    /// one stored as it is.
    pub(crate) index_len: u32,
    pub(crate) pack_len: u64,
    pub(crate) data_offset: u64,
    pub(crate) data_len: u64,
    pub(crate) index_offset: u64,
    pub(crate) index_checksum: u64,
    pub(crate) inodes: Table,
    pub(crate) dirents: Table,
    pub(crate) blobs: Table,
    pub(crate) strings_offset: u64,
    pub(crate) strings_len: u64,
}

impl Trailer {
    /// The 128 trailer bytes, checksum included.
    pub(crate) fn encode(&self) -> [u8; width(TRAILER_LEN)] {
        let mut out = [0u8; width(TRAILER_LEN)];
        out[0..8].copy_from_slice(&MAGIC);
        out[8..12].copy_from_slice(&self.version.to_le_bytes());
        out[INDEX_LEN_AT..INDEX_LEN_AT + 4].copy_from_slice(&self.index_len.to_le_bytes());
        let fields = [
            self.pack_len,
            self.data_offset,
            self.data_len,
            self.index_offset,
            self.index_checksum,
            self.inodes.offset,
            self.inodes.count,
            self.dirents.offset,
            self.dirents.count,
            self.blobs.offset,
            self.blobs.count,
            self.strings_offset,
            self.strings_len,
        ];
        for (i, f) in fields.iter().enumerate() {
            out[16 + 8 * i..24 + 8 * i].copy_from_slice(&f.to_le_bytes());
        }
        let sum = xxh3_64(&out[..CHECKED_LEN]);
        out[CHECKED_LEN..].copy_from_slice(&sum.to_le_bytes());
        out
    }

    /// Where the trailer starts in a pack of `len` bytes.
    pub(crate) fn offset_in(len: u64) -> Result<u64, CorruptPack> {
        len.checked_sub(TRAILER_LEN)
            .filter(|&t| t >= HEADER_LEN)
            .ok_or(CorruptPack::new(0, CorruptKind::Truncated { needed: HEADER_LEN + TRAILER_LEN, available: len }))
    }

    /// Decodes the trailer, `bytes`, the last [`TRAILER_LEN`] of a pack of
    /// `len` bytes, and checks it against the header and that length:
    /// magic, checksum, version, length, then geometry.
    pub(crate) fn decode(bytes: &[u8], len: u64, header: &Header) -> Result<Trailer, CorruptPack> {
        let at = Self::offset_in(len)?;
        let bytes = super::cursor::slice(bytes, Structure::Trailer, "trailer", 0, TRAILER_LEN, at)?;
        let t = Self::parse(bytes, at)?;
        if t.version != header.version {
            return Err(CorruptPack::new(
                at,
                CorruptKind::VersionMismatch { header: header.version, trailer: t.version },
            ));
        }
        if t.pack_len != len {
            return Err(CorruptPack::new(at, CorruptKind::LengthMismatch { expected: t.pack_len, actual: len }));
        }
        if !at.is_multiple_of(8) {
            return Err(bad_field(at, Structure::Trailer, "pack_len", t.pack_len));
        }
        t.check_geometry(at)?;
        Ok(t)
    }

    /// The trailer's own fields from its 128 `bytes` (found at `at`), with
    /// its magic and checksum checked: what a reader holding only the end
    /// of a pack can know of it. [`decode`](Self::decode) checks the rest.
    pub(crate) fn parse(bytes: &[u8], at: u64) -> Result<Trailer, CorruptPack> {
        let mut c = Cursor::new(bytes, at);
        if c.array::<8>()? != MAGIC {
            return Err(CorruptPack::new(at, CorruptKind::BadMagic(Structure::Trailer)));
        }
        let version = c.u32()?;
        let index_len = match c.u32()? {
            _ if version < 2 => 0,
            n => n,
        };
        let mut f = [0u64; 13];
        for v in &mut f {
            *v = c.u64()?;
        }
        let expected = c.u64()?;
        let actual = xxh3_64(&bytes[..CHECKED_LEN]);
        if expected != actual {
            return Err(CorruptPack::new(at, CorruptKind::Checksum { of: Structure::Trailer, expected, actual }));
        }
        let t = Trailer {
            version,
            index_len,
            pack_len: f[0],
            data_offset: f[1],
            data_len: f[2],
            index_offset: f[3],
            index_checksum: f[4],
            inodes: Table { offset: f[5], count: f[6] },
            dirents: Table { offset: f[7], count: f[8] },
            blobs: Table { offset: f[9], count: f[10] },
            strings_offset: f[11],
            strings_len: f[12],
        };
        Ok(t)
    }

    /// Checks that the sections nest as the module doc says; `end` is the
    /// trailer's offset.
    fn check_geometry(&self, end: u64) -> Result<(), CorruptPack> {
        let s = Structure::Trailer;
        let data_end = range(s, "data_offset", self.data_offset, self.data_len, HEADER_LEN, end, end)?;
        if !self.index_offset.is_multiple_of(8) {
            return Err(bad_field(end, s, "index_offset", self.index_offset));
        }
        // An index region starting before the data ends would overlap it.
        let mut at = range(s, "index_offset", self.index_offset, 0, data_end, end, end)?;
        // The tables lie in the index region as decoded.
        let stored = end - self.index_offset;
        let end = match u64::from(self.index_len) {
            0 => end,
            n if stored > 0 && n <= stored.saturating_mul(MAX_INDEX_RATIO) => {
                self.index_offset.checked_add(n).ok_or_else(|| bad_field(end, s, "index_len", n))?
            }
            n => return Err(bad_field(end, s, "index_len", n)),
        };
        if self.inodes.count == 0 {
            return Err(bad_field(end, s, "inode_count", 0));
        }
        let tables = [
            (self.inodes, super::inode::RECORD_LEN, "inodes_offset", "inode_count"),
            (self.dirents, super::dirent::RECORD_LEN, "dirents_offset", "dirent_count"),
            (self.blobs, super::blob::RECORD_LEN, "blobs_offset", "blob_count"),
        ];
        for (table, record, offset_name, count_name) in tables {
            if table.count > MAX_COUNT {
                return Err(bad_field(end, s, count_name, table.count));
            }
            if !table.offset.is_multiple_of(8) {
                return Err(bad_field(end, s, offset_name, table.offset));
            }
            // count <= 2^32 - 1 and record <= 48: the product fits in u64.
            at = range(s, offset_name, table.offset, table.count * record, at, end, end)?;
        }
        range(s, "strings_offset", self.strings_offset, self.strings_len, at, end, end)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: Header =
        Header { version: 1, incompat_flags: 0, compat_flags: 0, align_log2: 3, chunk_log2: 0, dict_len: 0 };

    /// A pack of 64 + 8 + 48 + 128 bytes: header, one empty blob area, one
    /// inode, trailer.
    fn pack(edit: impl FnOnce(&mut Trailer)) -> Vec<u8> {
        let mut t = Trailer {
            version: 1,
            pack_len: 64 + 8 + 48 + 128,
            data_offset: 64,
            data_len: 8,
            index_offset: 72,
            inodes: Table { offset: 72, count: 1 },
            dirents: Table { offset: 120, count: 0 },
            blobs: Table { offset: 120, count: 0 },
            strings_offset: 120,
            ..Trailer::default()
        };
        edit(&mut t);
        let mut out = vec![0; 120];
        out.extend_from_slice(&t.encode());
        out
    }

    /// Decodes the end of a whole pack.
    fn decode(pack: &[u8]) -> Result<Trailer, CorruptPack> {
        Trailer::decode(&pack[pack.len().saturating_sub(width(TRAILER_LEN))..], pack.len() as u64, &HEADER)
    }

    #[test]
    fn trailer_round_trips() {
        let bytes = pack(|_| {});
        let t = decode(&bytes).unwrap();
        assert_eq!(t.encode()[..], bytes[120..]);
    }

    #[test]
    fn trailer_rejects_bad_geometry() {
        let kind = |edit: fn(&mut Trailer)| decode(&pack(edit)).unwrap_err().kind;
        assert!(matches!(kind(|t| t.version = 2), CorruptKind::VersionMismatch { header: 1, trailer: 2 }));
        assert!(matches!(kind(|t| t.pack_len = 1), CorruptKind::LengthMismatch { .. }));
        assert!(matches!(kind(|t| t.data_offset = 8), CorruptKind::OutOfBounds { .. }));
        assert!(matches!(kind(|t| t.data_len = u64::MAX), CorruptKind::OutOfBounds { .. }));
        assert!(matches!(kind(|t| t.index_offset = 68), CorruptKind::BadField { field: "index_offset", .. }));
        assert!(matches!(kind(|t| t.inodes.count = 0), CorruptKind::BadField { field: "inode_count", .. }));
        assert!(matches!(kind(|t| t.inodes.count = 2), CorruptKind::OutOfBounds { .. }));
        assert!(matches!(kind(|t| t.dirents.count = u64::MAX), CorruptKind::BadField { .. }));
        assert!(matches!(kind(|t| t.blobs.offset = 112), CorruptKind::OutOfBounds { .. }));
        assert!(matches!(kind(|t| t.strings_len = 1), CorruptKind::OutOfBounds { .. }));
        let mut bytes = pack(|_| {});
        bytes[130] ^= 1;
        assert!(matches!(decode(&bytes).unwrap_err().kind, CorruptKind::Checksum { of: Structure::Trailer, .. }));
        assert!(matches!(decode(&bytes[..100]).unwrap_err().kind, CorruptKind::Truncated { .. }));
    }
}
