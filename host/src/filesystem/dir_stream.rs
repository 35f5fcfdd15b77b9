//! Directory listings (`read-directory`, in 0.2 and 0.3): a directory's
//! entries in batches, and how many listings a guest may hold.

use std::collections::VecDeque;
use std::sync::Arc;

use packfs_core::wasi::descriptor::{At, Node};
use packfs_core::{DirEntry, Result};

/// Directory entries fetched from the backend per batch.
const DIR_BATCH: usize = 128;

/// Most directory streams one guest holds at once (`insufficient-memory`
/// past it). Each holds a batch of names, so this bounds the host memory
/// a guest's listings take: at most 512 × 128 names, 20 MiB at the
/// longest names, whatever the number of its other resources.
pub const MAX_DIR_STREAMS: usize = 512;

/// The directory streams a guest holds, shared by its context and each
/// stream (which gives its place back when dropped).
#[derive(Clone, Default)]
pub(crate) struct StreamCount(Arc<std::sync::atomic::AtomicUsize>);

impl StreamCount {
    /// A place for one more stream, if there is room.
    fn take(&self) -> Option<StreamPlace> {
        use std::sync::atomic::Ordering;
        let n = &self.0;
        n.fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| (c < MAX_DIR_STREAMS).then_some(c + 1)).ok()?;
        Some(StreamPlace(self.clone()))
    }
}

/// One stream's place in its guest's [`StreamCount`].
struct StreamPlace(StreamCount);

impl Drop for StreamPlace {
    fn drop(&mut self) {
        (self.0).0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// A directory's entries in the backend's stable order, fetched in batches
/// and resumed by name: entries added or removed meanwhile neither repeat
/// nor shift the rest. The `directory-entry-stream` resource.
pub struct DirStream {
    node: Arc<Node>,
    _place: StreamPlace,
    /// The name to resume after; `None` before the first batch.
    after: Option<Arc<str>>,
    batch: VecDeque<DirEntry>,
    /// The [`Recent`](super::recent::Recent) epoch the batch was read in.
    batch_epoch: u64,
    done: bool,
}

impl DirStream {
    /// A stream over `node`, if `count` has room for one more.
    pub(crate) fn new(node: Arc<Node>, count: &StreamCount) -> Option<Self> {
        let place = count.take()?;
        Some(DirStream { node, _place: place, after: None, batch: VecDeque::new(), batch_epoch: 0, done: false })
    }

    /// The next entry; `epoch` is the guest's current one, and the entry
    /// comes with the epoch of the batch it was read in.
    pub(crate) fn next_entry(&mut self, epoch: u64) -> Result<Option<(DirEntry, u64)>> {
        if self.batch.is_empty() && !self.done {
            let entries = self.node.fs.read_dir(self.node.ino, self.after.as_deref(), DIR_BATCH)?;
            // A short page need not be the last (a backend may filter its
            // pages); only an empty one is.
            self.done = entries.is_empty();
            if let Some(last) = entries.last() {
                self.after = Some(Arc::clone(&last.name));
            }
            self.batch = entries.into();
            self.batch_epoch = epoch;
        }
        Ok(self.batch.pop_front().map(|e| (e, self.batch_epoch)))
    }

    /// The directory listed.
    pub(crate) fn at(&self) -> At {
        self.node.at()
    }
}
