//! The containment rule: how a path is opened beneath a directory fd so
//! that nothing in it leads out.
//!
//! Every path goes through `openat2` with `RESOLVE_BENEATH` (no `..` above
//! the directory, no absolute symlinks, no escape however the tree changes
//! meanwhile), `RESOLVE_NO_MAGICLINKS` (no `/proc/self/fd` links) and
//! `RESOLVE_NO_XDEV` (no crossing into other mounts, so inode numbers stay
//! unique), and never follows its final component (`O_NOFOLLOW`).

use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

const RESOLVE: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS).union(ResolveFlags::NO_XDEV);

/// Opens `rel` beneath directory `dir` (an empty path: `dir` itself) by
/// the rule above, never following a final symlink, and without blocking
/// on a fifo or taking a terminal before a type check can refuse them
/// (`O_NONBLOCK`, `O_NOCTTY`, which an `O_PATH` open neither needs nor
/// takes). A lease held elsewhere fails such an open with `EAGAIN`: then
/// it waits for the lease, as a plain open does. `mode` counts only with
/// `O_CREAT`.
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
