//! File content: an extent map from file offset to immutable byte runs.
//!
//! A write stores its bytes once, as a new extent, and trims the extents it
//! overlaps by slicing them (no byte is copied), so a write costs
//! O(len + log extents) whatever the file size, and snapshots share every
//! extent they have in common. Growing a file never re-copies what it
//! already holds. Two bounds keep memory proportional to content:
//! - small appends coalesce into the last extent while it is under
//!   [`SMALL`] bytes, so byte-at-a-time writers do not make byte-sized
//!   extents;
//! - a slice that would keep alive a buffer over four times its size (and
//!   over [`KEEP`]) is copied out instead, so trimming never pins a large
//!   dead buffer.
//!
//! Most files are written in one piece from offset 0. Such a file keeps its
//! one extent in [`Content`] itself, without a map: no map node to allocate
//! on create, none to walk through on read. The next most common shape is a
//! file written front to back in pieces (a WASI p1 guest's writes arrive in
//! 4 KiB pieces): its newest extents wait in a short list (see [`Runs`])
//! and join the map sixteen at a time, so an append does not copy the
//! map's path to its end.

// File offsets are u64 and the web build's usize is 32 bits: a silent
// truncation here reads or writes the wrong bytes.
#![warn(clippy::cast_possible_truncation)]

use std::sync::Arc;

use crate::treap::Treap;

/// Extents under this size absorb following small appends.
const SMALL: usize = 4096;

/// A slice keeps a buffer of at most four times its length, or this: a
/// trimmed extent never pins much more than it holds, however the buffers
/// it came from were cut (an overwrite a byte further on each time, of a
/// 64 KiB buffer each, kept 64 KiB alive per byte kept).
const KEEP: usize = 256;

#[derive(Clone)]
struct Extent {
    buf: Arc<[u8]>,
    start: usize,
    len: usize,
}

impl Extent {
    fn copy_from(data: &[u8]) -> Self {
        Self::whole(Arc::from(data))
    }

    fn whole(buf: Arc<[u8]>) -> Self {
        Extent { len: buf.len(), buf, start: 0 }
    }

    fn bytes(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }

    /// Bytes `from..to` of this extent: sharing its buffer, unless that
    /// would keep alive more than four times the slice (and [`KEEP`]).
    fn slice(&self, from: usize, to: usize) -> Self {
        let len = to - from;
        if self.buf.len() > len.max(KEEP / 4) * 4 {
            return Extent::copy_from(&self.bytes()[from..to]);
        }
        Extent { buf: self.buf.clone(), start: self.start + from, len }
    }
}

/// The bytes of one regular file. Offsets not covered by an extent are a
/// hole and read as zeros.
#[derive(Clone, Default)]
pub(crate) struct Content {
    /// The file's bytes from offset 0 when they are one run (the rest, up
    /// to `size`, a hole); `runs` is then `None`. Any other shape spills
    /// the run into `runs`.
    one: Option<Arc<[u8]>>,
    runs: Option<Arc<Runs>>,
    size: u64,
}

/// Appended extents held in the tail before they join the map.
const TAIL: u8 = 16;

/// The extents of a file that is not one run: a map, and the newest
/// appended extents, past every key of the map, in a short list. An append
/// adds one list node, where inserting into the map would copy the map's
/// path to its end (~20 nodes for a 64 MiB file written in 4 KiB pieces);
/// every [`TAIL`] appends the list joins the map in one merge.
#[derive(Clone, Default)]
struct Runs {
    map: Treap<u64, Extent>,
    tail: Option<Arc<Tailed>>,
}

/// One extent of the tail, newest first.
struct Tailed {
    start: u64,
    extent: Extent,
    /// Extents in the list from this one on.
    count: u8,
    /// Where the oldest of them starts: offsets below are the map's.
    oldest: u64,
    older: Option<Arc<Tailed>>,
}

impl Tailed {
    /// `extent` at `start`, newest in front of `older`.
    fn new(start: u64, extent: Extent, older: Option<Arc<Tailed>>) -> Arc<Self> {
        let (count, oldest) = older.as_ref().map_or((1, start), |o| (o.count + 1, o.oldest));
        Arc::new(Tailed { start, extent, count, oldest, older })
    }
}

