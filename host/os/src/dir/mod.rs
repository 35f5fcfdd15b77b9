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
//!
//! Here: `DirFs` and its [`FileSystem`] impl. Beside it: `convert` (host
//! errnos and `stat`s in PackFS's terms), `places` (where inodes were last
//! seen, and reaching them again beneath the root), `listing` (directories
//! read whole, and the listings kept), `held` (the fds of open handles)
//! and `budget` ([`FdBudget`]); the `openat2` rule is
//! [`crate::beneath`]'s.

mod budget;
mod convert;
mod held;
mod listing;
mod places;

pub use budget::{FdBudget, MAX_DEFAULT_FDS};

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::Path;
use std::sync::{Arc, Mutex};

use packfs_core::path::validate_name;
use packfs_core::sync::lock;
use packfs_core::{BackendFault, DirEntry, Error, FileSystem, FileType, Ino, Metadata, OpenOptions, Result, SetTime};
use rustix::fs::{AtFlags, Mode, OFlags, Timespec, Timestamps};
use rustix::io::Errno;

use crate::beneath::open_at;
use convert::{errno, kind, metadata, no_fds};
use held::{Open, Pinned};
use listing::Listings;
use places::{Places, held_at};

/// A host directory served as a PackFS filesystem.
pub struct DirFs {
    /// The root, and where each inode handed out was last seen.
    places: Places,
    read_only: bool,
    /// With [`DirFs::strict`]: what a listing may still leave out.
    strict: Option<LeaveOut>,
    /// Pinned inodes: their open handles and the fds serving them.
    open: Open,
    /// Held by an append from finding the end to writing there, so that
    /// appends through this backend never overwrite each other.
    appending: Mutex<()>,
    /// Listings in progress, kept for their next pages.
    listings: Listings,
    /// What the fds of open handles count against.
    budget: FdBudget,
}

