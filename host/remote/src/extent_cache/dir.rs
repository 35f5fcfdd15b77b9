//! A directory of the cache, reached from the root one name at a time and
//! never through a symlink (`openat` with `O_NOFOLLOW`), so that no link
//! below the root, and no link swapped in later, can redirect a read, a
//! write or a removal; and used only if it is this user's and writable by
//! no one else (as ssh checks `~/.ssh`), since anyone else able to write
//! there could plant entries or swap names.

use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use rustix::fs::{self as rfs, AtFlags, FileType, FlockOperation, Mode, OFlags};
use rustix::io::Errno;

/// How directories are opened: a symlink is refused (`ELOOP`), not followed.
const DIR: OFlags = OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::NOFOLLOW).union(OFlags::CLOEXEC);

/// How files are opened: not through a symlink, and without blocking (a
/// FIFO planted under a cache's name must not hang the open).
const FILE: OFlags = OFlags::NOFOLLOW.union(OFlags::NONBLOCK).union(OFlags::CLOEXEC);

/// Files the cache makes are the user's alone.
const PRIVATE: Mode = Mode::RUSR.union(Mode::WUSR);

/// A directory of the cache, open.
pub(super) struct Dir(File);

/// What the cache needs to know of a file.
pub(super) struct Stat {
    pub len: u64,
    /// Seconds and nanoseconds.
    pub mtime: (i64, i64),
}

impl Dir {
    /// The root, at `path`. A symlink there is followed, this once: from
    /// then on the root is this descriptor, whatever the link says later.
    pub(super) fn root(path: &Path) -> io::Result<Dir> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        Ok(Dir(rfs::openat(rfs::CWD, path, flags, Mode::empty())?.into()))
    }

    /// `Some((uid, mode))` if the directory is another user's or others
    /// may write to it.
    pub(super) fn exposed(&self) -> io::Result<Option<(u32, u32)>> {
        let meta = self.0.metadata()?;
        let mode = meta.mode() & 0o7777;
        let mine = meta.uid() == rustix::process::geteuid().as_raw();
        Ok((!mine || mode & 0o022 != 0).then_some((meta.uid(), mode)))
    }

    /// The directory `name` in this one, if it is a directory (not a
    /// symlink to one) and private. Names here are single components: no
    /// form the cache makes or takes has a `/`.
    pub(super) fn dir(&self, name: &str) -> io::Result<Dir> {
        let dir = Dir(rfs::openat(&self.0, name, DIR, Mode::empty())
            .map_err(|e| match e {
                Errno::LOOP => io::Error::other(format!("{name} is a symlink, which the cache does not follow")),
                e => e.into(),
            })?
            .into());
        if let Some((uid, mode)) = dir.exposed()? {
            let why = format!("{name} is owned by uid {uid} with mode {mode:o}: not private");
            return Err(io::Error::new(io::ErrorKind::PermissionDenied, why));
        }
        Ok(dir)
    }

    /// [`dir`](Self::dir), made (private) first if it is not there.
    pub(super) fn make_dir(&self, name: &str) -> io::Result<Dir> {
        match rfs::mkdirat(&self.0, name, Mode::RWXU) {
            Ok(()) | Err(Errno::EXIST) => self.dir(name),
            Err(e) => Err(e.into()),
        }
    }

    /// The names in it (any that is not UTF-8 with replacement characters,
    /// which no name of the cache's form has).
    pub(super) fn names(&self) -> io::Result<Vec<String>> {
        let mut out = Vec::new();
        for e in rfs::Dir::read_from(&self.0)? {
            let e = e?;
            let name = e.file_name().to_string_lossy();
            if name != "." && name != ".." {
                out.push(name.into_owned());
            }
        }
        Ok(out)
    }

    /// `name`'s length and mtime, if it is a regular file (not a symlink).
    pub(super) fn stat(&self, name: &str) -> Option<Stat> {
        let st = rfs::statat(&self.0, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        // The fields' types differ between targets; these casts are exact
        // for every value a kernel gives.
        #[allow(clippy::unnecessary_cast)]
        let stat = Stat { len: st.st_size as u64, mtime: (st.st_mtime as i64, st.st_mtime_nsec as i64) };
        (FileType::from_raw_mode(st.st_mode) == FileType::RegularFile).then_some(stat)
    }

    /// `name`, a regular file, open for reading.
    pub(super) fn open(&self, name: &str) -> Option<File> {
        regular(rfs::openat(&self.0, name, FILE | OFlags::RDONLY, Mode::empty()).ok()?.into())
    }

    /// `name`, a regular file, open for writing (to lock it); made if
    /// `create`.
    pub(super) fn open_lock(&self, name: &str, create: bool) -> Option<File> {
        let flags = FILE | OFlags::WRONLY | if create { OFlags::CREATE } else { OFlags::empty() };
        regular(rfs::openat(&self.0, name, flags, PRIVATE).ok()?.into())
    }

    /// `name`, made new, open for reading and writing.
    pub(super) fn create_new(&self, name: &str) -> io::Result<File> {
        let flags = FILE | OFlags::RDWR | OFlags::CREATE | OFlags::EXCL;
        Ok(rfs::openat(&self.0, name, flags, PRIVATE)?.into())
    }

    /// Renames `from` in this directory to `to` in `dir`, replacing it.
    pub(super) fn rename(&self, from: &str, dir: &Dir, to: &str) -> io::Result<()> {
        Ok(rfs::renameat(&self.0, from, &dir.0, to)?)
    }

    /// Removes `name` (a link itself, never what it points to; never a
    /// directory).
    pub(super) fn remove(&self, name: &str) -> io::Result<()> {
        Ok(rfs::unlinkat(&self.0, name, AtFlags::empty())?)
    }

    /// Whether `name` is still `file`: not removed, nor replaced.
    pub(super) fn holds(&self, name: &str, file: &File) -> bool {
        match (rfs::statat(&self.0, name, AtFlags::SYMLINK_NOFOLLOW), rfs::fstat(file)) {
            (Ok(a), Ok(b)) => (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino),
            _ => false,
        }
    }

    /// Waits for the lock on the directory itself (released when the
    /// returned handle closes).
    pub(super) fn lock(&self) -> io::Result<File> {
        let again: File = rfs::openat(&self.0, ".", DIR, Mode::empty())?.into();
        rfs::flock(&again, FlockOperation::LockExclusive)?;
        Ok(again)
    }
}

fn regular(file: File) -> Option<File> {
    file.metadata().ok()?.is_file().then_some(file)
}
