//! [`LazyOpen`]: opening a pack from far away, as a plan without I/O. A
//! lazy reader (the browser's, over HTTP Range requests; the host's, from
//! an object store) asks the plan what to fetch ([`LazyOpen::next`]),
//! hands it each reply, and at the end opens the pack from what came. The
//! plan checks every reply against what it asked for, so that a driver is
//! a transport and nothing more, and every driver fails alike.
//!
//! ```text
//!  driver                                   plan
//!  LazyOpen::new()
//!  next() ────────────────────────────────▶ OpenStep::Tail(TAIL_LEN)
//!  GET bytes=-65536
//!  accept_tail(start, bytes, size) ───────▶ checks the reply, reads the trailer
//!  next() ────────────────────────────────▶ OpenStep::Fetch([header, rest of index])
//!  GET each, all at once
//!  accept(start, bytes), in any order ────▶ checks each reply
//!  next() ────────────────────────────────▶ OpenStep::Open
//!  open(options) or open_as(options, make)
//! ```
//!
//! Two round trips at most, none proportional to the data; one for a pack
//! no longer than the tail. A driver that knows the pack's size
//! ([`LazyOpen::with_size`]) asks for the tail as a bounded range instead.
//!
//! Every fault is a typed [`Error::Corrupt`] (a wrong call, such as
//! opening before all is here, is [`Error::Invalid`]), and an error ends
//! the plan:
//!
//! | what came | kind |
//! |---|---|
//! | a pack shorter than a header and a trailer | [`CorruptKind::Truncated`] at 0 |
//! | a reply shorter than the range asked for | [`CorruptKind::Truncated`] |
//! | bytes not asked for: another offset, more than asked, past the end, a second reply | [`CorruptKind::Unasked`] |
//! | a trailer that fails its checks, or names another length | the trailer's own kind |
//! | an index region starting past the trailer | [`CorruptKind::OutOfBounds`] |
//! | an index region over [`MAX_FETCHED_INDEX`] | [`CorruptKind::TooLarge`], before it is fetched |
//!
//! The open then checks the header, trailer and index as it checks any
//! pack, [`lazy`](ReadOptions::lazy).

use std::ops::Range;

use super::layout::{HEADER_LEN, Layout, MAX_FETCHED_INDEX, TRAILER_LEN};
use super::partial::{MERGE_GAP, Partial, merge_ranges};
use super::pieces::{Pieces, cut};
use super::reader::{ByteSource, PackFs, ReadOptions};
use crate::error::corrupt::{CorruptKind, CorruptPack, Limit, Structure};
use crate::{Error, Result};

/// Bytes asked for from the end of a pack first: 64 KiB. The trailer
/// needs only 128, but the first round trip is paid whatever it brings,
/// and 64 KiB holds a pack of that size whole (opened in one round trip)
/// and the index region of a pack of some 500 files (the second round
/// trip then fetches only the header, in a request of its own). On a
/// large pack the bytes before its index are data, and at most 64 KiB of
/// them come along: less than one default chunk (128 KiB), and they are
/// kept, so a read of a file lying there fetches nothing.
pub const TAIL_LEN: u64 = 64 << 10;

/// What a driver does next ([`LazyOpen::next`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenStep {
    /// Ask for the pack's last this many bytes (`Range: bytes=-N`, an
    /// object store's suffix request), all of it when it is shorter, and
    /// hand the reply to [`LazyOpen::accept_tail`] with the pack's size
    /// (from `Content-Range`, or the object's metadata).
    Tail(u64),
    /// Ask for each of these ranges, all at once, and hand each reply to
    /// [`LazyOpen::accept`], in any order. (Asked again, these are the
    /// ranges not answered yet.)
    Fetch(Vec<Range<u64>>),
    /// All an open reads is here: [`LazyOpen::open`] or
    /// [`LazyOpen::open_as`].
    Open,
}

/// A lazy open under way; see the module doc.
#[derive(Debug)]
pub struct LazyOpen {
    /// The pack's length, once known.
    size: Option<u64>,
    /// Whether the tail came: what is asked for now is the rest.
    tail_here: bool,
    /// Ranges asked for and not answered yet.
    asked: Vec<Range<u64>>,
    /// What came, `(offset, bytes)`.
    pieces: Vec<(u64, Vec<u8>)>,
}

impl Default for LazyOpen {
    fn default() -> Self {
        LazyOpen::new()
    }
}

impl LazyOpen {
    /// A plan for a pack whose size is not known: it first asks for a tail.
    pub fn new() -> LazyOpen {
        LazyOpen { size: None, tail_here: false, asked: Vec::new(), pieces: Vec::new() }
    }

