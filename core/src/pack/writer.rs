//! The writer: any [`FileSystem`] to a pack, streamed to a
//! [`std::io::Write`].
//!
//! One breadth-first walk from the root visits every directory in the order
//! its inode gets its index, so writing its entries (names sorted) in walk
//! order *is* the dirent table's (parent, name) order. File contents are
//! written to the data section as the walk meets them; the index (inode,
//! dirent, blob and string tables) is kept in memory and written after the
//! data, then the trailer. Memory is O(index) plus two 64 KiB buffers,
//! never O(data), and the output is never sought.
//!
//! Duplicate contents are stored once. A blob's dedup key is (hash, length)
//! with the [`PackOptions::dedup_hasher`]; a key match is only a candidate:
//! the writer re-reads the candidate's bytes from the source (the data
//! already written cannot be read back from a `Write`) and shares the blob
//! only if every byte is equal.
//!
//! The source should not change while it is packed: pack a [`Snapshot`]
//! (`MemFs::snapshot()`, O(1)), not a live [`MemFs`]. A change the writer
//! notices (a file shorter than its size, bytes that no longer match their
//! first read or their checksum) is [`WriteError::SourceChanged`].
//!
//! [`Snapshot`]: crate::Snapshot
//! [`MemFs`]: crate::MemFs

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{BuildHasher, Hasher};
use std::io::{BufWriter, ErrorKind, Write};

use hashbrown::HashTable;

use xxhash_rust::xxh3::{Xxh3Default, Xxh3DefaultBuilder, xxh3_64};

use super::blob::BlobRecord;
use super::chunk::{Codec, Compression, DEFAULT_CHUNK_SIZE, is_chunk_size};
use super::chunker::Chunker;
use super::dirent::DirentRecord;
use super::header::{ALIGN_LOG2, HEADER_LEN, Header};
use super::inode::{Body, InodeRecord};
use super::trailer::{MAX_COUNT, MAX_INDEX_RATIO, TRAILER_LEN, Table, Trailer};
use crate::fold::FoldState;
use crate::path::{MAX_PATH, validate_name};
use crate::{DirEntry, Error, FileSystem, FileType, Ino, Timestamp};

/// Bytes read from the source at a time; files up to this size are read once.
const CHUNK: usize = 64 * 1024;
/// The least zstd level a version 2 index is compressed at: it is small,
/// read once per open, and its size is paid on every remote open.
const INDEX_LEVEL: i32 = 19;
/// Entries asked for per `read_dir` call.
const DIR_PAGE: usize = 1024;

/// Why a pack could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// Reading the source filesystem failed. (The cause is in the message
    /// and not also a `source()`, which error reports would print twice.)
    #[error("reading the source: {0}")]
    Source(Error),
    /// Writing the output failed.
    #[error("writing the pack: {0}")]
    Output(std::io::Error),
    /// The source changed while it was packed: pack a snapshot.
    #[error("inode {ino} changed while it was packed (pack a snapshot)")]
    SourceChanged {
        /// The source inode that changed.
        ino: Ino,
    },
    /// The source is not a valid tree: what a well-behaved backend never
    /// returns (a directory reachable twice, a bad name or symlink target,
    /// a `read_dir` whose names are out of byte order or repeated, within
    /// a page or across pages).
    #[error("the source is not a valid tree at inode {ino}: {what}")]
    BadSource {
        /// The source inode at fault.
        ino: Ino,
        /// What is wrong.
        what: &'static str,
    },
    /// The chunk size asked for is not a power of two from 4 KiB to 1 MiB.
    #[error("chunk size {0} is not a power of two from 4096 to 1048576")]
    BadChunkSize(u64),
    /// The alignment asked for is not a power of two from 8 to 65536.
    #[error("blob alignment {0} is not a power of two from 8 to 65536")]
    BadAlignment(u64),
    /// More inodes, names or blobs than one pack holds (2^32 - 1 each).
    #[error("too many {0} for one pack")]
    TooMany(&'static str),
}

impl From<Error> for WriteError {
    fn from(e: Error) -> Self {
        WriteError::Source(e)
    }
}

impl From<std::io::Error> for WriteError {
    fn from(e: std::io::Error) -> Self {
        WriteError::Output(e)
    }
}

