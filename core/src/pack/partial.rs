//! [`Partial`]: a pack of which only some bytes are here, for readers that
//! fetch a pack piece by piece (the browser, over HTTP Range requests; an
//! object store).
//!
//! [`PackFs::open_partial`] takes whatever was fetched before opening; it
//! must hold the header and the index region with the trailer
//! ([`Layout::required`](super::Layout::required)). Blobs lying wholly
//! inside those pieces are here from the start; the others arrive by
//! [`PackFs::store`]. The unit is the *extent* (a blob in version 1, a
//! chunk in version 2; [`PackFs::extent`]). A read of an extent that is not
//! here is [`Error::NotLoaded`] and records it as *wanted*: the fetching
//! layer takes the wanted extents as byte ranges ([`PackFs::take_wanted`]),
//! fetches and stores them, and runs the operation again. That works through an
//! overlay too (its reads of the lower land here), so no layer above needs
//! to know which extent backs which path.
//!
//! Memory: the pieces held at open, a compressed index region decoded
//! (at most [`MAX_DECODED_INDEX`]), a 24-byte slot per extent (at most
//! [`MAX_EXTENTS`] of them: 384 MiB; the index holds 24 or 32 bytes per
//! extent too), and the extents stored. A `Partial` is always opened
//! [`lazy`](ReadOptions::lazy): a pack past those limits is
//! [`CorruptKind::TooLarge`] before anything is allocated for it, whatever
//! the options say, so that a few MiB fetched cannot claim GiBs. An
//! extent's slot is set once and never moves, so reads borrow it as they
//! borrow a mapped pack, and storing is safe while other threads read.
//!
//! [`MAX_DECODED_INDEX`]: super::layout::MAX_DECODED_INDEX
//! [`MAX_EXTENTS`]: super::layout::MAX_EXTENTS

use std::collections::BTreeSet;
use std::ops::Range;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::task::{Context, Poll, Waker};

use super::pieces::{Pieces, cut};
use super::reader::{ByteSource, PackFs, ReadOptions};
use crate::sync::lock;
use crate::{Error, Result};

/// Extents to fetch closer than this are fetched as one range (the bytes
/// between come along): one request costs more than a few KiB more.
pub const MERGE_GAP: u64 = 4096;

/// One range to fetch made of several ([`merge_ranges`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    /// The bytes to fetch: from the first member's start to the furthest end.
    pub range: Range<u64>,
    /// Which of the ranges given it holds, by position.
    pub members: Range<usize>,
}

/// `ranges`, in the order given, as fewer ranges to fetch: a range joins
/// the one before when it starts at or after that one's start, less than
/// `max_gap` bytes past its end (the bytes between come along), and the
/// two span at most `max_len` bytes (a range longer alone stays one).
/// Ranges out of order are not joined. Every fetching layer merges so:
/// wanted extents ([`PackFs::take_wanted`]), a page's cache misses, a
/// trace's extents fetched early, the lazy open's requests.
pub fn merge_ranges(ranges: impl IntoIterator<Item = Range<u64>>, max_gap: u64, max_len: u64) -> Vec<Merged> {
    let mut out: Vec<Merged> = Vec::new();
    for (i, r) in ranges.into_iter().enumerate() {
        match out.last_mut() {
            Some(m)
                if r.start >= m.range.start
                    && r.start.saturating_sub(m.range.end) < max_gap
                    && r.end.max(m.range.end) - m.range.start <= max_len =>
            {
                m.range.end = m.range.end.max(r.end);
                m.members.end = i + 1;
            }
            _ => out.push(Merged { range: r, members: i..i + 1 }),
        }
    }
    out
}

/// A pack's bytes, some of which may not have arrived yet; see the module
/// doc. It is made by [`PackFs::open_partial`] only.
pub struct Partial {
    /// What was here at open.
    held: Pieces,
    /// Extents stored since, by number.
    extents: Box<[OnceLock<Box<[u8]>>]>,
    /// Extents a read wanted and did not find.
    wanted: Mutex<BTreeSet<u64>>,
    /// Extents neither held nor stored.
    missing: AtomicU64,
}

