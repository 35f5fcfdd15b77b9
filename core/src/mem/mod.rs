//! The in-memory backend: [`MemFs`](crate::MemFs), a writable filesystem
//! with lock-free MVCC snapshot reads, and [`Snapshot`](crate::Snapshot), a
//! frozen version of one (both at the crate's root); here, what they are
//! made of and bounded by ([`Tree`], [`Quota`]).
//!
//! Writers take one mutex, apply their change to a private copy of the
//! current [`Tree`] (O(1) to copy, O(log n) to change) and publish it with
//! `ArcSwap::swap`; the version it replaces, when no reader kept it, becomes
//! the next change's copy (`Spare`). Readers `load` the current tree and
//! never block, never see half of a change.

mod content;
pub(crate) mod memfs;
mod op;
mod tree;

// A journal's plumbing (the change record, an image's parts), hidden as
// the crate's other plumbing is.
#[doc(hidden)]
pub use op::Op;
#[doc(hidden)]
pub use tree::{CONTENT_PIECE, LOWER_TAG, Part, Shape};
pub use tree::{ENTRY_BYTES, INODE_BYTES, Quota, ROOT, Tree, Usage};

use crate::{Result, Timestamp};

/// Where a journaled [`MemFs`](crate::MemFs) records each change before publishing it.
/// The journal's record format implements it for every
/// [`journal::Sink`](crate::journal::Sink) of bytes; `mem` knows no more
/// of journals than this.
#[doc(hidden)]
pub trait Log: Send + Sync {
    /// Records `op`, applied at `now` (all of it, or none of it); returns
    /// its sequence number. Called under the writer lock, before the
    /// change is published.
    fn record(&self, op: &Op<'_>, now: Timestamp) -> Result<u64>;
    /// Returns once record `seq` and every one before it are durable.
    fn durable(&self, seq: u64) -> Result<()>;
    /// True: durable under the writer lock, before any reader sees the
    /// change; false: group commit, durable before it is acknowledged.
    fn durable_before_visible(&self) -> bool;
    /// Told, under the writer lock, of each change as it is published,
    /// with the tree it made: a log that has outgrown the tree may rewrite
    /// itself as the tree's image ([`Tree::image`]) then.
    fn published(&self, _tree: &Tree) {}
}