impl From<WriteError> for Error {
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::Source(e) => e,
            WriteError::BadAlignment(_) | WriteError::BadChunkSize(_) => Error::Invalid,
            // No room for the pack: in memory (a buffer that could not
            // grow) or on disk.
            WriteError::Output(e) if matches!(e.kind(), ErrorKind::OutOfMemory | ErrorKind::StorageFull) => {
                Error::NoSpace
            }
            WriteError::Output(e) => Error::Os(crate::OsError::new("writing the pack", e)),
            e => Error::Backend(e.to_string()),
        }
    }
}

/// What a written pack holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PackStats {
    /// Inodes (files, directories, symlinks), the root included.
    pub inodes: u64,
    /// Names (directory entries).
    pub dirents: u64,
    /// Distinct contents stored.
    pub blobs: u64,
    /// Bytes of file content, counting each inode once.
    pub file_bytes: u64,
    /// Bytes of content stored in blobs, after dedup.
    pub blob_bytes: u64,
    /// Length of the pack.
    pub pack_len: u64,
}

/// How to write a pack; [`write`](Self::write) writes one.
///
/// `H` is the hasher that finds dedup candidates (xxh3 by default). It
/// decides only which blobs are compared byte by byte, never which are
/// shared, so a weak or even constant hasher costs time, not correctness.
///
/// ```
/// use packfs_core::pack::{PackFs, PackOptions};
/// use packfs_core::{FileSystem, MemFs, OpenOptions};
///
/// let fs = MemFs::new();
/// let f = fs.open(fs.root(), "a.txt", &OpenOptions::create())?;
/// fs.write_at(f, 0, b"hello")?;
/// fs.close(f);
///
/// // Pack a snapshot: writers may go on meanwhile.
/// let mut bytes = Vec::new();
/// let stats = PackOptions::new().align(4096).write(&fs.snapshot(), &mut bytes)?;
/// assert_eq!(stats.pack_len, bytes.len() as u64);
///
/// let pack = PackFs::open(bytes)?;
/// let ino = pack.lookup(pack.root(), "a.txt")?;
/// assert_eq!(*pack.file_bytes(ino)?, *b"hello"); // zero-copy, 4096-aligned
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct PackOptions<H = Xxh3DefaultBuilder> {
    align: u64,
    compression: Option<Compression>,
    chunk_size: u64,
    hasher: H,
    /// `hasher` is the default, xxh3: the dedup hash of a content is its
    /// checksum, computed once.
    key_is_checksum: bool,
}

impl Default for PackOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl PackOptions {
    /// 8-byte blob alignment, no compression, xxh3 dedup hashing.
    pub fn new() -> Self {
        PackOptions {
            align: 8,
            compression: None,
            chunk_size: DEFAULT_CHUNK_SIZE,
            hasher: Xxh3DefaultBuilder,
            key_is_checksum: true,
        }
    }
}

impl<H: BuildHasher> PackOptions<H> {
    /// Aligns every blob to `bytes`, a power of two from 8 to 65536 (4096
    /// lets a host map blobs page by page). Checked by [`write`](Self::write).
    pub fn align(mut self, bytes: u64) -> Self {
        self.align = bytes;
        self
    }

    /// Finds dedup candidates with `hasher` instead of xxh3. It must hash a
    /// byte stream the same however it is split into `write` calls (xxh3's
    /// and SipHash's streaming hashers do), or some duplicates go unnoticed.
    pub fn dedup_hasher<H2: BuildHasher>(self, hasher: H2) -> PackOptions<H2> {
        let (align, compression, chunk_size) = (self.align, self.compression, self.chunk_size);
        PackOptions { align, compression, chunk_size, hasher, key_is_checksum: false }
    }

    /// Compresses contents (a version 2 pack), or not (`None`: version 1,
    /// which every reader of this format reads).
    pub fn compress(mut self, compression: Option<Compression>) -> Self {
        self.compression = compression;
        self
    }

    /// The chunk size of a compressed pack: a power of two from 4 KiB to
    /// 1 MiB (128 KiB by default). A read decodes whole chunks; larger ones
    /// compress better.
    pub fn chunk_size(mut self, bytes: u64) -> Self {
        self.chunk_size = bytes;
        self
    }

