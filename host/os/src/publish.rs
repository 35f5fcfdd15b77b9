//! Atomic publication of a file: readers see the old content or the new,
//! whole, and a crash at any point leaves one of them and no garbage.
//!
//! On Linux the new content is written to an anonymous `O_TMPFILE` in the
//! target's directory — a crash while writing leaves nothing at all — then
//! fsynced, given a temporary name with `linkat` and renamed over the
//! target, and the directory is fsynced. Where `O_TMPFILE` or the `linkat`
//! through `/proc` is unavailable (some filesystems, no `/proc`, other
//! systems) a named temporary file takes its place. Either way a crash can
//! leave a named temporary behind; [`write_atomic`] removes those of dead
//! writers before it starts. A writer holds an exclusive lock on its
//! temporary for as long as it exists, and the system drops the lock when
//! the writer dies, so "dead" needs no process ids, which are reused.

use std::fs::File;
use std::io::{self, Seek, SeekFrom};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// How [`write_atomic_with`] holds the new content until it is published.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Temporary {
    /// An anonymous file, named only just before the rename; a named one
    /// where the system cannot.
    #[default]
    Anonymous,
    /// A named temporary file from the start.
    Named,
}

/// Writes `path` atomically with the content `write` produces. `write`
/// gets a fresh, empty file; `path` is replaced only if it returns `Ok`.
/// A symlink at `path` is written through (its target is replaced, as a
/// shell's `>` would write it), and a file replaced keeps its permissions.
/// `write`'s error comes back as it was; publishing's own are `E::from`
/// their `io::Error`.
pub fn write_atomic<T, E: From<io::Error>>(path: &Path, write: impl FnOnce(&mut File) -> Result<T, E>) -> Result<T, E> {
    write_atomic_with(path, Temporary::Anonymous, write)
}

/// [`write_atomic`], holding the content in the given kind of temporary.
pub fn write_atomic_with<T, E: From<io::Error>>(
    path: &Path,
    how: Temporary,
    write: impl FnOnce(&mut File) -> Result<T, E>,
) -> Result<T, E> {
    Ok(publish(path, how, write)??.0)
}

/// [`write_atomic`], handing back with `write`'s result the file now at
/// `path`, open for reading and writing: the one to go on writing to. It
/// is not always the one `write` was given, which may be left unlinked (an
/// anonymous file that could not be linked, where `/proc` is not mounted,
/// is published as a copy).
pub(crate) fn write_atomic_keeping<T, E: From<io::Error>>(
    path: &Path,
    write: impl FnOnce(&mut File) -> Result<T, E>,
) -> Result<(T, File), E> {
    publish(path, Temporary::Anonymous, write)?
}

/// [`write_atomic_with`]'s work: publishing's own errors outside, `write`'s
/// inside; the file published with `write`'s result.
fn publish<T, E>(
    path: &Path,
    how: Temporary,
    write: impl FnOnce(&mut File) -> Result<T, E>,
) -> io::Result<Result<(T, File), E>> {
    let path = &through_symlinks(path)?;
    let old = match std::fs::metadata(path) {
        Ok(md) if md.is_dir() => return Err(io::Error::new(io::ErrorKind::IsADirectory, "is a directory")),
        Ok(md) => Some(md.permissions()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let name = name.to_str().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "file name is not UTF-8"))?;
    remove_stale_temporaries(dir, |target| target == name);
    let dir_file = File::open(dir)?;
    let anonymous = match how {
        Temporary::Anonymous => Pending::anonymous(&dir_file).ok(),
        Temporary::Named => None,
    };
    let mut pending = match anonymous {
        Some(p) => p,
        None => Pending::named(dir, name)?,
    };
    let out = match write(&mut pending.file) {
        Ok(out) => out,
        Err(e) => return Ok(Err(e)),
    };
    // Named first: the file named may be a copy (no `/proc`), which is the
    // one to keep the permissions, and to sync.
    let temp = pending.name(dir, name)?;
    if let Some(permissions) = old {
        pending.file.set_permissions(permissions)?;
    }
    pending.file.sync_all()?;
    std::fs::rename(&temp, path)?;
    pending.temp.0 = None; // published: nothing left to remove
    dir_file.sync_all().map_err(|e| io::Error::new(e.kind(), format!("published, but not synced to disk: {e}")))?;
    Ok(Ok((out, pending.file)))
}

