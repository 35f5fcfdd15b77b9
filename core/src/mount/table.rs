//! [`MountTable`]: mounting and unmounting, and the walks and changes
//! that must know where mounts are (a mount point cannot be removed or
//! renamed, nor a link or rename cross mounts).

use std::cmp::Ordering;
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

use super::node::{MAX_MOUNTS, MountId, Node};
use super::state::{Mount, PointKey, State};
use crate::resolve::{Parent, Space, Walk, resolve_in};
use crate::treap::Treap;
use crate::{DirEntry, Error, FileSystem, FileType, Ino, Result};

/// Filesystems mounted into one namespace.
///
/// ```
/// use std::sync::Arc;
/// use packfs_core::{FileSystem, MemFs, OpenOptions, mount::MountTable};
///
/// let table = MountTable::new(Arc::new(MemFs::new()), false);
/// table.mount("/tmp", Arc::new(MemFs::new()), false)?;
/// let root = table.root();
/// let tmp = table.resolve(&root, "tmp", true)?;
/// assert_eq!(tmp.mount, 1);
/// let f = tmp.fs.open(tmp.ino, "x", &OpenOptions::create())?;
/// tmp.fs.close(f);
/// assert!(table.resolve(&root, "tmp/x", true).is_ok());
/// # Ok::<(), packfs_core::Error>(())
/// ```
pub struct MountTable {
    pub(super) state: ArcSwap<State>,
    writer: Mutex<()>,
}

impl MountTable {
    /// A namespace whose root is `root`'s root directory.
    pub fn new(root: Arc<dyn FileSystem>, read_only: bool) -> Self {
        let mut mounts = Treap::new();
        mounts.insert(0, Mount { fs: root, read_only, point: None, handles: Arc::default() });
        MountTable {
            state: ArcSwap::from_pointee(State { mounts, points: Treap::new(), next_id: 1 }),
            writer: Mutex::new(()),
        }
    }

    /// The root of the namespace.
    pub fn root(&self) -> Node {
        let state = self.state.load();
        let root = state.mount(0).expect("the root mount is never removed");
        Node { mount: 0, fs: root.fs.clone(), ino: root.fs.root(), read_only: root.read_only }
    }

    /// Number of mounts, the root included.
    pub fn len(&self) -> usize {
        self.state.load().mounts.len()
    }

    /// Always false: the root mount is always there.
    pub fn is_empty(&self) -> bool {
        false
    }

    fn change<T>(&self, f: impl FnOnce(&mut State) -> Result<T>) -> Result<T> {
        let _writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let mut state = State::clone(&self.state.load());
        let out = f(&mut state)?;
        self.state.store(Arc::new(state));
        Ok(out)
    }

    /// Where the absolute `path` would be mounted: its parent directory and
    /// last name, found by walking the namespace from the root.
    fn point(state: &State, path: &str) -> Result<PointKey> {
        let relative = path.strip_prefix('/').ok_or(Error::Invalid)?;
        if relative.split('/').all(|c| c.is_empty() || c == ".") {
            return Err(Error::Invalid); // the root mount is fixed
        }
        let root = state.mount(0)?.fs.root();
        let p = Walk::new(state, (0, root), relative)?.resolve_parent()?;
        Ok(PointKey { mount: p.dir.0, dir: p.dir.1, name: p.name.into() })
    }

    /// Mounts `fs` at the absolute `path`. Its parent directory must exist;
    /// the name itself need not, but if it does it must be a directory.
    pub fn mount(&self, path: &str, fs: Arc<dyn FileSystem>, read_only: bool) -> Result<MountId> {
        self.change(|state| {
            let key = Self::point(state, path)?;
            if state.covering(key.mount, key.dir, &key.name).is_some() {
                return Err(Error::Exists);
            }
            let parent = state.mount(key.mount)?;
            match parent.fs.lookup(key.dir, &key.name) {
                Ok(ino) if parent.fs.metadata(ino)?.kind != FileType::Dir => return Err(Error::NotDir),
                Ok(_) | Err(Error::NotFound) => {}
                Err(e) => return Err(e),
            }
            let id = state.next_id;
            if id >= MAX_MOUNTS {
                return Err(Error::NoSpace);
            }
            state.next_id = id + 1;
            state.points.insert(key.clone(), (id, fs.clone()));
            state.mounts.insert(id, Mount { fs, read_only, point: Some(key), handles: Arc::default() });
            Ok(id)
        })
    }