    /// Writes `fs`, from its root, as a pack to `out`. The same tree always
    /// gives the same bytes. Pass a snapshot, not a filesystem that is being
    /// written to.
    pub fn write<W: Write>(&self, fs: &dyn FileSystem, out: W) -> Result<PackStats, WriteError> {
        if !self.align.is_power_of_two() || !ALIGN_LOG2.contains(&self.align.trailing_zeros()) {
            return Err(WriteError::BadAlignment(self.align));
        }
        if !is_chunk_size(self.chunk_size) {
            return Err(WriteError::BadChunkSize(self.chunk_size));
        }
        let chunk_log2 = self.chunk_size.trailing_zeros();
        let mut w = Writer::new(fs, &self.hasher, self.key_is_checksum, out, self.align);
        w.chunker = self.compression.map(|c| Chunker::new(c, self.chunk_size as usize));
        w.out.write(&Header::encode(&Header {
            version: w.version(),
            incompat_flags: 0,
            compat_flags: 0,
            align_log2: self.align.trailing_zeros(),
            chunk_log2: if w.chunker.is_some() { chunk_log2 } else { 0 },
        }))?;
        w.walk()?;
        w.finish()
    }
}

/// Writes `fs` as a pack with the default [`PackOptions`].
pub fn write_pack<W: Write>(fs: &dyn FileSystem, out: W) -> Result<PackStats, WriteError> {
    PackOptions::new().write(fs, out)
}

/// The index's tables, to be written after the data.
struct IndexParts<'a> {
    inodes: &'a [InodeRecord],
    dirents: &'a [DirentRecord],
    blobs: &'a [BlobRecord],
    strings: &'a [u8],
}

impl IndexParts<'_> {
    /// Writes the tables, the string pool and (version 2) the chunk table
    /// to `out`; returns where the tables and the pool start.
    fn write<W: Write>(
        &self,
        out: &mut Out<W>,
        stage: &mut Vec<u8>,
        chunker: Option<Chunker>,
    ) -> std::io::Result<(Table, Table, Table, u64)> {
        let table = |offset: u64, count: usize| Table { offset, count: count as u64 };
        let inodes = table(out.pos, self.inodes.len());
        out.write_records(stage, self.inodes.iter().map(InodeRecord::encode))?;
        let dirents = table(out.pos, self.dirents.len());
        out.write_records(stage, self.dirents.iter().map(DirentRecord::encode))?;
        let blobs = table(out.pos, self.blobs.len());
        out.write_records(stage, self.blobs.iter().map(BlobRecord::encode))?;
        let strings_offset = out.pos;
        out.write(self.strings)?;
        out.pad(8)?; // The trailer (or version 2's chunk table) starts at a multiple of 8.
        if let Some(c) = chunker {
            c.finish(out, stage)?;
        }
        Ok((inodes, dirents, blobs, strings_offset))
    }
}

/// The end of a chain of dedup candidates.
const NO_BLOB: u32 = u32::MAX;

