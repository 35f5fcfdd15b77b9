//! Reading a file's content: in version 1 a blob is one range of the
//! pack, lent as it is; in version 2 it is a range of the content space,
//! read chunk by chunk ([`chunk`](super::chunk)): raw chunks lent from the
//! source, compressed ones decoded into the [`ChunkCache`] after their
//! stored bytes pass their checksum. A whole file of raw chunks lying end
//! to end is still lent without a copy. A pinned pack whose source may
//! change (a mapped file) lends nothing: every extent is copied, checked
//! against its digest as copied, and read from the copy (raw ones kept in
//! the cache too), so no byte read differs from what was checked.

use std::borrow::Cow;
use std::ops::{Deref, Range};
use std::sync::Arc;

use super::chunk::{self, ChunkRecord, ChunkTable, Codec};
use super::reader::{ByteSource, PackFs};
use crate::error::corrupt::{CorruptKind, CorruptPack, Structure};
use crate::{Error, Result};

/// A chunk's content: lent by the source, or decoded and shared.
enum ChunkBytes<'a> {
    Lent(&'a [u8]),
    Decoded(Arc<[u8]>),
}

impl Deref for ChunkBytes<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            ChunkBytes::Lent(b) => b,
            ChunkBytes::Decoded(b) => b,
        }
    }
}

impl<S: ByteSource> PackFs<S> {
    /// Extent `k` (a version 1 blob, a version 2 chunk) at `range`, from
    /// the source: `NotLoaded` when the source does not have it yet,
    /// `Corrupt` when it lies past the source's end.
    pub(crate) fn extent_bytes(&self, k: u64, range: Range<u64>, of: Structure) -> Result<&[u8]> {
        super::index::found(self.source.extent(k, range.clone()), range, self.source.size(), of)
    }

