//! The version-independent model of a WASI descriptor over a PackFS
//! [`FileSystem`]: what a descriptor is and what each operation on it may
//! do. Every permission check lives here and nowhere else; the WASI
//! versions (preview1 in [`p1`](super::p1), `wasi:filesystem` 0.2 in the
//! host) only look descriptors up and convert values.
//!
//! Behaviour follows wasmtime-wasi on a real directory (the oracle the guest
//! tests compare against), which follows POSIX through cap-std:
//!
//! - a path walk never leaves the descriptor it starts from: `..` above it,
//!   an absolute path or an absolute symlink target is `NotPermitted`;
//! - a read-only preopen refuses every change with `NotPermitted`, and so
//!   does every descriptor opened under it;
//! - reading a descriptor not opened for reading, or writing one not opened
//!   for writing, is `BadDescriptor` (POSIX `EBADF`); `set-size` on one not
//!   opened for writing is `Invalid` (Linux `ftruncate`);
//! - the access mode of a *directory* descriptor gates nothing (POSIX:
//!   `mkdirat` works through an `O_RDONLY` directory), so `mutate-directory`
//!   is reported but only the preopen's [`Access`] is enforced.
//!
//! Deliberate differences from wasmtime-wasi are listed in the host's
//! `p2` and `p3` modules and in [`p1`](super::p1).
//!
//! Here: the types, and the operations on a descriptor itself; `paths`:
//! the `*-at` operations on paths under a directory; `identity`: device
//! numbers and `metadata-hash`.

mod identity;
mod listing;
mod paths;

use std::sync::Arc;

use crate::resolve::{Last, Parent, resolve, resolve_last};
use crate::{BackendFault, Error, FileSystem, FileType, Ino, MAX_FILE_SIZE, Metadata, OpenOptions, Result, SetTime};
use identity::metadata_hash;

pub use identity::device_number;
pub use listing::{LISTING_BATCH, Listing};

/// Where an inode is, across filesystems: the filesystem's device number
/// (see [`Node::device`]) and the inode.
pub type At = (u64, Ino);

/// What a preopen, and everything opened under it, may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read files, list directories, stat; change nothing.
    ReadOnly,
    /// Everything the backend allows.
    ReadWrite,
}

/// An inode pinned open in its filesystem until the last descriptor or
/// stream holding it goes: an unlinked file stays readable meanwhile.
pub struct Node {
    /// The filesystem holding it.
    pub fs: Arc<dyn FileSystem>,
    /// The inode, pinned.
    pub ino: Ino,
}

impl Node {
    fn open(fs: &Arc<dyn FileSystem>, dir: Ino, name: &str, opts: &OpenOptions) -> Result<Arc<Node>> {
        let ino = fs.open(dir, name, opts)?;
        Ok(Arc::new(Node { fs: Arc::clone(fs), ino }))
    }

    /// Pins `ino` of `fs` until the node is dropped.
    pub fn pin(fs: &Arc<dyn FileSystem>, ino: Ino) -> Result<Arc<Node>> {
        fs.open_ino(ino)?;
        Ok(Arc::new(Node { fs: Arc::clone(fs), ino }))
    }

    /// A number telling filesystems apart within the host: the backend's
    /// address, stable while any descriptor holds it. Never shown to a
    /// guest (it would learn a heap address): see [`Descriptor::preopen`].
    pub fn device(&self) -> u64 {
        Arc::as_ptr(&self.fs).cast::<()>() as usize as u64
    }

    /// Where this inode is.
    pub fn at(&self) -> At {
        (self.device(), self.ino)
    }

    /// A file stream's write: all of `data` at `at` (`None`: appended),
    /// then a sync if `sync` (the descriptor asked for integrity sync).
    pub fn write_to(&self, at: Option<u64>, data: &[u8], sync: bool) -> Result<()> {
        match at {
            Some(offset) => write_all(&*self.fs, self.ino, offset, data)?,
            None => {
                self.fs.append(self.ino, data)?;
            }
        }
        if sync { self.fs.sync(self.ino) } else { Ok(()) }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.fs.close(self.ino);
    }
}

/// `open-at`'s `open-flags`.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenFlags {
    /// Create the file if missing.
    pub create: bool,
    /// Fail unless it is a directory.
    pub directory: bool,
    /// With `create`: fail if it exists.
    pub exclusive: bool,
    /// Cut it to length 0.
    pub truncate: bool,
}

/// A descriptor's `descriptor-flags`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flags {
    /// Open for reading.
    pub read: bool,
    /// Open for writing.
    pub write: bool,
    /// A directory through which the tree may change.
    pub mutate_directory: bool,
    /// `file-integrity-sync` (`O_SYNC`): every write is followed by a `sync`.
    pub file_sync: bool,
    /// `data-integrity-sync` (`O_DSYNC`): as `file_sync`.
    pub data_sync: bool,
    /// `requested-write-sync` (`O_RSYNC`): reads never see unsynced data
    /// anyway, so it needs nothing.
    pub read_sync: bool,
}

impl Flags {
    fn syncs(&self) -> bool {
        self.file_sync || self.data_sync
    }
}

