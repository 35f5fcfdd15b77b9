//! The blob table: one 24-byte record per distinct file content, and the
//! checksum that covers each blob's bytes.
//!
//! ```text
//! offset size field     meaning
//!      0    8 offset    absolute offset of the blob, a multiple of the
//!                       header's alignment, inside the data section
//!      8    8 len       length in bytes
//!     16    8 checksum  xxh3-64 (seed 0) of the blob's bytes
//! ```
//!
//! Blobs appear in increasing offset order and do not overlap (each starts
//! at or after the previous one's end). Several inodes may name one blob:
//! the writer shares a blob only between byte-identical contents.

use xxhash_rust::xxh3::xxh3_64;

use super::cursor::{le_u64, width};
use crate::error::corrupt::{CorruptKind, CorruptPack, Structure};

/// One record's size in bytes.
pub(crate) const RECORD_LEN: u64 = 24;

/// The checksum a pack keeps of its stored bytes (xxh3-64, seed 0): of each
/// blob in version 1, of each chunk's stored bytes in version 2, and of the
/// header, the trailer and the index.
pub fn checksum(bytes: &[u8]) -> u64 {
    xxh3_64(bytes)
}

/// A decoded blob record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlobRecord {
    pub(crate) offset: u64,
    pub(crate) len: u64,
    pub(crate) checksum: u64,
}

impl BlobRecord {
    pub(crate) fn encode(&self) -> [u8; width(RECORD_LEN)] {
        let mut out = [0u8; width(RECORD_LEN)];
        out[0..8].copy_from_slice(&self.offset.to_le_bytes());
        out[8..16].copy_from_slice(&self.len.to_le_bytes());
        out[16..24].copy_from_slice(&self.checksum.to_le_bytes());
        out
    }

    /// Decodes a record: every field is read as it is, so it cannot fail.
    /// Its placement is checked by [`Index`](super::index::Index), which has
    /// the geometry.
    pub(crate) fn from_record(rec: &[u8; width(RECORD_LEN)]) -> BlobRecord {
        BlobRecord { offset: le_u64::<0, 24>(rec), len: le_u64::<8, 24>(rec), checksum: le_u64::<16, 24>(rec) }
    }

    /// Checks `bytes` (this blob's) against the stored checksum.
    /// Where the blob's bytes lie in the pack (open checked they lie in
    /// the data section; the sum is still checked).
    pub(crate) fn extent(&self) -> Result<std::ops::Range<u64>, CorruptPack> {
        let end = self.offset.checked_add(self.len).ok_or_else(|| {
            let kind = CorruptKind::OutOfBounds {
                of: Structure::BlobRecord,
                field: "offset",
                start: self.offset,
                len: self.len,
                limit: u64::MAX,
            };
            CorruptPack::new(self.offset, kind)
        })?;
        Ok(self.offset..end)
    }

    pub(crate) fn check(&self, bytes: &[u8]) -> Result<(), CorruptPack> {
        self.check_sum(checksum(bytes))
    }

    /// Checks the checksum `actual` of the blob's content.
    pub(crate) fn check_sum(&self, actual: u64) -> Result<(), CorruptPack> {
        if actual != self.checksum {
            let kind = CorruptKind::Checksum { of: Structure::Blob, expected: self.checksum, actual };
            return Err(CorruptPack::new(self.offset, kind));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_records_round_trip_and_check() {
        let r = BlobRecord { offset: 64, len: 5, checksum: checksum(b"hello") };
        assert_eq!(BlobRecord::from_record(&r.encode()), r);
        assert_eq!(r.check(b"hello"), Ok(()));
        assert!(matches!(r.check(b"hellO").unwrap_err().kind, CorruptKind::Checksum { of: Structure::Blob, .. }));
    }
}
