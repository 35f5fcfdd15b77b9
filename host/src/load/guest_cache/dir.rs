//! [`GuestCache`]: the directory, the checks it passes before it is used,
//! and the few file operations on it, each by name from its descriptor.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags, Stat};

use super::layout::{self, MAX_RECORD};

/// The size limit of a cache unless told otherwise: 2 GiB.
pub const DEFAULT_LIMIT: u64 = 2 << 30;
/// The racy window unless told otherwise (see [`GuestCache::with_racy_window`]).
const DEFAULT_RACY_WINDOW: Duration = Duration::from_secs(2);

/// A directory of compiled guests, bounded in size, private to this user.
///
/// Loading an artifact from it runs the machine code inside, so the
/// directory must be one only this user can write to: it is created
/// `0700`, and one that is a symlink, is not this user's, or that others
/// may write to is refused. What else a hit relies on is in the
/// [module doc](crate::load). A clone shares the directory.
#[derive(Debug, Clone)]
pub struct GuestCache {
    pub(super) inner: Arc<Inner>,
}

#[derive(Debug, Clone)]
pub(super) struct Inner {
    /// Every name is opened from this, without following symlinks.
    pub(super) root: Arc<OwnedFd>,
    pub(super) dir: PathBuf,
    pub(super) limit: u64,
    pub(super) racy_window: Duration,
}

impl GuestCache {
    /// Uses (and creates, private to this user) `dir`, bounded to
    /// [`DEFAULT_LIMIT`]. A directory that was already there must be one
    /// this user owns and nobody else can write to, and not a symlink
    /// (`PermissionDenied` otherwise): whoever can plant a file in it
    /// could run code as the host.
    pub fn new(dir: impl Into<PathBuf>) -> io::Result<Self> {
        let dir = dir.into();
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(&dir)?;
        let denied = |why: &str| io::Error::new(io::ErrorKind::PermissionDenied, format!("{}: {why}", dir.display()));
        // Not followed: a symlink could point anywhere later.
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let root = match rustix::fs::open(&dir, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => {
                return Err(denied("not a directory private to this user (a symlink or not a directory)"));
            }
            Err(e) => return Err(e.into()),
        };
        let st = rustix::fs::fstat(&root)?;
        if st.st_uid != rustix::process::geteuid().as_raw() || st.st_mode & 0o022 != 0 {
            return Err(denied("not a directory private to this user (another's, or others may write to it)"));
        }
        let inner = Inner { root: Arc::new(root), dir, limit: DEFAULT_LIMIT, racy_window: DEFAULT_RACY_WINDOW };
        // A tag that cannot be written costs nothing but backups' time.
        let _ = inner.create(layout::TAG, 0o644).and_then(|mut f| f.write_all(layout::TAG_TEXT.as_bytes()));
        Ok(GuestCache { inner: Arc::new(inner) })
    }

    /// The cache `packfs run` uses: `guests` in [`GuestCache::default_dir`];
    /// `None` when there is no such directory. When it makes `guests`, it
    /// removes the artifacts of the layout before it (`HEX.cwasm` in the
    /// base directory), which nothing reads any more.
    pub fn open_default() -> Option<io::Result<Self>> {
        let base = Self::default_dir()?;
        let fresh = std::fs::symlink_metadata(base.join("guests")).is_err();
        let cache = Self::new(base.join("guests"));
        if fresh && cache.is_ok() {
            remove_old_layout(&base);
        }
        Some(cache)
    }

    /// `$PACKFS_CACHE_DIR`, else `$XDG_CACHE_HOME/packfs`, else
    /// `$HOME/.cache/packfs`; `None` when none is set. It holds the
    /// compiled guests' cache (`guests/`) and the pack cache (`packs/`).
    pub fn default_dir() -> Option<PathBuf> {
        let var = |name| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        var("PACKFS_CACHE_DIR")
            .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("packfs")))
            .or_else(|| var("HOME").map(|d| d.join(".cache").join("packfs")))
    }

    /// Bounds the cache to `bytes`: after each store the least recently
    /// used guests are removed until it is within them.
    pub fn with_limit(self, bytes: u64) -> Self {
        self.with(|i| i.limit = bytes)
    }

    /// How old a module file's ctime must be before its identity stands
    /// for its content, and an artifact's before its pin alone is trusted
    /// (2 s unless told; longer for filesystems with coarse timestamps).
    pub fn with_racy_window(self, window: Duration) -> Self {
        self.with(|i| i.racy_window = window)
    }

    fn with(self, set: impl FnOnce(&mut Inner)) -> Self {
        let mut inner = Arc::unwrap_or_clone(self.inner);
        set(&mut inner);
        GuestCache { inner: Arc::new(inner) }
    }

    /// The cache directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The size limit, in bytes.
    pub fn limit(&self) -> u64 {
        self.inner.limit
    }
}