    /// Blob `k`'s whole content, which lies at `range` (of the pack, or of
    /// the content space); lent without a copy where it can be.
    pub(crate) fn content(&self, k: u64, range: Range<u64>) -> Result<Cow<'_, [u8]>> {
        let Some(t) = &self.index.chunks else {
            return Ok(match self.raw_extent(k, range, Structure::Blob)? {
                ChunkBytes::Lent(b) => Cow::Borrowed(b),
                ChunkBytes::Decoded(b) => Cow::Owned(b.to_vec()),
            });
        };
        if let Some(lent) = self.lent(t, range.clone())? {
            return Ok(Cow::Borrowed(lent));
        }
        let len = usize::try_from(range.end - range.start).map_err(|_| Error::FileTooLarge)?;
        let mut out = super::index::zeroed(len)?;
        let n = self.read_chunked(t, range, 0, &mut out)?;
        out.truncate(n);
        Ok(Cow::Owned(out))
    }

    /// Copies the content at `range` from `offset` on into `buf`.
    pub(crate) fn read_content(&self, k: u64, range: Range<u64>, offset: u64, buf: &mut [u8]) -> Result<usize> {
        match &self.index.chunks {
            Some(t) => self.read_chunked(t, range, offset, buf),
            None => {
                let bytes = self.raw_extent(k, range, Structure::Blob)?;
                let Some(rest) = usize::try_from(offset).ok().and_then(|o| bytes.get(o..)) else { return Ok(0) };
                let n = rest.len().min(buf.len());
                buf[..n].copy_from_slice(&rest[..n]);
                Ok(n)
            }
        }
    }

    /// [`FileSystem::may_wait`](crate::FileSystem::may_wait) of the content
    /// at `range`: some extent that `len` bytes from `offset` touch is not
    /// at hand in the source. What cannot be read (bad records) does not
    /// wait: the read reports it.
    pub(crate) fn content_may_wait(&self, k: u64, range: Range<u64>, offset: u64, len: u64) -> bool {
        let start = range.start.saturating_add(offset);
        let end = range.end.min(start.saturating_add(len));
        if start >= end {
            return false;
        }
        let Some(t) = &self.index.chunks else {
            return !self.source.at_hand(k, range);
        };
        let Ok(region) = self.region() else { return false };
        let Ok(mut k) = t.at(region, start) else { return false };
        while let Some(r) = t.get(region, k).ok().filter(|r| r.content_offset < end) {
            if !r.extent().is_empty() && !self.source.at_hand(k, r.extent()) {
                return true;
            }
            k += 1;
        }
        false
    }

    /// [`FileSystem::loaded`](crate::FileSystem::loaded) of the content at
    /// `range`: every extent that `len` bytes from `offset` touch is here,
    /// else `NotLoaded` with all the missing ones wanted.
    pub(crate) fn content_loaded(&self, k: u64, range: Range<u64>, offset: u64, len: u64) -> Result<()> {
        let start = range.start.saturating_add(offset);
        let end = range.end.min(start.saturating_add(len));
        if start >= end || self.source.complete() {
            return Ok(());
        }
        let Some(t) = &self.index.chunks else {
            return self.extent_bytes(k, range, Structure::Blob).map(drop);
        };
        let region = self.region()?;
        let mut k = t.at(region, start)?;
        let mut here = true;
        // Every chunk is asked for, not only the first missing one.
        while let Some(r) = t.get(region, k).ok().filter(|r| r.content_offset < end) {
            here &= r.extent().is_empty() || self.source.extent(k, r.extent()).is_some();
            k += 1;
        }
        if here { Ok(()) } else { Err(Error::NotLoaded) }
    }

    /// The content space's `range` as one slice of the source, when it lies
    /// in raw chunks stored end to end (each checked on first use if asked)
    /// and the source holds them as one piece.
    fn lent(&self, t: &ChunkTable, range: Range<u64>) -> Result<Option<&[u8]>> {
        if range.is_empty() {
            return Ok(Some(&[]));
        }
        if self.copies {
            return Ok(None);
        }
        let region = self.region()?;
        let mut k = t.at(region, range.start)?;
        let (r, c) = t.entry(region, k)?;
        // Where the range starts in the pack, if it is one run.
        let start = r.offset + (range.start - c.start);
        loop {
            let (r, c) = t.entry(region, k)?;
            if r.codec() != Codec::Raw || r.offset + range.start != start + c.start {
                return Ok(None);
            }
            match self.chunk(k, &r, &c) {
                // Not here: the copying path asks for every chunk at once.
                Err(Error::NotLoaded) => return Ok(None),
                r => r?,
            };
            if c.end >= range.end {
                break;
            }
            k += 1;
        }
        let len = range.end - range.start;
        Ok(self.source.get(start..start + len).filter(|b| b.len() as u64 == len))
    }

    /// Copies content space `range`, from `offset` on, into `buf`: only the
    /// chunks it touches are read.
    fn read_chunked(&self, t: &ChunkTable, range: Range<u64>, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let region = self.region()?;
        let mut pos = match range.start.checked_add(offset) {
            Some(p) if p < range.end => p,
            _ => return Ok(0),
        };
        let end = range.end.min(pos.saturating_add(buf.len() as u64));
        let mut done = 0;
        let mut k = t.at(region, pos)?;
        while pos < end {
            let (r, content) = t.entry(region, k)?;
            // A compressed chunk the read covers whole lies inside this one
            // file's content: no other file's read shares it. It is kept
            // while the cache has room, else decoded straight into the
            // caller's buffer and not kept, so that it never pushes out the
            // chunks files share (small files, the ends of big ones).
            if pos == content.start && content.end <= end && !self.cache.has_room(content.end - content.start) {
                // At most `buf.len()`: the chunk lies inside `pos..end`.
                let len = usize::try_from(content.end - content.start).map_err(|_| Error::FileTooLarge)?;
                if self.decode_direct(k, &r, &mut buf[done..done + len])? {
                    done += len;
                    pos = content.end;
                    k += 1;
                    continue;
                }
            }
            let bytes = match self.chunk(k, &r, &content) {
                Ok(b) => b,
                Err(Error::NotLoaded) => {
                    // Ask for every other chunk the read needs too, so that
                    // one round of fetching brings them all.
                    while let Some(r) = t.get(region, k + 1).ok().filter(|r| r.content_offset < end) {
                        k += 1;
                        let _ = self.source.extent(k, r.extent());
                    }
                    return Err(Error::NotLoaded);
                }
                Err(e) => return Err(e),
            };
            let from = usize::try_from(pos - content.start).map_err(|_| Error::FileTooLarge)?;
            // At most `buf.len() - done`, so it fits.
            let left = usize::try_from(end.min(content.end) - pos).map_err(|_| Error::FileTooLarge)?;
            let n = left.min(bytes.len().saturating_sub(from));
            if n == 0 {
                // Open checked that the chunks tile the content space.
                return Err(CorruptPack::new(k, CorruptKind::Decode { chunk: k }).into());
            }
            buf[done..done + n].copy_from_slice(&bytes[from..from + n]);
            done += n;
            pos += n as u64;
            k += 1;
        }
        Ok(done)
    }

    /// Raw extent `k` (a version 1 blob, a raw chunk) at `range`: lent by
    /// the source, checked on first use if the pack was opened so; or, a
    /// pinned pack whose source may change, a copy checked as it was made
    /// and kept in the cache.
    fn raw_extent(&self, k: u64, range: Range<u64>, of: Structure) -> Result<ChunkBytes<'_>> {
        let stored = self.extent_bytes(k, range, of)?;
        if self.copies {
            return Ok(ChunkBytes::Decoded(self.cache.get(k, || self.checked_copy(k, stored))?));
        }
        self.check_once(k, || self.check_extent(k, stored))?;
        Ok(ChunkBytes::Lent(stored))
    }

    /// A copy of extent `k`'s stored bytes, checked: what a pinned pack
    /// whose source may change reads, so that what was checked is what is
    /// read.
    fn checked_copy(&self, k: u64, stored: &[u8]) -> Result<Vec<u8>> {
        let mut copy = Vec::new();
        copy.try_reserve_exact(stored.len()).map_err(|_| Error::NoSpace)?;
        copy.extend_from_slice(stored);
        self.check_extent(k, &copy)?;
        Ok(copy)
    }

    /// Extent `k`'s stored bytes to check and decode: the source's, or a
    /// copy where they may change (a pinned pack over a mapped file).
    fn stored(&self, k: u64, range: Range<u64>) -> Result<Cow<'_, [u8]>> {
        let stored = self.extent_bytes(k, range, Structure::Chunk)?;
        Ok(if self.copies { Cow::Owned(stored.to_vec()) } else { Cow::Borrowed(stored) })
    }

    /// Runs `check` on extent `k` the first time it is read, when the pack
    /// was opened with `verify_on_read`, and remembers that it passed.
    fn check_once(&self, k: u64, check: impl FnOnce() -> Result<()>) -> Result<()> {
        if let Some(v) = &self.verified
            && !v.get(k)
        {
            check()?;
            v.set(k);
        }
        Ok(())
    }

    /// Decodes compressed chunk `k` into `out` (its length) if no reader
    /// has it decoded; false for a raw chunk or one in the cache (the
    /// caller copies those). Not here yet is false too: the caller's path
    /// records what to fetch.
    fn decode_direct(&self, k: u64, r: &ChunkRecord, out: &mut [u8]) -> Result<bool> {
        if r.codec() == Codec::Raw || self.cache.holds(k) {
            return Ok(false);
        }
        let stored = match self.stored(k, r.extent()) {
            Err(Error::NotLoaded) => return Ok(false),
            s => s?,
        };
        self.check_stored(k, &stored)?;
        chunk::decode_into(k, r.codec(), &stored, out, r.dictionary(self.index.dictionary.as_deref()))?;
        self.cache.decoded.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(true)
    }

    /// Chunk `k`'s content. A compressed chunk's stored bytes always pass
    /// their checksum before they are decoded; a raw chunk's are checked on
    /// first use when the pack was opened with `verify_on_read`.
    fn chunk<'s>(&'s self, k: u64, r: &ChunkRecord, content: &Range<u64>) -> Result<ChunkBytes<'s>> {
        if r.codec() == Codec::Raw {
            return self.raw_extent(k, r.extent(), Structure::Chunk);
        }
        let decoded = self.cache.get(k, || {
            let stored = self.stored(k, r.extent())?;
            self.check_stored(k, &stored)?;
            // Open checked that the length is at most the chunk size (1 MiB
            // at most), so this never fails.
            let len = usize::try_from(content.end - content.start).map_err(|_| Error::FileTooLarge)?;
            Ok(chunk::decode(k, r.codec(), &stored, len, r.dictionary(self.index.dictionary.as_deref()))?)
        })?;
        Ok(ChunkBytes::Decoded(decoded))
    }
}
