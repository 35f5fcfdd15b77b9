//! Directory listings (`read-directory`, in 0.2 and 0.3): a directory's
//! entries in batches, and how many listings a guest may hold.

use std::sync::Arc;

use packfs_core::wasi::descriptor::{At, Listing, Node};
use packfs_core::{DirEntry, Result};

/// Most directory streams one guest holds at once (`insufficient-memory`
/// past it). Each holds a batch of names ([`LISTING_BATCH`](packfs_core::wasi::descriptor::LISTING_BATCH)), so this bounds the host memory
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

/// A directory's entries ([`Listing`]), counted among the guest's
/// streams, with the epoch of the recent names (`recent.rs`) its batch was
/// read in. The `directory-entry-stream` resource.
pub struct DirStream {
    listing: Listing,
    _place: StreamPlace,
    batch_epoch: u64,
}

impl DirStream {
    /// A stream over `node`, if `count` has room for one more.
    pub(crate) fn new(node: Arc<Node>, count: &StreamCount) -> Option<Self> {
        let place = count.take()?;
        Some(DirStream { listing: Listing::new(node), _place: place, batch_epoch: 0 })
    }

    /// The next entry; `epoch` is the guest's current one, and the entry
    /// comes with the epoch of the batch it was read in.
    pub(crate) fn next_entry(&mut self, epoch: u64) -> Result<Option<(DirEntry, u64)>> {
        let Some((entry, fresh)) = self.listing.next_entry()? else { return Ok(None) };
        if fresh {
            self.batch_epoch = epoch;
        }
        Ok(Some((entry, self.batch_epoch)))
    }

    /// The directory listed.
    pub(crate) fn at(&self) -> At {
        self.listing.node().at()
    }
}
