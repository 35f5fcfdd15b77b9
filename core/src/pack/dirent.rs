//! The dirent table: one 16-byte record per name. The table is sorted by
//! (parent directory's inode index, name bytes), so each directory's
//! entries are one contiguous run, `first..first + count` in its inode
//! record, in strictly increasing byte order of names: a lookup is a binary
//! search in the run, and a `read_dir` cookie (the last name returned) is
//! resumed by another.
//!
//! ```text
//! offset size field        meaning
//!      0    8 name_offset  offset of the name in the string pool
//!      8    2 name_len     1..=255 bytes of UTF-8, no '/' or NUL, not "." or ".."
//!     10    2 reserved     0, ignored
//!     12    4 inode        inode index the name refers to, 1..inode_count
//! ```

use super::cursor::{le_u16, le_u32, le_u64, width};

/// One record's size in bytes.
pub(crate) const RECORD_LEN: u64 = 16;

/// A decoded dirent record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DirentRecord {
    pub(crate) name_offset: u64,
    pub(crate) name_len: u16,
    pub(crate) inode: u32,
}

impl DirentRecord {
    pub(crate) fn encode(&self) -> [u8; width(RECORD_LEN)] {
        let mut out = [0u8; width(RECORD_LEN)];
        out[0..8].copy_from_slice(&self.name_offset.to_le_bytes());
        out[8..10].copy_from_slice(&self.name_len.to_le_bytes());
        out[12..16].copy_from_slice(&self.inode.to_le_bytes());
        out
    }

    /// Decodes a record: every field is read as it is, so it cannot fail.
    /// The name and inode are checked by [`Index`](super::index::Index),
    /// which has the tables.
    pub(crate) fn from_record(rec: &[u8; width(RECORD_LEN)]) -> DirentRecord {
        DirentRecord { name_offset: le_u64::<0, 16>(rec), name_len: le_u16::<8, 16>(rec), inode: le_u32::<12, 16>(rec) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dirent_records_round_trip() {
        let r = DirentRecord { name_offset: 1 << 40, name_len: 255, inode: u32::MAX };
        assert_eq!(DirentRecord::from_record(&r.encode()), r);
    }
}