/// Which entries a strict listing may leave out, by path: see
/// [`DirFs::strict`].
type LeaveOut = Box<dyn Fn(&str) -> bool + Send + Sync>;

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
        Ok(DirFs {
            places: Places::open(path)?,
            read_only,
            strict: None,
            open: Open::default(),
            appending: Mutex::default(),
            listings: Listings::default(),
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

    /// Listings fail (`Io`, naming the entry) where they would leave out
    /// what PackFS cannot hold — a name that is not UTF-8, a fifo, socket
    /// or device — unless `leave_out` is true for its path from the root
    /// (made UTF-8 lossily). A guest's view leaves such entries out; a
    /// copy of the tree must not lose them silently.
    pub fn strict(self, leave_out: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        DirFs { strict: Some(Box::new(leave_out)), ..self }
    }

    /// A place in the budget for one more open handle's fd.
    fn slot(&self) -> Result<budget::Slot> {
        self.budget.take().ok_or_else(|| {
            no_fds(format!("all {} host descriptors of the directory's budget are held", self.budget.max()))
        })
    }

    /// An entry of `dir` a listing cannot hold: left out, or, when
    /// [`Self::strict`] does not leave it out, an error.
    fn unlisted(&self, dir: Ino, name: &std::ffi::OsStr, what: &str) -> Result<()> {
        let Some(leave_out) = &self.strict else { return Ok(()) };
        let path = self.places.path_of(dir)?.join(name);
        let path = path.to_string_lossy();
        if leave_out(&path) {
            return Ok(());
        }
        Err(Error::backend(BackendFault::Unrepresentable, format!("{path}: {what}, which PackFS cannot hold")))
    }

    fn writable(&self) -> Result<()> {
        if self.read_only { Err(Error::ReadOnly) } else { Ok(()) }
    }

    /// `dir`/`name` no longer holds `ino`: its place goes, if that was it,
    /// and so does its listing, if it was a directory being listed.
    fn forget(&self, ino: Option<Ino>, dir: Ino, name: &str) {
        let Some(ino) = ino else { return };
        self.places.forget(ino, dir, name);
        self.listings.forget(ino);
    }

    /// A pinned fd of `ino` that can read (or write), else a fresh one.
    fn data_fd(&self, ino: Ino, write: bool) -> Result<Arc<OwnedFd>> {
        if let Some(fd) = self.open.fd(ino, Some(write)) {
            return Ok(fd);
        }
        let flags = if write { OFlags::WRONLY } else { OFlags::RDONLY };
        let fd = self.places.open_beneath(&self.places.path_of(ino)?, flags)?;
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
        if resume && let Some(entries) = self.listings.requeue(dir, true) {
            return Ok(entries);
        }
        let dfd = self.places.dir_fd(dir)?;
        let _finding = self.places.finding();
        let entries: Arc<[DirEntry]> = listing::read(&dfd, |name, what| self.unlisted(dir, name, what))?.into();
        // Where each entry is, as of now: pages served later from this
        // listing must not put back places that changes since have moved.
        self.places.remember_all(dir, &entries);
        self.listings.keep(dir, entries.clone());
        Ok(entries)
    }
}

impl FileSystem for DirFs {
    fn root(&self) -> Ino {
        self.places.root_ino()
    }

    fn lookup(&self, dir: Ino, name: &str) -> Result<Ino> {
        validate_name(name)?;
        let dfd = self.places.dir_fd(dir)?;
        let _finding = self.places.finding();
        let flags = AtFlags::SYMLINK_NOFOLLOW | AtFlags::NO_AUTOMOUNT;
        let st = rustix::fs::statx(&dfd, name, flags, rustix::fs::StatxFlags::INO).map_err(errno)?;
        let root = rustix::fs::StatxAttributes::MOUNT_ROOT;
        if st.stx_attributes_mask.contains(root) && st.stx_attributes.contains(root) {
            // Another filesystem's mount point: no path crosses into one.
            return Err(Error::NotPermitted);
        }
        self.places.remember(st.stx_ino, dir, name);
        Ok(st.stx_ino)
    }

    fn parent(&self, dir: Ino) -> Result<Ino> {
        if dir == self.places.root_ino() {
            return Ok(dir);
        }
        // Checks that the remembered place still holds the directory.
        self.places.dir_fd(dir)?;
        self.places.place(dir).map(|(dir, _)| dir).ok_or(Error::NotFound)
    }

    fn metadata(&self, ino: Ino) -> Result<Metadata> {
        if let Some(p) = self.open.any_fd(ino) {
            return metadata(ino, &rustix::fs::fstat(&*p).map_err(errno)?);
        }
        metadata(ino, &self.places.node(ino)?.1)
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
        let dfd = self.places.dir_fd(dir)?;
        let _finding = self.places.finding();
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
        self.places.remember(st.st_ino, dir, name);
        self.open.pin(st.st_ino, Pinned { fd: Arc::new(fd), read, write, _slot: slot });
        Ok(st.st_ino)
    }

    fn open_ino(&self, ino: Ino) -> Result<()> {
        let slot = self.slot()?;
        let fd = self.places.open_beneath(&self.places.path_of(ino)?, OFlags::PATH)?;
        if rustix::fs::fstat(&fd).map_err(errno)?.st_ino != ino {
            return Err(Error::NotFound);
        }
        let pinned = Pinned { fd: Arc::new(fd), read: false, write: false, _slot: slot };
        self.open.pin(ino, pinned);
        Ok(())
    }

    fn close(&self, ino: Ino) {
        self.open.close(ino);
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
            self.listings.forget(dir);
        } else if first + page.len() == entries.len() {
            // Its last page: a caller may stop here, at a short page,
            // without asking for the empty one, so it goes first when room
            // is needed.
            self.listings.requeue(dir, false);
        }
        Ok(page.to_vec())
    }

    fn mkdir(&self, dir: Ino, name: &str, mode: u32) -> Result<Ino> {
        self.writable()?;
        validate_name(name)?;
        let dfd = self.places.dir_fd(dir)?;
        let _finding = self.places.finding();
        rustix::fs::mkdirat(&dfd, name, Mode::from_raw_mode(mode & 0o7777)).map_err(errno)?;
        let ino = rustix::fs::statat(&dfd, name, AtFlags::SYMLINK_NOFOLLOW).map_err(errno)?.st_ino;
        self.places.remember(ino, dir, name);
        Ok(ino)
    }

    fn rmdir(&self, dir: Ino, name: &str) -> Result<()> {
        self.writable()?;
        validate_name(name)?;
        let dfd = self.places.dir_fd(dir)?;
        let _moving = self.places.moving();
        let ino = held_at(&dfd, name);
        rustix::fs::unlinkat(&dfd, name, AtFlags::REMOVEDIR).map_err(errno)?;
        self.forget(ino, dir, name);
        Ok(())
    }

    fn unlink(&self, dir: Ino, name: &str) -> Result<()> {
        self.writable()?;
        validate_name(name)?;
        let dfd = self.places.dir_fd(dir)?;
        let _moving = self.places.moving();
        let ino = held_at(&dfd, name);
        rustix::fs::unlinkat(&dfd, name, AtFlags::empty()).map_err(errno)?;
        self.forget(ino, dir, name);
        Ok(())
    }

    fn rename(&self, from_dir: Ino, from: &str, to_dir: Ino, to: &str) -> Result<()> {
        self.writable()?;
        validate_name(from)?;
        validate_name(to)?;
        let from_fd = self.places.dir_fd(from_dir)?;
        // Within one directory (the common rename), opened once.
        let other_fd = if to_dir == from_dir { None } else { Some(self.places.dir_fd(to_dir)?) };
        let to_fd = other_fd.as_ref().unwrap_or(&from_fd);
        let _moving = self.places.moving();
        let replaced = held_at(to_fd, to);
        rustix::fs::renameat(&from_fd, from, to_fd, to).map_err(|e| match e {
            Errno::XDEV => Error::CrossDevice,
            e => errno(e),
        })?;
        // What moved has a new place; what lies below it keeps its own;
        // what it replaced has none. (A rename of one name of a file onto
        // another does nothing, and this finds the same inode where it was.)
        self.forget(replaced, to_dir, to);
        if let Some(ino) = held_at(to_fd, to) {
            self.places.remember(ino, to_dir, to);
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
        let dfd = self.places.dir_fd(dir)?;
        let _finding = self.places.finding();
        rustix::fs::symlinkat(target, &dfd, name).map_err(errno)?;
        let ino = rustix::fs::statat(&dfd, name, AtFlags::SYMLINK_NOFOLLOW).map_err(errno)?.st_ino;
        self.places.remember(ino, dir, name);
        Ok(ino)
    }

    fn readlink(&self, ino: Ino) -> Result<String> {
        let (fd, st) = self.places.node(ino)?;
        if kind(&st)? != FileType::Symlink {
            return Err(Error::Invalid);
        }
        let target = rustix::fs::readlinkat(&fd, "", Vec::new()).map_err(errno)?;
        target.into_string().map_err(|_| Error::backend(BackendFault::Unrepresentable, "symlink target is not UTF-8"))
    }

    fn link(&self, ino: Ino, dir: Ino, name: &str) -> Result<()> {
        self.writable()?;
        validate_name(name)?;
        let (fd, st) = self.places.node(ino)?;
        if kind(&st)? == FileType::Dir {
            return Err(Error::NotPermitted);
        }
        let dfd = self.places.dir_fd(dir)?;
        let _finding = self.places.finding();
        // Link the very inode we checked: through its fd, not its name.
        rustix::fs::linkat(rustix::fs::CWD, proc_path(&fd).as_str(), &dfd, name, AtFlags::SYMLINK_FOLLOW)
            .map_err(errno)?;
        self.places.remember(ino, dir, name);
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
        if let Some(fd) = self.open.fd(ino, None) {
            return rustix::fs::futimens(&*fd, &times).map_err(errno);
        }
        let (fd, st) = self.places.node(ino)?;
        if kind(&st)? == FileType::Symlink {
            // The magic link would lead to the symlink's target: go by name,
            // without following, inside the checked parent.
            let (dir, name) = self.places.place(ino).ok_or(Error::Invalid)?;
            return rustix::fs::utimensat(&self.places.dir_fd(dir)?, &*name, &times, AtFlags::SYMLINK_NOFOLLOW)
                .map_err(errno);
        }
        rustix::fs::utimensat(rustix::fs::CWD, proc_path(&fd).as_str(), &times, AtFlags::empty()).map_err(errno)
    }

    fn set_mode(&self, ino: Ino, mode: u32) -> Result<()> {
        self.writable()?;
        if let Some(fd) = self.open.fd(ino, None) {
            return rustix::fs::fchmod(&*fd, Mode::from_raw_mode(mode & 0o7777)).map_err(errno);
        }
        let (fd, st) = self.places.node(ino)?;
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
        if let Some(fd) = self.open.fd(ino, None) {
            return rustix::fs::fsync(fd.as_fd()).map_err(errno);
        }
        let fd = match self.data_fd(ino, false) {
            Err(Error::IsDir) => {
                Arc::new(self.places.open_beneath(&self.places.path_of(ino)?, OFlags::RDONLY | OFlags::DIRECTORY)?)
            }
            other => other?,
        };
        rustix::fs::fsync(fd.as_fd()).map_err(errno)
    }
}

#[cfg(test)]
mod tests;