/// `path` with symlinks at its end followed (at most 40, as Linux's walks), each
/// relative target taken from the link's directory: the file
/// [`write_atomic`] replaces.
pub fn through_symlinks(path: &Path) -> io::Result<PathBuf> {
    let mut at = path.to_path_buf();
    for _ in 0..=packfs_core::resolve::MAX_SYMLINK_HOPS {
        match std::fs::symlink_metadata(&at) {
            Ok(md) if md.file_type().is_symlink() => {
                let target = std::fs::read_link(&at)?;
                at = at.parent().map_or_else(|| target.clone(), |dir| dir.join(&target));
            }
            _ => return Ok(at),
        }
    }
    Err(io::Error::new(io::ErrorKind::InvalidInput, "too many levels of symbolic links"))
}

/// New content until it is published: a file, locked for as long as it
/// lives, and its temporary name once it has one — removed if publication
/// fails.
struct Pending {
    file: File,
    temp: Temp,
}

/// A temporary name, removed when dropped.
struct Temp(Option<PathBuf>);

impl Pending {
    /// An anonymous file in `dir`, locked before it has a name.
    fn anonymous(dir: &File) -> io::Result<Self> {
        let file = anonymous_file(dir)?;
        file.lock()?;
        Ok(Pending { file, temp: Temp(None) })
    }

    /// A new named temporary for `name` in `dir`, locked.
    fn named(dir: &Path, name: &str) -> io::Result<Self> {
        use std::os::unix::fs::OpenOptionsExt;
        // A name can be taken: by a writer of the same process id in
        // another container sharing the directory, say. Then the next.
        for _ in 0..1000 {
            let temp = dir.join(temp_name(name));
            let opened = File::options().read(true).write(true).create_new(true).mode(0o644).open(&temp);
            let file = match opened {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            };
            let mut pending = Pending { file, temp: Temp(Some(temp)) };
            pending.file.lock()?;
            // Until the lock, another writer's clean-up could take it for
            // a dead writer's and remove it: then the name is not ours to
            // keep, nor to remove.
            if pending.temp.0.as_deref().is_some_and(|t| same_file(&pending.file, t)) {
                return Ok(pending);
            }
            pending.temp.0 = None;
        }
        Err(io::Error::new(io::ErrorKind::AlreadyExists, "no free temporary name"))
    }

    /// Gives the content a temporary name in `dir`, if it has none yet,
    /// and returns it. An anonymous file that cannot be linked is copied
    /// into a named temporary.
    fn name(&mut self, dir: &Path, name: &str) -> io::Result<PathBuf> {
        if let Some(temp) = &self.temp.0 {
            return Ok(temp.clone());
        }
        let temp = dir.join(temp_name(name));
        if link_anonymous(&self.file, &temp).is_ok() {
            self.temp.0 = Some(temp.clone());
            return Ok(temp);
        }
        *self = self.copied_to_named(dir, name)?;
        Ok(self.temp.0.clone().expect("a named temporary"))
    }

    /// A named temporary holding this file's content.
    fn copied_to_named(&mut self, dir: &Path, name: &str) -> io::Result<Pending> {
        let mut named = Pending::named(dir, name)?;
        self.file.seek(SeekFrom::Start(0))?;
        io::copy(&mut self.file, &mut named.file)?;
        Ok(named)
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if let Some(temp) = &self.0 {
            let _ = std::fs::remove_file(temp);
        }
    }
}

/// True when `path` names the open `file`.
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

#[cfg(target_os = "linux")]
fn anonymous_file(dir: &File) -> io::Result<File> {
    use rustix::fs::{Mode, OFlags, openat};
    // Readable too, for the copy when it cannot be linked.
    let fd = openat(dir.as_fd(), ".", OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC, Mode::from_raw_mode(0o644))?;
    Ok(File::from(fd))
}

