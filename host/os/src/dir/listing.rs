//! Directory listings: a host directory read whole and sorted
//! ([`read`]), and the [`Listings`] kept so that the pages after the
//! first come from the same read.

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};

use packfs_core::sync::lock;
use packfs_core::{DirEntry, FileType, Ino, Result};
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use super::convert::{errno, kind, special};

/// Listings kept at once, and entries in all of them (the newest listing
/// is kept whatever its size); finished listings, then the least recently
/// used, go first, and one pushed out is read again if its next page is
/// asked for.
pub(super) const LISTINGS: usize = 16;
const LISTED_ENTRIES: usize = 1 << 20;

/// The entries of the directory `dfd`, sorted by name. Those PackFS cannot
/// hold — a name that is not UTF-8, a fifo, socket or device — go to
/// `unlisted` (the name, what it is): left out if it returns `Ok`.
pub(super) fn read(dfd: &OwnedFd, mut unlisted: impl FnMut(&OsStr, &str) -> Result<()>) -> Result<Vec<DirEntry>> {
    let fd = rustix::fs::openat(dfd, ".", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
        .map_err(errno)?;
    let mut entries = Vec::new();
    for e in rustix::fs::Dir::new(fd).map_err(errno)? {
        let e = e.map_err(errno)?;
        // Names that are not UTF-8 cannot be WASI paths.
        let Ok(name) = e.file_name().to_str() else {
            let raw = std::os::unix::ffi::OsStrExt::from_bytes(e.file_name().to_bytes());
            unlisted(raw, "a name that is not UTF-8")?;
            continue;
        };
        if name == "." || name == ".." {
            continue;
        }
        let kind = match e.file_type() {
            rustix::fs::FileType::RegularFile => FileType::File,
            rustix::fs::FileType::Directory => FileType::Dir,
            rustix::fs::FileType::Symlink => FileType::Symlink,
            rustix::fs::FileType::Unknown => match rustix::fs::statat(dfd, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => match kind(&st) {
                    Ok(k) => k,
                    Err(_) => {
                        unlisted(name.as_ref(), "not a file, directory or symlink")?;
                        continue;
                    }
                },
                Err(Errno::NOENT) => continue, // gone since it was read
                Err(e) => return Err(errno(e)),
            },
            other => {
                unlisted(name.as_ref(), special(other))?;
                continue;
            }
        };
        entries.push(DirEntry { name: name.into(), ino: e.ino(), kind });
    }
    entries.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    Ok(entries)
}

/// The sorted entries of directory `dir`, as read when a listing of it
/// began.
struct Listing {
    dir: Ino,
    entries: Arc<[DirEntry]>,
}

/// The listings kept, the next to go first.
#[derive(Default)]
pub(super) struct Listings(Mutex<VecDeque<Listing>>);

impl Listings {
    /// Keeps `entries` as the listing of `dir` in progress (the last to
    /// go), pushing out others past the bounds.
    pub(super) fn keep(&self, dir: Ino, entries: Arc<[DirEntry]>) {
        let mut listings = lock(&self.0);
        listings.retain(|l| l.dir != dir);
        listings.push_back(Listing { dir, entries });
        let mut listed: usize = listings.iter().map(|l| l.entries.len()).sum();
        while listings.len() > LISTINGS || (listed > LISTED_ENTRIES && listings.len() > 1) {
            listed -= listings.pop_front().map_or(0, |l| l.entries.len());
        }
    }

    /// Moves `dir`'s listing, if one is kept, to the back of the queue (the
    /// last to go) or to its front (the next to go); returns its entries.
    pub(super) fn requeue(&self, dir: Ino, back: bool) -> Option<Arc<[DirEntry]>> {
        let mut listings = lock(&self.0);
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

    /// Drops the listing of `dir`, if one is kept.
    pub(super) fn forget(&self, dir: Ino) {
        lock(&self.0).retain(|l| l.dir != dir);
    }

    /// True when a listing of `dir` is kept.
    #[cfg(test)]
    pub(super) fn holds(&self, dir: Ino) -> bool {
        lock(&self.0).iter().any(|l| l.dir == dir)
    }
}