/// The table hash of a candidate slot, spread from its 32-bit tag.
fn slot(tag: u32) -> u64 {
    u64::from(tag).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Dedup keys -> the first blob with that key. A slot holds 32 bits of
/// the key's table hash (its tag) and the blob: 8 bytes, and regrowing reads
/// no blob record. New keys gather in `recent`, small enough to stay cached,
/// and move to `settled` in batches: once `settled` outgrows the caches an
/// insert is a cache miss, and a batch of inserts overlaps them where one
/// per file stalled each file (1.2x the time per entry at 320,000 files).
/// Each key is in one of the two.
struct Candidates {
    recent: HashTable<(u32, u32)>,
    settled: HashTable<(u32, u32)>,
}

impl Candidates {
    const RECENT: usize = 256;

    fn new() -> Self {
        Candidates { recent: HashTable::with_capacity(Self::RECENT), settled: HashTable::new() }
    }

    fn reserve(&mut self, keys: usize) {
        let _ = self.settled.try_reserve(keys, |&(t, _)| slot(t));
    }

    /// The first blob of the key with `tag` for which `same` holds.
    fn find(&self, tag: u32, same: impl Fn(u32) -> bool) -> Option<u32> {
        let eq = |&(t, b): &(u32, u32)| t == tag && same(b);
        self.recent.find(slot(tag), eq).or_else(|| self.settled.find(slot(tag), eq)).map(|&(_, b)| b)
    }

    /// Adds a key that [`find`](Self::find) did not find.
    fn insert(&mut self, tag: u32, blob: u32) {
        self.recent.insert_unique(slot(tag), (tag, blob), |&(t, _)| slot(t));
        if self.recent.len() == Self::RECENT {
            for e in self.recent.drain() {
                self.settled.insert_unique(slot(e.0), e, |&(t, _)| slot(t));
            }
        }
    }
}

/// The output, counting its position and hashing the index as it passes.
pub(crate) struct Out<W: Write> {
    inner: BufWriter<W>,
    pub(crate) pos: u64,
    hash: Option<Xxh3Default>,
}

impl<W: Write> Out<W> {
    /// An output whose first byte lands at `pos`, hashing nothing.
    pub(crate) fn new(inner: W, pos: u64) -> Self {
        Out { inner: BufWriter::with_capacity(CHUNK, inner), pos, hash: None }
    }

    /// The inner writer, flushed.
    pub(crate) fn into_inner(self) -> std::io::Result<W> {
        self.inner.into_inner().map_err(|e| e.into_error())
    }

    pub(crate) fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.inner.write_all(bytes)?;
        if let Some(h) = &mut self.hash {
            h.update(bytes);
        }
        self.pos += bytes.len() as u64;
        Ok(())
    }

    /// Writes `records` through `stage` (an empty buffer), `CHUNK` bytes
    /// at a time.
    pub(crate) fn write_records<const N: usize>(
        &mut self,
        stage: &mut Vec<u8>,
        records: impl Iterator<Item = [u8; N]>,
    ) -> std::io::Result<()> {
        for r in records {
            stage.extend_from_slice(&r);
            if stage.len() + N > CHUNK {
                self.write(stage)?;
                stage.clear();
            }
        }
        self.write(stage)?;
        stage.clear();
        Ok(())
    }

    /// Writes zeros up to the next multiple of `align` (a power of two).
    pub(crate) fn pad(&mut self, align: u64) -> std::io::Result<()> {
        const ZEROS: [u8; 4096] = [0; 4096];
        let mut n = self.pos.wrapping_neg() & (align - 1);
        while n > 0 {
            let k = n.min(ZEROS.len() as u64);
            self.write(&ZEROS[..k as usize])?;
            n -= k;
        }
        Ok(())
    }
}

struct Writer<'a, H, W: Write> {
    fs: &'a dyn FileSystem,
    hasher: &'a H,
    key_is_checksum: bool,
    out: Out<W>,
    align: u64,
    inodes: Vec<InodeRecord>,
    /// Source inode of each pack inode, for error reports.
    inode_source: Vec<Ino>,
    dirents: Vec<DirentRecord>,
    blobs: Vec<BlobRecord>,
    strings: Vec<u8>,
    /// A source inode holding each blob's bytes, to compare candidates with.
    blob_source: Vec<Ino>,
    /// (dedup hash, length) -> the first blob with that key; the others
    /// follow in `next_candidate`.
    candidates: Candidates,
    /// Per blob: its dedup hash.
    keys: Vec<u64>,
    tables: FoldState,
    /// Per blob: the next blob with the same key, or `NO_BLOB`.
    next_candidate: Vec<u32>,
    /// Source inode -> pack inode, for non-directories with more than one
    /// link (hard links; a file of one link is met once).
    by_source: HashMap<Ino, u32, FoldState>,
    dirs_seen: HashSet<Ino, FoldState>,
    own: Vec<u8>,
    other: Vec<u8>,
    stats: PackStats,
    /// Version 2: the content space, cut into chunks.
    chunker: Option<Chunker>,
}

