//! [`DirFs`]: a host directory as a PackFS [`FileSystem`], read-write or
//! read-only, that nothing can walk out of.
//!
//! Containment does not rest on checking paths and then using them (a
//! symlink swapped in between would win that race). Every path handed to
//! the kernel goes through `openat2` with `RESOLVE_BENEATH` (no `..` above
//! the root, no absolute symlinks, no escape however the tree changes
//! meanwhile), `RESOLVE_NO_MAGICLINKS` and `RESOLVE_NO_XDEV` (no crossing
//! into other mounts, so inode numbers stay unique). Everything else is a
//! `*at` call with one validated name relative to a directory fd opened that
//! way; final components are never followed (`O_NOFOLLOW`,
//! `AT_SYMLINK_NOFOLLOW`): symlinks are resolved above, by PackFS, within
//! the guest's root.
//!
//! Inode numbers are the host's. The backend remembers where it last saw
//! each inode it handed out: its directory's inode and its name, so that a
//! rename updates one place whatever lies below (an unlink, or a rename
//! that replaces it, forgets it). On every use it checks that the inode
//! found there is still that one; an inode moved by another process is
//! `NotFound`, never a different file. Open inodes keep their fd, so an
//! open file outlives its name as POSIX says. An inode with several names
//! is remembered at one: when that name goes, its number is `NotFound`
//! until a lookup or a listing finds it under another.
//!
//! A listing leaves out what PackFS cannot hold — names that are not
//! UTF-8, fifos, sockets, devices — or, [`strict`](DirFs::strict), fails
//! on it. Another filesystem's mount point is listed, but looking it up is
//! `NotPermitted`: no path crosses into it. Files are opened `O_NONBLOCK`
//! and `O_NOCTTY` and their type checked, so a fifo or device is
//! `Unsupported` without blocking the host.
//!
//! A directory is read whole, sorted, once per listing: the pages after
//! the first come from that listing (POSIX leaves it open whether entries
//! added or removed meanwhile show up), so listing n entries costs one
//! read of the directory, not one per page. Up to 16 listings (2^20
//! entries in all) are kept, finished ones and then the least recently
//! used going first; one pushed out is read again if its next page is
//! asked for.
//!
//! Host descriptors: one for the root, held for life, and one for each
//! open handle ([`open`](FileSystem::open), [`open_ino`](FileSystem::open_ino)),
//! counted against an [`FdBudget`]; a call also opens a few of its own
//! (the directory it works in, a listing) and closes them before it
//! returns. Past the budget an open is refused before anything is opened
//! or made, with the error of a full host table: an [`Error::Os`] whose
//! source is `ENFILE` (a table beyond the caller's own is full; closing
//! handles makes room). A host call failing with `EMFILE` or `ENFILE`, a
//! table full all the same, is that error too.

mod budget;

pub use budget::{FdBudget, MAX_DEFAULT_FDS};

use std::collections::{HashMap, VecDeque};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use packfs_core::path::validate_name;
use packfs_core::{
    DirEntry, Error, FileSystem, FileType, Ino, Metadata, OpenOptions, OsError, Result, SetTime, Timestamp,
};
use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags, Stat, Timespec, Timestamps};
use rustix::io::Errno;

const BENEATH: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS).union(ResolveFlags::NO_XDEV);

/// A host directory served as a PackFS filesystem.
pub struct DirFs {
    root: OwnedFd,
    root_ino: Ino,
    read_only: bool,
    /// With [`DirFs::strict`]: what a listing may still leave out.
    strict: Option<LeaveOut>,
    /// Where each inode handed out was last seen (the root has no place).
    places: Mutex<HashMap<Ino, Place>>,
    /// Written by a change that moves or removes names (rename, unlink,
    /// rmdir) from its host call to its places' update, read by one that
    /// finds names and remembers where: so that a lookup never puts back a
    /// place a rename here has just moved.
    moves: RwLock<()>,
    /// Pinned inodes: their open handles and the fds serving them.
    open: Mutex<HashMap<Ino, Held>>,
    /// Held by an append from finding the end to writing there, so that
    /// appends through this backend never overwrite each other.
    appending: Mutex<()>,
    /// Listings kept, the next to go first.
    listings: Mutex<VecDeque<Listing>>,
    /// What the fds of open handles count against.
    budget: FdBudget,
}

/// An inode's directory and its name there.
struct Place {
    dir: Ino,
    name: Arc<str>,
}

