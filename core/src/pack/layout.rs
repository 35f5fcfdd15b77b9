//! What a reader that holds only part of a pack needs of its layout: which
//! bytes must be here before it opens ([`Layout::required`]: the header,
//! and the index region with the trailer), and once it is open, where each
//! file's bytes lie ([`PackFs::extents_of`], [`PackFs::extent`]). A lazy
//! reader (the browser's, over HTTP Range requests; the host's remote
//! packs) fetches by these and leaves every other check to the open.
//!
//! # What a lazily opened pack may make its reader hold
//!
//! The format lets a small pack claim a great deal: a compressed index
//! region may decode to 256 times its stored length (up to 4 GiB), and
//! every extent costs a lazy reader a slot of its own (24 bytes in a
//! [`Partial`](super::Partial), about 73 in the host's remote source) on
//! top of its 24- or 32-byte record. A pack opened lazily
//! ([`ReadOptions::lazy`](super::ReadOptions::lazy); a `Partial` always is)
//! is held to three limits, checked before anything is allocated for what
//! they bound:
//!
//! | limit | what it bounds |
//! |---|---|
//! | [`MAX_FETCHED_INDEX`], 1 GiB | the index region and trailer fetched to open, checked by [`Layout::required_to_fetch`] before they are |
//! | [`MAX_DECODED_INDEX`], 1 GiB | a compressed index region once decoded: refused on the trailer's `index_len` alone |
//! | [`MAX_EXTENTS`], 2^24 | blobs (version 1) or chunks (version 2): refused from the trailer, or from the chunk table's footer |
//!
//! Past one the open is [`CorruptKind::TooLarge`](super::CorruptKind::TooLarge),
//! with the figures. So opening a pack lazily holds at most the fetched
//! bytes, a decoded index of at most 1 GiB (and the zstd decoder's window,
//! which the decoder caps at 100 MiB), and per-extent tables for at most
//! 2^24 extents (384 MiB in a `Partial`, 1.1 GiB in the remote source),
//! whatever the pack claims. A pack opened whole from a local file (the
//! user's own, mapped or read) is held to the format's limits only, by the
//! same checks.

use super::chunk::Codec;
use super::inode;
use super::reader::{ByteSource, PackFs};
use super::trailer::Trailer;
use crate::error::corrupt::{CorruptPack, Structure};
use crate::{FileType, Ino};
use std::ops::Range;

pub use super::header::HEADER_LEN;
pub use super::limits::{MAX_DECODED_INDEX, MAX_EXTENTS, MAX_FETCHED_INDEX};
pub use super::trailer::TRAILER_LEN;

/// Where a pack's sections lie, from its trailer alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// The whole pack's length.
    pub pack_len: u64,
    /// Where the data section (the blobs) starts.
    pub data_offset: u64,
    /// The data section's length.
    pub data_len: u64,
    /// Where the index region starts; it runs to the trailer.
    pub index_offset: u64,
}

impl Layout {
    /// From a pack's last [`TRAILER_LEN`] bytes, their magic and checksum
    /// checked. The fields are trusted only to say what to fetch: the open
    /// checks them against the rest.
    pub fn from_trailer(bytes: &[u8]) -> Result<Layout, CorruptPack> {
        let bytes = super::cursor::slice(bytes, Structure::Trailer, "trailer", 0, TRAILER_LEN, 0)?;
        let t = Trailer::parse(bytes, 0)?;
        Ok(Layout {
            pack_len: t.pack_len,
            data_offset: t.data_offset,
            data_len: t.data_len,
            index_offset: t.index_offset,
        })
    }

    /// Where the trailer starts.
    pub fn trailer_offset(&self) -> u64 {
        self.pack_len.saturating_sub(TRAILER_LEN)
    }

    /// The byte ranges an open reads, `(start, end)`: the header, and the
    /// index region with the trailer.
    pub fn required(&self) -> [(u64, u64); 2] {
        [(0, HEADER_LEN.min(self.pack_len)), (self.index_offset.min(self.pack_len), self.pack_len)]
    }

    /// [`required`](Self::required), for a reader that fetches it: `Err`
    /// with the index region's length when that is over
    /// [`MAX_FETCHED_INDEX`].
    pub fn required_to_fetch(&self) -> Result<[(u64, u64); 2], u64> {
        let r = self.required();
        let index = r[1].1 - r[1].0;
        if index > MAX_FETCHED_INDEX { Err(index) } else { Ok(r) }
    }
}

impl<S: ByteSource> PackFs<S> {
    /// How many extents the pack has: the pieces of stored data a lazy
    /// reader fetches one by one (blobs in version 1, chunks in version 2).
    pub fn extent_count(&self) -> u64 {
        self.index.extent_count()
    }

