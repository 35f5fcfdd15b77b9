//! The reader: [`PackFs`], a read-only [`FileSystem`] over a pack's bytes,
//! wherever they are ([`ByteSource`]).
//!
//! Opening checks the header, trailer, index checksum and index structure
//! ([`Index`]) — time proportional to the number of entries, not to the
//! data. Inode number `i + 1` is inode record `i`, so the root is 1 and
//! numbers never change. The first lookup builds a [`HashIndex`] (names to
//! entries, inodes to file contents; O(entries), in memory, not part of the
//! format), and lookups and [`PackFs::file_bytes`] go through it; where it
//! cannot be built, a lookup is a binary search in the directory's run of
//! entries. `read_dir` resumes after its cookie with a search; `read_at`
//! copies out of the blob and [`PackFs::file_bytes`] lends it without a copy.
//! Every change is [`Error::ReadOnly`].
//!
//! The read path leans on what open checked (see [`Index`]'s module doc):
//! a lookup by search reads three fields of the directory's record and the
//! found entry's `kind` (for `lookup_kind` and `open`), never a whole
//! record, and compares names as bytes. `metadata` and `readlink` decode
//! and check the whole record.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use super::chunk_cache::ChunkCache;
use super::hash_index::HashIndex;
use super::index::Index;
use super::inode::{self, Body, InodeRecord};
use super::pieces::Pieces;
use crate::digest::Digest;
// Also the path content, layout, partial and verify name it by.
pub(super) use super::source::ByteSource;
use crate::path::validate_name;
use crate::{DirEntry, Error, FileSystem, FileType, Ino, Metadata, OpenOptions, Result};

/// Decoded chunks kept by default: a chunk a read covers whole is kept only
/// while there is room (else decoded into the reader's buffer), so a full
/// cache holds mostly chunks that files share.
const DEFAULT_CACHE: u64 = 128 << 20;

/// How to open a pack.
///
/// ```
/// use packfs_core::pack::{PackFs, ReadOptions, write_pack};
/// use packfs_core::MemFs;
///
/// let mut bytes = Vec::new();
/// write_pack(&MemFs::new().snapshot(), &mut bytes)?;
/// // Check each blob against its checksum the first time it is read.
/// let pack = PackFs::open_with(bytes, ReadOptions::new().verify_on_read(true))?;
/// assert!(pack.verify()?.is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOptions {
    verify_on_read: bool,
    cache_bytes: u64,
    pub(crate) lazy: bool,
    pub(crate) pin: Option<Digest>,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions { verify_on_read: false, cache_bytes: DEFAULT_CACHE, lazy: false, pin: None }
    }
}

impl ReadOptions {
    /// Blobs are read unchecked (the index is always checked at open, and
    /// a compressed chunk's stored bytes before every decode); up to 128 MiB
    /// of decoded chunks are kept.
    pub fn new() -> Self {
        Self::default()
    }

    /// Checks each blob (version 2: each chunk) against its checksum on its
    /// first read (by `read_at` or `file_bytes`) and remembers that it
    /// passed; one that fails is [`Error::Corrupt`] on every read.
    pub fn verify_on_read(mut self, on: bool) -> Self {
        self.verify_on_read = on;
        self
    }

    /// Keeps at most `bytes` of decoded chunks of a compressed pack (plus
    /// those readers hold at that moment), least recently used out first.
    pub fn cache_bytes(mut self, bytes: u64) -> Self {
        self.cache_bytes = bytes;
        self
    }

    /// Opens the pack as one fetched from elsewhere, piece by piece (over
    /// a network, into a page): its index region decoded may be at most
    /// [`MAX_DECODED_INDEX`] bytes and it may have at most [`MAX_EXTENTS`]
    /// extents, else the open is [`CorruptKind::TooLarge`], refused before
    /// anything is allocated for them (see [`layout`](super::layout)). Off,
    /// a pack is held to the format's limits only: for the user's own
    /// files. [`PackFs::open_partial`](super::PackFs::open_partial) always
    /// opens so.
    ///
    /// [`MAX_DECODED_INDEX`]: super::layout::MAX_DECODED_INDEX
    /// [`MAX_EXTENTS`]: super::layout::MAX_EXTENTS
    /// [`CorruptKind::TooLarge`]: super::CorruptKind::TooLarge
    pub fn lazy(mut self, on: bool) -> Self {
        self.lazy = on;
        self
    }

