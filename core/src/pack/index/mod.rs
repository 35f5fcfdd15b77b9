//! [`Index`]: a pack's tables, checked once at open, then read in place.
//!
//! Opening checks the header, the trailer and its geometry, the index
//! checksum, and then the whole structure in one pass over the tables: the
//! §11 invariants of `docs/pack-format.md`, listed and checked in
//! `invariants` — time and memory proportional to the index (entries),
//! never to the data.
//!
//! After that, accessors still check every offset they use (they return
//! [`CorruptPack`] rather than trust the pass above), but they cannot fail on
//! a pack that opened.
//!
//! The read path (lookup, `file_bytes`, `read_dir`) relies on the pass
//! above for *meaning*, never for *memory safety*: every slice it takes is
//! still a bounds-checked `get` that fails as [`CorruptPack`], but it does
//! not re-check what open guaranteed. What it relies on, all validated at
//! open by `check_structure` (`invariants`; invariant numbers from
//! `docs/pack-format.md` §11):
//!
//! - within a directory's run, names are valid UTF-8 and strictly
//!   increasing in byte order (9, 11), so [`Index::search`] (`search`)
//!   compares raw bytes, never converting a probed name to `str`;
//! - every record's fields are in range (6), so the read path reads the
//!   fields it needs from the raw record ([`inode::kind`], [`inode::data`],
//!   [`inode::count`]) instead of decoding and re-checking all of them;
//! - every dirent names an inode in the table (9) and every file a blob in
//!   the table (7), so a lookup returns the dirent's inode number without
//!   reading that inode's record.
//!
//! Everything here reads the *index region* alone (`index_offset` to the
//! trailer), which a reader holding only part of a pack has in one piece;
//! the blobs' bytes are the [`ByteSource`]'s business. If the bytes change
//! after open (a source that does not keep its promise, a mapped file
//! rewritten underneath), answers may be wrong, but reads stay in bounds
//! and errors stay typed.

use std::ops::Range;
use std::sync::Arc;

use super::blob::{self, BlobRecord};
use super::chunk::ChunkTable;
use super::cursor::{le_u64, width};
use super::dictionary::{DICTIONARY, Dictionary};
use super::dirent::{self, DirentRecord};
use super::hash_index::Tables;
use super::header::{HEADER_LEN, Header};
use super::inode::{self, Body, InodeRecord};
use super::limits::{MAX_DECODED_INDEX, MAX_EXTENTS};
use super::source::ByteSource;
use super::trailer::{TRAILER_LEN, Table, Trailer};
use crate::Error;
use crate::digest::{self, DIGESTS, Digest};
use crate::error::corrupt::{CorruptKind, CorruptPack, Limit, Structure};

mod invariants;
mod search;

/// The checked geometry of one pack. It holds no bytes: every accessor takes
/// the index region (`region`, [`Index::region`] of the pack it was opened
/// on).
#[derive(Debug, Clone)]
pub(crate) struct Index {
    pub(crate) header: Header,
    pub(crate) trailer: Trailer,
    /// Where the trailer's tables and string pool lie, as byte ranges.
    spans: Spans,
    /// Version 2's chunk table.
    pub(crate) chunks: Option<ChunkTable>,
    /// The digest table, in the (decoded) region, if the pack has one.
    digests: Option<Range<usize>>,
    /// Version 2's zstd dictionary, loaded, if the pack has one.
    pub(crate) dictionary: Option<Arc<Dictionary>>,
}

/// The byte ranges of the three record tables and the string pool within
/// the index region, from the trailer (whose geometry `Trailer::decode`
/// checked against the pack's length). Accessors still take them with
/// `get`: bytes shorter than at open are [`CorruptPack`], not a panic.
#[derive(Debug, Clone)]
struct Spans {
    inodes: Range<usize>,
    dirents: Range<usize>,
    blobs: Range<usize>,
    strings: Range<usize>,
}