    /// A plan for a pack of `size` bytes: it first asks for the tail as a
    /// bounded range. `Corrupt` for a size too short for a header and a
    /// trailer, before anything is fetched.
    pub fn with_size(size: u64) -> Result<LazyOpen> {
        check_size(size)?;
        Ok(LazyOpen { size: Some(size), tail_here: false, asked: vec![tail(size)], pieces: Vec::new() })
    }

    /// The pack's length, once known.
    pub fn size(&self) -> Option<u64> {
        self.size
    }

    /// What to do next.
    pub fn next(&self) -> OpenStep {
        match self.size {
            None => OpenStep::Tail(TAIL_LEN),
            Some(_) if self.asked.is_empty() && self.tail_here => OpenStep::Open,
            Some(_) => OpenStep::Fetch(self.asked.clone()),
        }
    }

    /// Takes the reply to [`OpenStep::Tail`]: `bytes` from `start` of a pack
    /// of `size` bytes. Either the last [`TAIL_LEN`] bytes (all of a
    /// shorter pack) or, from a server that ignores ranges, the whole
    /// pack. Then reads the trailer and plans the rest.
    pub fn accept_tail(&mut self, start: u64, bytes: Vec<u8>, size: u64) -> Result<()> {
        if self.size.is_some() {
            return Err(Error::Invalid);
        }
        check_size(size)?;
        self.size = Some(size);
        self.asked = vec![tail(size)];
        self.accept(start, bytes)
    }

    /// Takes the reply to one range of [`OpenStep::Fetch`]: `bytes` from
    /// `start`. It must be exactly a range asked for and not answered yet,
    /// or the whole pack (from a server that ignores ranges).
    pub fn accept(&mut self, start: u64, bytes: Vec<u8>) -> Result<()> {
        let size = self.size.ok_or(Error::Invalid)?;
        let len = bytes.len() as u64;
        let unasked = || Error::from(CorruptPack::new(start, CorruptKind::Unasked { len }));
        let end = start.checked_add(len).filter(|&e| e <= size).ok_or_else(unasked)?;
        if start == 0 && end == size {
            // The whole pack: all an open needs, whatever was asked.
            self.asked.clear();
            self.tail_here = true;
            self.pieces = vec![(0, bytes)];
            return Ok(());
        }
        // The range this answers: the one starting here, or the tail,
        // which a short reply to a suffix request ends as it should.
        let found = self.asked.iter().position(|r| r.start == start || (r.end == size && end == size));
        let Some(i) = found else { return Err(unasked()) };
        let asked = self.asked[i].clone();
        let needed = asked.end - asked.start;
        if len < needed {
            return Err(CorruptPack::new(start, CorruptKind::Truncated { needed, available: len }).into());
        }
        if (start, end) != (asked.start, asked.end) {
            return Err(unasked());
        }
        self.asked.swap_remove(i);
        if self.tail_here {
            self.pieces.push((start, bytes));
            return Ok(());
        }
        self.tail_here = true;
        let asked = self.plan_rest(start, &bytes, size)?;
        self.pieces.push((start, bytes));
        self.asked = asked;
        Ok(())
    }

    /// What to ask for once the tail, `bytes` from `at` to the pack's end,
    /// is here: the header, and the index region before `at`.
    fn plan_rest(&self, at: u64, bytes: &[u8], size: u64) -> Result<Vec<Range<u64>>> {
        // At least a trailer long: `check_size`, and `accept` took exactly
        // the tail asked for.
        let trailer_at = size - TRAILER_LEN;
        let trailer = cut(bytes, at, trailer_at..size).ok_or(Error::Invalid)?;
        let layout = Layout::from_trailer(trailer).map_err(|e| CorruptPack::new(trailer_at + e.offset, e.kind))?;
        if layout.pack_len != size {
            let kind = CorruptKind::LengthMismatch { expected: layout.pack_len, actual: size };
            return Err(CorruptPack::new(trailer_at, kind).into());
        }
        if layout.index_offset > trailer_at {
            let (start, limit) = (layout.index_offset, trailer_at);
            let kind = CorruptKind::OutOfBounds { of: Structure::Trailer, field: "index_offset", start, len: 0, limit };
            return Err(CorruptPack::new(trailer_at, kind).into());
        }
        let [_, index] = layout.required_to_fetch().map_err(|value| {
            let kind = CorruptKind::TooLarge { what: Limit::FetchedIndex, value, limit: MAX_FETCHED_INDEX };
            CorruptPack::new(layout.index_offset, kind)
        })?;
        let wanted = [0..HEADER_LEN.min(at), index.0..at].into_iter().filter(|r| r.start < r.end);
        // A header close before the index comes in the same request.
        Ok(merge_ranges(wanted, MERGE_GAP, u64::MAX).into_iter().map(|m| m.range).collect())
    }