/// The sorted entries of directory `dir`, as read when a listing of it
/// began.
struct Listing {
    dir: Ino,
    entries: Arc<[DirEntry]>,
}

/// Listings kept at once, and entries in all of them (the newest listing
/// is kept whatever its size); finished listings, then the least recently
/// used, go first, and one pushed out is read again if its next page is
/// asked for.
const LISTINGS: usize = 16;
const LISTED_ENTRIES: usize = 1 << 20;

/// Directories a path may climb through (a longer chain of places is a
/// cycle, which moves behind our back can make).
const MAX_DEPTH: usize = packfs_core::path::MAX_PATH / 2;

/// Which entries a strict listing may leave out, by path: see
/// [`DirFs::strict`].
type LeaveOut = Box<dyn Fn(&str) -> bool + Send + Sync>;

/// An fd held for an open handle, what it may do, and its place in the
/// budget.
struct Pinned {
    fd: Arc<OwnedFd>,
    read: bool,
    write: bool,
    _slot: budget::Slot,
}

/// The open handles of one inode and the fds that serve them. `close`
/// does not say which handle closes, so an fd goes early only when the
/// others can do all it could; the rest go with the last handle.
#[derive(Default)]
struct Held {
    handles: usize,
    fds: Vec<Pinned>,
}

impl Held {
    fn pin(&mut self, p: Pinned) {
        self.handles += 1;
        self.fds.push(p);
    }

    /// One handle closed; true when it was the last.
    fn unpin(&mut self) -> bool {
        self.handles -= 1;
        if self.handles == 0 {
            return true;
        }
        let covered = |i: usize| {
            let others = || self.fds.iter().enumerate().filter(move |&(j, _)| j != i).map(|(_, p)| p);
            (!self.fds[i].read || others().any(|p| p.read)) && (!self.fds[i].write || others().any(|p| p.write))
        };
        if let Some(i) = (0..self.fds.len()).find(|&i| covered(i)) {
            self.fds.remove(i);
        }
        false
    }

