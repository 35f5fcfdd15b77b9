//! [`Table`]: what a remote source knows of each extent once the pack is
//! open, where each extent's bytes land, and the check they pass first.

use std::sync::OnceLock;
use std::sync::atomic::AtomicBool;

use bytes::Bytes;
use packfs_core::pack::layout::MAX_EXTENTS;
use packfs_core::pack::{ByteSource, Digest, PackFs, checksum};

use crate::extent_cache::Key;
use crate::trace::Entry;

/// One extent, as the index gives it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Extent {
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) sum: u64,
}

/// What is known of each extent once the pack is open: 73 bytes per
/// extent (24 of [`Extent`], 8 of `span_end`, 40 of slot, 1 of `touched`),
/// and 32 of digest where the pack has a digest table, for at most
/// [`MAX_EXTENTS`] extents, which the open (lazy) checked: 1.6 GiB at
/// most, whatever the pack claims.
pub(super) struct Table {
    pub(super) extents: Box<[Extent]>,
    /// Each extent's BLAKE3 digest, where the pack has a digest table: it
    /// is then checked by that, and cached under it.
    digests: Option<Box<[Digest]>>,
    /// For each extent, the end of the last file holding it: how far a
    /// read of it will likely go.
    pub(super) span_end: Box<[u64]>,
    pub(super) slots: Box<[OnceLock<Bytes>]>,
    pub(super) touched: Box<[AtomicBool]>,
}

impl Table {
    /// The table of `pack`, opened [`lazy`](packfs_core::pack::ReadOptions::lazy);
    /// `Err` for more extents than [`MAX_EXTENTS`] (which that open refused)
    /// or an extent the index cannot give.
    pub(super) fn build<S: ByteSource>(pack: &PackFs<S>) -> Result<Table, String> {
        let n = pack.extent_count();
        if n > MAX_EXTENTS {
            return Err(format!("{n} extents, more than a lazily opened pack may have ({MAX_EXTENTS})"));
        }
        let mut extents = Vec::with_capacity(n as usize);
        for k in 0..n {
            let ((start, end), sum) =
                pack.extent(k).zip(pack.extent_checksum(k)).ok_or("an extent the index cannot give")?;
            extents.push(Extent { start, end, sum });
        }
        // A sweep over the files' extent ranges, which come in the order of
        // their contents, so by start: each extent's span ends where the
        // longest file running through it does. (Out of order, a file's
        // reach would count from a later extent: a shorter readahead, not a
        // wrong read.) No list of the files: a blob per 24 bytes of index.
        let digests = match pack.extent_digest(0) {
            Some(_) => Some(
                (0..n)
                    .map(|k| pack.extent_digest(k).ok_or("a digest the index cannot give"))
                    .collect::<Result<_, _>>()?,
            ),
            None => None,
        };
        let mut files = pack.content_extents().filter(|r| !r.is_empty()).peekable();
        let mut span_end = Vec::with_capacity(extents.len());
        let mut reach = 0;
        for k in 0..n {
            while let Some(file) = files.next_if(|f| f.start <= k) {
                reach = reach.max(file.end);
            }
            span_end.push(reach.max(k + 1));
        }
        let len = extents.len();
        Ok(Table {
            extents: extents.into(),
            digests,
            span_end: span_end.into(),
            slots: (0..len).map(|_| OnceLock::new()).collect(),
            touched: (0..len).map(|_| AtomicBool::new(false)).collect(),
        })
    }

    /// The extent a trace entry names, if the pack has exactly that one
    /// (the same digest too, where both have one).
    pub(super) fn find(&self, entry: &Entry) -> Option<u64> {
        let k = self.extents.partition_point(|e| e.start < entry.start);
        let e = self.extents.get(k)?;
        let same_digest = match (entry.digest, self.digest(k as u64)) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        };
        (e.start == entry.start && e.end - e.start == entry.len && e.sum == entry.sum && same_digest)
            .then_some(k as u64)
    }

    /// Extent `k`'s trace entry.
    pub(super) fn entry(&self, k: u64) -> Entry {
        let e = self.extents[k as usize];
        Entry { start: e.start, len: e.end - e.start, sum: e.sum, digest: self.digest(k) }
    }

    fn digest(&self, k: u64) -> Option<Digest> {
        self.digests.as_ref().map(|d| d[k as usize])
    }

    /// Extent `k`'s address in the host-wide cache.
    pub(super) fn key(&self, k: u64) -> Key {
        let e = self.extents[k as usize];
        let len = e.end - e.start;
        match self.digest(k) {
            Some(digest) => Key::Digest { digest, len },
            None => Key::Sum { sum: e.sum, len },
        }
    }

    pub(super) fn here(&self, k: u64) -> bool {
        self.slots[k as usize].get().is_some()
    }
}

/// Extent `k`'s bytes out of `body`, fetched from `at`, if they pass the
/// extent's digest (where the pack has a digest table), else its checksum.
pub(super) fn checked(t: &Table, k: u64, at: u64, body: &Bytes) -> Option<Bytes> {
    let e = t.extents[k as usize];
    let bytes = body.slice((e.start - at) as usize..(e.end - at) as usize);
    let good = match &t.digests {
        Some(d) => Digest::of(&bytes) == d[k as usize],
        None => checksum(&bytes) == e.sum,
    };
    good.then_some(bytes)
}

#[cfg(test)]
impl Table {
    /// Files of `sizes` laid end to end, each in extents of up to 128 KiB.
    pub(super) fn of_files(sizes: &[u64]) -> Table {
        let (mut extents, mut span_end) = (Vec::new(), Vec::new());
        let mut at = 0;
        for &size in sizes {
            let first = extents.len();
            let mut left = size;
            while left > 0 {
                let len = left.min(128 << 10);
                extents.push(Extent { start: at, end: at + len, sum: 0 });
                (at, left) = (at + len, left - len);
            }
            span_end.extend(std::iter::repeat_n(extents.len() as u64, extents.len() - first));
        }
        let len = extents.len();
        Table {
            extents: extents.into(),
            digests: None,
            span_end: span_end.into(),
            slots: (0..len).map(|_| OnceLock::new()).collect(),
            touched: (0..len).map(|_| AtomicBool::new(false)).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What [`Table`]'s doc says an extent costs.
    #[test]
    fn an_extent_costs_the_table_73_bytes() {
        let per = size_of::<Extent>() + size_of::<u64>() + size_of::<OnceLock<Bytes>>() + size_of::<AtomicBool>();
        assert_eq!(per, 73);
    }
}