    /// Opens the pack only if its [digest](PackFs::digest) is `pin`, and
    /// then checks each extent against its BLAKE3 digest on its first read
    /// (as [`verify_on_read`](Self::verify_on_read), with the digest in
    /// place of the checksum), so that every byte served is the pinned
    /// pack's. A pack with another digest is refused at open
    /// ([`CorruptKind::Pinned`]), one without a digest table too
    /// ([`CorruptKind::NoDigests`]); an extent that does not match is
    /// [`CorruptKind::Digest`] (`EIO`) on every read.
    ///
    /// [`CorruptKind::Pinned`]: super::CorruptKind::Pinned
    /// [`CorruptKind::NoDigests`]: super::CorruptKind::NoDigests
    /// [`CorruptKind::Digest`]: super::CorruptKind::Digest
    pub fn pin(mut self, digest: Option<Digest>) -> Self {
        self.pin = digest;
        self
    }

    /// The pin, if one was given.
    pub fn pin_given(&self) -> Option<Digest> {
        self.pin
    }
}

/// One bit per extent (blob or chunk): set once it has passed its
/// checksum. Lock-free; two threads reading one new extent may both check
/// it, harmlessly.
pub(crate) struct Verified(Box<[AtomicU64]>);

impl Verified {
    /// Bits for `n` extents. 24 or 32 bytes of records per extent lie in
    /// the index region, which is in memory, so this is at most 1/192 of
    /// it and the count fits a usize.
    fn new(n: u64) -> Result<Self> {
        let words = usize::try_from(n.div_ceil(64)).map_err(|_| Error::FileTooLarge)?;
        Ok(Verified((0..words).map(|_| AtomicU64::new(0)).collect()))
    }

    pub(crate) fn get(&self, k: u64) -> bool {
        let word = self.0.get((k / 64) as usize).map_or(0, |w| w.load(Ordering::Acquire));
        word & (1 << (k % 64)) != 0
    }

    pub(crate) fn set(&self, k: u64) {
        if let Some(w) = self.0.get((k / 64) as usize) {
            w.fetch_or(1 << (k % 64), Ordering::Release);
        }
    }
}

/// A read-only filesystem over a pack.
///
/// ```
/// use packfs_core::pack::{PackFs, write_pack};
/// use packfs_core::{Error, FileSystem, MemFs, OpenOptions};
///
/// let fs = MemFs::new();
/// let docs = fs.mkdir(fs.root(), "docs", 0o755)?;
/// fs.symlink(fs.root(), "d", "docs")?;
/// let mut bytes = Vec::new();
/// write_pack(&fs.snapshot(), &mut bytes)?;
///
/// let pack = PackFs::open(bytes)?;
/// let d = pack.lookup(pack.root(), "d")?;
/// assert_eq!(pack.readlink(d)?, "docs");
/// assert_eq!(pack.mkdir(pack.root(), "x", 0o755), Err(Error::ReadOnly));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PackFs<S> {
    pub(crate) source: S,
    pub(crate) index: Index,
    pub(crate) verified: Option<Verified>,
    /// The in-memory tables, built on the first lookup; `None` inside if
    /// they could not be (lookups then search).
    pub(crate) hashed: OnceLock<Option<HashIndex>>,
    /// Decoded chunks of a compressed pack.
    pub(crate) cache: ChunkCache,
    /// A compressed index region, decoded at open.
    decoded: Option<Box<[u8]>>,
    /// Opened as [`ReadOptions::lazy`] says: `verify` opens the index again
    /// under the same limits.
    pub(crate) lazy: bool,
    /// The pin it was opened with: extents are checked by digest.
    pub(crate) pin: Option<Digest>,
    /// The pack digest, computed on first ask.
    digest: OnceLock<Option<Digest>>,
    /// Pinned over a source whose bytes may change: extents are served
    /// from copies checked as they were made, never lent.
    pub(crate) copies: bool,
}

/// Copies of the pieces of `source` an open reads: the header, and the
/// index region with the trailer (where the trailer says the index lies;
/// the trailer alone where it does not, whose open then says what is
/// wrong).
fn required_copied<S: ByteSource>(source: &S) -> Vec<(u64, Vec<u8>)> {
    use super::{header::HEADER_LEN, trailer};
    let size = source.size();
    let tail = size.saturating_sub(trailer::TRAILER_LEN);
    let parsed = source.get(tail..size).and_then(|t| trailer::Trailer::parse(t, tail).ok());
    let index = parsed.map_or(tail, |t| t.index_offset.min(tail));
    let copy = |(start, end): (u64, u64)| Some((start, source.get(start..end)?.to_vec()));
    [(0, HEADER_LEN.min(size)), (index, size)].into_iter().filter_map(copy).collect()
}

