//! The mount table: which filesystem answers for which directory.
//!
//! A mount covers one name in one directory of another mount: the key is
//! `(parent mount, directory inode, name)`, so a walk checks for a mount at
//! each step with one O(log m) treap search — dispatch costs O(depth ×
//! log m), never O(m) — and a mount follows its directory when that is
//! renamed, as a Linux mount does. The covered name need not exist below:
//! mounting `/tmp` on a pack without `tmp` makes it appear.
//!
//! The table is a persistent value published with `ArcSwap`: mount and
//! unmount copy O(log m) nodes and readers never block.
//!
//! A table is itself a [`FileSystem`](crate::FileSystem): its inode numbers carry the mount id
//! above the backend's number ([`INO_BITS`]), so a whole namespace can be
//! handed to anything that takes one filesystem (a WASI preopen, a pack
//! writer). Renames and links across mounts are `CrossDevice`, changes on a
//! read-only mount `ReadOnly`, removing or renaming a mount point `Busy`.
//!
//! - `node`: [`Node`], a place in the table, and the inode numbering;
//! - `state`: one version of the table, and the walk through it;
//! - `table`: [`MountTable`], mounting, and the changes mounts constrain;
//! - `fs`: the table as one filesystem.

mod fs;
mod node;
mod state;
mod table;

pub use node::{INO_BITS, MAX_MOUNTS, MountId, Node};
pub use table::MountTable;