    /// The extents holding file `ino`'s bytes (none for an empty file);
    /// `None` for another kind, or a number the pack does not have.
    pub fn extents_of(&self, ino: Ino) -> Option<Range<u64>> {
        let (rec, at) = self.raw(ino).ok()?;
        if inode::kind(rec, at).ok()? != FileType::File {
            return None;
        }
        let region = self.region().ok()?;
        let k = inode::data(rec);
        self.index.extents_of(region, k, self.index.blob(region, k).ok()?.extent().ok()?).ok()
    }

    /// What the pack stores, from its index alone: the bytes of distinct
    /// content, and for a version 2 pack how each codec stores them.
    pub fn content_stats(&self) -> crate::Result<ContentStats> {
        let region = self.region()?;
        let mut stats = ContentStats::default();
        for k in 0..self.index.blob_count() {
            stats.blob_bytes += self.index.blob(region, k)?.len;
        }
        if let Some(t) = &self.index.chunks {
            for k in 0..t.count {
                let (r, c) = (t.get(region, k)?, t.content(region, k)?);
                let i = match stats.codecs.iter().position(|s| s.codec == r.codec()) {
                    Some(i) => i,
                    None => {
                        stats.codecs.push(CodecStats { codec: r.codec(), chunks: 0, content: 0, stored: 0 });
                        stats.codecs.len() - 1
                    }
                };
                let s = &mut stats.codecs[i];
                s.chunks += 1;
                s.content += c.end - c.start;
                s.stored += u64::from(r.stored_len);
            }
        }
        Ok(stats)
    }

    /// Where extent `k`'s stored bytes lie in the pack, `(start, end)`.
    pub fn extent(&self, k: u64) -> Option<(u64, u64)> {
        let r = self.index.extent(self.region().ok()?, k).ok()?;
        Some((r.start, r.end))
    }

    /// The extents lying wholly inside byte `range` of the pack: what
    /// [`PackFs::store`] keeps of bytes fetched for it.
    pub fn extents_within(&self, range: Range<u64>) -> Range<u64> {
        let Some(first) = self.region().ok().and_then(|r| self.index.first_extent_from(r, range.start).ok()) else {
            return 0..0;
        };
        let mut end = first;
        while self.extent(end).is_some_and(|(_, e)| e <= range.end) {
            end += 1;
        }
        first..end
    }

    /// The [`checksum`](super::checksum) extent `k`'s stored bytes must
    /// have: what a fetching layer checks before it keeps them.
    pub fn extent_checksum(&self, k: u64) -> Option<u64> {
        self.index.extent_checksum(self.region().ok()?, k).ok()
    }

    /// The BLAKE3 [`Digest`](super::Digest) of extent `k`'s stored bytes,
    /// if the pack has a digest table: what a fetching layer checks, and
    /// may address a cache by, when there is one.
    pub fn extent_digest(&self, k: u64) -> Option<super::Digest> {
        self.index.extent_digest(self.region().ok()?, k).ok().flatten()
    }

    /// Whether `bytes` are extent `k`'s stored bytes: by its digest where
    /// the pack has a digest table, else by its checksum. What a cache
    /// checks the bytes it finds against.
    pub fn is_extent(&self, k: u64, bytes: &[u8]) -> bool {
        self.region().is_ok_and(|r| self.index.check_extent(r, k, bytes, true).is_ok())
    }

    /// For each distinct content (a version 1 blob; a file's bytes in
    /// version 2's content space), the extents holding it, in pack order: what
    /// reading one file whole fetches.
    pub fn content_extents(&self) -> impl Iterator<Item = Range<u64>> + '_ {
        let region = self.region().ok();
        let count = if region.is_some() { self.index.blob_count() } else { 0 };
        (0..count).filter_map(move |k| {
            let region = region?;
            let extent = self.index.blob(region, k).ok()?.extent().ok()?;
            self.index.extents_of(region, k, extent).ok()
        })
    }
}

/// What a pack stores ([`PackFs::content_stats`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContentStats {
    /// Bytes of distinct content (each blob once).
    pub blob_bytes: u64,
    /// Version 2: per codec, in the order first met.
    pub codecs: Vec<CodecStats>,
}

/// How one codec stores a version 2 pack's chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodecStats {
    /// The codec.
    pub codec: Codec,
    /// Chunks it stores.
    pub chunks: u64,
    /// Their content, in bytes.
    pub content: u64,
    /// Their stored bytes.
    pub stored: u64,
}