impl<'a, H: BuildHasher, W: Write> Writer<'a, H, W> {
    fn new(fs: &'a dyn FileSystem, hasher: &'a H, key_is_checksum: bool, out: W, align: u64) -> Self {
        let tables = FoldState::new();
        Writer {
            fs,
            hasher,
            key_is_checksum,
            out: Out::new(out, 0),
            align,
            inodes: Vec::new(),
            inode_source: Vec::new(),
            dirents: Vec::new(),
            blobs: Vec::new(),
            strings: Vec::new(),
            blob_source: Vec::new(),
            candidates: Candidates::new(),
            keys: Vec::new(),
            tables,
            next_candidate: Vec::new(),
            by_source: HashMap::with_hasher(tables),
            dirs_seen: HashSet::with_hasher(tables),
            own: vec![0; CHUNK],
            other: vec![0; CHUNK],
            stats: PackStats::default(),
            chunker: None,
        }
    }

    /// The version written: 2 for compressed contents.
    fn version(&self) -> u32 {
        if self.chunker.is_some() { 2 } else { 1 }
    }

    /// Writes a blob's next `bytes`: into the data section (version 1) or
    /// the content space (version 2).
    fn put(out: &mut Out<W>, chunker: &mut Option<Chunker>, bytes: &[u8]) -> std::io::Result<()> {
        match chunker {
            Some(c) => c.push(out, bytes),
            None => out.write(bytes),
        }
    }

    /// Adds an inode record; returns its index.
    fn push_inode(&mut self, src: Ino, record: InodeRecord) -> Result<u32, WriteError> {
        let i = u32::try_from(self.inodes.len()).ok().filter(|&i| u64::from(i) < MAX_COUNT);
        let i = i.ok_or(WriteError::TooMany("inodes"))?;
        self.inodes.push(record);
        self.inode_source.push(src);
        Ok(i)
    }

    /// Makes room for the records of about `inodes` inodes at once: regrowing
    /// copied every table about once more, which at 320,000 files cost a
    /// fifth of the time. Up to `RESERVE_MAX` inodes, so that a hint that
    /// lies cannot make the writer claim more than a few hundred MB; a
    /// reservation that cannot be had changes nothing.
    fn reserve(&mut self, inodes: u64) {
        const RESERVE_MAX: u64 = 1 << 22;
        let n = inodes.min(RESERVE_MAX) as usize;
        let _ = (self.inodes.try_reserve(n), self.inode_source.try_reserve(n), self.dirents.try_reserve(n));
        let _ = (self.blobs.try_reserve(n), self.keys.try_reserve(n), self.blob_source.try_reserve(n));
        let _ = self.next_candidate.try_reserve(n);
        self.candidates.reserve(n);
    }

    /// Appends `s` to the string pool; returns its offset.
    fn push_string(&mut self, s: &str) -> u64 {
        let at = self.strings.len() as u64;
        self.strings.extend_from_slice(s.as_bytes());
        at
    }

    /// Breadth-first from the root: each directory's entries, sorted.
    fn walk(&mut self) -> Result<(), WriteError> {
        let root = self.fs.root();
        let meta = self.fs.metadata(root)?;
        if meta.kind != FileType::Dir {
            return Err(Error::NotDir.into());
        }
        let dir = Body::Dir { first: 0, count: 0, parent: 0 };
        let mtime = Timestamp::new(meta.mtime.secs, meta.mtime.nanos);
        self.push_inode(root, InodeRecord { body: dir, mode: meta.mode & 0o7777, mtime, nlink: 0, size: 0 })?;
        self.dirs_seen.insert(root);
        if let Some(n) = self.fs.inode_count_hint() {
            self.reserve(n);
        }
        let mut queue = VecDeque::from([(root, 0u32)]);
        while let Some((src, index)) = queue.pop_front() {
            let first = self.dirents.len() as u64;
            let entries = self.entries(src)?;
            let count = u32::try_from(entries.len()).map_err(|_| WriteError::TooMany("names"))?;
            for e in entries {
                let linked = self.by_source.get(&e.ino);
                let child = match linked {
                    Some(&i) => i,
                    None => self.add_inode(e.ino, index, &mut queue)?,
                };
                if self.dirents.len() as u64 >= MAX_COUNT {
                    return Err(WriteError::TooMany("names"));
                }
                let name_offset = self.push_string(&e.name);
                // validate_name bounded the length by 255.
                self.dirents.push(DirentRecord { name_offset, name_len: e.name.len() as u16, inode: child });
            }
            if let Body::Dir { first: f, count: c, .. } = &mut self.inodes[index as usize].body {
                (*f, *c) = (first, count);
            }
        }
        Ok(())
    }