impl<S: ByteSource> std::fmt::Debug for PackFs<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PackFs").field("info", &self.info()).field("verify_on_read", &self.verified.is_some()).finish()
    }
}

/// Summary of an open pack, from its header and trailer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackInfo {
    /// Format version.
    pub version: u32,
    /// Blob alignment in bytes.
    pub align: u64,
    /// Inodes, the root included.
    pub inodes: u64,
    /// Names.
    pub dirents: u64,
    /// Distinct contents.
    pub blobs: u64,
    /// Bytes of the data section.
    pub data_len: u64,
    /// Bytes of the whole pack.
    pub pack_len: u64,
    /// Version 2's chunk size (0 in version 1).
    pub chunk_size: u64,
    /// Bytes of version 2's zstd dictionary, which the chunks of small files
    /// are compressed with (0: the pack has none).
    pub dictionary: u64,
}

impl<S: ByteSource> PackFs<S> {
    /// Opens the pack in `source`, checking its header, trailer and index.
    pub fn open(source: S) -> Result<Self> {
        Self::open_with(source, ReadOptions::new())
    }

    /// Opens the pack in `source` as `options` say.
    pub fn open_with(source: S, options: ReadOptions) -> Result<Self> {
        // A pinned pack whose bytes may change under it (a mapped file)
        // serves only what was checked: its index from a copy checked at
        // open, its extents from copies checked on reading (`content`).
        let copies = options.pin.is_some() && source.changeable();
        let (index, decoded) = match copies {
            false => Index::open(&source, options.lazy, options.pin)?,
            true => {
                let copied = Pieces::new(source.size(), required_copied(&source))?;
                let (index, decoded) = Index::open(&copied, options.lazy, options.pin)?;
                let region = match decoded {
                    Some(d) => d,
                    None => index.region_in(&copied)?.into(),
                };
                (index, Some(region))
            }
        };
        // A pinned pack's extents are checked by digest, unless the source
        // checked them as they came.
        let verify = (options.verify_on_read || options.pin.is_some()) && !source.checks_extents();
        let verified = verify.then(|| Verified::new(index.extent_count())).transpose()?;
        let cache = ChunkCache::new(options.cache_bytes);
        let (lazy, pin) = (options.lazy, options.pin);
        let digest = OnceLock::new();
        Ok(PackFs { source, index, verified, hashed: OnceLock::new(), cache, decoded, lazy, pin, digest, copies })
    }

    /// The bytes' owner.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// Gives the bytes' owner back.
    pub fn into_source(self) -> S {
        self.source
    }

    /// What the pack holds.
    pub fn info(&self) -> PackInfo {
        let t = &self.index.trailer;
        PackInfo {
            version: self.index.header.version,
            align: self.index.header.align(),
            inodes: t.inodes.count,
            dirents: t.dirents.count,
            blobs: t.blobs.count,
            data_len: t.data_len,
            pack_len: t.pack_len,
            chunk_size: self.index.header.chunk_size(),
            dictionary: self.index.dictionary.as_ref().map_or(0, |d| d.len() as u64),
        }
    }

    /// The pack digest: the BLAKE3 of the header, the index region as
    /// stored and the trailer, which commits to every extent through the
    /// digest table (`docs/pack-format.md` §18). What a user pins the pack
    /// by ([`ReadOptions::pin`]). `None` for a pack without a digest table:
    /// it cannot be pinned.
    pub fn digest(&self) -> Option<Digest> {
        *self.digest.get_or_init(|| {
            // A pinned pack matched its pin at open; its source may have
            // changed since (a mapped file written in place), what it
            // serves has not.
            if self.pin.is_some() {
                return self.pin;
            }
            if !self.index.has_digests() {
                return None;
            }
            let size = self.source.size();
            let head = self.source.get(0..super::header::HEADER_LEN)?;
            Some(crate::digest::pack_digest(head, self.source.get(self.index.trailer.index_offset..size)?))
        })
    }

    /// The pin the pack was opened with: every extent it serves matched
    /// its digest.
    pub fn pinned(&self) -> Option<Digest> {
        self.pin
    }