/// A directory or regular file open in a PackFS filesystem: the
/// `wasi:filesystem/types.descriptor` resource.
pub struct Descriptor {
    node: Arc<Node>,
    /// The number the guest knows the filesystem by.
    device: u64,
    is_dir: bool,
    access: Access,
    flags: Flags,
}

impl Descriptor {
    /// A preopen: the root directory of `fs`. `device` is the number the
    /// guest knows `fs` by: the inode numbers it sees mix it with the
    /// backend's own, so they tell only what the guest may know. Give each
    /// filesystem of one guest its own ([`device_number`]).
    pub fn preopen(fs: &Arc<dyn FileSystem>, access: Access, device: u64) -> Result<Descriptor> {
        let node = Node::pin(fs, fs.root())?;
        let mutate = access == Access::ReadWrite;
        let flags = Flags { read: true, mutate_directory: mutate, ..Flags::default() };
        Ok(Descriptor { node, device, is_dir: true, access, flags })
    }

    fn fs(&self) -> &dyn FileSystem {
        &*self.node.fs
    }

    /// The directory inode, for `*-at` operations.
    fn dir(&self) -> Result<Ino> {
        if self.is_dir { Ok(self.node.ino) } else { Err(Error::NotDir) }
    }

    /// The file inode, for file-only operations (wasi-testsuite expects
    /// `bad-descriptor` on a directory).
    fn file(&self) -> Result<Ino> {
        if self.is_dir { Err(Error::BadDescriptor) } else { Ok(self.node.ino) }
    }

    /// The one check before any change to the tree or to an inode.
    fn may_change(&self) -> Result<()> {
        match self.access {
            Access::ReadWrite => Ok(()),
            Access::ReadOnly => Err(Error::NotPermitted),
        }
    }

    fn readable_file(&self) -> Result<Ino> {
        let ino = self.file()?;
        if self.flags.read { Ok(ino) } else { Err(Error::BadDescriptor) }
    }

    fn writable_file(&self) -> Result<Ino> {
        let ino = self.file()?;
        self.may_change()?;
        if self.flags.write { Ok(ino) } else { Err(Error::BadDescriptor) }
    }