#[cfg(not(target_os = "linux"))]
fn anonymous_file(_: &File) -> io::Result<File> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// Gives an `O_TMPFILE` file the name `to` (`linkat` through /proc, which
/// needs no privilege, unlike `AT_EMPTY_PATH`).
#[cfg(target_os = "linux")]
fn link_anonymous(file: &File, to: &Path) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    #[cfg(test)]
    if NO_PROC.get() {
        return Err(io::Error::from(io::ErrorKind::NotFound));
    }
    let from = format!("/proc/self/fd/{}", file.as_raw_fd());
    rustix::fs::linkat(rustix::fs::CWD, from.as_str(), rustix::fs::CWD, to, rustix::fs::AtFlags::SYMLINK_FOLLOW)?;
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn link_anonymous(_: &File, _: &Path) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

#[cfg(test)]
thread_local! {
    /// Set by a test: this thread's publications find no `/proc`, as in a
    /// chroot or a minimal container, and copy what they cannot link.
    pub(crate) static NO_PROC: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

const TEMP_SUFFIX: &str = ".packfs-tmp";

/// `.NAME.PID.N.packfs-tmp`: unique among live writers.
fn temp_name(name: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!(".{name}.{}.{}{TEMP_SUFFIX}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// Removes the temporaries of the targets `of` picks that no live writer
/// holds locked. Best effort: one that cannot be opened, locked or
/// removed (another user's, say), or a directory that cannot be listed,
/// is left, and does not stop the publication.
pub(crate) fn remove_stale_temporaries(dir: &Path, of: impl Fn(&str) -> bool) {
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries {
        let Ok(entry) = entry else { continue };
        let ours = entry.file_name().to_str().and_then(temp_target).is_some_and(&of);
        if !ours || !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let path: PathBuf = entry.path();
        // Non-blocking, should a FIFO have taken the name since.
        // Nor followed, should a symlink have.
        let nonblock = (rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOFOLLOW).bits() as i32;
        let Ok(file) = File::options().read(true).custom_flags(nonblock).open(&path) else { continue };
        // Locked, its writer is gone; removed under the lock, so that no
        // writer can be mid-way through taking it.
        if file.try_lock().is_ok() {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// The target a temporary is for, if `file_name` is exactly as
/// [`temp_name`] writes one: `.{name}.{pid}.{n}.packfs-tmp`.
fn temp_target(file_name: &str) -> Option<&str> {
    let mid = file_name.strip_prefix('.')?.strip_suffix(TEMP_SUFFIX)?;
    let (rest, n) = mid.rsplit_once('.')?;
    let (name, pid) = rest.rsplit_once('.')?;
    (canonical_number(pid) && canonical_number(n) && !name.is_empty()).then_some(name)
}

/// Whether `s` is a number as `format!` writes one: digits, no sign, no
/// leading zero.
pub(crate) fn canonical_number(s: &str) -> bool {
    s.parse::<u64>().is_ok_and(|n| n.to_string() == s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A publication's clean-up takes only its own target's temporaries,
    /// of the exact form it writes them, and follows no symlink.
    #[test]
    fn stale_temporaries_of_other_names_are_left() {
        let dir = tempfile::tempdir().unwrap();
        let keep = [".a.b.1.2.packfs-tmp", ".a.01.2.packfs-tmp", ".a.1.packfs-tmp", ".a.x.2.packfs-tmp"];
        for name in keep {
            std::fs::write(dir.path().join(name), name).unwrap();
        }
        std::fs::write(dir.path().join(".a.1.2.packfs-tmp"), b"stale").unwrap();
        let outside = tempfile::NamedTempFile::new().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join(".a.3.4.packfs-tmp")).unwrap();
        write_atomic(&dir.path().join("a"), |f| f.write_all(b"new")).unwrap();
        for name in keep {
            assert_eq!(std::fs::read_to_string(dir.path().join(name)).unwrap(), name);
        }
        assert!(!dir.path().join(".a.1.2.packfs-tmp").exists(), "its own stale temporary goes");
        assert!(outside.path().exists());
    }

    /// A file replaced keeps its permissions; a symlink is written through;
    /// a directory is refused before anything is written.
    #[test]
    fn replaces_what_the_path_names() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.pack");
        std::fs::write(&real, b"old").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.path().join("link.pack");
        std::os::unix::fs::symlink("real.pack", &link).unwrap();
        // Without /proc too, where an anonymous file is published as a
        // copy (which a3db56c made 0644).
        for (how, no_proc) in [(Temporary::Anonymous, false), (Temporary::Named, false), (Temporary::Anonymous, true)] {
            NO_PROC.set(no_proc);
            write_atomic_with(&link, how, |f| f.write_all(b"new")).unwrap();
            assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays");
            assert_eq!(std::fs::read(&real).unwrap(), b"new");
            assert_eq!(std::fs::metadata(&real).unwrap().permissions().mode() & 0o777, 0o600, "{how:?} {no_proc}");
        }
        NO_PROC.set(false);
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let mut called = false;
        let e = write_atomic(&sub, |_| {
            called = true;
            io::Result::Ok(())
        });
        assert_eq!(e.unwrap_err().kind(), io::ErrorKind::IsADirectory);
        assert!(!called);
    }

    #[test]
    fn replaces_whole_or_not_at_all() {
        for how in [Temporary::Anonymous, Temporary::Named] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("x.pack");
            write_atomic_with(&path, how, |f| f.write_all(b"one")).unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), b"one");
            write_atomic_with(&path, how, |f| f.write_all(b"two")).unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), b"two");
            // A failing writer leaves the old content and nothing else.
            let err = write_atomic_with(&path, how, |f| {
                f.write_all(b"half")?;
                Err::<(), _>(io::Error::other("boom"))
            });
            assert!(err.is_err());
            assert_eq!(std::fs::read(&path).unwrap(), b"two", "{how:?}");
            let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
            assert_eq!(names, ["x.pack"], "{how:?}");
        }
    }

    #[test]
    fn stale_temporaries_of_dead_writers_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        // Temporaries no writer holds locked: dead writers' leftovers.
        std::fs::write(dir.path().join(".x.pack.0.7.packfs-tmp"), b"junk").unwrap();
        std::fs::write(dir.path().join(".other.0.1.packfs-tmp"), b"not ours").unwrap();
        // Not a file: left, and no reason to fail.
        std::fs::create_dir(dir.path().join(".x.pack.0.8.packfs-tmp")).unwrap();
        write_atomic(&dir.path().join("x.pack"), |f| f.write_all(b"new")).unwrap();
        let mut names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        assert_eq!(names, [".other.0.1.packfs-tmp", ".x.pack.0.8.packfs-tmp", "x.pack"]);
    }

    #[test]
    fn a_live_writers_temporary_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let held = dir.path().join(".x.pack.1.1.packfs-tmp");
        let live = File::create(&held).unwrap();
        live.lock().unwrap();
        write_atomic(&dir.path().join("x.pack"), |f| f.write_all(b"new")).unwrap();
        assert!(held.exists(), "a locked temporary was taken for a dead writer's");
        drop(live);
        write_atomic(&dir.path().join("x.pack"), |f| f.write_all(b"newer")).unwrap();
        assert!(!held.exists(), "an unlocked temporary was left");
    }

    /// What publication falls back on when an anonymous file cannot be
    /// linked: its content, copied whole into a named temporary.
    #[cfg(target_os = "linux")]
    #[test]
    fn an_unlinkable_anonymous_file_is_copied() {
        let dir = tempfile::tempdir().unwrap();
        let mut anon = Pending::anonymous(&File::open(dir.path()).unwrap()).unwrap();
        let data: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
        anon.file.write_all(&data).unwrap();
        let named = anon.copied_to_named(dir.path(), "x.pack").unwrap();
        let temp = named.temp.0.clone().unwrap();
        assert_eq!(std::fs::read(&temp).unwrap(), data);
        drop(named);
        assert!(!temp.exists(), "an unpublished temporary outlived its writer");
    }
}