    /// An fd that reads, or writes, or either (`None`).
    fn fd(&self, write: Option<bool>) -> Option<Arc<OwnedFd>> {
        let fits = |p: &&Pinned| match write {
            Some(true) => p.write,
            Some(false) => p.read,
            None => p.read || p.write,
        };
        self.fds.iter().find(fits).map(|p| p.fd.clone())
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The one errno → PackFS error mapping. `EXDEV` from a resolution means
/// the path tried to leave the root.
fn errno(e: Errno) -> Error {
    match e {
        Errno::NOENT => Error::NotFound,
        Errno::EXIST => Error::Exists,
        Errno::NOTDIR => Error::NotDir,
        Errno::ISDIR => Error::IsDir,
        Errno::NOTEMPTY => Error::NotEmpty,
        Errno::ACCESS => Error::Access,
        Errno::PERM => Error::NotPermitted,
        Errno::ROFS => Error::ReadOnly,
        Errno::LOOP => Error::Loop,
        Errno::NAMETOOLONG => Error::NameTooLong,
        Errno::NOSPC => Error::NoSpace,
        Errno::DQUOT => Error::Quota,
        Errno::XDEV => Error::NotPermitted,
        Errno::INVAL => Error::Invalid,
        Errno::FBIG => Error::FileTooLarge,
        Errno::BADF => Error::BadDescriptor,
        Errno::MLINK => Error::TooManyLinks,
        Errno::BUSY => Error::Busy,
        Errno::NOTSUP => Error::Unsupported,
        Errno::MFILE | Errno::NFILE => Error::NoDescriptors(OsError::new("", e.into())),
        e => Error::from(std::io::Error::from(e)),
    }
}

/// The error of a full host table, whichever (see the module doc).
fn no_fds(why: impl Into<Arc<str>>) -> Error {
    Error::NoDescriptors(OsError::new(why, Errno::NFILE.into()))
}

fn kind(st: &Stat) -> Result<FileType> {
    match rustix::fs::FileType::from_raw_mode(st.st_mode) {
        rustix::fs::FileType::RegularFile => Ok(FileType::File),
        rustix::fs::FileType::Directory => Ok(FileType::Dir),
        rustix::fs::FileType::Symlink => Ok(FileType::Symlink),
        // Devices, sockets and fifos are not PackFS objects.
        _ => Err(Error::Unsupported),
    }
}

/// What a host file that is not a PackFS object is.
fn special(t: rustix::fs::FileType) -> &'static str {
    match t {
        rustix::fs::FileType::Fifo => "a fifo",
        rustix::fs::FileType::Socket => "a socket",
        rustix::fs::FileType::CharacterDevice | rustix::fs::FileType::BlockDevice => "a device",
        _ => "not a file, directory or symlink",
    }
}

/// A host time; one before 1970 reads as 1970 (PackFS times are unsigned).
fn time(secs: i64, nanos: i64) -> Timestamp {
    if secs < 0 {
        return Timestamp::new(0, 0);
    }
    Timestamp::new(secs as u64, nanos.clamp(0, 999_999_999) as u32)
}

fn metadata(ino: Ino, st: &Stat) -> Result<Metadata> {
    Ok(Metadata {
        ino,
        kind: kind(st)?,
        size: st.st_size.max(0) as u64,
        mode: st.st_mode & 0o7777,
        nlink: st.st_nlink,
        atime: time(st.st_atime, st.st_atime_nsec as i64),
        mtime: time(st.st_mtime, st.st_mtime_nsec as i64),
        ctime: time(st.st_ctime, st.st_ctime_nsec as i64),
    })
}

/// Opens `rel` beneath directory `dfd` (an empty path: `dfd` itself), the
/// way this backend opens anything below its root but a directory it
/// lists: never into another mount
/// (`RESOLVE_NO_XDEV`), never following a final symlink, and without
/// blocking on a fifo or taking a terminal before a type check can refuse
/// them (`O_NONBLOCK`, `O_NOCTTY`, which an `O_PATH` open neither needs nor
/// takes). A lease held elsewhere fails such an open with `EAGAIN`: then it
/// waits for the lease, as a plain open does.
fn open_at(dfd: &OwnedFd, rel: &Path, flags: OFlags, mode: Mode) -> rustix::io::Result<OwnedFd> {
    let rel = if rel.as_os_str().is_empty() { Path::new(".") } else { rel };
    let flags = flags | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    if flags.contains(OFlags::PATH) {
        return rustix::fs::openat2(dfd, rel, flags, Mode::empty(), BENEATH);
    }
    let flags = flags | OFlags::NOCTTY;
    // openat2 takes a mode only to create with.
    let mode = if flags.contains(OFlags::CREATE) { mode } else { Mode::empty() };
    match rustix::fs::openat2(dfd, rel, flags | OFlags::NONBLOCK, mode, BENEATH) {
        Err(Errno::AGAIN) => rustix::fs::openat2(dfd, rel, flags, mode, BENEATH),
        opened => opened,
    }
}

/// Makes an fd opened `O_NONBLOCK` for the type check block again, if it is
/// a file (some FUSE and network filesystems honour the flag on reads). No
/// fd here has other status flags to keep.
fn blocking(fd: &OwnedFd, kind: FileType) -> Result<()> {
    if kind == FileType::File {
        rustix::fs::fcntl_setfl(fd, OFlags::empty()).map_err(errno)?;
    }
    Ok(())
}

fn proc_path(fd: &OwnedFd) -> String {
    format!("/proc/self/fd/{}", fd.as_raw_fd())
}

impl DirFs {
    /// Serves the directory at `path`; with `read_only`, every change is
    /// `ReadOnly`.
    pub fn open(path: &Path, read_only: bool) -> std::io::Result<Self> {
        let root = rustix::fs::open(path, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
        let st = rustix::fs::fstat(&root)?;
        Ok(DirFs {
            root,
            root_ino: st.st_ino,
            read_only,
            strict: None,
            places: Mutex::default(),
            moves: RwLock::default(),
            open: Mutex::default(),
            appending: Mutex::default(),
            listings: Mutex::default(),
            budget: FdBudget::default(),
        })
    }

    /// Counts the fds of its open handles against `budget`, shared with
    /// every other `DirFs` given it, instead of against a budget of its
    /// own ([`FdBudget::default`]).
    pub fn with_budget(self, budget: FdBudget) -> Self {
        DirFs { budget, ..self }
    }

    /// What the fds of its open handles count against.
    pub fn budget(&self) -> &FdBudget {
        &self.budget
    }

    /// A place in the budget for one more open handle's fd.
    fn slot(&self) -> Result<budget::Slot> {
        self.budget.take().ok_or_else(|| {
            no_fds(format!("all {} host descriptors of the directory's budget are held", self.budget.max()))
        })
    }

    /// Listings fail (`Io`, naming the entry) where they would leave out
    /// what PackFS cannot hold — a name that is not UTF-8, a fifo, socket
    /// or device — unless `leave_out` is true for its path from the root
    /// (made UTF-8 lossily). A guest's view leaves such entries out; a
    /// copy of the tree must not lose them silently.
    pub fn strict(self, leave_out: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        DirFs { strict: Some(Box::new(leave_out)), ..self }
    }

    /// An entry of `dir` a listing cannot hold: left out, or, when
    /// [`Self::strict`] does not leave it out, an error.
    fn unlisted(&self, dir: Ino, name: &std::ffi::OsStr, what: &str) -> Result<()> {
        let Some(leave_out) = &self.strict else { return Ok(()) };
        let path = self.path_of(dir)?.join(name);
        let path = path.to_string_lossy();
        if leave_out(&path) {
            return Ok(());
        }
        Err(Error::Backend(format!("{path}: {what}, which PackFS cannot hold")))
    }

    fn writable(&self) -> Result<()> {
        if self.read_only { Err(Error::ReadOnly) } else { Ok(()) }
    }

    /// Opens `rel` beneath the root (see [`open_at`]).
    fn open_beneath(&self, rel: &Path, flags: OFlags) -> Result<OwnedFd> {
        open_at(&self.root, rel, flags, Mode::empty()).map_err(errno)
    }

    /// The path of `ino` relative to the root, from the places of it and
    /// its directories.
    fn path_of(&self, ino: Ino) -> Result<PathBuf> {
        let places = lock(&self.places);
        let mut names = Vec::new();
        let mut at = ino;
        while at != self.root_ino {
            let place = places.get(&at).ok_or(Error::NotFound)?;
            if names.len() == MAX_DEPTH {
                return Err(Error::NotFound);
            }
            names.push(&*place.name);
            at = place.dir;
        }
        Ok(names.iter().rev().collect())
    }

    fn remember(&self, ino: Ino, dir: Ino, name: &str) {
        if ino != self.root_ino {
            lock(&self.places).insert(ino, Place { dir, name: name.into() });
        }
    }

    /// The inode `dir`/`name` holds, if any, to [`forget`](Self::forget)
    /// once the name is gone.
    fn held(&self, dfd: &OwnedFd, name: &str) -> Option<Ino> {
        rustix::fs::statat(dfd, name, AtFlags::SYMLINK_NOFOLLOW).ok().map(|st| st.st_ino)
    }

    /// `dir`/`name` no longer holds `ino`: its place goes, if that was it
    /// (so that places do not pile up as files come and go), and so does
    /// its listing, if it was a directory being listed.
    fn forget(&self, ino: Option<Ino>, dir: Ino, name: &str) {
        let Some(ino) = ino else { return };
        let mut places = lock(&self.places);
        if places.get(&ino).is_some_and(|p| p.dir == dir && &*p.name == name) {
            places.remove(&ino);
        }
        drop(places);
        self.drop_listing(ino);
    }

    /// Moves `dir`'s listing, if one is kept, to the back of the queue (the
    /// last to go) or to its front (the next to go).
    fn requeue(&self, dir: Ino, back: bool) -> Option<Arc<[DirEntry]>> {
        let mut listings = lock(&self.listings);
        let i = listings.iter().position(|l| l.dir == dir)?;
        let l = listings.remove(i)?;
        let entries = l.entries.clone();
        if back {
            listings.push_back(l)
        } else {
            listings.push_front(l)
        }
        Some(entries)
    }

    /// An `O_PATH` fd of `ino`, checked to still be that inode.
    fn node(&self, ino: Ino) -> Result<(OwnedFd, Stat)> {
        let fd = self.open_beneath(&self.path_of(ino)?, OFlags::PATH)?;
        let st = rustix::fs::fstat(&fd).map_err(errno)?;
        if st.st_ino != ino {
            return Err(Error::NotFound); // moved or replaced behind our back
        }
        Ok((fd, st))
    }

    /// A directory fd for `*at` calls on names inside `dir`.
    fn dir_fd(&self, dir: Ino) -> Result<OwnedFd> {
        let (fd, st) = self.node(dir)?;
        if kind(&st)? != FileType::Dir {
            return Err(Error::NotDir);
        }
        Ok(fd)
    }

    /// A pinned fd of `ino` that can read (or write), else a fresh one.
    fn data_fd(&self, ino: Ino, write: bool) -> Result<Arc<OwnedFd>> {
        if let Some(fd) = lock(&self.open).get(&ino).and_then(|h| h.fd(Some(write))) {
            return Ok(fd);
        }
        let flags = if write { OFlags::WRONLY } else { OFlags::RDONLY };
        let fd = self.open_beneath(&self.path_of(ino)?, flags)?;
        let st = rustix::fs::fstat(&fd).map_err(errno)?;
        if st.st_ino != ino {
            return Err(Error::NotFound);
        }
        match kind(&st)? {
            FileType::Dir => Err(Error::IsDir),
            k => blocking(&fd, k).map(|()| Arc::new(fd)),
        }
    }

    /// Directory `dir`'s entries, sorted by name: those of its listing in
    /// progress when `resume` and there is one, else read afresh (and kept
    /// as the listing in progress).
    fn listing(&self, dir: Ino, resume: bool) -> Result<Arc<[DirEntry]>> {
        if resume && let Some(entries) = self.requeue(dir, true) {
            return Ok(entries);
        }
        let dfd = self.dir_fd(dir)?;
        let _finding = self.finding();
        let fd = rustix::fs::openat(&dfd, ".", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .map_err(errno)?;
        let mut entries = Vec::new();
        for e in rustix::fs::Dir::new(fd).map_err(errno)? {
            let e = e.map_err(errno)?;
            // Names that are not UTF-8 cannot be WASI paths: not listed
            // (or, strict, an error).
            let Ok(name) = e.file_name().to_str() else {
                let raw = std::os::unix::ffi::OsStrExt::from_bytes(e.file_name().to_bytes());
                self.unlisted(dir, raw, "a name that is not UTF-8")?;
                continue;
            };
            if name == "." || name == ".." {
                continue;
            }
            let kind = match e.file_type() {
                rustix::fs::FileType::RegularFile => FileType::File,
                rustix::fs::FileType::Directory => FileType::Dir,
                rustix::fs::FileType::Symlink => FileType::Symlink,
                rustix::fs::FileType::Unknown => match rustix::fs::statat(&dfd, name, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(st) => match kind(&st) {
                        Ok(k) => k,
                        Err(_) => {
                            self.unlisted(dir, name.as_ref(), "not a file, directory or symlink")?;
                            continue;
                        }
                    },
                    Err(Errno::NOENT) => continue, // gone since it was read
                    Err(e) => return Err(errno(e)),
                },
                other => {
                    self.unlisted(dir, name.as_ref(), special(other))?;
                    continue;
                }
            };
            entries.push(DirEntry { name: name.into(), ino: e.ino(), kind });
        }
        entries.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        // Where each entry is, as of now: pages served later from this
        // listing must not put back places that changes since have moved.
        {
            let mut places = lock(&self.places);
            for e in entries.iter().filter(|e| e.ino != self.root_ino) {
                places.insert(e.ino, Place { dir, name: e.name.clone() });
            }
        }
        let entries: Arc<[DirEntry]> = entries.into();
        let mut listings = lock(&self.listings);
        listings.retain(|l| l.dir != dir);
        listings.push_back(Listing { dir, entries: entries.clone() });
        let mut listed: usize = listings.iter().map(|l| l.entries.len()).sum();
        while listings.len() > LISTINGS || (listed > LISTED_ENTRIES && listings.len() > 1) {
            listed -= listings.pop_front().map_or(0, |l| l.entries.len());
        }
        Ok(entries)
    }

    /// Held while a name found is remembered (see `moves`).
    fn finding(&self) -> std::sync::RwLockReadGuard<'_, ()> {
        self.moves.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Held while names move (see `moves`).
    fn moving(&self) -> std::sync::RwLockWriteGuard<'_, ()> {
        self.moves.write().unwrap_or_else(|e| e.into_inner())
    }

    /// An fd an open handle of `ino` holds that reads or writes (not an
    /// `O_PATH` one), to reach the inode even after it lost its name.
    fn held_fd(&self, ino: Ino) -> Option<Arc<OwnedFd>> {
        lock(&self.open).get(&ino).and_then(|h| h.fd(None))
    }

    /// Drops the listing of `dir`, if one is kept.
    fn drop_listing(&self, dir: Ino) {
        lock(&self.listings).retain(|l| l.dir != dir);
    }
}

impl FileSystem for DirFs {
    fn root(&self) -> Ino {
        self.root_ino
    }

