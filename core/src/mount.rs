//! The mount table: which filesystem answers for which directory.
//!
//! A mount covers one name in one directory of another mount: the key is
//! `(parent mount, directory inode, name)`, so a walk checks for a mount at
//! each step with one O(log m) treap search — dispatch costs O(depth ×
//! log m), never O(m) — and a mount follows its directory when that is
//! renamed, as a Linux mount does. The covered name need not exist below:
//! mounting `/tmp` on a pack without `tmp` makes it appear.
//!
//! The table is a persistent value published with `ArcSwap`: mount and
//! unmount copy O(log m) nodes and readers never block.
//!
//! A table is itself a [`FileSystem`]: its inode numbers carry the mount id
//! above the backend's number ([`INO_BITS`]), so a whole namespace can be
//! handed to anything that takes one filesystem (a WASI preopen, a pack
//! writer). Renames and links across mounts are `CrossDevice`, changes on a
//! read-only mount `ReadOnly`, removing or renaming a mount point `Busy`.

use std::cmp::Ordering;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

use crate::resolve::{At, Parent, Space, Walk, resolve_in};
use crate::treap::Treap;
use crate::{DirEntry, Error, FileSystem, FileType, Ino, Result};

/// A mount's number in its table; the root mount is 0.
pub type MountId = u32;

/// Bits of a backend's inode number in a table's inode numbers; the mount
/// id takes the 16 above. A backend number that does not fit is `Io`.
pub const INO_BITS: u32 = 48;

/// Most mounts one table holds (ids are 16 bits).
pub const MAX_MOUNTS: MountId = 1 << (64 - INO_BITS);

fn join((mount, ino): At) -> Result<Ino> {
    if ino >> INO_BITS != 0 {
        return Err(Error::Backend(format!("inode number {ino:#x} of mount {mount} needs more than {INO_BITS} bits")));
    }
    Ok(u64::from(mount) << INO_BITS | ino)
}

fn split(ino: Ino) -> At {
    ((ino >> INO_BITS) as MountId, ino & ((1 << INO_BITS) - 1))
}

#[derive(Clone)]
struct Mount {
    fs: Arc<dyn FileSystem>,
    read_only: bool,
    /// Where it is mounted: `(parent mount, directory, name)`; `None` for the root.
    point: Option<PointKey>,
    /// Its open handles (shared by every version of the table).
    handles: Arc<Handles>,
}

/// The open handles of one mount, and whether it is unmounted: unmounting
/// is refused (`Busy`) while any is open (closing it afterwards could not
/// reach its filesystem), and none opens once it is gone. One
/// atomic word, so that an open racing an unmount loses cleanly.
#[derive(Default)]
struct Handles(AtomicU64);

/// Set in [`Handles`] once the mount is gone.
const GONE: u64 = 1 << 63;

impl Handles {
    /// Counts one more handle; false once the mount is gone.
    fn open(&self) -> bool {
        self.0.fetch_update(SeqCst, SeqCst, |n| (n & GONE == 0).then_some(n + 1)).is_ok()
    }

    /// Counts one handle fewer (a close with none open is ignored).
    fn close(&self) {
        let _ = self.0.fetch_update(SeqCst, SeqCst, |n| (n & !GONE > 0).then(|| n - 1));
    }

    /// Marks the mount gone, if no handle is open.
    fn retire(&self) -> bool {
        self.0.compare_exchange(0, GONE, SeqCst, SeqCst).is_ok()
    }
}

#[derive(Clone, PartialEq, Eq)]
struct PointKey {
    mount: MountId,
    dir: Ino,
    name: Arc<str>,
}