    /// All entries of source directory `dir`, in byte order of names, checked.
    /// Each name must come after the one before it, across pages too, so a
    /// source that repeats or reorders names is refused, never followed
    /// round forever.
    fn entries(&self, dir: Ino) -> Result<Vec<DirEntry>, WriteError> {
        let mut all: Vec<DirEntry> = Vec::new();
        loop {
            let after = all.last().map(|e| e.name.clone());
            let page = self.fs.read_dir(dir, after.as_deref(), DIR_PAGE)?;
            if page.is_empty() {
                break;
            }
            for e in page {
                if all.last().is_some_and(|last| e.name <= last.name) {
                    return Err(WriteError::BadSource { ino: dir, what: "read_dir lists names out of order or twice" });
                }
                validate_name(&e.name).map_err(|_| WriteError::BadSource { ino: dir, what: "invalid name" })?;
                if all.len() as u64 >= MAX_COUNT {
                    return Err(WriteError::TooMany("names"));
                }
                all.push(e);
            }
        }
        Ok(all)
    }

    /// Adds the inode a new source inode becomes, named in pack directory
    /// `parent`; queues directories.
    fn add_inode(&mut self, src: Ino, parent: u32, queue: &mut VecDeque<(Ino, u32)>) -> Result<u32, WriteError> {
        let meta = self.fs.metadata(src)?;
        let (mode, mtime) = (meta.mode & 0o7777, Timestamp::new(meta.mtime.secs, meta.mtime.nanos));
        let record = |body, size| InodeRecord { body, mode, mtime, nlink: 0, size };
        match meta.kind {
            FileType::Dir => {
                if !self.dirs_seen.insert(src) {
                    return Err(WriteError::BadSource { ino: src, what: "a directory reachable twice" });
                }
                let i = self.push_inode(src, record(Body::Dir { first: 0, count: 0, parent }, 0))?;
                queue.push_back((src, i));
                Ok(i)
            }
            FileType::File => {
                let (blob, size) = self.add_blob(src, meta.size)?;
                self.stats.file_bytes += size;
                let i = self.push_inode(src, record(Body::File { blob: blob.into() }, size))?;
                if meta.nlink > 1 {
                    self.by_source.insert(src, i);
                }
                Ok(i)
            }
            FileType::Symlink => {
                let target = self.fs.readlink(src)?;
                if target.is_empty() || target.len() > MAX_PATH || target.contains('\0') {
                    return Err(WriteError::BadSource { ino: src, what: "invalid symlink target" });
                }
                let at = self.push_string(&target);
                let i = self.push_inode(src, record(Body::Symlink { target: at }, target.len() as u64))?;
                if meta.nlink > 1 {
                    self.by_source.insert(src, i);
                }
                Ok(i)
            }
        }
    }

    /// Fills `buf` from `ino` at `offset`; short content means it changed.
    fn read_exact(fs: &dyn FileSystem, ino: Ino, offset: u64, buf: &mut [u8]) -> Result<(), WriteError> {
        let mut done = 0;
        while done < buf.len() {
            let n = fs.read_at(ino, offset + done as u64, &mut buf[done..])?;
            if n == 0 {
                return Err(WriteError::SourceChanged { ino });
            }
            done += n;
        }
        Ok(())
    }