    fn lookup(&self, dir: Ino, name: &str) -> Result<Ino> {
        validate_name(name)?;
        let dfd = self.dir_fd(dir)?;
        let _finding = self.finding();
        let flags = AtFlags::SYMLINK_NOFOLLOW | AtFlags::NO_AUTOMOUNT;
        let st = rustix::fs::statx(&dfd, name, flags, rustix::fs::StatxFlags::INO).map_err(errno)?;
        let root = rustix::fs::StatxAttributes::MOUNT_ROOT;
        if st.stx_attributes_mask.contains(root) && st.stx_attributes.contains(root) {
            // Another filesystem's mount point: no path crosses into one.
            return Err(Error::NotPermitted);
        }
        self.remember(st.stx_ino, dir, name);
        Ok(st.stx_ino)
    }

    fn parent(&self, dir: Ino) -> Result<Ino> {
        if dir == self.root_ino {
            return Ok(dir);
        }
        // Checks that the remembered place still holds the directory.
        self.dir_fd(dir)?;
        lock(&self.places).get(&dir).map(|p| p.dir).ok_or(Error::NotFound)
    }

    fn metadata(&self, ino: Ino) -> Result<Metadata> {
        if let Some(p) = lock(&self.open).get(&ino).and_then(|h| h.fds.first().map(|p| p.fd.clone())) {
            return metadata(ino, &rustix::fs::fstat(&*p).map_err(errno)?);
        }
        metadata(ino, &self.node(ino)?.1)
    }