impl Spans {
    fn new(t: &Trailer) -> Result<Spans, CorruptPack> {
        let span = |start: u64, count: u64, len: u64, field| {
            let bad = || {
                CorruptPack::new(
                    start,
                    CorruptKind::OutOfBounds { of: Structure::Trailer, field, start, len: count, limit: t.pack_len },
                )
            };
            let end = count.checked_mul(len).and_then(|n| n.checked_add(start)).ok_or_else(bad)?;
            let (start, end) = (start.checked_sub(t.index_offset).ok_or_else(bad)?, end - t.index_offset);
            Ok(usize::try_from(start).map_err(|_| bad())?..usize::try_from(end).map_err(|_| bad())?)
        };
        Ok(Spans {
            inodes: span(t.inodes.offset, t.inodes.count, inode::RECORD_LEN, "inodes_offset")?,
            dirents: span(t.dirents.offset, t.dirents.count, dirent::RECORD_LEN, "dirents_offset")?,
            blobs: span(t.blobs.offset, t.blobs.count, blob::RECORD_LEN, "blobs_offset")?,
            strings: span(t.strings_offset, t.strings_len, 1, "strings_offset")?,
        })
    }
}

/// `span` of the index region as a table of `N`-byte records.
fn table<'p, const N: usize>(
    region: &'p [u8],
    span: &Range<usize>,
    of: Structure,
) -> Result<&'p [[u8; N]], CorruptPack> {
    match region.get(span.clone()) {
        Some(bytes) => Ok(bytes.as_chunks().0),
        None => Err(shrunk(region, span, of)),
    }
}

/// The error for a table or pool not inside the region (a source that
/// broke its promise); offsets within the region.
fn shrunk(region: &[u8], span: &Range<usize>, of: Structure) -> CorruptPack {
    let (start, len) = (span.start as u64, span.len() as u64);
    CorruptPack::new(start, CorruptKind::OutOfBounds { of, field: "offset", start, len, limit: region.len() as u64 })
}

/// A compressed index region, decoded at open (`None`: it is stored as it
/// is and read in place).
pub(crate) type Decoded = Option<Box<[u8]>>;

/// A compressed index region (one zstd frame, then zero padding to a
/// multiple of 8), decoded into exactly `len` bytes; the trailer checked
/// that `len` is in proportion to it, and the open that it is within the
/// reader's limits. A frame whose header declares more than `len` bytes
/// (a content size, or a window past `frame::max_window`) is refused
/// first; then `len` bytes are reserved (`NoSpace` if they cannot be),
/// never more, and filled only as the frame yields them.
pub(crate) fn decode_index(stored: &[u8], len: u32, at: u64) -> Result<Box<[u8]>, Error> {
    let bad = || CorruptPack::new(at, CorruptKind::Decode { chunk: u64::MAX }).into();
    let len = usize::try_from(len).map_err(|_| Error::NoSpace)?;
    if !super::frame::fits(stored, len) {
        return Err(bad());
    }
    let mut out = Vec::new();
    out.try_reserve_exact(len).map_err(|_| Error::NoSpace)?;
    match super::frame::decode_to_vec(stored, &mut out, len) {
        Some(pad) if pad.len() < 8 && pad.iter().all(|&b| b == 0) => Ok(out.into_boxed_slice()),
        _ => Err(bad()),
    }
}

/// `len` zero bytes, or `NoSpace` when the memory cannot be had (a wasm32
/// reader's is small): a refusal, not an abort.
pub(crate) fn zeroed(len: usize) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    out.try_reserve_exact(len).map_err(|_| Error::NoSpace)?;
    out.resize(len, 0);
    Ok(out)
}

/// `Ok` when `value` is at most `limit`, else [`CorruptKind::TooLarge`]
/// at `at`, where the field lies.
fn within(what: Limit, value: u64, limit: u64, at: u64) -> Result<(), CorruptPack> {
    if value > limit {
        return Err(CorruptPack::new(at, CorruptKind::TooLarge { what, value, limit }));
    }
    Ok(())
}

/// `range` of `source`: `NotLoaded` when the source does not have it,
/// `Corrupt` when it lies past the end (`of` names what was wanted).
fn need<S: ByteSource + ?Sized>(source: &S, range: Range<u64>, of: Structure) -> Result<&[u8], Error> {
    found(source.get(range.clone()), range, source.size(), of)
}

