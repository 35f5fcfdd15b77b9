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
//! - a slice that would keep alive a buffer over four times its size is
//!   copied out instead, so trimming never pins a large dead buffer.
//!
//! Most files are written in one piece from offset 0. Such a file keeps its
//! one extent in [`Content`] itself, without a map: no map node to allocate
//! on create, none to walk through on read.

use std::sync::Arc;

use crate::treap::Treap;

/// Extents under this size absorb following small appends.
const SMALL: usize = 4096;

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

    /// Bytes `from..to` of this extent.
    fn slice(&self, from: usize, to: usize) -> Self {
        let len = to - from;
        if len * 4 < self.buf.len() && self.buf.len() > 64 * 1024 {
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
    /// to `size`, a hole); `extents` is then empty. Any other shape spills
    /// the run into `extents`.
    one: Option<Arc<[u8]>>,
    extents: Treap<u64, Extent>,
    size: u64,
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
        let n = (self.size - offset).min(buf.len() as u64) as usize;
        let out = &mut buf[..n];
        if let Some(one) = &self.one {
            // Bytes past the extent, up to the size, are a hole.
            let bytes = usize::try_from(offset).ok().and_then(|at| one.get(at..)).unwrap_or_default();
            let k = bytes.len().min(n);
            out[..k].copy_from_slice(&bytes[..k]);
            out[k..].fill(0);
            return n;
        }
        let end = offset + n as u64;
        let mut pos = offset;
        let floor = self.extents.last_where(|&k| k <= offset);
        if let Some((&start, ext)) = floor
            && start + ext.len as u64 >= end
        {
            // The common case, a read within one extent: no iteration.
            let from = (offset - start) as usize;
            out.copy_from_slice(&ext.bytes()[from..from + n]);
            return n;
        }
        let first = floor.map_or(0, |(&k, _)| k);
        for (&start, ext) in self.extents.iter_from(|&k| k >= first) {
            if start >= end {
                break;
            }
            let ext_end = start + ext.len as u64;
            if ext_end <= pos {
                continue;
            }
            if start > pos {
                out[(pos - offset) as usize..(start - offset) as usize].fill(0);
                pos = start;
            }
            let to = ext_end.min(end);
            let src = &ext.bytes()[(pos - start) as usize..(to - start) as usize];
            out[(pos - offset) as usize..(to - offset) as usize].copy_from_slice(src);
            pos = to;
        }
        out[(pos - offset) as usize..].fill(0);
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
            *self = Content { one: Some(Arc::from(data)), extents: Treap::new(), size: end };
            return;
        }
        if offset == self.size && data.len() < SMALL && self.coalesce_append(data) {
            return;
        }
        self.spill();
        self.punch(offset, end);
        self.extents.insert(offset, Extent::copy_from(data));
        self.size = self.size.max(end);
    }

    /// Appends `data` to a small last extent that ends at the end of file.
    fn coalesce_append(&mut self, data: &[u8]) -> bool {
        let (start, last) = match &self.one {
            Some(one) => (0, &one[..]),
            None => match self.extents.last_where(|_| true) {
                Some((&start, last)) => (start, last.bytes()),
                None => return false,
            },
        };
        if last.len() >= SMALL || start + last.len() as u64 != self.size {
            return false;
        }
        let joined: Arc<[u8]> = [last, data].concat().into();
        match &mut self.one {
            Some(one) => *one = joined,
            None => _ = self.extents.insert(start, Extent::whole(joined)),
        }
        self.size += data.len() as u64;
        true
    }

    /// Moves a lone extent into the map, for the general case.
    fn spill(&mut self) {
        if let Some(buf) = self.one.take() {
            self.extents.insert(0, Extent::whole(buf));
        }
    }

    /// Truncates or extends to `len`; an extension is a hole.
    pub(crate) fn set_len(&mut self, len: u64) {
        if len < self.size {
            match &self.one {
                Some(_) if len == 0 => self.one = None,
                Some(one) if len >= one.len() as u64 => {}
                _ => {
                    self.spill();
                    self.punch(len, self.size);
                }
            }
        }
        self.size = len;
    }

    /// Removes all bytes in `from..to` from the extent map (leaving a hole),
    /// keeping the parts of extents outside it.
    fn punch(&mut self, from: u64, to: u64) {
        if let Some((&start, ext)) = self.extents.last_where(|&k| k < from) {
            let ext_end = start + ext.len as u64;
            if ext_end > from {
                let ext = ext.clone();
                self.extents.insert(start, ext.slice(0, (from - start) as usize));
                if ext_end > to {
                    self.extents.insert(to, ext.slice((to - start) as usize, ext.len));
                    return;
                }
            }
        }
        while let Some((&start, ext)) = self.extents.iter_from(|&k| k >= from).next() {
            if start >= to {
                break;
            }
            let ext = ext.clone();
            self.extents.remove(&start);
            let ext_end = start + ext.len as u64;
            if ext_end > to {
                self.extents.insert(to, ext.slice((to - start) as usize, ext.len));
                break;
            }
        }
    }

    #[cfg(test)]
    fn extent_count(&self) -> usize {
        usize::from(self.one.is_some()) + self.extents.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn read_all(c: &Content) -> Vec<u8> {
        let mut v = vec![0xAA; c.len() as usize];
        assert_eq!(c.read(0, &mut v), v.len());
        v
    }

    #[derive(Debug, Clone)]
    enum Op {
        Write(u16, Vec<u8>),
        Append(Vec<u8>),
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
            // Appends too big to coalesce: one new extent each.
            2 => proptest::collection::vec(any::<u8>(), SMALL..SMALL + 100).prop_map(Op::Append),
            2 => (any::<u16>(), 0u16..9000).prop_map(|(at, n)| Op::ReadAnywhere(at, n)),
            1 => (0u16..3500).prop_map(Op::SetLen),
            2 => (0u16..3500, 0u16..900).prop_map(|(o, n)| Op::Read(o, n)),
        ], 1..200)) {
            let mut c = Content::default();
            let mut model: Vec<u8> = Vec::new();
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
        }
    }

    #[test]
    fn byte_appends_coalesce() {
        let mut c = Content::default();
        for i in 0..100_000u32 {
            c.write(c.len(), &[i as u8]);
        }
        assert!(c.extent_count() <= 100_000 / SMALL + 1, "{} extents", c.extent_count());
        assert!(read_all(&c).iter().enumerate().all(|(i, &b)| b == i as u8));
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