    fn open(&self, dir: Ino, name: &str, opts: &OpenOptions) -> Result<Ino> {
        validate_name(name)?;
        if opts.create && opts.directory {
            return Err(Error::Invalid);
        }
        if opts.writes() {
            self.writable()?;
        }
        // Read-only, O_CREAT opens an existing file, as Linux does on a
        // read-only mount: only a file that must be made is `ReadOnly`.
        let create = opts.create && !self.read_only;
        // Before anything is opened or made, as Linux finds a free fd
        // before the path.
        let slot = self.slot()?;
        let dfd = self.dir_fd(dir)?;
        let _finding = self.finding();
        let write = opts.write || opts.append || opts.truncate;
        // A writer opens read-write where the mode allows, so that its fd
        // can also serve reads through other handles of the same inode.
        let mut flags = if write { OFlags::RDWR } else { OFlags::RDONLY };
        for (on, flag) in [
            (create, OFlags::CREATE),
            (create && opts.exclusive, OFlags::EXCL),
            (opts.truncate, OFlags::TRUNC),
            (opts.directory, OFlags::DIRECTORY),
        ] {
            if on {
                flags |= flag;
            }
        }
        let mode = Mode::from_raw_mode(opts.mode & 0o7777);
        let (fd, read) = match open_at(&dfd, Path::new(name), flags, mode) {
            Err(Errno::ACCESS | Errno::ISDIR) if write && !opts.read => {
                let flags = (flags - OFlags::RDWR) | OFlags::WRONLY;
                (open_at(&dfd, Path::new(name), flags, mode).map_err(errno)?, false)
            }
            Err(Errno::NOENT) if opts.create && !create => return Err(Error::ReadOnly),
            r => (r.map_err(errno)?, true),
        };
        let st = rustix::fs::fstat(&fd).map_err(errno)?;
        let ty = kind(&st)?;
        if opts.create && !create {
            if opts.exclusive {
                return Err(Error::Exists);
            }
            if ty == FileType::Dir {
                return Err(Error::IsDir);
            }
        }
        blocking(&fd, ty)?;
        self.remember(st.st_ino, dir, name);
        lock(&self.open).entry(st.st_ino).or_default().pin(Pinned { fd: Arc::new(fd), read, write, _slot: slot });
        Ok(st.st_ino)
    }

