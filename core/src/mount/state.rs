//! [`State`]: one version of a mount table (its mounts and their mount
//! points, in treaps), and the walk through it ([`Space`]).

use std::cmp::Ordering;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::SeqCst;

use super::node::{MountId, Node};
use crate::resolve::{At, Space};
use crate::treap::Treap;
use crate::{Error, FileSystem, FileType, Ino, Result};

#[derive(Clone)]
pub(super) struct Mount {
    pub(super) fs: Arc<dyn FileSystem>,
    pub(super) read_only: bool,
    /// Where it is mounted: `(parent mount, directory, name)`; `None` for the root.
    pub(super) point: Option<PointKey>,
    /// Its open handles (shared by every version of the table).
    pub(super) handles: Arc<Handles>,
}

/// The open handles of one mount, and whether it is unmounted: unmounting
/// is refused (`Busy`) while any is open (closing it afterwards could not
/// reach its filesystem), and none opens once it is gone. One
/// atomic word, so that an open racing an unmount loses cleanly.
#[derive(Default)]
pub(super) struct Handles(AtomicU64);

/// Set in [`Handles`] once the mount is gone.
const GONE: u64 = 1 << 63;

impl Handles {
    /// Counts one more handle; false once the mount is gone.
    pub(super) fn open(&self) -> bool {
        self.0.fetch_update(SeqCst, SeqCst, |n| (n & GONE == 0).then_some(n + 1)).is_ok()
    }

    /// Counts one handle fewer (a close with none open is ignored).
    pub(super) fn close(&self) {
        let _ = self.0.fetch_update(SeqCst, SeqCst, |n| (n & !GONE > 0).then(|| n - 1));
    }

    /// Marks the mount gone, if no handle is open.
    pub(super) fn retire(&self) -> bool {
        self.0.compare_exchange(0, GONE, SeqCst, SeqCst).is_ok()
    }
}

#[derive(Clone, PartialEq, Eq)]
pub(super) struct PointKey {
    pub(super) mount: MountId,
    pub(super) dir: Ino,
    pub(super) name: Arc<str>,
}

impl PointKey {
    pub(super) fn cmp_to(&self, mount: MountId, dir: Ino, name: &str) -> Ordering {
        (self.mount, self.dir).cmp(&(mount, dir)).then_with(|| (*self.name).cmp(name))
    }
}

impl Ord for PointKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.cmp_to(other.mount, other.dir, &other.name)
    }
}

impl PartialOrd for PointKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[derive(Clone)]
pub(super) struct State {
    pub(super) mounts: Treap<MountId, Mount>,
    /// Each mount point and what covers it (the mount's id and filesystem,
    /// kept here too so that a walk crossing it needs one search, not two).
    pub(super) points: Treap<PointKey, (MountId, Arc<dyn FileSystem>)>,
    pub(super) next_id: MountId,
}

impl State {
    pub(super) fn mount(&self, id: MountId) -> Result<&Mount> {
        self.mounts.get(&id).ok_or(Error::NotFound)
    }

    pub(super) fn covering(&self, mount: MountId, dir: Ino, name: &str) -> Option<&(MountId, Arc<dyn FileSystem>)> {
        self.points.get_with(|k| k.cmp_to(mount, dir, name)).map(|(_, v)| v)
    }

    /// True when a mount covers a name in directory `dir` of `mount`.
    pub(super) fn holds_mount_points(&self, mount: MountId, dir: Ino) -> bool {
        self.points
            .iter_from(|k| (k.mount, k.dir) >= (mount, dir))
            .next()
            .is_some_and(|(k, _)| (k.mount, k.dir) == (mount, dir))
    }

    /// True when another mount is mounted somewhere inside `mount`.
    pub(super) fn has_points_in(&self, mount: MountId) -> bool {
        self.points.iter_from(|k| k.mount >= mount).next().is_some_and(|(k, _)| k.mount == mount)
    }

    pub(super) fn node(&self, (mount, ino): At) -> Result<Node> {
        let m = self.mount(mount)?;
        Ok(Node { mount, fs: m.fs.clone(), ino, read_only: m.read_only })
    }
}

impl Space for State {
    fn step(&self, (mount, dir): At, name: &str) -> Result<(At, FileType)> {
        if let Some((id, fs)) = self.covering(mount, dir, name) {
            return Ok(((*id, fs.root()), FileType::Dir));
        }
        let (ino, kind) = self.mount(mount)?.fs.lookup_kind(dir, name)?;
        Ok(((mount, ino), kind))
    }

    fn readlink(&self, (mount, ino): At) -> Result<String> {
        self.mount(mount)?.fs.readlink(ino)
    }
}

/// Runs `open` as one more handle of mount `m`: `NotFound` once `m` is
/// unmounted, nothing counted if `open` fails.
/// The root mount, never unmounted, counts nothing.
pub(super) fn counted<T>(m: &Mount, open: impl FnOnce() -> Result<T>) -> Result<T> {
    if m.point.is_none() {
        return open();
    }
    if !m.handles.open() {
        return Err(Error::NotFound);
    }
    open().inspect_err(|_| m.handles.close())
}
