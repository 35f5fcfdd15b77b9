//! The containment rule: how a path is opened beneath a directory so that
//! nothing in it leads out. [`DirFs`](crate::dir::DirFs) opens every path
//! this way; [`open_root`] and [`open_dir`] let other code that writes
//! into a host directory (`packfs unpack` making a symlink by hand) keep
//! the same rule.
//!
//! A path goes to the kernel whole, through `openat2` with
//! `RESOLVE_BENEATH` (no `..` above the directory, no absolute path or
//! symlink, however the tree changes meanwhile: checking a path and then
//! using it would lose that race), `RESOLVE_NO_MAGICLINKS` (no
//! `/proc/self/fd` links) and `RESOLVE_NO_XDEV` (no crossing into another
//! mount, so inode numbers stay unique). Its final component is never
//! followed (`O_NOFOLLOW`): a symlink there is `ELOOP`, or `ENOTDIR` when a
//! directory is asked for. Symlinks above it are followed while they stay
//! beneath.
//!
//! ```
//! use std::path::Path;
//!
//! let tmp = tempfile::tempdir()?;
//! std::fs::create_dir(tmp.path().join("sub"))?;
//! std::os::unix::fs::symlink("/etc", tmp.path().join("out"))?;
//! let root = packfs_os::beneath::open_root(tmp.path())?;
//! let sub = packfs_os::beneath::open_dir(&root, Path::new("sub"))?;
//! assert!(packfs_os::beneath::open_dir(&root, Path::new("out")).is_err());
//! assert!(packfs_os::beneath::open_dir(&sub, Path::new("../..")).is_err());
//! # Ok::<(), std::io::Error>(())
//! ```

use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

const RESOLVE: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS).union(ResolveFlags::NO_XDEV);

/// The directory at `path`, as an `O_PATH` descriptor to open paths
/// beneath. `path` itself is resolved as any host path (a symlink to a
/// directory is followed): whoever names the root chooses it.
pub fn open_root(path: &Path) -> std::io::Result<OwnedFd> {
    Ok(rustix::fs::open(path, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?)
}

/// The directory `rel` beneath directory `dir` (an empty `rel`: `dir`
/// itself), as an `O_PATH` descriptor for `*at` calls on names inside it,
/// by the rule of the module doc. A path that would lead out of `dir`
/// fails (`EXDEV`), as does a last component that is a symlink
/// (`ENOTDIR`) or something other than a directory.
pub fn open_dir(dir: impl AsFd, rel: &Path) -> std::io::Result<OwnedFd> {
    Ok(open_at(dir, rel, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?)
}

/// Opens `rel` beneath directory `dir` (an empty path: `dir` itself) by
/// the rule of the module doc, without blocking on a fifo or taking a
/// terminal before a type check can refuse them (`O_NONBLOCK`,
/// `O_NOCTTY`, which an `O_PATH` open neither needs nor takes). A lease
/// held elsewhere fails such an open with `EAGAIN`: then it waits for the
/// lease, as a plain open does. `mode` counts only with `O_CREAT`.
pub(crate) fn open_at(dir: impl AsFd, rel: &Path, flags: OFlags, mode: Mode) -> rustix::io::Result<OwnedFd> {
    let rel = if rel.as_os_str().is_empty() { Path::new(".") } else { rel };
    let flags = flags | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    if flags.contains(OFlags::PATH) {
        return rustix::fs::openat2(dir, rel, flags, Mode::empty(), RESOLVE);
    }
    let flags = flags | OFlags::NOCTTY;
    // openat2 takes a mode only to create with.
    let mode = if flags.contains(OFlags::CREATE) { mode } else { Mode::empty() };
    match rustix::fs::openat2(&dir, rel, flags | OFlags::NONBLOCK, mode, RESOLVE) {
        Err(Errno::AGAIN) => rustix::fs::openat2(dir, rel, flags, mode, RESOLVE),
        opened => opened,
    }
}