/// What a source gave for `range` of a pack of `size` bytes: the bytes if
/// they are all there, else `NotLoaded` when the range lies inside the
/// pack (the source does not have it yet), else `Corrupt`.
pub(crate) fn found(bytes: Option<&[u8]>, range: Range<u64>, size: u64, of: Structure) -> Result<&[u8], Error> {
    let len = range.end.saturating_sub(range.start);
    match bytes {
        Some(bytes) if bytes.len() as u64 == len => Ok(bytes),
        _ if range.end <= size => Err(Error::NotLoaded),
        _ => {
            let start = range.start;
            Err(CorruptPack::new(start, CorruptKind::OutOfBounds { of, field: "offset", start, len, limit: size })
                .into())
        }
    }
}

/// Absolute offset of record `i` of `table`, for error reports only
/// (saturating: a report never overflows).
fn at(table: Table, len: u64, i: u64) -> u64 {
    table.offset.saturating_add(i.saturating_mul(len))
}

/// Record `i` of `table` (cut out of `span`), and its absolute offset.
fn record<'p, const N: usize>(
    region: &'p [u8],
    span: &Range<usize>,
    table: Table,
    i: u64,
    of: Structure,
) -> Result<(&'p [u8; N], u64), CorruptPack> {
    let records = self::table::<N>(region, span, of)?;
    match usize::try_from(i).ok().and_then(|i| records.get(i)) {
        Some(rec) => Ok((rec, at(table, N as u64, i))),
        None => Err(CorruptPack::new(
            table.offset,
            CorruptKind::OutOfBounds { of, field: "index", start: i, len: 1, limit: table.count },
        )),
    }
}

impl Index {
    /// Opens the pack in `source`: header, trailer, index checksum,
    /// structure. It reads the header, the trailer and the index region,
    /// nothing else. A compressed index region (version 2) comes back
    /// decoded: the accessors' `region` is then that, not the source's.
    ///
    /// `lazy`: the pack is held to a lazily opened pack's limits
    /// ([`layout`](super::layout)), each checked as soon as the figure it
    /// bounds is known and before anything is allocated for it: the
    /// decoded index on the trailer, a version 1 pack's extents (blobs) on
    /// the trailer, a version 2 pack's (chunks) on the chunk table's footer.
    ///
    /// `pin`: the pack must have a digest table and this pack digest, both
    /// checked before the index is decoded or walked.
    pub(crate) fn open<S: ByteSource + ?Sized>(
        source: &S,
        lazy: bool,
        pin: Option<Digest>,
    ) -> Result<(Index, Decoded), Error> {
        let size = source.size();
        let head = need(source, 0..HEADER_LEN.min(size), Structure::Header)?;
        let header = Header::decode(head)?;
        let at = Trailer::offset_in(size)?;
        let trailer = Trailer::decode(need(source, at..size, Structure::Trailer)?, size, &header)?;
        if lazy {
            within(Limit::DecodedIndex, trailer.index_len.into(), MAX_DECODED_INDEX, at)?;
            if header.version < 2 {
                within(Limit::Extents, trailer.blobs.count, MAX_EXTENTS, at)?;
            }
        }
        let spans = Spans::new(&trailer)?;
        let mut index = Index { header, trailer, spans, chunks: None, digests: None, dictionary: None };
        let stored = index.region_in(source)?;
        index.check_checksum(stored)?;
        if let Some(expected) = pin {
            if header.compat_flags & DIGESTS == 0 {
                return Err(CorruptPack::new(0, CorruptKind::NoDigests).into());
            }
            let actual = digest::pack_digest(head, need(source, trailer.index_offset..size, Structure::Index)?);
            if actual != expected {
                return Err(CorruptPack::new(0, CorruptKind::Pinned { expected, actual }).into());
            }
        }
        let decoded = match trailer.index_len {
            0 => None,
            n => Some(decode_index(stored, n, trailer.index_offset)?),
        };
        let region = decoded.as_deref().unwrap_or(stored);
        if header.version >= 2 {
            let end = index.spans.strings.end as u64;
            let chunks = ChunkTable::read(region, trailer.index_offset, end, header.chunk_size())?;
            if lazy {
                within(Limit::Extents, chunks.count, MAX_EXTENTS, chunks.footer_at())?;
            }
            index.chunks = Some(chunks);
        }
        // The dictionary ends where the chunk table starts; what comes
        // before it (the digest table) ends at or before its start.
        let mut limit = index.chunks.as_ref().map_or(region.len(), ChunkTable::table_start);
        if header.incompat_flags & DICTIONARY != 0 {
            index.dictionary = Some(Arc::new(index.dictionary_at(region, limit)?));
            limit -= header.dict_len as usize;
        }
        if header.compat_flags & DIGESTS != 0 {
            let span = digest::table_span(index.spans.strings.end, limit, index.extent_count());
            index.digests = Some(span.ok_or_else(|| {
                let kind = CorruptKind::OutOfBounds {
                    of: Structure::Digests,
                    field: "digests",
                    start: index.spans.strings.end as u64,
                    len: index.extent_count().saturating_mul(digest::DIGEST_LEN as u64),
                    limit: limit as u64,
                };
                CorruptPack::new(trailer.index_offset, kind)
            })?);
        }
        index.check_structure(region)?;
        Ok((index, decoded))
    }