    fn open_ino(&self, ino: Ino) -> Result<()> {
        let slot = self.slot()?;
        let fd = self.open_beneath(&self.path_of(ino)?, OFlags::PATH)?;
        if rustix::fs::fstat(&fd).map_err(errno)?.st_ino != ino {
            return Err(Error::NotFound);
        }
        let pinned = Pinned { fd: Arc::new(fd), read: false, write: false, _slot: slot };
        lock(&self.open).entry(ino).or_default().pin(pinned);
        Ok(())
    }

    fn close(&self, ino: Ino) {
        let mut open = lock(&self.open);
        if open.get_mut(&ino).is_some_and(Held::unpin) {
            open.remove(&ino);
        }
    }

    fn read_at(&self, ino: Ino, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let fd = self.data_fd(ino, false)?;
        rustix::io::pread(&*fd, buf, offset).map_err(errno)
    }

    fn write_at(&self, ino: Ino, offset: u64, data: &[u8]) -> Result<usize> {
        self.writable()?;
        offset.checked_add(data.len() as u64).ok_or(Error::FileTooLarge)?;
        let fd = self.data_fd(ino, true)?;
        let mut done = 0;
        while done < data.len() {
            done += rustix::io::pwrite(&*fd, &data[done..], offset + done as u64).map_err(errno)?;
        }
        Ok(done)
    }