impl std::fmt::Debug for Partial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Partial").field("size", &self.held.size()).field("missing", &self.missing).finish()
    }
}

impl ByteSource for Partial {
    fn size(&self) -> u64 {
        self.held.size()
    }

    fn get(&self, range: Range<u64>) -> Option<&[u8]> {
        self.held.get(&range)
    }

    fn extent(&self, k: u64, range: Range<u64>) -> Option<&[u8]> {
        if range.is_empty() {
            return Some(&[]);
        }
        if let Some(bytes) = self.held.get(&range) {
            return Some(bytes);
        }
        let slot = self.extents.get(usize::try_from(k).ok()?)?;
        if let Some(bytes) = slot.get() {
            return Some(bytes);
        }
        lock(&self.wanted).insert(k);
        None
    }

    fn complete(&self) -> bool {
        self.missing.load(Ordering::Relaxed) == 0
    }
}

impl PackFs<Partial> {
    /// Opens a pack of `size` bytes of which only `pieces` are here, each
    /// `(offset, bytes)`, in any order, overlapping or not. They must hold
    /// the header and the index region with the trailer, else the open is
    /// [`Error::NotLoaded`]; the open checks them as it checks any pack,
    /// [`lazy`](ReadOptions::lazy) whatever `options` say.
    /// `Invalid` for a piece past `size`.
    pub fn open_partial(size: u64, pieces: Vec<(u64, Vec<u8>)>, options: ReadOptions) -> Result<Self> {
        let source = Partial {
            held: Pieces::new(size, pieces)?,
            extents: Box::new([]),
            wanted: Mutex::new(BTreeSet::new()),
            missing: AtomicU64::new(0),
        };
        let mut pack = PackFs::open_with(source, options.lazy(true))?;
        // The open checked the extent count against the index region,
        // which is here, and against MAX_EXTENTS.
        let count = pack.extent_count();
        pack.source.extents = (0..count).map(|_| OnceLock::new()).collect();
        let missing = (0..count).filter(|&k| !pack.here(k)).count() as u64;
        pack.source.missing = AtomicU64::new(missing);
        Ok(pack)
    }

    /// Whether extent `k` is here (empty, held since open, or stored).
    fn here(&self, k: u64) -> bool {
        let Some((start, end)) = self.extent(k) else { return true };
        let s = &self.source;
        start == end
            || s.held.get(&(start..end)).is_some()
            || usize::try_from(k).ok().and_then(|k| s.extents.get(k)).is_some_and(|b| b.get().is_some())
    }

    /// Keeps the extents lying wholly inside `bytes`, fetched from
    /// `offset`, that were not here, and returns how many. Each is checked
    /// as the pack checks it (by its digest if it is pinned, else its
    /// checksum) before it is kept: the first
    /// that fails is `Corrupt` (those before it are kept; it and the rest
    /// stay wanted), so wrong bytes are never kept. Those already here stay
    /// as they are. `Invalid` for bytes past the pack's end.
    pub fn store(&self, offset: u64, bytes: &[u8]) -> Result<u64> {
        let end =
            offset.checked_add(bytes.len() as u64).filter(|&e| e <= self.source.held.size()).ok_or(Error::Invalid)?;
        let mut k = self.index.first_extent_from(self.region()?, offset)?;
        let mut stored = 0;
        while let Some((start, extent_end)) = self.extent(k).filter(|&(_, e)| e <= end) {
            if start < extent_end && !self.here(k) {
                // `offset <= start < extent_end <= end`: `bytes` holds it.
                let part = cut(bytes, offset, start..extent_end).ok_or(Error::Invalid)?;
                self.check_extent(k, part)?;
                // Checked as a first read would check it: not again.
                self.verified.iter().for_each(|v| v.set(k));
                let slot = usize::try_from(k).ok().and_then(|i| self.source.extents.get(i));
                if slot.is_some_and(|s| s.set(part.into()).is_ok()) {
                    self.source.missing.fetch_sub(1, Ordering::Relaxed);
                    stored += 1;
                }
            }
            k += 1;
        }
        Ok(stored)
    }

