//! [`Writer`]: what the writer holds while it writes, and the walk that
//! drives it.
//!
//! One breadth-first walk from the root visits every directory in the order
//! its inode gets its index, so writing its entries (names sorted) in walk
//! order *is* the dirent table's (parent, name) order. Each file met is
//! stored by [`add_blob`](Writer::add_blob) (`dedup`); the index is
//! written by [`finish`](Writer::finish) (`emit`).

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::BuildHasher;
use std::io::Write;

use super::candidates::Candidates;
use super::chunker::Chunker;
use super::error::WriteError;
use super::out::Out;
use super::read::PIECE;
use crate::fold::FoldState;
use crate::pack::blob::BlobRecord;
use crate::pack::dirent::DirentRecord;
use crate::pack::inode::{Body, InodeRecord};
use crate::pack::trailer::MAX_COUNT;
use crate::path::{MAX_PATH, validate_name};
use crate::{DirEntry, Error, FileSystem, FileType, Ino, Timestamp};

/// Entries asked for per `read_dir` call.
const DIR_PAGE: usize = 1024;

pub(super) struct Writer<'a, H, W: Write> {
    pub(super) fs: &'a dyn FileSystem,
    pub(super) hasher: &'a H,
    pub(super) key_is_checksum: bool,
    pub(super) out: Out<W>,
    pub(super) align: u64,
    pub(super) inodes: Vec<InodeRecord>,
    /// Source inode of each pack inode, for error reports.
    pub(super) inode_source: Vec<Ino>,
    pub(super) dirents: Vec<DirentRecord>,
    pub(super) blobs: Vec<BlobRecord>,
    pub(super) strings: Vec<u8>,
    /// A source inode holding each blob's bytes, to compare candidates with.
    pub(super) blob_source: Vec<Ino>,
    /// (dedup hash, length) -> the first blob with that key; the others
    /// follow in `next_candidate`.
    pub(super) candidates: Candidates,
    /// Per blob: its dedup hash.
    pub(super) keys: Vec<u64>,
    pub(super) tables: FoldState,
    /// Per blob: the next blob with the same key, or `NO_BLOB`.
    pub(super) next_candidate: Vec<u32>,
    /// Source inode -> pack inode, for non-directories with more than one
    /// link (hard links; a file of one link is met once).
    pub(super) by_source: HashMap<Ino, u32, FoldState>,
    pub(super) dirs_seen: HashSet<Ino, FoldState>,
    pub(super) own: Vec<u8>,
    pub(super) other: Vec<u8>,
    /// Bytes of file content, counting each inode once.
    pub(super) file_bytes: u64,
    /// Bytes of content stored in blobs, after dedup.
    pub(super) blob_bytes: u64,
    /// Version 2: the content space, cut into chunks.
    pub(super) chunker: Option<Chunker>,
    /// Version 1 with a digest table: each blob's BLAKE3 digest.
    pub(super) digests: Option<Vec<[u8; 32]>>,
    /// The header as written: the pack digest starts with it.
    pub(super) header: [u8; 64],
}

impl<'a, H, W: Write> Writer<'a, H, W> {
    pub(super) fn new(fs: &'a dyn FileSystem, hasher: &'a H, key_is_checksum: bool, out: W, align: u64) -> Self {
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
            own: vec![0; PIECE],
            other: vec![0; PIECE],
            file_bytes: 0,
            blob_bytes: 0,
            chunker: None,
            digests: None,
            header: [0; 64],
        }
    }

    /// The version written: 2 for compressed contents.
    pub(super) fn version(&self) -> u32 {
        if self.chunker.is_some() { 2 } else { 1 }
    }
}

impl<H: BuildHasher, W: Write> Writer<'_, H, W> {
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
    pub(super) fn walk(&mut self) -> Result<(), WriteError> {
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
                // `entries` checked each name (at most 255 bytes).
                let name_len = u16::try_from(e.name.len())
                    .map_err(|_| WriteError::BadSource { ino: src, what: "invalid name" })?;
                self.dirents.push(DirentRecord { name_offset, name_len, inode: child });
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
    pub(super) fn entries(&self, dir: Ino) -> Result<Vec<DirEntry>, WriteError> {
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
                self.file_bytes += size;
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
}
