//! Inode numbers ([`ROOT`], [`LOWER_TAG`]) and what the inode treap holds
//! for each inode ([`Inode`], its [`Data`]).

use std::sync::Arc;

use super::quota::INODE_BYTES;
use crate::mem::content::Content;
use crate::{FileType, Ino, Timestamp};

/// The root directory's inode number.
pub const ROOT: Ino = 1;

/// Set in the number of every inode that came from the lower filesystem.
/// Inode numbers stay below 2^48 so that a mount table can carry its mount
/// id above them ([`crate::mount::INO_BITS`]).
pub const LOWER_TAG: Ino = 1 << 47;

/// Inodes counted against [`Quota::max_inodes`]: those born in the upper.
///
/// [`Quota::max_inodes`]: super::Quota::max_inodes
pub(super) fn counted(ino: Ino) -> bool {
    ino & LOWER_TAG == 0
}

/// What an inode is, and where its content lies.
#[derive(Clone)]
pub(super) enum Data {
    File(Content),
    /// A lower file whose bytes have not been copied up.
    Lower {
        ino: Ino,
        size: u64,
    },
    /// `lower`: the lower directory whose entries show through this one's
    /// (merged), or `None` (opaque).
    Dir {
        parent: Ino,
        lower: Option<Ino>,
    },
    Symlink(Arc<str>),
}

/// An inode's record.
#[derive(Clone)]
pub(super) struct Inode {
    pub(super) data: Data,
    pub(super) mode: u32,
    pub(super) nlink: u64,
    pub(super) atime: Timestamp,
    pub(super) mtime: Timestamp,
    pub(super) ctime: Timestamp,
}

impl Inode {
    pub(super) fn kind(&self) -> FileType {
        match self.data {
            Data::File(_) | Data::Lower { .. } => FileType::File,
            Data::Dir { .. } => FileType::Dir,
            Data::Symlink(_) => FileType::Symlink,
        }
    }

    pub(super) fn size(&self) -> u64 {
        match &self.data {
            Data::File(c) => c.len(),
            Data::Lower { size, .. } => *size,
            Data::Dir { .. } => 0,
            Data::Symlink(t) => t.len() as u64,
        }
    }

    /// Content bytes this inode counts against [`Quota::max_bytes`](super::Quota::max_bytes): what
    /// the upper layer holds, not what it borrows from the lower.
    pub(super) fn bytes(&self, ino: Ino) -> u64 {
        match &self.data {
            Data::File(c) => c.len(),
            Data::Symlink(t) if ino & LOWER_TAG == 0 => t.len() as u64,
            _ => 0,
        }
    }

    /// All this inode counts against [`Quota::max_bytes`](super::Quota::max_bytes): its content
    /// and, born here, its record. Lower inodes adopted here are bounded
    /// by the lower, not by the guest.
    pub(super) fn charge(&self, ino: Ino) -> u64 {
        self.bytes(ino) + if counted(ino) { INODE_BYTES } else { 0 }
    }
}