    /// Checks extent `k`'s stored bytes as this pack does: by digest if it
    /// is pinned, else by checksum.
    pub(crate) fn check_extent(&self, k: u64, stored: &[u8]) -> Result<()> {
        Ok(self.index.check_extent(self.region()?, k, stored, self.pin.is_some())?)
    }

    /// [`check_extent`](Self::check_extent) of bytes the source gave,
    /// unless the source checked them itself.
    pub(crate) fn check_stored(&self, k: u64, stored: &[u8]) -> Result<()> {
        if self.source.checks_extents() { Ok(()) } else { self.check_extent(k, stored) }
    }

    /// How many compressed chunks have been decoded since open (each
    /// decode of a chunk the cache did not hold counts).
    pub fn chunks_decoded(&self) -> u64 {
        self.cache.decoded.load(Ordering::Relaxed)
    }

    /// The index region, which open found here.
    pub(crate) fn region(&self) -> Result<&[u8]> {
        match &self.decoded {
            Some(d) => Ok(d),
            None => self.index.region_in(&self.source),
        }
    }

    /// The record of inode number `ino`; `NotFound` for a number the pack
    /// does not have.
    pub(crate) fn record(&self, ino: Ino) -> Result<InodeRecord> {
        let (rec, at) = self.raw(ino)?;
        Ok(InodeRecord::from_record(rec, at)?)
    }

    /// The undecoded record of inode number `ino` and its offset, for the
    /// read path's one-field accessors; `NotFound` for a number the pack does
    /// not have.
    pub(crate) fn raw(&self, ino: Ino) -> Result<(&inode::Raw, u64)> {
        let i = ino.checked_sub(1).filter(|&i| i < self.index.inode_count()).ok_or(Error::NotFound)?;
        Ok(self.index.inode_raw(self.region()?, i)?)
    }

    /// The kind of inode number `ino`, read from its record alone.
    fn kind(&self, ino: Ino) -> Result<FileType> {
        let (rec, at) = self.raw(ino)?;
        Ok(inode::kind(rec, at)?)
    }

    /// Directory `dir`'s run of entries (first, count); `NotDir` for another
    /// kind. Reads three fields of its record, not the whole record.
    fn run(&self, dir: Ino) -> Result<(u64, u64)> {
        let (rec, at) = self.raw(dir)?;
        match inode::kind(rec, at)? {
            FileType::Dir => Ok((inode::data(rec), inode::count(rec).into())),
            _ => Err(Error::NotDir),
        }
    }

    /// The blob holding file `ino`'s content and where that lies (in the
    /// pack, or version 2's content space); `IsDir` or `Invalid` for
    /// another kind.
    fn file_blob(&self, ino: Ino) -> Result<(u64, Range<u64>)> {
        // The hash index knows where each file lies, once a lookup built it.
        if let Some(Some(h)) = self.hashed.get()
            && let Some(found) = h.file(ino.wrapping_sub(1))
        {
            return Ok(found);
        }
        let (rec, at) = self.raw(ino)?;
        match inode::kind(rec, at)? {
            FileType::File => {
                let k = inode::data(rec);
                Ok((k, self.index.blob(self.region()?, k)?.extent()?))
            }
            FileType::Dir => Err(Error::IsDir),
            FileType::Symlink => Err(Error::Invalid),
        }
    }

    /// A file's whole content: borrowed from the pack without a copy (from
    /// the mapping, when the source is a mapped file) where it is stored
    /// raw, decoded where it is compressed.
    pub fn file_bytes(&self, ino: Ino) -> Result<Cow<'_, [u8]>> {
        let (k, range) = self.file_blob(ino)?;
        self.content(k, range)
    }

    /// The inode number and kind of the entry `name` in directory `dir`.
    ///
    /// By the [`HashIndex`] (built here on the first lookup) when there is
    /// one: a hit proves `dir` is a directory and `name` a valid name (the
    /// table holds only what open checked), so those checks are made only
    /// on a miss, to tell `Invalid`, `NotDir` and `NotFound` apart as the
    /// search does. Without it, a binary search in the directory's run.
    fn entry(&self, dir: Ino, name: &str) -> Result<(Ino, FileType)> {
        let region = self.region()?;
        if let Some(h) = self.hashed.get_or_init(|| self.index.tables(region).and_then(|t| HashIndex::build(&t))) {
            if let Some((i, kind)) = h.find(region, dir.wrapping_sub(1), name.as_bytes()) {
                return Ok((u64::from(i) + 1, kind));
            }
            validate_name(name)?;
            self.run(dir)?;
            return Err(Error::NotFound);
        }
        validate_name(name)?;
        let (first, count) = self.run(dir)?;
        let (_, found) = self.index.search(region, first, count, name.as_bytes())?;
        let ino = u64::from(found.ok_or(Error::NotFound)?.inode) + 1;
        Ok((ino, self.kind(ino)?))
    }
}

