//! [`Node`]: a place in a mount table (a mount's filesystem and an inode
//! there), and how a table numbers its inodes when it is one filesystem:
//! the mount id above the backend's number ([`INO_BITS`]).

use std::sync::Arc;

use crate::resolve::At;
use crate::{BackendFault, Error, FileSystem, Ino, Result};

/// A mount's number in its table; the root mount is 0.
pub type MountId = u32;

/// Bits of a backend's inode number in a table's inode numbers; the mount
/// id takes the 16 above. A backend number that does not fit is `Io`.
pub const INO_BITS: u32 = 48;

/// Most mounts one table holds (ids are 16 bits).
pub const MAX_MOUNTS: MountId = 1 << (64 - INO_BITS);

pub(super) fn join((mount, ino): At) -> Result<Ino> {
    if ino >> INO_BITS != 0 {
        return Err(Error::backend(
            BackendFault::Unrepresentable,
            format!("inode number {ino:#x} of mount {mount} needs more than {INO_BITS} bits"),
        ));
    }
    Ok(u64::from(mount) << INO_BITS | ino)
}

pub(super) fn split(ino: Ino) -> At {
    ((ino >> INO_BITS) as MountId, ino & ((1 << INO_BITS) - 1))
}

/// A resolved place: the filesystem that holds it and the inode there.
#[derive(Clone)]
pub struct Node {
    /// The mount it is in.
    pub mount: MountId,
    /// That mount's filesystem.
    pub fs: Arc<dyn FileSystem>,
    /// The inode within `fs`.
    pub ino: Ino,
    /// The mount is read-only: the caller refuses changes with `ReadOnly`.
    pub read_only: bool,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node").field("mount", &self.mount).field("ino", &self.ino).finish()
    }
}

impl Node {
    pub(super) fn at(&self) -> At {
        (self.mount, self.ino)
    }

    /// Fails with `ReadOnly` on a read-only mount.
    pub fn writable(&self) -> Result<&Self> {
        if self.read_only { Err(Error::ReadOnly) } else { Ok(self) }
    }
}