/// Removes from `base` the files of the cache's first layout: regular
/// files of this user's named 64 hex digits then `.cwasm`.
fn remove_old_layout(base: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(base) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(hex) = name.to_str().and_then(|n| n.strip_suffix(".cwasm")) else { continue };
        let ours = entry
            .metadata()
            .is_ok_and(|md| md.file_type().is_file() && md.uid() == rustix::process::geteuid().as_raw());
        if hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) && ours {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

impl Inner {
    /// Opens `name` to read, refusing a symlink, and without blocking on a
    /// FIFO; `Ok(None)` when there is nothing by that name.
    pub(super) fn open(&self, name: &str) -> io::Result<Option<(File, Stat)>> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
        match rustix::fs::openat(&self.root, name, flags, Mode::empty()) {
            Ok(fd) => {
                let st = rustix::fs::fstat(&fd)?;
                Ok(Some((File::from(fd), st)))
            }
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Whether `st` is a file this cache could have written: regular,
    /// this user's, one link.
    pub(super) fn is_own_file(st: &Stat) -> bool {
        FileType::from_raw_mode(st.st_mode) == FileType::RegularFile
            && st.st_uid == rustix::process::geteuid().as_raw()
            && st.st_nlink == 1
    }

    /// The text of the small record `name`, if it is one of ours.
    pub(super) fn read_record(&self, name: &str) -> Option<(String, File)> {
        let (file, st) = self.open(name).ok()??;
        if !Self::is_own_file(&st) || usize::try_from(st.st_size).map_or(true, |n| n > MAX_RECORD) {
            return None;
        }
        let mut text = String::with_capacity(MAX_RECORD + 1);
        (&file).take(MAX_RECORD as u64).read_to_string(&mut text).ok()?;
        Some((text, file))
    }

    /// Writes `text` to `name`, replacing what was there in one rename.
    pub(super) fn write_record(&self, name: &str, text: &str) -> io::Result<()> {
        let (tmp, mut file) = self.create_tmp()?;
        let written = file.write_all(text.as_bytes()).and_then(|()| Ok(rustix::fs::fchmod(&file, Mode::RUSR)?));
        let renamed = written.and_then(|()| Ok(rustix::fs::renameat(&self.root, &tmp, &self.root, name)?));
        if renamed.is_err() {
            self.remove(&tmp);
        }
        renamed
    }

    /// Creates a new file to write, `0600`, under a fresh temporary name.
    pub(super) fn create_tmp(&self) -> io::Result<(String, File)> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        loop {
            let name = layout::tmp(std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
            match self.create(&name, 0o600) {
                // Left by a process of the same id that died.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                made => return made.map(|f| (name, f)),
            }
        }
    }

    fn create(&self, name: &str, mode: u32) -> io::Result<File> {
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        Ok(File::from(rustix::fs::openat(&self.root, name, flags, Mode::from_raw_mode(mode))?))
    }

    /// Opens (creating) `name` to lock it.
    pub(super) fn open_lock(&self, name: &str) -> io::Result<File> {
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        Ok(File::from(rustix::fs::openat(&self.root, name, flags, Mode::RUSR | Mode::WUSR)?))
    }

    /// Publishes `tmp` as `name`, failing if `name` exists.
    pub(super) fn publish(&self, tmp: &str, name: &str) -> io::Result<()> {
        match rustix::fs::renameat_with(&self.root, tmp, &self.root, name, RenameFlags::NOREPLACE) {
            Ok(()) => Ok(()),
            // A filesystem without RENAME_NOREPLACE: a link fails on an
            // existing name just as well.
            Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => {
                rustix::fs::linkat(&self.root, tmp, &self.root, name, AtFlags::empty())?;
                self.remove(tmp);
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Removes `name`, which may be gone already.
    pub(super) fn remove(&self, name: &str) {
        let _ = rustix::fs::unlinkat(&self.root, name, AtFlags::empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_old_layout_s_artifacts_are_removed() {
        let base = tempfile::tempdir().unwrap();
        let old = base.path().join(format!("{}.cwasm", "ab".repeat(32)));
        let kept =
            ["notes.cwasm", "packs", &format!("{}.cwasm", "AB".repeat(32)), &format!("{}.cwasm.bak", "ab".repeat(32))];
        std::fs::write(&old, b"old").unwrap();
        for k in kept {
            std::fs::write(base.path().join(k), b"mine").unwrap();
        }
        let linked = base.path().join(format!("{}.cwasm", "cd".repeat(32)));
        std::os::unix::fs::symlink(base.path().join("packs"), &linked).unwrap();
        remove_old_layout(base.path());
        assert!(!old.exists());
        assert!(kept.iter().all(|k| base.path().join(k).exists()) && linked.exists());
    }
}