impl Tailed {
    /// This extent and the older ones, oldest first: each node's count is
    /// its place from the oldest, so no list is built and reversed.
    fn oldest_first(&self) -> impl Iterator<Item = (u64, &Extent)> {
        let mut slots = [None; TAIL as usize];
        let mut at = Some(self);
        while let Some(t) = at {
            slots[usize::from(t.count) - 1] = Some((t.start, &t.extent));
            at = t.older.as_deref();
        }
        slots.into_iter().flatten()
    }
}

impl Runs {
    /// The tail's extents, oldest first.
    fn tail(&self) -> impl Iterator<Item = (u64, &Extent)> {
        self.tail.as_deref().into_iter().flat_map(Tailed::oldest_first)
    }

    /// The last extent: the tail's newest, else the map's last.
    fn last(&self) -> Option<(u64, &Extent)> {
        match &self.tail {
            Some(t) => Some((t.start, &t.extent)),
            None => self.map.last_where(|_| true).map(|(&k, e)| (k, e)),
        }
    }

    /// Adds `extent` at `start`, past every extent there is.
    fn push(&mut self, start: u64, extent: Extent) {
        if self.tail.as_ref().is_some_and(|t| t.count == TAIL) {
            self.settle();
        }
        self.tail = Some(Tailed::new(start, extent, self.tail.take()));
    }

    /// Moves the tail into the map, for an operation on the map.
    fn settle(&mut self) {
        if let Some(tail) = self.tail.take() {
            self.map.append(tail.oldest_first().map(|(k, e)| (k, e.clone())));
        }
    }

    /// The extent holding `offset`'s floor: the greatest start at or before it.
    fn floor(&self, offset: u64) -> Option<(u64, &Extent)> {
        let mut at = self.tail.as_deref().filter(|t| t.oldest <= offset);
        while let Some(t) = at {
            if t.start <= offset {
                return Some((t.start, &t.extent));
            }
            at = t.older.as_deref();
        }
        self.map.last_where(|&k| k <= offset).map(|(&k, e)| (k, e))
    }
}

impl Content {
    pub(crate) fn len(&self) -> u64 {
        self.size
    }

    /// Copies bytes from `offset` into `buf`; returns the count.
    pub(crate) fn read(&self, offset: u64, buf: &mut [u8]) -> usize {
        if offset >= self.size {
            return 0;
        }
        let n = usize::try_from(self.size - offset).map_or(buf.len(), |left| left.min(buf.len()));
        let out = &mut buf[..n];
        let Some(runs) = &self.runs else {
            // One run, or none. Bytes past it, up to the size, are a hole.
            let one = self.one.as_deref().unwrap_or_default();
            let bytes = usize::try_from(offset).ok().and_then(|at| one.get(at..)).unwrap_or_default();
            let k = bytes.len().min(n);
            out[..k].copy_from_slice(&bytes[..k]);
            out[k..].fill(0);
            return n;
        };
        let end = offset + n as u64;
        let floor = runs.floor(offset);
        if let Some((start, ext)) = floor
            && start + ext.len as u64 >= end
        {
            // The common case, a read within one extent: no iteration.
            let from = within(offset - start);
            out.copy_from_slice(&ext.bytes()[from..from + n]);
            return n;
        }
        // From the floor on, the map's extents then the tail's (which all
        // start past the map's); those ending before `pos` are skipped.
        let first = floor.map_or(0, |(k, _)| k);
        let mut pos = offset;
        let map = runs.map.iter_from(|&k| k >= first).map(|(&k, e)| (k, e));
        for (start, ext) in map.chain(runs.tail()) {
            if copy_out(out, offset, &mut pos, start, ext) {
                break;
            }
        }
        out[within(pos - offset)..].fill(0);
        n
    }

    /// Writes `data` at `offset`. The caller has checked that
    /// `offset + data.len()` does not overflow.
    pub(crate) fn write(&mut self, offset: u64, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let end = offset + data.len() as u64;
        if offset == 0 && end >= self.size {
            // Everything the file held is overwritten.
            *self = Content { one: Some(Arc::from(data)), runs: None, size: end };
            return;
        }
        if offset == self.size && data.len() < SMALL && self.coalesce_append(data) {
            return;
        }
        let past_end = offset >= self.size;
        self.size = self.size.max(end);
        let runs = self.spill();
        if past_end {
            // Past every extent (a shrink punched those beyond the size).
            runs.push(offset, Extent::copy_from(data));
        } else {
            runs.settle();
            punch(&mut runs.map, offset, end);
            runs.map.insert(offset, Extent::copy_from(data));
        }
    }