    fn append(&self, ino: Ino, data: &[u8]) -> Result<u64> {
        self.writable()?;
        let fd = self.data_fd(ino, true)?;
        // Atomic with respect to this backend's other appends; another
        // process's writes to the host file are beyond its reach.
        let _appending = lock(&self.appending);
        let end = rustix::fs::fstat(&*fd).map_err(errno)?.st_size.max(0) as u64;
        self.write_at(ino, end, data)?;
        Ok(end)
    }

    fn set_len(&self, ino: Ino, len: u64) -> Result<()> {
        self.writable()?;
        rustix::fs::ftruncate(&*self.data_fd(ino, true)?, len).map_err(errno)
    }

    fn read_dir(&self, dir: Ino, after: Option<&str>, max: usize) -> Result<Vec<DirEntry>> {
        let entries = self.listing(dir, after.is_some())?;
        let first = after.map_or(0, |a| entries.partition_point(|e| &*e.name <= a));
        let page = &entries[first..entries.len().min(first.saturating_add(max))];
        if page.is_empty() {
            // Past the end: the listing is done with.
            self.drop_listing(dir);
        } else if first + page.len() == entries.len() {
            // Its last page: a caller may stop here, at a short page,
            // without asking for the empty one, so it goes first when room
            // is needed.
            self.requeue(dir, false);
        }
        Ok(page.to_vec())
    }

    fn mkdir(&self, dir: Ino, name: &str, mode: u32) -> Result<Ino> {
        self.writable()?;
        validate_name(name)?;
        let dfd = self.dir_fd(dir)?;
        let _finding = self.finding();
        rustix::fs::mkdirat(&dfd, name, Mode::from_raw_mode(mode & 0o7777)).map_err(errno)?;
        let ino = rustix::fs::statat(&dfd, name, AtFlags::SYMLINK_NOFOLLOW).map_err(errno)?.st_ino;
        self.remember(ino, dir, name);
        Ok(ino)
    }

    fn rmdir(&self, dir: Ino, name: &str) -> Result<()> {
        self.writable()?;
        validate_name(name)?;
        let dfd = self.dir_fd(dir)?;
        let _moving = self.moving();
        let ino = self.held(&dfd, name);
        rustix::fs::unlinkat(&dfd, name, AtFlags::REMOVEDIR).map_err(errno)?;
        self.forget(ino, dir, name);
        Ok(())
    }

    fn unlink(&self, dir: Ino, name: &str) -> Result<()> {
        self.writable()?;
        validate_name(name)?;
        let dfd = self.dir_fd(dir)?;
        let _moving = self.moving();
        let ino = self.held(&dfd, name);
        rustix::fs::unlinkat(&dfd, name, AtFlags::empty()).map_err(errno)?;
        self.forget(ino, dir, name);
        Ok(())
    }

    fn rename(&self, from_dir: Ino, from: &str, to_dir: Ino, to: &str) -> Result<()> {
        self.writable()?;
        validate_name(from)?;
        validate_name(to)?;
        let from_fd = self.dir_fd(from_dir)?;
        // Within one directory (the common rename), opened once.
        let other_fd = if to_dir == from_dir { None } else { Some(self.dir_fd(to_dir)?) };
        let to_fd = other_fd.as_ref().unwrap_or(&from_fd);
        let _moving = self.moving();
        let replaced = self.held(to_fd, to);
        rustix::fs::renameat(&from_fd, from, to_fd, to).map_err(|e| match e {
            Errno::XDEV => Error::CrossDevice,
            e => errno(e),
        })?;
        // What moved has a new place; what lies below it keeps its own;
        // what it replaced has none. (A rename of one name of a file onto
        // another does nothing, and this finds the same inode where it was.)
        self.forget(replaced, to_dir, to);
        if let Some(ino) = self.held(to_fd, to) {
            self.remember(ino, to_dir, to);
        }
        Ok(())
    }