    /// Where `path` leads, for operations that create or remove its last
    /// name (which is not followed): the name in its directory, or, for `.`
    /// or `a/..`, the directory itself.
    fn locate<'a>(&self, path: &'a str) -> Result<Last<'a>> {
        resolve_last(self.fs(), self.dir()?, path, |_| Ok(None))
    }

    fn resolve(&self, path: &str, follow: bool) -> Result<Ino> {
        resolve(self.fs(), self.dir()?, path, follow)
    }

    /// The kind of what `dir`/`name` holds, if anything.
    fn kind_at(&self, dir: Ino, name: &str) -> Result<Option<(Ino, FileType)>> {
        match self.fs().lookup_kind(dir, name) {
            Ok(found) => Ok(Some(found)),
            Err(Error::NotFound) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// A new name's target: `.` names an existing directory, and `name/`
    /// cannot be a new non-directory (Linux: `EEXIST` if it exists, else
    /// `ENOENT`).
    fn new_entry<'a>(&self, path: &'a str) -> Result<Parent<'a>> {
        self.new_entry_at(self.locate(path)?)
    }

    /// As [`new_entry`](Self::new_entry), for a path already walked.
    fn new_entry_at<'a>(&self, last: Last<'a>) -> Result<Parent<'a>> {
        match last {
            Last::Dir(_) => Err(Error::Exists),
            Last::Entry(p) if p.trailing_slash => match self.kind_at(p.dir, &p.name)? {
                Some(_) => Err(Error::Exists),
                None => Err(Error::NotFound),
            },
            Last::Entry(p) => Ok(p),
        }
    }

    fn same_fs(&self, other: &Descriptor) -> bool {
        Arc::ptr_eq(&self.node.fs, &other.node.fs)
    }

    // --- operations on the descriptor itself -------------------------------

    /// A directory, not a file.
    pub fn is_dir(&self) -> bool {
        self.is_dir
    }

    /// The flags it was opened with (as [`open_at`](Self::open_at) settled them).
    pub fn flags(&self) -> Flags {
        self.flags
    }

    /// The inode's metadata.
    pub fn stat(&self) -> Result<Metadata> {
        self.fs().metadata(self.node.ino)
    }

    /// `futimens`.
    pub fn set_times(&self, atime: SetTime, mtime: SetTime) -> Result<()> {
        self.may_change()?;
        self.fs().set_times(self.node.ino, atime, mtime)
    }

    /// `ftruncate`: `Invalid` unless opened for writing (Linux), or past
    /// what `off_t` holds (`i64::MAX`).
    pub fn set_size(&self, size: u64) -> Result<()> {
        let ino = self.file()?;
        self.may_change()?;
        within_off_t(size, 0)?;
        if !self.flags.write {
            return Err(Error::Invalid);
        }
        self.fs().set_len(ino, size)?;
        self.synced(ino)
    }

    /// Reads up to `len` bytes at `offset`; `len` is capped by the caller.
    pub fn read(&self, len: usize, offset: u64) -> Result<Vec<u8>> {
        let mut buf = vec![0; len];
        let n = self.read_into(&mut buf, offset)?;
        buf.truncate(n);
        Ok(buf)
    }

    /// `pread` into `buf`; 0 at or past the end; `Invalid` if `buf` at
    /// `offset` passes what `off_t` holds (`i64::MAX`).
    pub fn read_into(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
        let ino = self.readable_file()?;
        within_off_t(offset, buf.len() as u64)?;
        self.fs().read_at(ino, offset, buf)
    }

    /// [`FileSystem::loaded`] of `len` bytes at `offset`: `NotLoaded`
    /// before anything is read when a lazy pack lacks some of them.
    pub fn loaded(&self, offset: u64, len: u64) -> Result<()> {
        let ino = self.readable_file()?;
        self.fs().loaded(ino, offset, len)
    }

    /// `pwrite` of all of `data` (or an error).
    pub fn write(&self, data: &[u8], offset: u64) -> Result<usize> {
        let ino = self.writable_file()?;
        write_all(self.fs(), ino, offset, data)?;
        self.synced(ino)?;
        Ok(data.len())
    }

    /// Writes all of `data` at the end of the file, atomically with finding
    /// the end; returns the file's new length.
    pub fn append(&self, data: &[u8]) -> Result<u64> {
        let ino = self.writable_file()?;
        let at = self.fs().append(ino, data)?;
        self.synced(ino)?;
        Ok(at + data.len() as u64)
    }

    fn synced(&self, ino: Ino) -> Result<()> {
        if self.flags.syncs() { self.fs().sync(ino) } else { Ok(()) }
    }

    /// `advise` is a hint; PackFS has no page cache to steer.
    pub fn advise(&self) -> Result<()> {
        self.file().map(|_| ())
    }

    /// `fsync`.
    pub fn sync(&self) -> Result<()> {
        self.fs().sync(self.node.ino)
    }

    /// The node to read a stream from: a file open for reading.
    pub fn reader(&self) -> Result<&Arc<Node>> {
        if self.is_dir {
            return Err(Error::IsDir);
        }
        self.readable_file()?;
        Ok(&self.node)
    }

    /// [`reader`](Self::reader) for a stream from `offset`: `Invalid` past
    /// what `off_t` holds (`i64::MAX`), checked before the access as
    /// Linux's `pread` does.
    pub fn reader_at(&self, offset: u64) -> Result<&Arc<Node>> {
        if self.is_dir {
            return Err(Error::IsDir);
        }
        within_off_t(offset, 0)?;
        self.reader()
    }

    /// The node to write a stream to: a file open for writing. Its writes
    /// must be synced if [`syncs`](Self::syncs) says so.
    pub fn writer(&self) -> Result<&Arc<Node>> {
        self.writable_file()?;
        Ok(&self.node)
    }

    /// Every write through it is followed by a `sync`.
    pub fn syncs(&self) -> bool {
        self.flags.syncs()
    }

    /// The directory node to list.
    pub fn lister(&self) -> Result<&Arc<Node>> {
        self.dir()?;
        Ok(&self.node)
    }

    /// Both name the same inode of the same filesystem.
    pub fn is_same_object(&self, other: &Descriptor) -> bool {
        self.same_fs(other) && self.node.ino == other.node.ino
    }

    /// `metadata-hash`: a number per inode, unique across filesystems.
    pub fn metadata_hash(&self) -> (u64, u64) {
        self.metadata_hash_of(self.node.ino)
    }

    /// The hash [`metadata_hash`](Self::metadata_hash) gives `ino` of this
    /// descriptor's filesystem.
    pub fn metadata_hash_of(&self, ino: Ino) -> (u64, u64) {
        metadata_hash(self.device, ino)
    }
}

/// Writes all of `data` at `offset`, however a backend splits it;
/// `Invalid` if it would pass what `off_t` holds (`i64::MAX`).
pub fn write_all(fs: &dyn FileSystem, ino: Ino, mut offset: u64, mut data: &[u8]) -> Result<()> {
    if !data.is_empty() {
        within_off_t(offset, data.len() as u64)?;
    }
    while !data.is_empty() {
        let n = fs.write_at(ino, offset, data)?;
        if n == 0 {
            return Err(Error::backend(BackendFault::Contract, "backend wrote nothing"));
        }
        offset += n as u64;
        data = data.get(n..).unwrap_or_default();
    }
    Ok(())
}

/// `len` bytes at `offset` end within what POSIX's `off_t` (signed, 64
/// bits) holds: `pread`, `pwrite` and `ftruncate` refuse an offset or a
/// range past `i64::MAX` with `EINVAL` (a negative `off_t`, as wasi-libc
/// passes one), whatever the backend would say of it (a `MemFs` would
/// read nothing there, or answer `file-too-large`; a host directory says
/// `EINVAL`).
fn within_off_t(offset: u64, len: u64) -> Result<()> {
    match offset.checked_add(len) {
        Some(end) if end <= MAX_FILE_SIZE => Ok(()),
        _ => Err(Error::Invalid),
    }
}