    /// True once every extent is here.
    pub fn is_complete(&self) -> bool {
        self.source.missing.load(Ordering::Relaxed) == 0
    }

    /// True when a read asked for extents that are not here.
    pub fn has_wanted(&self) -> bool {
        !lock(&self.source.wanted).is_empty()
    }

    /// The wanted extents still not here, as byte ranges to fetch (close ones
    /// merged), and forgets them.
    pub fn take_wanted(&self) -> Vec<Range<u64>> {
        let ks = std::mem::take(&mut *lock(&self.source.wanted));
        self.ranges(ks.into_iter().filter(|&k| !self.here(k)))
    }

    /// Every extent not here, as byte ranges (close ones merged): what
    /// loading the whole pack fetches.
    pub fn missing(&self) -> Vec<Range<u64>> {
        if self.is_complete() {
            return Vec::new();
        }
        self.ranges((0..self.extent_count()).filter(|&k| !self.here(k)))
    }

    /// Extents `ks`, in increasing order, as byte ranges, close ones
    /// merged: extents lie in offset order without overlap.
    fn ranges(&self, ks: impl Iterator<Item = u64>) -> Vec<Range<u64>> {
        let extents = ks.filter_map(|k| self.extent(k)).map(|(start, end)| start..end);
        merge_ranges(extents, MERGE_GAP, u64::MAX).into_iter().map(|m| m.range).collect()
    }
}

/// Runs `op` until it no longer fails for want of bytes: after each run
/// that `failed`, `fetch` brings what it wanted (the packs'
/// [`take_wanted`](PackFs::take_wanted)) and answers whether anything
/// came; if something did, `op` runs again, whole. A run that succeeded is
/// never repeated, and a failure with nothing new to fetch is the answer.
/// Every fetching layer runs its operations so: preview1's calls
/// (`wasi::p1::calls::loading`), the browser's component and JavaScript
/// calls. `fetch` awaits where the caller can; [`until_loaded`] is this
/// for one that fetches blocking.
pub async fn until_loaded_async<T, E, F>(
    mut op: impl FnMut() -> T,
    failed: impl Fn(&T) -> bool,
    mut fetch: impl FnMut() -> F,
) -> std::result::Result<T, E>
where
    F: Future<Output = std::result::Result<bool, E>>,
{
    loop {
        let out = op();
        if !failed(&out) || !fetch().await? {
            return Ok(out);
        }
    }
}

/// [`until_loaded_async`] with a `fetch` that blocks.
pub fn until_loaded<T, E>(
    op: impl FnMut() -> T,
    failed: impl Fn(&T) -> bool,
    mut fetch: impl FnMut() -> std::result::Result<bool, E>,
) -> std::result::Result<T, E> {
    let run = pin!(until_loaded_async(op, failed, || std::future::ready(fetch())));
    // Every future it awaits is ready, so one poll finishes it.
    match run.poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => unreachable!("until_loaded awaits only ready futures"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_again_only_while_a_failure_fetches_something() {
        // Fails twice for want of bytes, each time fetching some.
        let (mut runs, mut fetches) = (0, 0);
        let out = until_loaded(
            || {
                runs += 1;
                runs
            },
            |&n| n < 3,
            || {
                fetches += 1;
                Ok::<_, ()>(true)
            },
        );
        assert_eq!((out, runs, fetches), (Ok(3), 3, 2));
        // A failure with nothing to fetch is the answer; a success is never
        // run again; a failed fetch is the error.
        let mut runs = 0;
        assert_eq!(until_loaded(|| runs += 1, |_| true, || Ok::<_, ()>(false)), Ok(()));
        assert_eq!(runs, 1);
        assert_eq!(until_loaded(|| 7, |_| false, || -> Result<bool, ()> { unreachable!() }), Ok(7));
        assert_eq!(until_loaded(|| 0, |_| true, || Err::<bool, _>("offline")), Err("offline"));
    }
}
