//! [`Places`]: where each inode handed out was last seen — its directory's
//! inode and its name there — and how an inode is reached again from the
//! root by those names, checked to still be that inode.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use packfs_core::sync::lock;
use packfs_core::{DirEntry, Error, FileType, Ino, Result};
use rustix::fs::{AtFlags, Mode, OFlags, Stat};

use super::convert::{errno, kind};
use crate::beneath::{open_at, open_root};

/// Directories a path may climb through (a longer chain of places is a
/// cycle, which moves behind our back can make).
const MAX_DEPTH: usize = packfs_core::path::MAX_PATH / 2;

/// An inode's directory and its name there.
struct Place {
    dir: Ino,
    name: Arc<str>,
}

/// The root, held for life, and the places of the inodes below it.
pub(super) struct Places {
    root: OwnedFd,
    root_ino: Ino,
    /// The root has no place.
    map: Mutex<HashMap<Ino, Place>>,
    /// Written by a change that moves or removes names (rename, unlink,
    /// rmdir) from its host call to its places' update, read by one that
    /// finds names and remembers where: so that a lookup never puts back a
    /// place a rename here has just moved.
    moves: RwLock<()>,
}

impl Places {
    /// The directory at `path` as the root, and no places yet.
    pub(super) fn open(path: &Path) -> std::io::Result<Self> {
        let root = open_root(path)?;
        let root_ino = rustix::fs::fstat(&root)?.st_ino;
        Ok(Places { root, root_ino, map: Mutex::default(), moves: RwLock::default() })
    }

    pub(super) fn root_ino(&self) -> Ino {
        self.root_ino
    }

    /// `ino` is `dir`/`name`.
    pub(super) fn remember(&self, ino: Ino, dir: Ino, name: &str) {
        if ino != self.root_ino {
            lock(&self.map).insert(ino, Place { dir, name: name.into() });
        }
    }

    /// Each entry of a listing of `dir` is where the listing found it.
    pub(super) fn remember_all(&self, dir: Ino, entries: &[DirEntry]) {
        let mut map = lock(&self.map);
        for e in entries.iter().filter(|e| e.ino != self.root_ino) {
            map.insert(e.ino, Place { dir, name: e.name.clone() });
        }
    }

    /// `dir`/`name` no longer holds `ino`: its place goes, if that was it
    /// (so that places do not pile up as files come and go).
    pub(super) fn forget(&self, ino: Ino, dir: Ino, name: &str) {
        let mut map = lock(&self.map);
        if map.get(&ino).is_some_and(|p| p.dir == dir && &*p.name == name) {
            map.remove(&ino);
        }
    }

    /// Where `ino` was last seen: its directory and its name there.
    pub(super) fn place(&self, ino: Ino) -> Option<(Ino, Arc<str>)> {
        lock(&self.map).get(&ino).map(|p| (p.dir, p.name.clone()))
    }

    /// The inodes that have a place.
    #[cfg(test)]
    pub(super) fn inodes(&self) -> Vec<Ino> {
        lock(&self.map).keys().copied().collect()
    }

    /// Held while a name found is remembered (see `moves`).
    pub(super) fn finding(&self) -> RwLockReadGuard<'_, ()> {
        self.moves.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Held while names move (see `moves`).
    pub(super) fn moving(&self) -> RwLockWriteGuard<'_, ()> {
        self.moves.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The path of `ino` relative to the root, from the places of it and
    /// its directories.
    pub(super) fn path_of(&self, ino: Ino) -> Result<PathBuf> {
        let map = lock(&self.map);
        let mut names = Vec::new();
        let mut at = ino;
        while at != self.root_ino {
            let place = map.get(&at).ok_or(Error::NotFound)?;
            if names.len() == MAX_DEPTH {
                return Err(Error::NotFound);
            }
            names.push(&*place.name);
            at = place.dir;
        }
        Ok(names.iter().rev().collect())
    }

    /// Opens `rel` beneath the root (see [`open_at`]).
    pub(super) fn open_beneath(&self, rel: &Path, flags: OFlags) -> Result<OwnedFd> {
        open_at(&self.root, rel, flags, Mode::empty()).map_err(errno)
    }

    /// An `O_PATH` fd of `ino`, checked to still be that inode.
    pub(super) fn node(&self, ino: Ino) -> Result<(OwnedFd, Stat)> {
        let fd = self.open_beneath(&self.path_of(ino)?, OFlags::PATH)?;
        let st = rustix::fs::fstat(&fd).map_err(errno)?;
        if st.st_ino != ino {
            return Err(Error::NotFound); // moved or replaced behind our back
        }
        Ok((fd, st))
    }

    /// A directory fd for `*at` calls on names inside `dir`.
    pub(super) fn dir_fd(&self, dir: Ino) -> Result<OwnedFd> {
        let (fd, st) = self.node(dir)?;
        if kind(&st)? != FileType::Dir {
            return Err(Error::NotDir);
        }
        Ok(fd)
    }
}

/// The inode `dfd`/`name` holds, if any, to [`forget`](Places::forget)
/// once the name is gone.
pub(super) fn held_at(dfd: &OwnedFd, name: &str) -> Option<Ino> {
    rustix::fs::statat(dfd, name, AtFlags::SYMLINK_NOFOLLOW).ok().map(|st| st.st_ino)
}
