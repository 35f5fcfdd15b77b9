//! What the guest makes the virtual filesystem hold, bounded: the
//! descriptors and streams it has open (each a few dozen bytes of this
//! component's memory, and a pinned inode) and its directory listings
//! (each a batch of names). Past a limit an open fails with
//! `insufficient-memory`, as the host's own adapter refuses a listing; so
//! the component's memory is bounded by its trees' quotas, the packs'
//! indexes, what it keeps of a host's pack (`host_pack`) and these.

use std::cell::Cell;

/// Most descriptors and file streams open at once, as the host allows a
/// guest descriptors.
pub(crate) const MAX_OPEN: usize = 65_536;

/// Most directory listings open at once, as the host allows (each holds
/// up to 128 names).
pub(crate) const MAX_LISTINGS: usize = 512;

/// Most WASI 0.3 file streams (read or written) open at once: each may
/// hold a piece of 16 KiB while the guest takes it.
pub(crate) const MAX_STREAMS: usize = 4096;

thread_local! {
    static OPEN: Cell<usize> = const { Cell::new(0) };
    static LISTINGS: Cell<usize> = const { Cell::new(0) };
    static STREAMS: Cell<usize> = const { Cell::new(0) };
}

/// One place among those held, given back when dropped.
pub(crate) struct Held(&'static std::thread::LocalKey<Cell<usize>>);

impl Held {
    fn take(count: &'static std::thread::LocalKey<Cell<usize>>, max: usize) -> Option<Held> {
        count.with(|n| (n.get() < max).then(|| n.set(n.get() + 1)))?;
        Some(Held(count))
    }

    /// A place for a descriptor or a stream, if there is room.
    pub(crate) fn open() -> Option<Held> {
        Self::take(&OPEN, MAX_OPEN)
    }

    /// A place for a listing, if there is room.
    pub(crate) fn listing() -> Option<Held> {
        Self::take(&LISTINGS, MAX_LISTINGS)
    }

    /// A place for a WASI 0.3 file stream, if there is room.
    #[cfg_attr(not(feature = "p3"), allow(dead_code, reason = "0.3's only"))]
    pub(crate) fn stream() -> Option<Held> {
        Self::take(&STREAMS, MAX_STREAMS)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.0.with(|n| n.set(n.get() - 1));
    }
}