    /// Appends `data` to a small last extent that ends at the end of file.
    fn coalesce_append(&mut self, data: &[u8]) -> bool {
        let (start, last) = match &self.one {
            Some(one) => (0, &one[..]),
            None => match self.runs.as_deref().and_then(Runs::last) {
                Some((start, last)) => (start, last.bytes()),
                None => return false,
            },
        };
        if last.len() >= SMALL || start + last.len() as u64 != self.size {
            return false;
        }
        let joined = Extent::whole([last, data].concat().into());
        if let Some(one) = &mut self.one {
            *one = joined.buf;
        } else if let Some(runs) = &mut self.runs {
            let runs = Arc::make_mut(runs);
            match &runs.tail {
                // The newest tail node gives way to its joined copy.
                Some(t) => runs.tail = Some(Tailed::new(start, joined, t.older.clone())),
                None => _ = runs.map.insert(start, joined),
            }
        }
        self.size += data.len() as u64;
        true
    }

    /// The extents, for the general case: a lone run moves into them.
    fn spill(&mut self) -> &mut Runs {
        let runs = Arc::make_mut(self.runs.get_or_insert_default());
        if let Some(buf) = self.one.take() {
            runs.push(0, Extent::whole(buf));
        }
        runs
    }

    /// Truncates or extends to `len`; an extension is a hole.
    pub(crate) fn set_len(&mut self, len: u64) {
        if len < self.size {
            match &self.one {
                _ if len == 0 => (self.one, self.runs) = (None, None),
                Some(one) if len >= one.len() as u64 => {}
                _ => {
                    let size = self.size;
                    let runs = self.spill();
                    runs.settle();
                    punch(&mut runs.map, len, size);
                }
            }
        }
        self.size = len;
    }

    /// The runs of bytes it holds, in offset order, each with its offset
    /// (the offsets between them are holes): what a journal's image writes.
    pub(crate) fn extents(&self) -> impl Iterator<Item = (u64, &[u8])> {
        let runs = self.runs.iter().flat_map(|r| r.map.iter().map(|(&k, e)| (k, e)).chain(r.tail()));
        let one = self.one.as_deref().map(|one| (0, one));
        one.into_iter().chain(runs.map(|(k, e)| (k, e.bytes()))).filter(|(_, b)| !b.is_empty())
    }

    #[cfg(test)]
    fn extent_count(&self) -> usize {
        usize::from(self.one.is_some()) + self.runs.as_ref().map_or(0, |r| r.map.len() + r.tail().count())
    }

    /// Bytes of the buffers its extents keep alive, each counted once.
    #[cfg(test)]
    fn held(&self) -> usize {
        let mut seen = std::collections::HashSet::new();
        let runs = self.runs.iter().flat_map(|r| r.map.iter().map(|(_, e)| e).chain(r.tail().map(|(_, e)| e)));
        let bufs = self.one.iter().chain(runs.map(|e| &e.buf));
        bufs.filter(|b| seen.insert(b.as_ptr())).map(|b| b.len()).sum()
    }
}

/// Copies what extent `ext` at `start` holds of `out`'s range (which starts
/// at file offset `offset`) from `pos` on, zeros for a hole before it, and
/// advances `pos`; true when the extent starts past the range (the rest is
/// for the caller to zero).
fn copy_out(out: &mut [u8], offset: u64, pos: &mut u64, start: u64, ext: &Extent) -> bool {
    let end = offset + out.len() as u64;
    if start >= end {
        return true;
    }
    let ext_end = start + ext.len as u64;
    if ext_end <= *pos {
        return false;
    }
    if start > *pos {
        out[within(*pos - offset)..within(start - offset)].fill(0);
        *pos = start;
    }
    let to = ext_end.min(end);
    let src = &ext.bytes()[within(*pos - start)..within(to - start)];
    out[within(*pos - offset)..within(to - offset)].copy_from_slice(src);
    *pos = to;
    false
}

