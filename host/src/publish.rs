//! Atomic publication of a file: readers see the old content or the new,
//! whole, and a crash at any point leaves one of them and no garbage.
//!
//! On Linux the new content is written to an anonymous `O_TMPFILE` in the
//! target's directory — a crash while writing leaves nothing at all — then
//! fsynced, given a temporary name with `linkat` and renamed over the
//! target, and the directory is fsynced. Where `O_TMPFILE` is unsupported
//! (some filesystems, other systems) a named temporary file takes its
//! place. Either way the only window for garbage is between naming the
//! temporary and the rename; [`write_atomic`] removes what a dead process
//! left there before it starts.

use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `path` atomically with the content `write` produces. `write`
/// gets a fresh, empty file; `path` is replaced only if it returns `Ok`.
pub fn write_atomic<T>(path: &Path, write: impl FnOnce(&mut File) -> io::Result<T>) -> io::Result<T> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let name = name.to_str().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "file name is not UTF-8"))?;
    remove_stale_temporaries(dir, name)?;
    let dir_file = File::open(dir)?;
    let temp = dir.join(temp_name(name));
    let (mut file, named) = match anonymous_file(&dir_file) {
        Ok(f) => (f, false),
        Err(_) => (File::options().write(true).create_new(true).open(&temp)?, true),
    };
    let result = (|| {
        let out = write(&mut file)?;
        file.sync_all()?;
        if !named {
            link_anonymous(&file, &temp)?;
        }
        std::fs::rename(&temp, path)?;
        dir_file.sync_all()?;
        Ok(out)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

#[cfg(target_os = "linux")]
fn anonymous_file(dir: &File) -> io::Result<File> {
    use rustix::fs::{Mode, OFlags, openat};
    let fd = openat(dir.as_fd(), ".", OFlags::TMPFILE | OFlags::WRONLY | OFlags::CLOEXEC, Mode::from_raw_mode(0o644))?;
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
    let from = format!("/proc/self/fd/{}", file.as_raw_fd());
    rustix::fs::linkat(rustix::fs::CWD, from.as_str(), rustix::fs::CWD, to, rustix::fs::AtFlags::SYMLINK_FOLLOW)?;
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn link_anonymous(_: &File, _: &Path) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

const TEMP_SUFFIX: &str = ".packfs-tmp";

/// `.NAME.PID.N.packfs-tmp`: the PID tells whether its writer still lives.
fn temp_name(name: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!(".{name}.{}.{}{TEMP_SUFFIX}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// Removes temporaries for `name` whose writing process is gone.
fn remove_stale_temporaries(dir: &Path, name: &str) -> io::Result<()> {
    let prefix = format!(".{name}.");
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let file_name = entry.file_name();
        let Some(rest) = file_name.to_str().and_then(|n| n.strip_prefix(&prefix)?.strip_suffix(TEMP_SUFFIX)) else {
            continue;
        };
        let Some(pid) = rest.split('.').next().and_then(|p| p.parse::<u32>().ok()) else { continue };
        if !process_alive(pid) {
            let path: PathBuf = entry.path();
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

fn process_alive(pid: u32) -> bool {
    pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn replaces_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.pack");
        write_atomic(&path, |f| f.write_all(b"one")).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"one");
        write_atomic(&path, |f| f.write_all(b"two")).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        // A failing writer leaves the old content and nothing else.
        let err = write_atomic(&path, |f| {
            f.write_all(b"half")?;
            Err::<(), _>(io::Error::other("boom"))
        });
        assert!(err.is_err());
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["x.pack"]);
    }

    #[test]
    fn stale_temporaries_of_dead_writers_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        // PID 0 is never a user process: a dead writer's leftover.
        std::fs::write(dir.path().join(".x.pack.0.7.packfs-tmp"), b"junk").unwrap();
        std::fs::write(dir.path().join(".other.0.1.packfs-tmp"), b"not ours").unwrap();
        write_atomic(&dir.path().join("x.pack"), |f| f.write_all(b"new")).unwrap();
        let mut names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        assert_eq!(names, [".other.0.1.packfs-tmp", "x.pack"]);
    }
}