    /// Creates the missing directories above mount point `path`, as
    /// `mkdir -p` does; one that is there must be a directory (`NotDir`).
    pub fn make_parents(&self, path: &str) -> Result<()> {
        let fs: &dyn FileSystem = self;
        let names: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
        for i in 1..names.len() {
            let above = names[..i].join("/");
            match crate::resolve::resolve(fs, fs.root(), &above, true) {
                Ok(ino) if fs.metadata(ino)?.kind == FileType::Dir => {}
                Ok(_) => return Err(Error::NotDir),
                Err(Error::NotFound) => {
                    let parent = crate::resolve::resolve_parent(fs, fs.root(), &above)?;
                    fs.mkdir(parent.dir, &parent.name, 0o755)?;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Unmounts what is mounted at `path`, returning its filesystem. A mount
    /// with mounts inside it, or with files or directories open through the
    /// table, is `Busy`; a path with no mount is `Invalid`.
    pub fn unmount(&self, path: &str) -> Result<Arc<dyn FileSystem>> {
        self.change(|state| {
            let key = Self::point(state, path)?;
            let id = state.covering(key.mount, key.dir, &key.name).ok_or(Error::Invalid)?.0;
            if state.has_points_in(id) {
                return Err(Error::Busy);
            }
            if !state.mount(id)?.handles.retire() {
                return Err(Error::Busy);
            }
            state.points.remove(&key);
            let m = state.mounts.remove(&id).ok_or(Error::Invalid)?;
            Ok(m.fs)
        })
    }

    /// The node `path` names, walking from `from` (which is also the walk's
    /// root: `..` above it is `NotPermitted`).
    pub fn resolve(&self, from: &Node, path: &str, follow: bool) -> Result<Node> {
        let state = self.state.load();
        let at = resolve_in(&**state, from.at(), path, follow)?;
        state.node(at)
    }

    /// The directory holding `path`'s last name, and the name (never
    /// followed, never crossed into a mount).
    pub fn resolve_parent<'a>(&self, from: &Node, path: &'a str) -> Result<Parent<'a, Node>> {
        let state = self.state.load();
        let p = Walk::new(&**state, from.at(), path)?.resolve_parent()?;
        Ok(Parent { dir: state.node(p.dir)?, name: p.name, trailing_slash: p.trailing_slash })
    }

    /// The node named `name` in `dir`, crossing into a mount that covers it.
    pub fn lookup(&self, dir: &Node, name: &str) -> Result<Node> {
        let state = self.state.load();
        state.node(state.step(dir.at(), name)?.0)
    }

    /// True when a mount covers `name` in `dir`: such a name may not be
    /// removed or renamed (`Busy`).
    pub fn is_mount_point(&self, dir: &Node, name: &str) -> bool {
        self.state.load().covering(dir.mount, dir.ino, name).is_some()
    }

    /// Up to `max` entries of `dir` after `after`, with the names mounts
    /// cover merged in (as directories, shadowing what they cover).
    pub fn read_dir(&self, dir: &Node, after: Option<&str>, max: usize) -> Result<Vec<DirEntry>> {
        Ok(self.entries(dir, after, max)?.into_iter().map(|(e, _)| e).collect())
    }

    /// [`Self::read_dir`], each entry with the mount it is in, as of one
    /// load of the table.
    pub(super) fn entries(&self, dir: &Node, after: Option<&str>, max: usize) -> Result<Vec<(DirEntry, MountId)>> {
        let state = self.state.load();
        let below = dir.fs.read_dir(dir.ino, after, max)?.into_iter().map(|e| (e, dir.mount));
        let start = |k: &PointKey| match after {
            Some(a) => k.cmp_to(dir.mount, dir.ino, a) == Ordering::Greater,
            None => (k.mount, k.dir) >= (dir.mount, dir.ino),
        };
        let mut covered = Vec::new();
        for (k, (id, fs)) in state.points.iter_from(start).take_while(|(k, _)| (k.mount, k.dir) == (dir.mount, dir.ino))
        {
            if covered.len() == max {
                break;
            }
            covered.push((DirEntry { name: k.name.clone(), ino: fs.root(), kind: FileType::Dir }, *id));
        }
        // Merge the two sorted runs; a covered name shadows the entry below.
        let (mut below, mut covered) = (below.peekable(), covered.into_iter().peekable());
        let mut out = Vec::new();
        while out.len() < max {
            let next = match (below.peek(), covered.peek()) {
                (None, None) => break,
                (Some((b, _)), Some((c, _))) if c.name <= b.name => {
                    if c.name == b.name {
                        below.next();
                    }
                    covered.next()
                }
                (Some(_), _) => below.next(),
                (None, Some(_)) => covered.next(),
            };
            out.extend(next);
        }
        Ok(out)
    }

    pub(super) fn not_mount_point(&self, dir: &Node, name: &str) -> Result<()> {
        if self.is_mount_point(dir, name) { Err(Error::Busy) } else { Ok(()) }
    }

    /// The directory `name` in `dir`, if it holds mount points: removing or
    /// replacing it would strand them where nothing could reach or unmount
    /// them. (No lookup where `dir`'s mount holds none.)
    fn dir_with_points(&self, dir: &Node, name: &str) -> Option<Ino> {
        let state = self.state.load();
        if !state.has_points_in(dir.mount) {
            return None;
        }
        match dir.fs.lookup_kind(dir.ino, name) {
            Ok((ino, FileType::Dir)) if state.holds_mount_points(dir.mount, ino) => Some(ino),
            _ => None,
        }
    }

    /// Renames within one mount: across mounts is `CrossDevice`, a mount
    /// point (either side) is `Busy`, a directory replacing one that holds
    /// mount points `NotEmpty`, a read-only mount `ReadOnly`.
    pub fn rename(&self, from: &Node, from_name: &str, to: &Node, to_name: &str) -> Result<()> {
        if from.mount != to.mount {
            return Err(Error::CrossDevice);
        }
        from.writable()?;
        self.not_mount_point(from, from_name)?;
        self.not_mount_point(to, to_name)?;
        // Only a directory replaces a directory (other cases fail or
        // succeed in the backend as they would), and onto itself nothing.
        if let Some(dst) = self.dir_with_points(to, to_name)
            && let Ok((src, FileType::Dir)) = from.fs.lookup_kind(from.ino, from_name)
            && src != dst
        {
            return Err(Error::NotEmpty);
        }
        from.fs.rename(from.ino, from_name, to.ino, to_name)
    }

    /// Adds name `name` in `dir` for `target`, within one mount.
    pub fn link(&self, target: &Node, dir: &Node, name: &str) -> Result<()> {
        if target.mount != dir.mount {
            return Err(Error::CrossDevice);
        }
        dir.writable()?;
        // The name is taken, by the mount.
        if self.is_mount_point(dir, name) {
            return Err(Error::Exists);
        }
        dir.fs.link(target.ino, dir.ino, name)
    }

    /// Removes the non-directory `name` from `dir`.
    pub fn unlink(&self, dir: &Node, name: &str) -> Result<()> {
        dir.writable()?;
        self.not_mount_point(dir, name)?;
        dir.fs.unlink(dir.ino, name)
    }

    /// Removes the empty directory `name` from `dir`.
    pub fn rmdir(&self, dir: &Node, name: &str) -> Result<()> {
        dir.writable()?;
        self.not_mount_point(dir, name)?;
        if self.dir_with_points(dir, name).is_some() {
            return Err(Error::NotEmpty);
        }
        dir.fs.rmdir(dir.ino, name)
    }

    /// Every mount point but the root's: `(mount id, parent mount, name)`.
    pub fn mounts(&self) -> Vec<(MountId, MountId, Arc<str>)> {
        let state = self.state.load();
        state.mounts.iter().filter_map(|(&id, m)| m.point.as_ref().map(|p| (id, p.mount, p.name.clone()))).collect()
    }
}
