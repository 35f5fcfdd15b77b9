//! [`Listing`]: a directory's entries for `read-directory`, in every
//! version and host that serves it.

use std::collections::VecDeque;
use std::sync::Arc;

use super::Node;
use crate::{DirEntry, Result};

/// Directory entries fetched from the backend per batch.
pub const LISTING_BATCH: usize = 128;

/// A directory's entries in the backend's stable order, fetched in batches
/// of [`LISTING_BATCH`] and resumed by name: entries added or removed
/// meanwhile neither repeat nor shift the rest. It holds one batch of
/// names at most.
pub struct Listing {
    node: Arc<Node>,
    /// The name to resume after; `None` before the first batch.
    after: Option<Arc<str>>,
    batch: VecDeque<DirEntry>,
    done: bool,
}

impl Listing {
    /// The entries of directory `node`.
    pub fn new(node: Arc<Node>) -> Self {
        Listing { node, after: None, batch: VecDeque::new(), done: false }
    }

    /// The next entry, and whether this call read the batch it comes from.
    pub fn next_entry(&mut self) -> Result<Option<(DirEntry, bool)>> {
        let fresh = self.batch.is_empty() && !self.done;
        if fresh {
            let entries = self.node.fs.read_dir(self.node.ino, self.after.as_deref(), LISTING_BATCH)?;
            // A short page need not be the last (a backend may filter its
            // pages); only an empty one is.
            self.done = entries.is_empty();
            if let Some(last) = entries.last() {
                self.after = Some(Arc::clone(&last.name));
            }
            self.batch = entries.into();
        }
        Ok(self.batch.pop_front().map(|e| (e, fresh)))
    }

    /// The directory listed.
    pub fn node(&self) -> &Arc<Node> {
        &self.node
    }
}