    /// Loads the dictionary, the `dict_len` bytes of `region` before
    /// `end` (where the chunk table starts), after the string pool.
    fn dictionary_at(&self, region: &[u8], end: usize) -> Result<Dictionary, CorruptPack> {
        let len = self.header.dict_len as usize;
        let at = self.trailer.index_offset;
        let start = end.checked_sub(len).filter(|&s| s >= self.spans.strings.end).ok_or_else(|| {
            let kind = CorruptKind::OutOfBounds {
                of: Structure::Dictionary,
                field: "dict_len",
                start: self.spans.strings.end as u64,
                len: len as u64,
                limit: end as u64,
            };
            CorruptPack::new(at, kind)
        })?;
        Dictionary::load(&region[start..end])
            .ok_or_else(|| CorruptPack::new(at + start as u64, CorruptKind::BadDictionary))
    }

    /// Where the index region lies in the pack: from `index_offset` to the
    /// trailer (`Trailer::decode` checked that this is a range).
    pub(crate) fn region(&self) -> Range<u64> {
        let t = &self.trailer;
        t.index_offset..t.pack_len - TRAILER_LEN
    }

    /// The index region's stored bytes in `source` (a source that no
    /// longer has them broke its promise: an error, not a panic).
    pub(crate) fn region_in<'s, S: ByteSource + ?Sized>(&self, source: &'s S) -> Result<&'s [u8], Error> {
        need(source, self.region(), Structure::Index)
    }

    /// Number of inodes.
    pub(crate) fn inode_count(&self) -> u64 {
        self.trailer.inodes.count
    }

    /// Number of blobs.
    pub(crate) fn blob_count(&self) -> u64 {
        self.trailer.blobs.count
    }

    /// Checks the index checksum.
    pub(crate) fn check_checksum(&self, region: &[u8]) -> Result<(), CorruptPack> {
        let t = &self.trailer;
        let actual = blob::checksum(region);
        if actual != t.index_checksum {
            let kind = CorruptKind::Checksum { of: Structure::Index, expected: t.index_checksum, actual };
            return Err(CorruptPack::new(t.index_offset, kind));
        }
        Ok(())
    }

    /// Inode record `i`, decoded and checked.
    pub(crate) fn inode(&self, region: &[u8], i: u64) -> Result<InodeRecord, CorruptPack> {
        let (rec, at) = self.inode_raw(region, i)?;
        InodeRecord::from_record(rec, at)
    }

    /// Inode record `i` as it lies in the table, and its absolute offset,
    /// for the accessors that read one field ([`inode::kind`],
    /// [`inode::data`], [`inode::count`]).
    pub(crate) fn inode_raw<'p>(&self, region: &'p [u8], i: u64) -> Result<(&'p inode::Raw, u64), CorruptPack> {
        record(region, &self.spans.inodes, self.trailer.inodes, i, Structure::Inode)
    }

    /// Dirent record `j`.
    pub(crate) fn dirent(&self, region: &[u8], j: u64) -> Result<DirentRecord, CorruptPack> {
        let (rec, _) = record(region, &self.spans.dirents, self.trailer.dirents, j, Structure::Dirent)?;
        Ok(DirentRecord::from_record(rec))
    }

    /// Blob record `k`.
    pub(crate) fn blob(&self, region: &[u8], k: u64) -> Result<BlobRecord, CorruptPack> {
        let (rec, _) = record(region, &self.spans.blobs, self.trailer.blobs, k, Structure::BlobRecord)?;
        Ok(BlobRecord::from_record(rec))
    }

    /// How many extents — stored pieces a reader fetches one by one — the
    /// pack has: its blobs in version 1, its chunks in version 2.
    pub(crate) fn extent_count(&self) -> u64 {
        self.chunks.as_ref().map_or(self.blob_count(), |c| c.count)
    }

    /// Where extent `k`'s stored bytes lie in the pack.
    pub(crate) fn extent(&self, region: &[u8], k: u64) -> Result<Range<u64>, CorruptPack> {
        match &self.chunks {
            Some(c) => Ok(c.get(region, k)?.extent()),
            None => self.blob(region, k)?.extent(),
        }
    }

    /// The xxh3-64 of extent `k`'s stored bytes, as its record holds it.
    pub(crate) fn extent_checksum(&self, region: &[u8], k: u64) -> Result<u64, CorruptPack> {
        match &self.chunks {
            Some(c) => Ok(c.get(region, k)?.checksum),
            None => Ok(self.blob(region, k)?.checksum),
        }
    }

    /// Extent `k`'s BLAKE3 digest, if the pack has a digest table.
    pub(crate) fn extent_digest(&self, region: &[u8], k: u64) -> Result<Option<Digest>, CorruptPack> {
        let Some(span) = &self.digests else { return Ok(None) };
        let table = region.get(span.clone()).ok_or_else(|| shrunk(region, span, Structure::Digests))?;
        match digest::get(table, k) {
            Some(d) => Ok(Some(d)),
            None => Err(CorruptPack::new(
                self.trailer.index_offset,
                CorruptKind::OutOfBounds {
                    of: Structure::Digests,
                    field: "index",
                    start: k,
                    len: 1,
                    limit: self.extent_count(),
                },
            )),
        }
    }

    /// Whether the pack has a digest table.
    pub(crate) fn has_digests(&self) -> bool {
        self.digests.is_some()
    }

    /// Checks extent `k`'s stored bytes: against its digest when `digests`
    /// and the pack has them (a pinned pack's, which the pin commits to),
    /// else against its xxh3 checksum.
    pub(crate) fn check_extent(&self, region: &[u8], k: u64, stored: &[u8], digests: bool) -> Result<(), CorruptPack> {
        let of = if self.chunks.is_some() { Structure::Chunk } else { Structure::Blob };
        if digests && let Some(expected) = self.extent_digest(region, k)? {
            let actual = Digest::of(stored);
            if actual != expected {
                let at = self.extent(region, k).map_or(0, |r| r.start);
                return Err(CorruptPack::new(at, CorruptKind::Digest { of, expected, actual }));
            }
            return Ok(());
        }
        match &self.chunks {
            Some(c) => c.get(region, k)?.check(stored),
            None => self.blob(region, k)?.check(stored),
        }
    }

    /// The first extent whose bytes start at or after `offset` (extents lie
    /// in offset order, as open checked), or the extent count.
    pub(crate) fn first_extent_from(&self, region: &[u8], offset: u64) -> Result<u64, CorruptPack> {
        if let Some(c) = &self.chunks {
            return c.first_from(region, offset);
        }
        let records = table::<{ width(blob::RECORD_LEN) }>(region, &self.spans.blobs, Structure::BlobRecord)?;
        Ok(records.partition_point(|r| le_u64::<0, { width(blob::RECORD_LEN) }>(r) < offset) as u64)
    }

    /// The extents holding content `range` of blob `k`: the blob itself in
    /// version 1, the chunks the range touches in version 2.
    pub(crate) fn extents_of(&self, region: &[u8], k: u64, range: Range<u64>) -> Result<Range<u64>, CorruptPack> {
        match &self.chunks {
            None => Ok(k..k + 1),
            Some(_) if range.is_empty() => Ok(0..0),
            Some(c) => Ok(c.at(region, range.start)?..c.at(region, range.end - 1)? + 1),
        }
    }

    /// The string pool.
    fn strings<'p>(&self, region: &'p [u8]) -> Result<&'p [u8], CorruptPack> {
        region.get(self.spans.strings.clone()).ok_or_else(|| shrunk(region, &self.spans.strings, Structure::Index))
    }

    /// `len` bytes at `offset` in the string pool `strings`.
    fn string_bytes<'a>(
        &self,
        strings: &'a [u8],
        offset: u64,
        len: u64,
        of: Structure,
        at: u64,
    ) -> Result<&'a [u8], CorruptPack> {
        let limit = self.trailer.strings_len;
        let bad = || CorruptPack::new(at, CorruptKind::OutOfBounds { of, field: "string", start: offset, len, limit });
        let start = usize::try_from(offset).map_err(|_| bad())?;
        let end = usize::try_from(len).ok().and_then(|len| start.checked_add(len)).ok_or_else(bad)?;
        strings.get(start..end).ok_or_else(bad)
    }

    /// `len` bytes at `offset` in the string pool, as UTF-8.
    fn string<'a>(
        &self,
        region: &'a [u8],
        offset: u64,
        len: u64,
        of: Structure,
        at: u64,
    ) -> Result<&'a str, CorruptPack> {
        let bytes = self.string_bytes(self.strings(region)?, offset, len, of, at)?;
        std::str::from_utf8(bytes).map_err(|_| CorruptPack::new(at, CorruptKind::BadName))
    }

    /// A dirent's name.
    pub(crate) fn name<'a>(&self, region: &'a [u8], d: &DirentRecord) -> Result<&'a str, CorruptPack> {
        self.string(region, d.name_offset, d.name_len.into(), Structure::Dirent, d.name_offset)
    }

    /// A symlink's target (`None` for other kinds).
    pub(crate) fn target<'a>(&self, region: &'a [u8], r: &InodeRecord) -> Result<Option<&'a str>, CorruptPack> {
        match r.body {
            Body::Symlink { target } => self.string(region, target, r.size, Structure::Inode, target).map(Some),
            _ => Ok(None),
        }
    }

    /// The tables as they lie in the region, for building a
    /// [`HashIndex`](super::hash_index::HashIndex) (`None` if they no longer
    /// lie in it).
    pub(crate) fn tables<'p>(&self, region: &'p [u8]) -> Option<Tables<'p>> {
        Some(Tables {
            inodes: table(region, &self.spans.inodes, Structure::Inode).ok()?,
            dirents: table(region, &self.spans.dirents, Structure::Dirent).ok()?,
            blobs: table(region, &self.spans.blobs, Structure::BlobRecord).ok()?,
            strings: self.strings(region).ok()?,
            strings_start: self.spans.strings.start,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FileSystem, MemFs, OpenOptions};

    /// A pack of `/a/` (holding `f`), `/b/`, `/h` (a hard link to `a/f`)
    /// and `/l -> a/f`. Breadth-first: inodes root 0, a 1, b 2, h 3, l 4;
    /// dirents a, b, h, l (root's run), then f -> 3 (a's run).
    pub(super) fn sample() -> Vec<u8> {
        let fs = MemFs::new();
        let a = fs.mkdir(fs.root(), "a", 0o755).unwrap();
        fs.mkdir(fs.root(), "b", 0o755).unwrap();
        let f = fs.open(a, "f", &OpenOptions::create()).unwrap();
        fs.write_at(f, 0, b"content").unwrap();
        fs.link(f, fs.root(), "h").unwrap();
        fs.symlink(fs.root(), "l", "a/f").unwrap();
        let mut out = Vec::new();
        super::super::write_pack(&fs.snapshot(), &mut out).unwrap();
        out
    }

    /// The index region of `b`.
    pub(super) fn region<'b>(b: &'b [u8], index: &Index) -> &'b [u8] {
        crate::pack::pieces::cut(b, 0, index.region()).unwrap()
    }

    #[test]
    fn index_sample_opens() {
        let b = sample();
        let (index, _) = Index::open(&b, false, None).unwrap();
        assert_eq!((index.inode_count(), index.trailer.dirents.count, index.blob_count()), (5, 5, 1));
        assert_eq!(index.inode(region(&b, &index), 3).unwrap().nlink, 2);
        let (_, f) = index.search(region(&b, &index), 4, 1, b"f").unwrap();
        assert_eq!(f.map(|d| d.inode), Some(3));
    }
}