/// `d`, the distance between two file offsets that lie in one extent or in
/// the caller's buffer (every use above): both are in memory, so it fits.
#[allow(clippy::cast_possible_truncation, reason = "at most the length of a buffer in memory, as said above")]
fn within(d: u64) -> usize {
    d as usize
}

/// Removes all bytes in `from..to` from `map` (leaving a hole), keeping the
/// parts of extents outside it.
fn punch(map: &mut Treap<u64, Extent>, from: u64, to: u64) {
    if let Some((&start, ext)) = map.last_where(|&k| k < from) {
        let ext_end = start + ext.len as u64;
        if ext_end > from {
            let ext = ext.clone();
            map.insert(start, ext.slice(0, within(from - start)));
            if ext_end > to {
                map.insert(to, ext.slice(within(to - start), ext.len));
                return;
            }
        }
    }
    while let Some((&start, ext)) = map.iter_from(|&k| k >= from).next() {
        if start >= to {
            break;
        }
        let ext = ext.clone();
        map.remove(&start);
        let ext_end = start + ext.len as u64;
        if ext_end > to {
            map.insert(to, ext.slice(within(to - start), ext.len));
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn read_all(c: &Content) -> Vec<u8> {
        let mut v = vec![0xAA; usize::try_from(c.len()).unwrap()];
        assert_eq!(c.read(0, &mut v), v.len());
        v
    }

    #[derive(Debug, Clone)]
    enum Op {
        Write(u16, Vec<u8>),
        Append(Vec<u8>),
        /// At `.0` bytes past the end.
        WriteAfter(u16, Vec<u8>),
        /// At `.0` bytes before the end.
        WriteBack(u16, Vec<u8>),
        /// Keeps a copy, to be checked unchanged at the end.
        Snapshot,
        SetLen(u16),
        Read(u16, u16),
        /// At a point anywhere in the file: `.0` in 1/65536ths of its length.
        ReadAnywhere(u16, u16),
    }

    proptest! {
        #[test]
        fn matches_vec(ops in proptest::collection::vec(prop_oneof![
            4 => (0u16..3000, proptest::collection::vec(any::<u8>(), 0..700)).prop_map(|(o, d)| Op::Write(o, d)),
            // At 0 and at the end: the shapes a lone extent takes and leaves.
            2 => proptest::collection::vec(any::<u8>(), 0..700).prop_map(|d| Op::Write(0, d)),
            2 => proptest::collection::vec(any::<u8>(), 0..300).prop_map(Op::Append),
            // Appends too big to coalesce: one new extent each, enough of
            // them for the tail to fill and join the map.
            4 => proptest::collection::vec(any::<u8>(), SMALL..SMALL + 100).prop_map(Op::Append),
            // Past the end: a hole, then a new extent.
            1 => (0u16..5000, proptest::collection::vec(any::<u8>(), 1..300)).prop_map(|(gap, d)| Op::WriteAfter(gap, d)),
            1 => Just(Op::Snapshot),
            // Over the last bytes, into the newest extents.
            2 => (1u16..600, proptest::collection::vec(any::<u8>(), 1..300)).prop_map(|(back, d)| Op::WriteBack(back, d)),
            2 => (any::<u16>(), 0u16..9000).prop_map(|(at, n)| Op::ReadAnywhere(at, n)),
            1 => (0u16..3500).prop_map(Op::SetLen),
            2 => (0u16..3500, 0u16..900).prop_map(|(o, n)| Op::Read(o, n)),
        ], 1..200)) {
            let mut c = Content::default();
            let mut model: Vec<u8> = Vec::new();
            let mut kept = Vec::new();
            for op in ops {
                match op {
                    Op::Write(off, data) => {
                        let (off, end) = (off as usize, off as usize + data.len());
                        c.write(off as u64, &data);
                        if !data.is_empty() {
                            if model.len() < end { model.resize(end, 0); }
                            model[off..end].copy_from_slice(&data);
                        }
                    }
                    Op::Append(data) => {
                        c.write(c.len(), &data);
                        model.extend_from_slice(&data);
                    }
                    Op::WriteAfter(gap, data) => {
                        let off = model.len() + gap as usize;
                        c.write(off as u64, &data);
                        model.resize(off, 0);
                        model.extend_from_slice(&data);
                    }
                    Op::WriteBack(back, data) => {
                        let off = model.len().saturating_sub(back as usize);
                        c.write(off as u64, &data);
                        let end = off + data.len();
                        if model.len() < end { model.resize(end, 0); }
                        model[off..end].copy_from_slice(&data);
                    }
                    Op::Snapshot => kept.push((c.clone(), model.clone())),
                    Op::SetLen(n) => { c.set_len(n as u64); model.resize(n as usize, 0); }
                    Op::ReadAnywhere(at, n) => {
                        let off = (model.len() as u64 * u64::from(at) / 65536) as usize;
                        let mut buf = vec![0xAA; n as usize];
                        let got = c.read(off as u64, &mut buf);
                        let want = &model[off..model.len().min(off + n as usize)];
                        prop_assert_eq!(&buf[..got], want);
                    }
                    Op::Read(off, n) => {
                        let mut buf = vec![0xAA; n as usize];
                        let got = c.read(off as u64, &mut buf);
                        let want = model.get(off as usize..).map_or(&[][..], |s| &s[..s.len().min(n as usize)]);
                        prop_assert_eq!(&buf[..got], want);
                    }
                }
                prop_assert_eq!(c.len(), model.len() as u64);
            }
            prop_assert_eq!(read_all(&c), model);
            for (c, model) in kept {
                prop_assert_eq!(read_all(&c), model);
            }
        }
    }

    /// Overwrites of 64 KiB, each a byte further on than the last, leave
    /// a byte of each buffer but the last: those bytes keep little more
    /// than themselves alive. (Each kept its whole 64 KiB buffer: 2,000 such
    /// writes over a 130 KiB file held 128 MiB.)
    #[test]
    fn trimmed_extents_keep_little_of_their_buffers() {
        let mut c = Content::default();
        for i in 0..2000u32 {
            c.write(u64::from(i), &vec![i.to_le_bytes()[0]; 64 << 10]);
        }
        let live = usize::try_from(c.len()).unwrap();
        assert!(c.held() < 4 * live, "{} bytes held for {live}", c.held());
        let want: Vec<u8> = (0..u32::try_from(live).unwrap()).map(|p| p.min(1999).to_le_bytes()[0]).collect();
        assert_eq!(read_all(&c), want);
    }

    #[test]
    fn byte_appends_coalesce() {
        let mut c = Content::default();
        // Byte `i` is the low byte of `i`.
        for i in 0..100_000u32 {
            c.write(c.len(), &i.to_le_bytes()[..1]);
        }
        assert!(c.extent_count() <= 100_000 / SMALL + 1, "{} extents", c.extent_count());
        assert!(read_all(&c).iter().zip(0u32..).all(|(&b, i)| b == i.to_le_bytes()[0]));
    }

    #[test]
    fn overwrite_in_big_file_shares_the_rest() {
        let mut c = Content::default();
        c.write(0, &vec![7u8; 8 << 20]);
        let before = c.clone();
        c.write(4 << 20, b"hello");
        assert_eq!(c.extent_count(), 3);
        let mut b = [0u8; 7];
        c.read((4 << 20) - 1, &mut b);
        assert_eq!(&b, &[7, b'h', b'e', b'l', b'l', b'o', 7]);
        before.read((4 << 20) - 1, &mut b);
        assert_eq!(b, [7; 7]);
    }

    #[test]
    fn a_lone_run_reads_as_zeros_past_its_end_at_any_offset() {
        // Offsets past 4 GiB: on 32-bit targets an offset must not wrap
        // back into the run.
        let mut c = Content::default();
        c.write(0, b"abc");
        c.set_len((1 << 32) + 10);
        let mut b = [9u8; 4];
        assert_eq!(c.read((1 << 32) + 1, &mut b), 4);
        assert_eq!(b, [0; 4]);
        assert_eq!(c.read(1, &mut b), 4);
        assert_eq!(b, [b'b', b'c', 0, 0]);
    }

    #[test]
    fn holes_read_as_zeros() {
        let mut c = Content::default();
        c.write(10, b"x");
        c.set_len(20);
        assert_eq!(read_all(&c), [&[0u8; 10][..], b"x", &[0; 9]].concat());
        c.set_len(5);
        assert_eq!(read_all(&c), [0; 5]);
    }
}