impl<S: ByteSource> FileSystem for PackFs<S> {
    fn root(&self) -> Ino {
        1
    }

    fn lookup(&self, dir: Ino, name: &str) -> Result<Ino> {
        self.entry(dir, name).map(|(ino, _)| ino)
    }

    fn lookup_kind(&self, dir: Ino, name: &str) -> Result<(Ino, FileType)> {
        self.entry(dir, name)
    }

    fn inode_count_hint(&self) -> Option<u64> {
        Some(self.info().inodes)
    }

    fn metadata(&self, ino: Ino) -> Result<Metadata> {
        let r = self.record(ino)?;
        Ok(Metadata {
            ino,
            kind: r.kind(),
            size: r.size,
            mode: r.mode,
            nlink: r.nlink.into(),
            atime: r.mtime,
            mtime: r.mtime,
            ctime: r.mtime,
        })
    }

    fn open(&self, dir: Ino, name: &str, opts: &OpenOptions) -> Result<Ino> {
        if opts.writes() || opts.create {
            return Err(Error::ReadOnly);
        }
        let (ino, kind) = self.entry(dir, name)?;
        match kind {
            // As Linux's O_NOFOLLOW, and MemFs: O_DIRECTORY is checked first.
            FileType::Symlink if opts.directory => Err(Error::NotDir),
            FileType::Symlink => Err(Error::Loop),
            FileType::File if opts.directory => Err(Error::NotDir),
            _ => Ok(ino),
        }
    }

    fn open_ino(&self, ino: Ino) -> Result<()> {
        self.record(ino).map(|_| ())
    }

    fn close(&self, _ino: Ino) {}

    fn read_at(&self, ino: Ino, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let (k, range) = self.file_blob(ino)?;
        self.read_content(k, range, offset, buf)
    }

    fn loaded(&self, ino: Ino, offset: u64, len: u64) -> Result<()> {
        if self.source.complete() {
            return Ok(());
        }
        match self.file_blob(ino) {
            Ok((k, range)) => self.content_loaded(k, range, offset, len),
            Err(_) => Ok(()),
        }
    }

    fn may_wait(&self, ino: Ino, offset: u64, len: u64) -> bool {
        match self.file_blob(ino) {
            Ok((k, range)) => self.content_may_wait(k, range, offset, len),
            Err(_) => false,
        }
    }

    fn parent(&self, dir: Ino) -> Result<Ino> {
        match self.record(dir)?.body {
            Body::Dir { parent, .. } => Ok(u64::from(parent) + 1),
            _ => Err(Error::NotDir),
        }
    }

    fn read_dir(&self, dir: Ino, after: Option<&str>, max: usize) -> Result<Vec<DirEntry>> {
        let (first, count) = self.run(dir)?;
        let region = self.region()?;
        let end = first.saturating_add(count);
        let start = match after {
            None => first,
            Some(a) => match self.index.search(region, first, count, a.as_bytes())? {
                (j, Some(_)) => j + 1,
                (j, None) => j,
            },
        };
        let n = usize::try_from(end.saturating_sub(start)).unwrap_or(usize::MAX).min(max);
        // `count` is checked at open, but a mapped file can change under us:
        // no allocation sized by it alone.
        let mut out = Vec::with_capacity(n.min(1024));
        for j in start..start + n as u64 {
            let d = self.index.dirent(region, j)?;
            let i = u64::from(d.inode);
            let (rec, at) = self.index.inode_raw(region, i)?;
            let kind = inode::kind(rec, at)?;
            out.push(DirEntry { name: self.index.name(region, &d)?.into(), ino: i + 1, kind });
        }
        Ok(out)
    }

    fn readlink(&self, ino: Ino) -> Result<String> {
        let r = self.record(ino)?;
        match self.index.target(self.region()?, &r)? {
            Some(t) => Ok(t.to_owned()),
            None => Err(Error::Invalid),
        }
    }
}