impl PointKey {
    fn cmp_to(&self, mount: MountId, dir: Ino, name: &str) -> Ordering {
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
struct State {
    mounts: Treap<MountId, Mount>,
    /// Each mount point and what covers it (the mount's id and filesystem,
    /// kept here too so that a walk crossing it needs one search, not two).
    points: Treap<PointKey, (MountId, Arc<dyn FileSystem>)>,
    next_id: MountId,
}

impl State {
    fn mount(&self, id: MountId) -> Result<&Mount> {
        self.mounts.get(&id).ok_or(Error::NotFound)
    }

    fn covering(&self, mount: MountId, dir: Ino, name: &str) -> Option<&(MountId, Arc<dyn FileSystem>)> {
        self.points.get_with(|k| k.cmp_to(mount, dir, name)).map(|(_, v)| v)
    }

    /// True when a mount covers a name in directory `dir` of `mount`.
    fn holds_mount_points(&self, mount: MountId, dir: Ino) -> bool {
        self.points
            .iter_from(|k| (k.mount, k.dir) >= (mount, dir))
            .next()
            .is_some_and(|(k, _)| (k.mount, k.dir) == (mount, dir))
    }

    /// True when another mount is mounted somewhere inside `mount`.
    fn has_points_in(&self, mount: MountId) -> bool {
        self.points.iter_from(|k| k.mount >= mount).next().is_some_and(|(k, _)| k.mount == mount)
    }

    fn node(&self, (mount, ino): At) -> Result<Node> {
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

/// A resolved place: the filesystem that holds it and the inode there.
#[derive(Clone)]
pub struct Node {
    /// The mount it is in.
    pub mount: MountId,
    /// That mount's filesystem.
    pub fs: Arc<dyn FileSystem>,
    /// The inode within `fs`.
    pub ino: Ino,
    /// The mount is read-only: the caller refuses changes with `ReadOnly`.
    pub read_only: bool,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node").field("mount", &self.mount).field("ino", &self.ino).finish()
    }
}

impl Node {
    fn at(&self) -> At {
        (self.mount, self.ino)
    }

    /// Fails with `ReadOnly` on a read-only mount.
    pub fn writable(&self) -> Result<&Self> {
        if self.read_only { Err(Error::ReadOnly) } else { Ok(self) }
    }
}

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
    state: ArcSwap<State>,
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
    fn entries(&self, dir: &Node, after: Option<&str>, max: usize) -> Result<Vec<(DirEntry, MountId)>> {
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

    fn not_mount_point(&self, dir: &Node, name: &str) -> Result<()> {
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

/// Runs `open` as one more handle of mount `m`: `NotFound` once `m` is
/// unmounted, nothing counted if `open` fails.
/// The root mount, never unmounted, counts nothing.
fn counted<T>(m: &Mount, open: impl FnOnce() -> Result<T>) -> Result<T> {
    if m.point.is_none() {
        return open();
    }
    if !m.handles.open() {
        return Err(Error::NotFound);
    }
    open().inspect_err(|_| m.handles.close())
}

impl MountTable {
    /// Closes a handle of inode `ino` of `mount`.
    fn close_in(&self, state: &State, mount: MountId, ino: Ino) {
        if let Ok(m) = state.mount(mount) {
            m.fs.close(ino);
            if m.point.is_some() {
                m.handles.close();
            }
        }
    }

    fn node_of(&self, ino: Ino) -> Result<Node> {
        self.state.load().node(split(ino))
    }

    fn writable_node(&self, ino: Ino) -> Result<Node> {
        let node = self.node_of(ino)?;
        node.writable()?;
        Ok(node)
    }

    fn same_mount(a: Ino, b: Ino) -> Result<()> {
        if split(a).0 != split(b).0 { Err(Error::CrossDevice) } else { Ok(()) }
    }
}

/// The whole namespace as one filesystem; see the module doc.
impl FileSystem for MountTable {
    fn root(&self) -> Ino {
        let root = self.root();
        u64::from(root.mount) << INO_BITS | (root.ino & ((1 << INO_BITS) - 1))
    }

    fn lookup(&self, dir: Ino, name: &str) -> Result<Ino> {
        join(self.state.load().step(split(dir), name)?.0)
    }

    fn lookup_kind(&self, dir: Ino, name: &str) -> Result<(Ino, FileType)> {
        let (at, kind) = self.state.load().step(split(dir), name)?;
        Ok((join(at)?, kind))
    }

    fn metadata(&self, ino: Ino) -> Result<crate::Metadata> {
        let node = self.node_of(ino)?;
        Ok(crate::Metadata { ino, ..node.fs.metadata(node.ino)? })
    }

    fn open(&self, dir: Ino, name: &str, opts: &crate::OpenOptions) -> Result<Ino> {
        let state = self.state.load();
        let (mount, d) = split(dir);
        if let Some(&(id, ref fs)) = state.covering(mount, d, name) {
            // The name is a mount point: opening it opens the mounted root.
            if opts.create && opts.exclusive {
                return Err(Error::Exists);
            }
            if opts.writes() {
                return Err(Error::IsDir);
            }
            let root = fs.root();
            counted(state.mount(id)?, || fs.open_ino(root))?;
            return join((id, root)).inspect_err(|_| self.close_in(&state, id, root));
        }
        let m = state.mount(mount)?;
        if (opts.writes() || opts.create) && m.read_only {
            return Err(Error::ReadOnly);
        }
        let ino = counted(m, || m.fs.open(d, name, opts))?;
        join((mount, ino)).inspect_err(|_| self.close_in(&state, mount, ino))
    }

    fn open_ino(&self, ino: Ino) -> Result<()> {
        let state = self.state.load();
        let (mount, i) = split(ino);
        let m = state.mount(mount)?;
        counted(m, || m.fs.open_ino(i))
    }

    fn close(&self, ino: Ino) {
        let (mount, i) = split(ino);
        self.close_in(&self.state.load(), mount, i);
    }

    fn read_at(&self, ino: Ino, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let node = self.node_of(ino)?;
        node.fs.read_at(node.ino, offset, buf)
    }

    fn loaded(&self, ino: Ino, offset: u64, len: u64) -> Result<()> {
        match self.node_of(ino) {
            Ok(node) => node.fs.loaded(node.ino, offset, len),
            Err(_) => Ok(()),
        }
    }

    fn write_at(&self, ino: Ino, offset: u64, data: &[u8]) -> Result<usize> {
        let node = self.writable_node(ino)?;
        node.fs.write_at(node.ino, offset, data)
    }

    fn append(&self, ino: Ino, data: &[u8]) -> Result<u64> {
        let node = self.writable_node(ino)?;
        node.fs.append(node.ino, data)
    }

    fn set_len(&self, ino: Ino, len: u64) -> Result<()> {
        let node = self.writable_node(ino)?;
        node.fs.set_len(node.ino, len)
    }

    fn read_dir(&self, dir: Ino, after: Option<&str>, max: usize) -> Result<Vec<DirEntry>> {
        let node = self.node_of(dir)?;
        let entries = self.entries(&node, after, max)?;
        entries.into_iter().map(|(e, mount)| Ok(DirEntry { ino: join((mount, e.ino))?, ..e })).collect()
    }

    fn mkdir(&self, dir: Ino, name: &str, mode: u32) -> Result<Ino> {
        let node = self.writable_node(dir)?;
        self.not_mount_point(&node, name).map_err(|_| Error::Exists)?;
        join((node.mount, node.fs.mkdir(node.ino, name, mode)?))
    }

    fn rmdir(&self, dir: Ino, name: &str) -> Result<()> {
        MountTable::rmdir(self, &self.node_of(dir)?, name)
    }

    fn unlink(&self, dir: Ino, name: &str) -> Result<()> {
        MountTable::unlink(self, &self.node_of(dir)?, name)
    }

    fn rename(&self, from_dir: Ino, from: &str, to_dir: Ino, to: &str) -> Result<()> {
        MountTable::rename(self, &self.node_of(from_dir)?, from, &self.node_of(to_dir)?, to)
    }

    fn symlink(&self, dir: Ino, name: &str, target: &str) -> Result<Ino> {
        let node = self.writable_node(dir)?;
        self.not_mount_point(&node, name).map_err(|_| Error::Exists)?;
        join((node.mount, node.fs.symlink(node.ino, name, target)?))
    }

    fn readlink(&self, ino: Ino) -> Result<String> {
        let node = self.node_of(ino)?;
        node.fs.readlink(node.ino)
    }

    fn link(&self, ino: Ino, dir: Ino, name: &str) -> Result<()> {
        Self::same_mount(ino, dir)?;
        MountTable::link(self, &self.node_of(ino)?, &self.node_of(dir)?, name)
    }

    fn set_times(&self, ino: Ino, atime: crate::SetTime, mtime: crate::SetTime) -> Result<()> {
        let node = self.writable_node(ino)?;
        node.fs.set_times(node.ino, atime, mtime)
    }

    fn set_mode(&self, ino: Ino, mode: u32) -> Result<()> {
        let node = self.writable_node(ino)?;
        node.fs.set_mode(node.ino, mode)
    }

    fn sync(&self, ino: Ino) -> Result<()> {
        let node = self.node_of(ino)?;
        node.fs.sync(node.ino)
    }
}
