//! What a [`Tree`](super::Tree) may hold and holds: [`Quota`] and
//! [`Usage`], and what each entry and inode is charged.

/// Optional caps on one filesystem's size. An operation that would pass one
/// fails with [`Error::Quota`](crate::Error::Quota) and changes nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Quota {
    /// Most bytes of host memory the tree holds: file content and symlink
    /// targets by length (a sparse file counts whole), each directory
    /// entry's name and [`ENTRY_BYTES`] (hard links, whiteouts and renames
    /// into new names included), and [`INODE_BYTES`] per inode. Names and
    /// links are not free: a guest cannot grow the host by them either.
    pub max_bytes: Option<u64>,
    /// Most inodes, the root included.
    pub max_inodes: Option<u64>,
}

/// What [`Quota::max_bytes`] charges for a directory entry besides its
/// name: what the host holds for one, measured (its key and node in the
/// entry treap, in the current version and in the writer's spare, and the
/// allocator's share): 200,000 links of 248-byte names took 528 bytes each.
pub const ENTRY_BYTES: u64 = 288;

/// What [`Quota::max_bytes`] charges for an inode besides its content:
/// its record and node in the inode treap, likewise (200,000 empty files
/// took 608 bytes each, entries included).
pub const INODE_BYTES: u64 = 320;

/// The charge of an entry named `name`.
pub(super) fn entry_bytes(name: &str) -> u64 {
    ENTRY_BYTES + name.len() as u64
}

/// What a filesystem holds now, in the units of [`Quota`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Bytes charged: content, symlink targets, entries, inodes.
    pub bytes: u64,
    /// Inodes, the root included.
    pub inodes: u64,
}
