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
//! `wasi` module (0.2) and in [`p1`](super::p1).

use std::sync::Arc;

use crate::resolve::{Last, Parent, resolve, resolve_last};
use crate::{Error, FileSystem, FileType, Ino, Metadata, OpenOptions, Result, SetTime};

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

    /// `ftruncate`: `Invalid` unless opened for writing (Linux).
    pub fn set_size(&self, size: u64) -> Result<()> {
        let ino = self.file()?;
        self.may_change()?;
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

    /// `pread` into `buf`; 0 at or past the end.
    pub fn read_into(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
        let ino = self.readable_file()?;
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

    // --- operations on paths under a directory -----------------------------

    /// The directory `*-at` paths start from.
    pub fn at(&self) -> At {
        self.node.at()
    }

    /// `stat-at`; also the inode found. `known`: the inode `path` was just
    /// found to lead to, if it was.
    pub fn stat_at(&self, follow: bool, path: &str, known: Option<Ino>) -> Result<(Ino, Metadata)> {
        let ino = match known {
            Some(ino) => self.dir().map(|_| ino)?,
            None => self.resolve(path, follow)?,
        };
        Ok((ino, self.fs().metadata(ino)?))
    }

    /// `metadata-hash-at`; `known` as for [`stat_at`](Self::stat_at). Also
    /// the inode found and, for the host's cache of recent lookups, whether
    /// following a symlink at the end of `path` matters: `None` if it is no
    /// symlink, else `Some(follow)`.
    pub fn metadata_hash_at(
        &self,
        follow: bool,
        path: &str,
        known: Option<Ino>,
    ) -> Result<((u64, u64), Ino, Option<bool>)> {
        let (ino, follows) = match known {
            Some(ino) => (self.dir().map(|_| ino)?, Some(follow)),
            None => self.resolve_noting(path, follow)?,
        };
        Ok((metadata_hash(self.device, ino), ino, follows))
    }

    /// As [`resolve`](Self::resolve), also saying whether following a
    /// symlink at the end of `path` matters, where the walk learns it.
    fn resolve_noting(&self, path: &str, follow: bool) -> Result<(Ino, Option<bool>)> {
        if !follow {
            // What `resolve(path, false)` does — the same walk, whose last
            // step tells the type too.
            match self.locate(path)? {
                Last::Dir(ino) => return Ok((ino, None)),
                Last::Entry(p) if !p.trailing_slash => {
                    let (ino, kind) = self.fs().lookup_kind(p.dir, &p.name)?;
                    return Ok((ino, (kind == FileType::Symlink).then_some(false)));
                }
                Last::Entry(_) => {}
            }
        }
        Ok((self.resolve(path, follow)?, Some(follow)))
    }

    /// `utimensat`.
    pub fn set_times_at(&self, follow: bool, path: &str, atime: SetTime, mtime: SetTime) -> Result<()> {
        self.dir()?;
        self.may_change()?;
        // Both times kept: Linux's utimensat returns before looking at
        // the last name (the walk to it still counts, as in cap-std).
        if (atime, mtime) == (SetTime::Keep, SetTime::Keep) {
            return self.locate(path).map(|_| ());
        }
        let ino = self.resolve(path, follow)?;
        self.fs().set_times(ino, atime, mtime)
    }

    /// `mkdirat`.
    pub fn create_directory_at(&self, path: &str) -> Result<()> {
        self.dir()?;
        self.may_change()?;
        match self.locate(path)? {
            Last::Dir(_) => Err(Error::Exists),
            Last::Entry(p) => self.fs().mkdir(p.dir, &p.name, 0o755).map(|_| ()),
        }
    }

    /// `unlinkat(AT_REMOVEDIR)`.
    pub fn remove_directory_at(&self, path: &str) -> Result<()> {
        self.dir()?;
        self.may_change()?;
        match self.locate(path)? {
            // rmdir(".") is EINVAL on Linux.
            Last::Dir(_) => Err(Error::Invalid),
            Last::Entry(p) => self.fs().rmdir(p.dir, &p.name),
        }
    }

    /// `unlinkat`.
    pub fn unlink_file_at(&self, path: &str) -> Result<()> {
        self.dir()?;
        self.may_change()?;
        match self.locate(path)? {
            Last::Dir(_) => Err(Error::IsDir),
            // `x/` names a directory (or a symlink to one): EISDIR, else ENOTDIR.
            Last::Entry(p) if p.trailing_slash => match self.fs().metadata(self.resolve(path, true)?)?.kind {
                FileType::Dir => Err(Error::IsDir),
                _ => Err(Error::NotDir),
            },
            Last::Entry(p) => self.fs().unlink(p.dir, &p.name),
        }
    }

    /// `symlinkat`: an absolute target is `NotPermitted`, as cap-std.
    pub fn symlink_at(&self, target: &str, path: &str) -> Result<()> {
        self.dir()?;
        self.may_change()?;
        // An absolute target could never be followed inside the sandbox:
        // cap-std refuses it before anything else. Then the walk's errors,
        // an empty target's ENOENT (Linux), and the new name's own.
        if target.starts_with('/') {
            return Err(Error::NotPermitted);
        }
        let last = self.locate(path)?;
        if target.is_empty() {
            return Err(Error::NotFound);
        }
        let p = self.new_entry_at(last)?;
        self.fs().symlink(p.dir, &p.name, target).map(|_| ())
    }

    /// `readlinkat`.
    pub fn readlink_at(&self, path: &str) -> Result<String> {
        let ino = self.resolve(path, false)?;
        let target = self.fs().readlink(ino)?;
        // A backend may hold one (a pack built from a host tree); reading it
        // is refused as cap-std does, since no walk could follow it.
        if target.starts_with('/') {
            return Err(Error::NotPermitted);
        }
        Ok(target)
    }

    /// Both directories may change, and share one filesystem (link and
    /// rename never cross filesystems).
    fn changes_with(&self, new_dir: &Descriptor) -> Result<()> {
        self.dir()?;
        new_dir.dir()?;
        self.may_change()?;
        new_dir.may_change()?;
        if !self.same_fs(new_dir) {
            return Err(Error::CrossDevice);
        }
        Ok(())
    }

    /// `link-at`. Unlike wasmtime-wasi (which returns `invalid`), following
    /// a symlink in `old-path` is supported, as `linkat(AT_SYMLINK_FOLLOW)`.
    pub fn link_at(&self, follow: bool, old: &str, new_dir: &Descriptor, new: &str) -> Result<()> {
        self.changes_with(new_dir)?;
        let ino = self.resolve(old, follow)?;
        let p = new_dir.new_entry(new)?;
        // A taken name is EEXIST before a directory is EPERM, as Linux
        // looks the new name up first.
        if self.kind_at(p.dir, &p.name)?.is_some() {
            return Err(Error::Exists);
        }
        self.fs().link(ino, p.dir, &p.name)
    }

    /// `renameat`.
    pub fn rename_at(&self, old: &str, new_dir: &Descriptor, new: &str) -> Result<()> {
        self.changes_with(new_dir)?;
        // Renaming `.` or `a/..`, or onto one, is EBUSY on Linux (a last
        // component that is no name), and in wasmtime.
        let (Last::Entry(from), Last::Entry(to)) = (self.locate(old)?, new_dir.locate(new)?) else {
            return Err(Error::Busy);
        };
        if from.trailing_slash || to.trailing_slash {
            let (_, kind) = self.kind_at(from.dir, &from.name)?.ok_or(Error::NotFound)?;
            if kind != FileType::Dir {
                return Err(Error::NotDir);
            }
        }
        self.fs().rename(from.dir, &from.name, to.dir, &to.name)
    }

    /// `open-at`, with open(2)'s rules as wasmtime-wasi applies them:
    /// `create` and `truncate` imply write access; asking for neither read
    /// nor write opens for reading; `directory` excludes `create`,
    /// `exclusive` and `truncate`.
    pub fn open_at(&self, follow: bool, path: &str, open: OpenFlags, flags: Flags) -> Result<Descriptor> {
        self.dir()?;
        let write = open.create || open.truncate || flags.write;
        let read = flags.read || !flags.write;
        if open.directory && (open.create || open.exclusive || open.truncate) {
            return Err(Error::Invalid);
        }
        if write {
            self.may_change()?;
        }
        let opts = OpenOptions {
            read,
            write,
            append: false,
            create: open.create,
            exclusive: open.exclusive,
            truncate: open.truncate,
            directory: open.directory,
            mode: 0o644,
        };
        let (node, kind) = self.open_node(path, follow, &opts)?;
        let is_dir = match kind {
            Some(kind) => kind == FileType::Dir,
            None => self.fs().metadata(node.ino)?.kind == FileType::Dir,
        };
        let flags = Flags {
            read,
            write,
            mutate_directory: is_dir && flags.mutate_directory && self.access == Access::ReadWrite,
            ..flags
        };
        Ok(Descriptor { node, device: self.device, is_dir, access: self.access, flags })
    }

    /// Opens what `path` names, following a symlink in the last component
    /// when `follow` says so (or the path ends in `/`): the walk goes on
    /// through its target from where the symlink is, as Linux does, within
    /// one budget of hops. Returns the node and, when the walk learnt it,
    /// its type.
    fn open_node(&self, path: &str, follow: bool, opts: &OpenOptions) -> Result<(Arc<Node>, Option<FileType>)> {
        let fs = &self.node.fs;
        let mut found = None;
        let last = resolve_last(self.fs(), self.dir()?, path, |p| {
            found = None;
            if !(follow || p.trailing_slash) {
                return Ok(None);
            }
            found = self.kind_at(p.dir, &p.name)?;
            match found {
                Some(_) if opts.create && opts.exclusive => Err(Error::Exists),
                Some((ino, FileType::Symlink)) => Ok(Some(ino)),
                _ => Ok(None),
            }
        })?;
        let p = match last {
            // `.`: open(2) refuses O_CREAT|O_EXCL of what exists, then
            // O_CREAT or writing on a directory.
            Last::Dir(_) if opts.create && opts.exclusive => return Err(Error::Exists),
            Last::Dir(_) if opts.create || opts.writes() => return Err(Error::IsDir),
            Last::Dir(ino) => return Ok((Node::pin(fs, ino)?, Some(FileType::Dir))),
            Last::Entry(p) => p,
        };
        match found {
            Some((_, FileType::File)) if p.trailing_slash => return Err(Error::NotDir),
            None if p.trailing_slash && opts.create => return Err(Error::IsDir),
            _ => {}
        }
        let node = Node::open(fs, p.dir, &p.name, opts)?;
        // An inode's type never changes: if the name still leads where
        // the look found, its type is known.
        let kind = found.filter(|&(ino, _)| ino == node.ino).map(|(_, kind)| kind);
        Ok((node, kind))
    }
}

/// Writes all of `data` at `offset`, however a backend splits it.
pub fn write_all(fs: &dyn FileSystem, ino: Ino, mut offset: u64, mut data: &[u8]) -> Result<()> {
    while !data.is_empty() {
        let n = fs.write_at(ino, offset, data)?;
        if n == 0 {
            return Err(Error::Backend("backend wrote nothing".into()));
        }
        offset += n as u64;
        data = data.get(n..).unwrap_or_default();
    }
    Ok(())
}

/// The device number of preopen `fs` among a guest's preopens `all`: one
/// per distinct filesystem, from 1, in the order they first appear.
pub fn device_number<'a>(mut all: impl Iterator<Item = &'a Arc<dyn FileSystem>>, fs: &Arc<dyn FileSystem>) -> u64 {
    let addr = |f: &Arc<dyn FileSystem>| Arc::as_ptr(f).cast::<()>();
    all.position(|f| addr(f) == addr(fs)).map_or(0, |i| i as u64 + 1)
}

/// `metadata-hash`: a bijective mix of the inode number keyed by the
/// device number, so no two inodes of one filesystem collide. The p1 adapter calls
/// it once per directory entry, so it must be cheap.
fn metadata_hash(device: u64, ino: Ino) -> (u64, u64) {
    let lower = mix(ino ^ mix(device));
    (lower, mix(lower ^ 0x9e37_79b9_7f4a_7c15))
}

/// The splitmix64 finalizer: a bijection on u64.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_injective_per_device() {
        let mut seen = std::collections::HashSet::new();
        for ino in 0..10_000 {
            assert!(seen.insert(metadata_hash(7, ino).0));
        }
        assert_ne!(metadata_hash(1, 5), metadata_hash(2, 5));
    }
}
