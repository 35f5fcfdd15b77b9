//! The inode table: one 48-byte record per file, directory or symlink,
//! indexed from 0. Inode 0 is the root directory; the
//! [`FileSystem`](crate::FileSystem) inode number of record `i` is `i + 1`.
//!
//! ```text
//! offset size field        file             dir                 symlink
//!      0    1 kind         1                2                   3
//!      1    3 reserved     0                0                   0
//!      4    4 mode         permission bits, at most 0o7777
//!      8    8 mtime_secs   seconds since the Unix epoch
//!     16    4 mtime_nanos  below 1,000,000,000
//!     20    4 nlink        names (entries)  2 + subdirectories  names
//!     24    8 size         content length   0                   target length, 1..=4096
//!     32    8 data         blob index       first dirent index  target offset in the string pool
//!     40    4 count        0 (ignored)      number of entries   0 (ignored)
//!     44    4 parent       0 (ignored)      parent inode index  0 (ignored)
//! ```
//!
//! A hard link is two dirents naming one inode; two inodes with equal
//! content name one blob. The checks that need other tables (the blob
//! exists and has `size` bytes, the entry run is where it should be, the
//! tree is a tree) are made by [`Index`](super::index::Index).

use super::cursor::{bad_field, le_u32, le_u64, width};
use crate::error::corrupt::{CorruptPack, Structure};
use crate::path::MAX_PATH;
use crate::{FileType, Timestamp};

/// One record's size in bytes.
pub(crate) const RECORD_LEN: u64 = 48;

/// What an inode holds, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Body {
    /// A regular file: its content is blob `blob`.
    File { blob: u64 },
    /// A directory: its entries are dirents `first..first + count`.
    Dir { first: u64, count: u32, parent: u32 },
    /// A symlink: its target is `size` bytes at `target` in the string pool.
    Symlink { target: u64 },
}

/// A decoded inode record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InodeRecord {
    pub(crate) body: Body,
    pub(crate) mode: u32,
    pub(crate) mtime: Timestamp,
    pub(crate) nlink: u32,
    pub(crate) size: u64,
}

impl InodeRecord {
    pub(crate) fn kind(&self) -> FileType {
        match self.body {
            Body::File { .. } => FileType::File,
            Body::Dir { .. } => FileType::Dir,
            Body::Symlink { .. } => FileType::Symlink,
        }
    }

    pub(crate) fn encode(&self) -> [u8; width(RECORD_LEN)] {
        let (kind, data, count, parent) = match self.body {
            Body::File { blob } => (1u8, blob, 0, 0),
            Body::Dir { first, count, parent } => (2, first, count, parent),
            Body::Symlink { target } => (3, target, 0, 0),
        };
        let mut out = [0u8; width(RECORD_LEN)];
        out[0] = kind;
        out[4..8].copy_from_slice(&self.mode.to_le_bytes());
        out[8..16].copy_from_slice(&self.mtime.secs.to_le_bytes());
        out[16..20].copy_from_slice(&self.mtime.nanos.to_le_bytes());
        out[20..24].copy_from_slice(&self.nlink.to_le_bytes());
        out[24..32].copy_from_slice(&self.size.to_le_bytes());
        out[32..40].copy_from_slice(&data.to_le_bytes());
        out[40..44].copy_from_slice(&count.to_le_bytes());
        out[44..48].copy_from_slice(&parent.to_le_bytes());
        out
    }

    /// Decodes a record found at absolute offset `at`, checking the fields
    /// that need nothing else.
    pub(crate) fn from_record(rec: &Raw, at: u64) -> Result<InodeRecord, CorruptPack> {
        let s = Structure::Inode;
        let kind = kind(rec, at)?;
        let mode = le_u32::<4, 48>(rec);
        let (secs, nanos) = (le_u64::<8, 48>(rec), le_u32::<16, 48>(rec));
        let (nlink, size) = (le_u32::<20, 48>(rec), le_u64::<24, 48>(rec));
        if mode > 0o7777 {
            return Err(bad_field(at, s, "mode", mode.into()));
        }
        if nanos >= 1_000_000_000 {
            return Err(bad_field(at, s, "mtime_nanos", nanos.into()));
        }
        let body = match kind {
            FileType::File => Body::File { blob: data(rec) },
            FileType::Dir if size != 0 => return Err(bad_field(at, s, "size", size)),
            FileType::Dir => Body::Dir { first: data(rec), count: count(rec), parent: le_u32::<44, 48>(rec) },
            FileType::Symlink if size == 0 || size > MAX_PATH as u64 => return Err(bad_field(at, s, "size", size)),
            FileType::Symlink => Body::Symlink { target: data(rec) },
        };
        Ok(InodeRecord { body, mode, mtime: Timestamp { secs, nanos }, nlink, size })
    }
}

/// One whole record, as it lies in the table.
pub(crate) type Raw = [u8; width(RECORD_LEN)];

/// A record's `kind` alone (the record was found at absolute offset `at`).
pub(crate) fn kind(rec: &Raw, at: u64) -> Result<FileType, CorruptPack> {
    match rec[0] {
        1 => Ok(FileType::File),
        2 => Ok(FileType::Dir),
        3 => Ok(FileType::Symlink),
        k => Err(bad_field(at, Structure::Inode, "kind", k.into())),
    }
}

/// A record's `data` alone: a file's blob index, a directory's first dirent,
/// a symlink's target offset.
pub(crate) fn data(rec: &Raw) -> u64 {
    le_u64::<32, 48>(rec)
}

/// A record's `count` alone: a directory's number of entries.
pub(crate) fn count(rec: &Raw) -> u32 {
    le_u32::<40, 48>(rec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::corrupt::CorruptKind;

    #[test]
    fn inode_records_round_trip() {
        let mtime = Timestamp { secs: 1_700_000_000, nanos: 999_999_999 };
        for body in
            [Body::File { blob: 7 }, Body::Dir { first: 3, count: 9, parent: 1 }, Body::Symlink { target: u64::MAX }]
        {
            let size = if let Body::Dir { .. } = body { 0 } else { 12 };
            let r = InodeRecord { body, mode: 0o7755, mtime, nlink: 3, size };
            assert_eq!(InodeRecord::from_record(&r.encode(), 0), Ok(r));
        }
    }

    #[test]
    fn inode_records_reject_bad_fields() {
        let r = InodeRecord { body: Body::File { blob: 0 }, mode: 0, mtime: Timestamp::default(), nlink: 1, size: 0 };
        let field = |edit: fn(&mut [u8; 48])| {
            let mut b = r.encode();
            edit(&mut b);
            match InodeRecord::from_record(&b, 0).unwrap_err().kind {
                CorruptKind::BadField { field, .. } => field,
                k => panic!("{k:?}"),
            }
        };
        assert_eq!(field(|b| b[0] = 4), "kind");
        assert_eq!(field(|b| b[0] = 0), "kind");
        assert_eq!(field(|b| b[5] = 0x10), "mode");
        assert_eq!(field(|b| b[19] = 0xff), "mtime_nanos");
        assert_eq!(field(|b| b[0] = 3), "size");
        assert_eq!(field(|b| (b[0], b[24]) = (2, 1)), "size");
    }
}