    fn symlink(&self, dir: Ino, name: &str, target: &str) -> Result<Ino> {
        self.writable()?;
        validate_name(name)?;
        // An absolute target could lead the host's own tools out of the tree.
        if target.starts_with('/') {
            return Err(Error::NotPermitted);
        }
        if target.is_empty() {
            return Err(Error::NotFound);
        }
        let dfd = self.dir_fd(dir)?;
        let _finding = self.finding();
        rustix::fs::symlinkat(target, &dfd, name).map_err(errno)?;
        let ino = rustix::fs::statat(&dfd, name, AtFlags::SYMLINK_NOFOLLOW).map_err(errno)?.st_ino;
        self.remember(ino, dir, name);
        Ok(ino)
    }

    fn readlink(&self, ino: Ino) -> Result<String> {
        let (fd, st) = self.node(ino)?;
        if kind(&st)? != FileType::Symlink {
            return Err(Error::Invalid);
        }
        let target = rustix::fs::readlinkat(&fd, "", Vec::new()).map_err(errno)?;
        target.into_string().map_err(|_| Error::Backend("symlink target is not UTF-8".into()))
    }

    fn link(&self, ino: Ino, dir: Ino, name: &str) -> Result<()> {
        self.writable()?;
        validate_name(name)?;
        let (fd, st) = self.node(ino)?;
        if kind(&st)? == FileType::Dir {
            return Err(Error::NotPermitted);
        }
        let dfd = self.dir_fd(dir)?;
        let _finding = self.finding();
        // Link the very inode we checked: through its fd, not its name.
        rustix::fs::linkat(rustix::fs::CWD, proc_path(&fd).as_str(), &dfd, name, AtFlags::SYMLINK_FOLLOW)
            .map_err(errno)?;
        self.remember(ino, dir, name);
        Ok(())
    }

    fn set_times(&self, ino: Ino, atime: SetTime, mtime: SetTime) -> Result<()> {
        self.writable()?;
        let spec = |t: SetTime| match t {
            SetTime::Keep => Timespec { tv_sec: 0, tv_nsec: rustix::fs::UTIME_OMIT },
            SetTime::Now => Timespec { tv_sec: 0, tv_nsec: rustix::fs::UTIME_NOW },
            SetTime::At(t) => Timespec { tv_sec: t.secs.min(i64::MAX as u64) as i64, tv_nsec: t.nanos.into() },
        };
        let times = Timestamps { last_access: spec(atime), last_modification: spec(mtime) };
        // An open file may have lost its name: its own fd still reaches it.
        if let Some(fd) = self.held_fd(ino) {
            return rustix::fs::futimens(&*fd, &times).map_err(errno);
        }
        let (fd, st) = self.node(ino)?;
        if kind(&st)? == FileType::Symlink {
            // The magic link would lead to the symlink's target: go by name,
            // without following, inside the checked parent.
            let (dir, name) = lock(&self.places).get(&ino).map(|p| (p.dir, p.name.clone())).ok_or(Error::Invalid)?;
            return rustix::fs::utimensat(&self.dir_fd(dir)?, &*name, &times, AtFlags::SYMLINK_NOFOLLOW).map_err(errno);
        }
        rustix::fs::utimensat(rustix::fs::CWD, proc_path(&fd).as_str(), &times, AtFlags::empty()).map_err(errno)
    }

    fn set_mode(&self, ino: Ino, mode: u32) -> Result<()> {
        self.writable()?;
        if let Some(fd) = self.held_fd(ino) {
            return rustix::fs::fchmod(&*fd, Mode::from_raw_mode(mode & 0o7777)).map_err(errno);
        }
        let (fd, st) = self.node(ino)?;
        if kind(&st)? == FileType::Symlink {
            return Err(Error::Unsupported); // Linux symlinks have no mode of their own
        }
        rustix::fs::chmodat(
            rustix::fs::CWD,
            proc_path(&fd).as_str(),
            Mode::from_raw_mode(mode & 0o7777),
            AtFlags::empty(),
        )
        .map_err(errno)
    }

    fn sync(&self, ino: Ino) -> Result<()> {
        if let Some(fd) = self.held_fd(ino) {
            return rustix::fs::fsync(fd.as_fd()).map_err(errno);
        }
        let fd = match self.data_fd(ino, false) {
            Err(Error::IsDir) => Arc::new(self.open_beneath(&self.path_of(ino)?, OFlags::RDONLY | OFlags::DIRECTORY)?),
            other => other?,
        };
        rustix::fs::fsync(fd.as_fd()).map_err(errno)
    }
}

#[cfg(test)]
mod tests;