    /// Opens the pack from what came, as a [`Partial`] pack; the data
    /// that came along is kept once checked. `Invalid` before
    /// [`OpenStep::Open`].
    pub fn open(self, options: ReadOptions) -> Result<PackFs<Partial>> {
        let (size, checked, data) = self.split()?;
        let pack = PackFs::open_partial(size, checked, options)?;
        for (at, bytes) in data {
            // An extent that fails its checksum is not kept (nor those after
            // it in these bytes): a read fetches it, and the read fails if
            // the bytes are still wrong.
            let _ = pack.store(at, &bytes);
        }
        Ok(pack)
    }

    /// Opens the pack from what came, over the source `make` builds around
    /// it (a driver's own, which fetches extents as reads need them),
    /// [`lazy`](ReadOptions::lazy) whatever `options` say. The source is
    /// given the bytes the open checks: the header, the index region and
    /// the trailer. Also returns the data that came along, `(offset,
    /// bytes)`, unchecked: the source may keep the extents lying in it
    /// that pass their checksums. `Invalid` before [`OpenStep::Open`].
    #[allow(clippy::type_complexity, reason = "documented just above")]
    pub fn open_as<S: ByteSource>(
        self,
        options: ReadOptions,
        make: impl FnOnce(Pieces) -> S,
    ) -> Result<(PackFs<S>, Vec<(u64, Vec<u8>)>)> {
        let (size, checked, data) = self.split()?;
        let pack = PackFs::open_with(make(Pieces::new(size, checked)?), options.lazy(true))?;
        Ok((pack, data))
    }

    /// The pack's size; what came of the header, the index region and the
    /// trailer (what the open checks); and what came of the data between.
    #[allow(clippy::type_complexity, reason = "private, documented just above")]
    fn split(self) -> Result<(u64, Vec<(u64, Vec<u8>)>, Vec<(u64, Vec<u8>)>)> {
        let size = match (self.next(), self.size) {
            (OpenStep::Open, Some(size)) => size,
            _ => return Err(Error::Invalid),
        };
        let tail = self.pieces.iter().find(|(at, bytes)| at + bytes.len() as u64 == size);
        let trailer = tail.and_then(|(at, bytes)| cut(bytes, *at, size - TRAILER_LEN..size));
        // A trailer that fails (only a whole pack's is not read yet): the
        // open says what is wrong, from all that came.
        let Some(layout) = trailer.and_then(|t| Layout::from_trailer(t).ok()) else {
            return Ok((size, self.pieces, Vec::new()));
        };
        let data = HEADER_LEN..layout.index_offset.clamp(HEADER_LEN, size);
        let (mut checked, mut between) = (Vec::new(), Vec::new());
        for (at, bytes) in self.pieces {
            let end = at + bytes.len() as u64;
            let (lo, hi) = (at.clamp(data.start, data.end), end.clamp(data.start, data.end));
            // A piece wholly of one kind moves (it may be most of a large
            // index); one across the data's edges is cut.
            if lo == hi {
                checked.push((at, bytes));
                continue;
            }
            if (lo, hi) == (at, end) {
                between.push((at, bytes));
                continue;
            }
            // Each range lies in `at..end`, so `cut` finds it.
            let piece =
                |from: u64, to: u64| Ok::<_, Error>((from, cut(&bytes, at, from..to).ok_or(Error::Invalid)?.to_vec()));
            if at < lo {
                checked.push(piece(at, lo.min(end))?);
            }
            if lo < hi {
                between.push(piece(lo, hi)?);
            }
            if hi.max(at) < end {
                checked.push(piece(hi.max(at), end)?);
            }
        }
        Ok((size, checked, between))
    }
}

/// The tail a pack of `size` bytes is asked for.
fn tail(size: u64) -> Range<u64> {
    size - TAIL_LEN.min(size)..size
}

/// `Corrupt` for a pack too short to hold a header and a trailer.
fn check_size(size: u64) -> Result<()> {
    let needed = HEADER_LEN + TRAILER_LEN;
    if size < needed {
        return Err(CorruptPack::new(0, CorruptKind::Truncated { needed, available: size }).into());
    }
    Ok(())
}