    /// Stores the content of source file `src` (`size` bytes) as a blob, or
    /// finds a byte-identical one; returns the blob index and the size.
    fn add_blob(&mut self, src: Ino, size: u64) -> Result<(u32, u64), WriteError> {
        // First read: dedup key and checksum. A file of one chunk stays in
        // `own` and is hashed in one call; with the default hasher the key
        // is the checksum, not a second pass.
        let one_chunk = size <= CHUNK as u64;
        let mut key = (!self.key_is_checksum).then(|| self.hasher.build_hasher());
        let checksum = if one_chunk {
            let bytes = &mut self.own[..size as usize];
            Self::read_exact(self.fs, src, 0, bytes)?;
            if let Some(key) = &mut key {
                key.write(bytes);
            }
            xxh3_64(bytes)
        } else {
            let mut sum = Xxh3Default::new();
            let mut off = 0;
            while off < size {
                let n = (size - off).min(CHUNK as u64) as usize;
                Self::read_exact(self.fs, src, off, &mut self.own[..n])?;
                if let Some(key) = &mut key {
                    key.write(&self.own[..n]);
                }
                sum.update(&self.own[..n]);
                off += n as u64;
            }
            sum.digest()
        };
        let hash = key.map_or(checksum, |key| key.finish());
        let tag = (self.tables.hash_one((hash, size)) >> 32) as u32;
        let (keys, blobs) = (&self.keys, &self.blobs);
        let same_key = |b: u32| keys[b as usize] == hash && blobs[b as usize].len == size;
        let head = self.candidates.find(tag, same_key).unwrap_or(NO_BLOB);
        let mut c = head;
        while c != NO_BLOB {
            if self.same_content(c, src, size)? {
                return Ok((c, size));
            }
            c = self.next_candidate[c as usize];
        }
        let k = u32::try_from(self.blobs.len()).ok().filter(|&k| u64::from(k) < MAX_COUNT);
        let k = k.ok_or(WriteError::TooMany("blobs"))?;
        // Version 2: a file the codec cannot shrink, judged by its first
        // piece, is stored raw in chunks of its own. (`own` holds the last
        // piece read, or a dedup candidate's: the first is read again.)
        let raw = match &mut self.chunker {
            Some(c) if size >= c.chunk_size as u64 => {
                let head = &mut self.own[..CHUNK.min(size as usize)];
                Self::read_exact(self.fs, src, 0, head)?;
                !c.compresses(head)
            }
            _ => false,
        };
        // A file of a chunk or more has chunks of its own (`Chunker::cut`).
        let own = self.chunker.as_ref().is_some_and(|c| size >= c.chunk_size as u64);
        let offset = match &mut self.chunker {
            Some(c) => {
                if raw {
                    c.start_raw(&mut self.out, self.align)?;
                } else if own {
                    c.cut(&mut self.out)?;
                }
                c.content_len
            }
            None => {
                self.out.pad(self.align)?;
                self.out.pos
            }
        };
        if one_chunk {
            Self::put(&mut self.out, &mut self.chunker, &self.own[..size as usize])?;
        } else {
            // Second read, for writing: it must match the first.
            let mut again = Xxh3Default::new();
            let mut off = 0;
            while off < size {
                let n = (size - off).min(CHUNK as u64) as usize;
                Self::read_exact(self.fs, src, off, &mut self.own[..n])?;
                again.update(&self.own[..n]);
                Self::put(&mut self.out, &mut self.chunker, &self.own[..n])?;
                off += n as u64;
            }
            if again.digest() != checksum {
                return Err(WriteError::SourceChanged { ino: src });
            }
        }
        if let Some(c) = &mut self.chunker {
            if raw {
                c.end_raw(&mut self.out)?;
            } else if own {
                c.cut(&mut self.out)?;
            }
        }
        // A new key points at its first blob; a later blob of the key goes
        // second in its chain (chained blobs all differ, so order is free).
        if head == NO_BLOB {
            self.candidates.insert(tag, k);
            self.next_candidate.push(NO_BLOB);
        } else {
            self.next_candidate.push(self.next_candidate[head as usize]);
            self.next_candidate[head as usize] = k;
        }
        self.blobs.push(BlobRecord { offset, len: size, checksum });
        self.keys.push(hash);
        self.blob_source.push(src);
        self.stats.blob_bytes += size;
        Ok((k, size))
    }

    /// True when blob `c` holds exactly the `size` bytes of source file
    /// `src`, compared byte by byte: the blob's source is re-read, and
    /// re-checked against the blob's checksum so that a source changed
    /// since the blob was written cannot pass for it.
    fn same_content(&mut self, c: u32, src: Ino, size: u64) -> Result<bool, WriteError> {
        let blob = self.blobs[c as usize];
        let other = self.blob_source[c as usize];
        if size <= CHUNK as u64 {
            let n = size as usize;
            Self::read_exact(self.fs, other, 0, &mut self.other[..n])?;
            if self.own[..n] != self.other[..n] {
                return Ok(false);
            }
            if xxh3_64(&self.other[..n]) != blob.checksum {
                return Err(WriteError::SourceChanged { ino: other });
            }
            return Ok(true);
        }
        let mut sum = Xxh3Default::new();
        let mut off = 0;
        while off < size {
            let n = (size - off).min(CHUNK as u64) as usize;
            Self::read_exact(self.fs, src, off, &mut self.own[..n])?;
            Self::read_exact(self.fs, other, off, &mut self.other[..n])?;
            if self.own[..n] != self.other[..n] {
                return Ok(false);
            }
            sum.update(&self.other[..n]);
            off += n as u64;
        }
        if sum.digest() != blob.checksum {
            return Err(WriteError::SourceChanged { ino: other });
        }
        Ok(true)
    }

    /// Link counts, then the index and the trailer.
    fn finish(mut self) -> Result<PackStats, WriteError> {
        if let Some(c) = &mut self.chunker {
            c.flush(&mut self.out)?;
        }
        let data_len = self.out.pos - HEADER_LEN;
        let mut names = vec![0u32; self.inodes.len()];
        for d in &self.dirents {
            names[d.inode as usize] += 1;
        }
        let kinds: Vec<FileType> = self.inodes.iter().map(InodeRecord::kind).collect();
        for (i, inode) in self.inodes.iter_mut().enumerate() {
            let nlink = match inode.body {
                Body::Dir { first, count, .. } => {
                    let run = &self.dirents[first as usize..first as usize + count as usize];
                    run.iter().filter(|d| kinds[d.inode as usize] == FileType::Dir).count() + 2
                }
                _ => names[i] as usize,
            };
            let too_many = || WriteError::BadSource { ino: self.inode_source[i], what: "too many links" };
            inode.nlink = u32::try_from(nlink).map_err(|_| too_many())?;
        }

        self.out.pad(8)?;
        let index_offset = self.out.pos;
        let version = self.version();
        // Records are encoded into `stage` and written (and hashed) 64 KiB
        // at a time: a hasher update per 16-byte record cost more than the
        // encoding.
        let mut stage = std::mem::take(&mut self.own);
        stage.clear();
        let parts =
            IndexParts { inodes: &self.inodes, dirents: &self.dirents, blobs: &self.blobs, strings: &self.strings };
        let (tables, index_len) = match self.chunker.take() {
            None => {
                self.out.hash = Some(Xxh3Default::new());
                (parts.write(&mut self.out, &mut stage, None)?, 0)
            }
            Some(chunker) => {
                // Version 2: the index is laid out in memory at the offsets
                // it would have, then stored as one zstd frame if that pays.
                let level = INDEX_LEVEL.max(if chunker.codec() == Codec::Zstd { chunker.level() } else { 0 });
                let mut plain = Out::new(Vec::new(), index_offset);
                let tables = parts.write(&mut plain, &mut stage, Some(chunker))?;
                let plain = plain.into_inner()?;
                let mut packed = Vec::new();
                Compression::zstd(level).compress(&plain, &mut packed);
                self.out.hash = Some(Xxh3Default::new());
                let fits = u32::try_from(plain.len())
                    .ok()
                    .filter(|&n| packed.len() < plain.len() && u64::from(n) <= packed.len() as u64 * MAX_INDEX_RATIO);
                match fits {
                    Some(n) => {
                        self.out.write(&packed)?;
                        self.out.pad(8)?;
                        (tables, n)
                    }
                    None => {
                        self.out.write(&plain)?;
                        (tables, 0)
                    }
                }
            }
        };
        let (inodes, dirents, blobs, strings_offset) = tables;
        let index_checksum = self.out.hash.take().map_or(0, |h| h.digest());
        let trailer = Trailer {
            version,
            index_len,
            pack_len: self.out.pos + TRAILER_LEN,
            data_offset: HEADER_LEN,
            data_len,
            index_offset,
            index_checksum,
            inodes,
            dirents,
            blobs,
            strings_offset,
            strings_len: self.strings.len() as u64,
        };
        self.out.write(&trailer.encode())?;
        self.out.inner.flush()?;
        Ok(PackStats {
            inodes: inodes.count,
            dirents: dirents.count,
            blobs: blobs.count,
            pack_len: self.out.pos,
            ..self.stats
        })
    }
}
