//! [`Tree`]: a whole filesystem as one persistent value.
//!
//! Two treaps hold it: `dirents` maps `(directory inode, name)` to the inode
//! it names, so a directory's entries are one contiguous run in name order;
//! `inodes` maps an inode number to its metadata and content. Cloning a tree
//! is O(1); an operation copies O(log n) treap nodes and shares the rest with
//! every other version, which is all a snapshot is.
//!
//! A tree may sit over a read-only *lower* filesystem (an overlay). Reads
//! go straight to the lower until something changes, and never copy
//! anything. Lower-origin inodes are numbered [`LOWER_TAG`]` | lower ino`;
//! a lower inode gets a record here (is *adopted*, with its parent
//! directories) only when it is to change, and a lower file's bytes are
//! copied up on its first write, once. A directory from the lower is
//! *merged*: its entries here come first, the lower's show through where
//! no entry here has their name, and a *whiteout* entry hides a removed
//! or renamed lower name. A directory made here is *opaque*: nothing shows
//! through it, even where it replaced a lower one. Every change is thus
//! O(log n), however big the lower directory.

use std::cmp::Ordering;
use std::sync::Arc;

use super::content::Content;
use crate::path::{MAX_PATH, validate_name};
use crate::treap::Treap;
use crate::{
    DirEntry, Error, FileSystem, FileType, Ino, MAX_FILE_SIZE, Metadata, OpenOptions, Result, SetTime, Timestamp,
};

/// The root directory's inode number.
pub const ROOT: Ino = 1;

/// Set in the number of every inode that came from the lower filesystem.
/// Inode numbers stay below 2^48 so that a mount table can carry its mount
/// id above them ([`crate::mount::INO_BITS`]).
pub const LOWER_TAG: Ino = 1 << 47;

/// What directories add to their rank in the inode treap (see
/// [`Tree::rank`]), above any a file can have.
const DIR_RANK: u8 = 64;

/// Lower entries asked for per `read_dir` call while merging.
const LOWER_PAGE: usize = 256;

/// The inode number of a whiteout entry: the lower name is removed.
const WHITEOUT: Ino = 0;

/// Optional caps on one filesystem's size. An operation that would pass one
/// fails with [`Error::Quota`] and changes nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Most bytes of file content and symlink targets, counted by length
    /// (a sparse file counts whole).
    pub max_bytes: Option<u64>,
    /// Most inodes, the root included.
    pub max_inodes: Option<u64>,
}

/// What a filesystem holds now, in the units of [`Limits`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Bytes of file content and symlink targets.
    pub bytes: u64,
    /// Inodes, the root included.
    pub inodes: u64,
}

/// A directory entry's key, ordered as `(dir, name bytes)`. The name's first
/// 16 bytes, kept as one integer, settle most comparisons without reading
/// the name; the name is shared with the listings that return it.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct DirKey {
    dir: Ino,
    head: u128,
    name: Arc<str>,
}

/// The first 16 bytes of a name, zero-padded, as a big-endian integer. If
/// two heads differ they order as their names do (padding sorts a name
/// before every longer name it begins); equal heads leave it to the rest.
fn head(name: &str) -> u128 {
    let mut bytes = [0; 16];
    let n = name.len().min(16);
    bytes[..n].copy_from_slice(&name.as_bytes()[..n]);
    u128::from_be_bytes(bytes)
}

/// A position among directory entries, its head computed once per search.
#[derive(Clone, Copy)]
struct Probe<'a> {
    dir: Ino,
    head: u128,
    name: &'a str,
}

impl<'a> Probe<'a> {
    fn new(dir: Ino, name: &'a str) -> Self {
        Probe { dir, head: head(name), name }
    }
}

impl DirKey {
    fn new(dir: Ino, name: Arc<str>) -> Self {
        DirKey { dir, head: head(&name), name }
    }

    fn cmp_to(&self, at: &Probe<'_>) -> Ordering {
        self.dir.cmp(&at.dir).then(self.head.cmp(&at.head)).then_with(|| {
            // Equal heads: names of up to 16 bytes are all in them, so they
            // differ only in trailing NULs, and length orders them — read
            // from the key itself, without loading the name.
            if self.name.len() <= 16 && at.name.len() <= 16 {
                self.name.len().cmp(&at.name.len())
            } else {
                (*self.name).cmp(at.name)
            }
        })
    }
}

impl Ord for DirKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.cmp_to(&Probe { dir: other.dir, head: other.head, name: &other.name })
    }
}

impl PartialOrd for DirKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[derive(Clone)]
enum Data {
    File(Content),
    /// A lower file whose bytes have not been copied up.
    Lower {
        ino: Ino,
        size: u64,
    },
    /// `lower`: the lower directory whose entries show through this one's
    /// (merged), or `None` (opaque).
    Dir {
        parent: Ino,
        lower: Option<Ino>,
    },
    Symlink(Arc<str>),
}

#[derive(Clone)]
struct Inode {
    data: Data,
    mode: u32,
    nlink: u64,
    atime: Timestamp,
    mtime: Timestamp,
    ctime: Timestamp,
}

impl Inode {
    fn kind(&self) -> FileType {
        match self.data {
            Data::File(_) | Data::Lower { .. } => FileType::File,
            Data::Dir { .. } => FileType::Dir,
            Data::Symlink(_) => FileType::Symlink,
        }
    }

    fn size(&self) -> u64 {
        match &self.data {
            Data::File(c) => c.len(),
            Data::Lower { size, .. } => *size,
            Data::Dir { .. } => 0,
            Data::Symlink(t) => t.len() as u64,
        }
    }

    /// Bytes this inode counts against [`Limits::max_bytes`]: what the upper
    /// layer holds, not what it borrows from the lower.
    fn bytes(&self, ino: Ino) -> u64 {
        match &self.data {
            Data::File(c) => c.len(),
            Data::Symlink(t) if ino & LOWER_TAG == 0 => t.len() as u64,
            _ => 0,
        }
    }
}

/// The number a lower inode has here. An overlay's own numbers carry the
/// tag, so an overlay cannot be the lower of another (nor can anything with
/// numbers of 2^47 and above): `Unsupported`.
fn tag(lino: Ino) -> Result<Ino> {
    if lino >= LOWER_TAG {
        return Err(Error::Unsupported);
    }
    Ok(lino | LOWER_TAG)
}

/// The number lower inode `lino` has here: the lower's root is the root.
fn from_lower(lower: &dyn FileSystem, lino: Ino) -> Result<Ino> {
    if lino == lower.root() { Ok(ROOT) } else { tag(lino) }
}

/// The record a lower inode gets here, named in directory `parent`.
fn lower_record(lower: &dyn FileSystem, lino: Ino, md: &Metadata, parent: Ino) -> Result<Inode> {
    let (data, nlink) = match md.kind {
        FileType::File => (Data::Lower { ino: lino, size: md.size }, md.nlink.max(1)),
        // Below 2, the lower does not count subdirectories (btrfs; ext4
        // past 65,000 of them): count them here, once.
        FileType::Dir => {
            let nlink = if md.nlink < 2 { 2 + lower_subdirs(lower, lino)? } else { md.nlink };
            (Data::Dir { parent, lower: Some(lino) }, nlink)
        }
        FileType::Symlink => (Data::Symlink(lower.readlink(lino)?.into()), md.nlink.max(1)),
    };
    // A lower file's count includes its names in merged directories: they
    // are still its names.
    Ok(Inode { data, mode: md.mode, nlink, atime: md.atime, mtime: md.mtime, ctime: md.ctime })
}

/// The subdirectories lower directory `ldir` lists.
fn lower_subdirs(lower: &dyn FileSystem, ldir: Ino) -> Result<u64> {
    let (mut count, mut after): (u64, Option<Arc<str>>) = (0, None);
    loop {
        let page = lower.read_dir(ldir, after.as_deref(), LOWER_PAGE)?;
        let Some(last) = page.last() else { return Ok(count) };
        after = Some(last.name.clone());
        count += page.iter().filter(|e| e.kind == FileType::Dir).count() as u64;
    }
}

/// Inodes counted against [`Limits::max_inodes`]: those born in the upper.
fn counted(ino: Ino) -> bool {
    ino & LOWER_TAG == 0
}

/// A complete filesystem as a persistent value: every read and write
/// operation of PackFS's in-memory backend, with no locking and no clock.
/// [`MemFs`](super::MemFs) publishes versions of it; `batch` hands one out
/// to apply several operations atomically.
#[derive(Clone)]
pub struct Tree {
    dirents: Treap<DirKey, (Ino, FileType)>,
    inodes: Treap<Ino, Inode>,
    /// Inodes with no name left, kept while a handle has them open: few, and
    /// usually none, so a vector.
    orphans: Vec<Ino>,
    next_ino: Ino,
    usage: Usage,
    limits: Limits,
    lower: Option<Arc<dyn FileSystem>>,
    /// Lower inodes adopted so far: one missing from `inodes` is gone, not
    /// unadopted.
    seen: Treap<Ino, ()>,
    /// Added to an inode number before its rank is taken (see
    /// [`Tree::rank`]); random, so that no one can pick numbers by rank.
    rank_seed: u64,
    /// The keys changed since [`Tree::start_log`], while recording.
    log: Option<Vec<Touch>>,
}

/// A key a change touched, for [`Tree::catch_up`].
#[derive(Clone)]
pub(crate) enum Touch {
    Inode(Ino),
    Dirent(DirKey),
}

impl Tree {
    /// An empty tree: a root directory with mode `0o755`.
    pub fn new(now: Timestamp, limits: Limits) -> Self {
        let root = Inode {
            data: Data::Dir { parent: ROOT, lower: None },
            mode: 0o755,
            nlink: 2,
            atime: now,
            mtime: now,
            ctime: now,
        };
        let mut tree = Tree {
            dirents: Treap::new(),
            inodes: Treap::new(),
            orphans: Vec::new(),
            next_ino: ROOT + 1,
            usage: Usage { bytes: 0, inodes: 1 },
            limits,
            lower: None,
            seen: Treap::new(),
            // Any value will do; hashing it with a fresh `RandomState`
            // gives a random one.
            rank_seed: std::hash::BuildHasher::hash_one(&std::hash::RandomState::new(), 0_u64),
            log: None,
        };
        tree.put_inode(ROOT, root);
        tree
    }

    /// An empty upper over `lower`: every lower entry shows through until
    /// changed, and no change ever reaches `lower`. The lower must answer
    /// [`FileSystem::parent`] (packs and in-memory trees do): `Unsupported`
    /// otherwise.
    pub fn overlay(lower: Arc<dyn FileSystem>, now: Timestamp, limits: Limits) -> Result<Self> {
        let lower_root = lower.root();
        let md = lower.metadata(lower_root)?;
        if md.kind != FileType::Dir {
            return Err(Error::NotDir);
        }
        lower.parent(lower_root)?;
        let mut tree = Tree::new(now, limits);
        *tree.inode_mut(ROOT)? = lower_record(&*lower, lower_root, &md, ROOT)?;
        tree.seen.insert(lower_root, ());
        tree.lower = Some(lower);
        Ok(tree)
    }

    /// Current usage.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// Inodes here and, for an overlay, in the lower (whose inodes this
    /// layer has copied up or deleted count twice: a hint).
    pub(crate) fn inode_count_hint(&self) -> Option<u64> {
        match &self.lower {
            None => Some(self.usage.inodes),
            Some(lower) => Some(self.usage.inodes.saturating_add(lower.inode_count_hint()?)),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Replaces the limits; usage above a new limit stays, growth fails.
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    // ---- reads -------------------------------------------------------------

    fn inode(&self, ino: Ino) -> Result<&Inode> {
        self.inodes.get(&ino).ok_or(Error::NotFound)
    }

    fn inode_mut(&mut self, ino: Ino) -> Result<&mut Inode> {
        self.touched(Touch::Inode(ino));
        self.inodes.get_mut(&ino).ok_or(Error::NotFound)
    }

    /// Adds an inode; directories rank above files in the inode treap, so
    /// the directory an operation touches besides its file is near the top.
    fn insert_inode(&mut self, ino: Ino, inode: Inode) {
        self.touched(Touch::Inode(ino));
        self.put_inode(ino, inode);
    }

    fn put_inode(&mut self, ino: Ino, inode: Inode) {
        let rank = self.rank(ino, &inode);
        self.inodes.insert_ranked(ino, inode, rank);
    }

    /// The priority rank of inode `ino` in the inode treap: directories
    /// above files, so that walking a path reaches them in few steps, and
    /// within each the trailing zeros of `ino + rank_seed`. Numbers are
    /// handed out in order, and between two multiples of 2^(k+1) lies one
    /// multiple of 2^k: ranked so, n consecutive numbers make a balanced
    /// tree, ~log2 n deep where random priorities average ~1.39 log2 n.
    /// Ties break at random, and the seed hides which numbers rank high
    /// from a guest choosing which files to delete; even one that knew it
    /// could at most stack one random treap per rank used, O(log² n)
    /// deep, never a list.
    fn rank(&self, ino: Ino, inode: &Inode) -> u8 {
        let own = ino.wrapping_add(self.rank_seed).trailing_zeros().min(63) as u8;
        if matches!(inode.data, Data::Dir { .. }) { DIR_RANK + own } else { own }
    }

    fn remove_inode(&mut self, ino: Ino) -> Option<Inode> {
        self.touched(Touch::Inode(ino));
        self.inodes.remove(&ino)
    }

    fn insert_dirent(&mut self, dir: Ino, name: Arc<str>, value: (Ino, FileType)) {
        let key = DirKey::new(dir, name);
        self.touched(Touch::Dirent(key.clone()));
        self.dirents.insert(key, value);
    }

    /// Empties directory `dir`, which has no entry left but whiteouts, as it
    /// loses its name: the whiteouts go, and nothing of the lower shows
    /// through it any more (it may still be open).
    fn clear_removed_dir(&mut self, dir: Ino) -> Result<()> {
        let keys: Vec<DirKey> = self
            .dirents
            .iter_from(|k| k.dir >= dir)
            .take_while(|(k, _)| k.dir == dir)
            .map(|(k, _)| k.clone())
            .collect();
        for key in keys {
            self.dirents.remove(&key);
            self.touched(Touch::Dirent(key));
        }
        if let Data::Dir { lower, .. } = &mut self.inode_mut(dir)?.data {
            *lower = None;
        }
        Ok(())
    }

    /// True when the lower has the name `name` in `dir` (hidden or not).
    fn below(&self, dir: Ino, name: &str) -> Result<bool> {
        if self.lower.is_none() {
            return Ok(false);
        }
        match self.dir_source(dir)? {
            Some((lower, ldir)) => match lower.lookup(ldir, name) {
                Ok(_) => Ok(true),
                Err(Error::NotFound) => Ok(false),
                Err(e) => Err(e),
            },
            None => Ok(false),
        }
    }

    /// Removes the name `name` from `dir`: its entry goes, and where the
    /// lower has the name too (`below`), a whiteout takes its place.
    fn unname(&mut self, dir: Ino, name: &str, below: bool) {
        if below {
            self.insert_dirent(dir, name.into(), (WHITEOUT, FileType::File));
        } else {
            let at = Probe::new(dir, name);
            if let Some((key, _)) = self.dirents.remove_with(|k| k.cmp_to(&at)) {
                self.touched(Touch::Dirent(key));
            }
        }
    }

    /// Adopts directory `dir` to change its entries: `NotFound` once it has
    /// lost its name (it may still be open), as POSIX has it.
    fn live_dir(&mut self, dir: Ino) -> Result<()> {
        self.adopt(dir)?;
        match self.inode(dir)? {
            Inode { data: Data::Dir { .. }, nlink: 0, .. } => Err(Error::NotFound),
            Inode { data: Data::Dir { .. }, .. } => Ok(()),
            _ => Err(Error::NotDir),
        }
    }

    fn touched(&mut self, key: Touch) {
        if let Some(log) = &mut self.log {
            log.push(key);
        }
    }

    // ---- catching up (for MemFs's reuse of unobserved versions) ----------

    /// Starts recording the keys changes touch into `log` (cleared; passed
    /// in so that its capacity is reused), for [`Tree::catch_up`].
    pub(crate) fn start_log(&mut self, mut log: Vec<Touch>) {
        log.clear();
        self.log = Some(log);
    }

    /// Stops recording and returns the keys touched since [`Tree::start_log`].
    pub(crate) fn take_log(&mut self) -> Vec<Touch> {
        self.log.take().unwrap_or_default()
    }

    /// Makes this tree equal to `to`, given every key in which they differ:
    /// the keys `to`'s changes touched since this tree was its equal. Only
    /// those keys are searched and, where this tree does not share them,
    /// changed in place; the rest of both trees is left alone.
    pub(crate) fn catch_up(&mut self, to: &Tree, touched: &[Touch]) {
        for key in touched {
            match key {
                Touch::Inode(ino) => match to.inodes.get(ino) {
                    Some(inode) => self.put_inode(*ino, inode.clone()),
                    None => {
                        self.inodes.remove(ino);
                    }
                },
                Touch::Dirent(k) => match to.dirents.get(k) {
                    Some(&value) => {
                        self.dirents.insert(k.clone(), value);
                    }
                    None => {
                        self.dirents.remove(k);
                    }
                },
            }
        }
        self.orphans.clone_from(&to.orphans);
        self.seen = to.seen.clone();
        self.next_ino = to.next_ino;
        self.usage = to.usage;
        self.limits = to.limits;
        self.lower.clone_from(&to.lower);
    }

    /// The lower filesystem, for an inode that only it holds: one tagged as
    /// lower-origin and never adopted here.
    fn lower_only(&self, ino: Ino) -> Option<(&dyn FileSystem, Ino)> {
        let lower = self.lower.as_deref()?;
        let lino = ino & !LOWER_TAG;
        (ino & LOWER_TAG != 0 && self.seen.get(&lino).is_none()).then_some((lower, lino))
    }

    /// Where `dir`'s entries live: here (`None`) or in a lower directory.
    fn dir_source(&self, dir: Ino) -> Result<Option<(&dyn FileSystem, Ino)>> {
        match self.inodes.get(&dir) {
            Some(Inode { data: Data::Dir { lower: Some(l), .. }, .. }) => Ok(Some((self.lower()?, *l))),
            Some(Inode { data: Data::Dir { lower: None, .. }, .. }) => Ok(None),
            Some(_) => Err(Error::NotDir),
            None => self.lower_only(dir).map(Some).ok_or(Error::NotFound),
        }
    }

    fn lower(&self) -> Result<&dyn FileSystem> {
        self.lower.as_deref().ok_or_else(|| Error::Io("lower-backed inode without a lower filesystem".into()))
    }

    /// The entry `name` in `dir` here (a whiteout included).
    fn entry(&self, dir: Ino, name: &str) -> Option<(Ino, FileType)> {
        let at = Probe::new(dir, name);
        self.dirents.get_with(|k| k.cmp_to(&at)).map(|(_, &v)| v)
    }

    /// The entry `name` in `dir`: here, or in the lower where `dir` is
    /// merged and nothing here has the name.
    fn find(&self, dir: Ino, name: &str) -> Result<Option<(Ino, FileType)>> {
        // One search for a hit; the directory itself is checked on a miss.
        if let Some(entry) = self.entry(dir, name) {
            return Ok((entry.0 != WHITEOUT).then_some(entry));
        }
        match self.dir_source(dir)? {
            None => Ok(None),
            Some((lower, ldir)) => match lower.lookup_kind(ldir, name) {
                Ok((ino, kind)) => Ok(Some((tag(ino)?, kind))),
                Err(Error::NotFound) => Ok(None),
                Err(e) => Err(e),
            },
        }
    }

    fn is_empty_dir(&self, dir: Ino) -> Result<bool> {
        Ok(self.read_dir(dir, None, 1)?.is_empty())
    }

    /// The inode named `name` in `dir`.
    pub fn lookup(&self, dir: Ino, name: &str) -> Result<Ino> {
        self.lookup_kind(dir, name).map(|(ino, _)| ino)
    }

    /// The inode named `name` in `dir`, and its type (kept in the entry).
    pub fn lookup_kind(&self, dir: Ino, name: &str) -> Result<(Ino, FileType)> {
        validate_name(name)?;
        self.find(dir, name)?.ok_or(Error::NotFound)
    }

    /// The parent of directory `dir` (the root is its own parent).
    pub fn parent(&self, dir: Ino) -> Result<Ino> {
        let Some(i) = self.inodes.get(&dir) else {
            let (lower, lino) = self.lower_only(dir).ok_or(Error::NotFound)?;
            return from_lower(lower, lower.parent(lino)?);
        };
        match i.data {
            Data::Dir { parent, .. } => Ok(parent),
            _ => Err(Error::NotDir),
        }
    }

    /// An inode's metadata.
    pub fn metadata(&self, ino: Ino) -> Result<Metadata> {
        let Some(i) = self.inodes.get(&ino) else {
            let (lower, lino) = self.lower_only(ino).ok_or(Error::NotFound)?;
            return Ok(Metadata { ino, ..lower.metadata(lino)? });
        };
        Ok(Metadata {
            ino,
            kind: i.kind(),
            size: i.size(),
            mode: i.mode,
            nlink: i.nlink,
            atime: i.atime,
            mtime: i.mtime,
            ctime: i.ctime,
        })
    }

    /// Reads file content from `offset`.
    pub fn read_at(&self, ino: Ino, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let Some(i) = self.inodes.get(&ino) else {
            let (lower, lino) = self.lower_only(ino).ok_or(Error::NotFound)?;
            return lower.read_at(lino, offset, buf);
        };
        match &i.data {
            Data::File(c) => Ok(c.read(offset, buf)),
            Data::Lower { ino, .. } => self.lower()?.read_at(*ino, offset, buf),
            Data::Dir { .. } => Err(Error::IsDir),
            Data::Symlink(_) => Err(Error::Invalid),
        }
    }

    /// A symlink's target.
    pub fn readlink(&self, ino: Ino) -> Result<String> {
        let Some(i) = self.inodes.get(&ino) else {
            let (lower, lino) = self.lower_only(ino).ok_or(Error::NotFound)?;
            return lower.readlink(lino);
        };
        match &i.data {
            Data::Symlink(t) => Ok(t.to_string()),
            _ => Err(Error::Invalid),
        }
    }

    /// Up to `max` entries of `dir` after the name `after`, in name order.
    pub fn read_dir(&self, dir: Ino, after: Option<&str>, max: usize) -> Result<Vec<DirEntry>> {
        let source = self.dir_source(dir)?;
        let at = after.map(|a| Probe::new(dir, a));
        let start = |k: &DirKey| match &at {
            Some(a) => k.cmp_to(a) == Ordering::Greater,
            None => k.dir >= dir,
        };
        let mut here = self.dirents.iter_from(start).take_while(|(k, _)| k.dir == dir).peekable();
        let Some((lower, ldir)) = source else {
            let entries = here.take(max).map(|(k, &(ino, kind))| DirEntry { name: k.name.clone(), ino, kind });
            return Ok(entries.collect());
        };
        // Merged: both runs in name order (a lower lists in byte order, as
        // the keys here sort); an entry here hides the lower's of its name,
        // and a whiteout hides both.
        let mut out = Vec::new();
        let mut below = std::collections::VecDeque::new();
        let mut below_after: Option<Arc<str>> = after.map(Into::into);
        let mut below_done = false;
        while out.len() < max {
            if below.is_empty() && !below_done {
                let page = lower.read_dir(ldir, below_after.as_deref(), LOWER_PAGE)?;
                // A lower that does not move past `after` would loop here.
                if let (Some(a), Some(e)) = (&below_after, page.first())
                    && e.name.as_bytes() <= a.as_bytes()
                {
                    return Err(Error::Io(format!("lower directory {ldir} lists {:?} after {a:?}", e.name)));
                }
                below_done = page.is_empty();
                below_after = page.last().map(|e| e.name.clone());
                below.extend(page);
            }
            let order = match (here.peek(), below.front()) {
                (None, None) => break,
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (Some((k, _)), Some(e)) => k.name.as_bytes().cmp(e.name.as_bytes()),
            };
            if order != Ordering::Less {
                let e = below.pop_front().expect("a lower entry");
                if order == Ordering::Greater {
                    out.push(DirEntry { ino: tag(e.ino)?, ..e });
                    continue;
                }
            }
            let (k, &(ino, kind)) = here.next().expect("an entry here");
            if ino != WHITEOUT {
                out.push(DirEntry { name: k.name.clone(), ino, kind });
            }
        }
        Ok(out)
    }

    /// Checks the open flags against an existing entry, without changing
    /// anything: the read-only half of [`Tree::open`].
    pub fn open_existing(&self, dir: Ino, name: &str, opts: &OpenOptions) -> Result<Option<Ino>> {
        validate_name(name)?;
        if opts.create && opts.directory {
            return Err(Error::Invalid);
        }
        let Some((ino, kind)) = self.find(dir, name)? else {
            return if opts.create { Ok(None) } else { Err(Error::NotFound) };
        };
        if opts.create && opts.exclusive {
            return Err(Error::Exists);
        }
        match kind {
            // As Linux's O_NOFOLLOW: O_DIRECTORY is checked first.
            FileType::Symlink if opts.directory => Err(Error::NotDir),
            FileType::Symlink => Err(Error::Loop),
            FileType::Dir if opts.writes() => Err(Error::IsDir),
            FileType::File if opts.directory => Err(Error::NotDir),
            _ => Ok(Some(ino)),
        }
    }

    // ---- writes ------------------------------------------------------------

    fn charge_bytes(&mut self, old: u64, new: u64) -> Result<()> {
        // Sparse files count whole: three of the largest size overflow.
        let bytes = (self.usage.bytes - old).checked_add(new).ok_or(Error::NoSpace)?;
        if new > old && self.limits.max_bytes.is_some_and(|max| bytes > max) {
            return Err(Error::Quota);
        }
        self.usage.bytes = bytes;
        Ok(())
    }

    /// Gives `ino`, if only the lower holds it so far (it was found through
    /// a merged directory), a record here, so that it can change;
    /// a directory's parents first, up to one this tree holds, so that
    /// every directory here knows its parent.
    fn adopt(&mut self, ino: Ino) -> Result<()> {
        let mut records = Vec::new();
        let mut at = ino;
        while let Some((lower, lino)) = self.lower_only(at) {
            // A sane lower's directories nest no deeper than a path allows.
            if records.len() > MAX_PATH / 2 {
                return Err(Error::Io(format!("lower directory {lino} nests too deep")));
            }
            let md = lower.metadata(lino)?;
            let parent = if md.kind == FileType::Dir { from_lower(lower, lower.parent(lino)?)? } else { ROOT };
            records.push((at, lino, lower_record(lower, lino, &md, parent)?));
            if md.kind != FileType::Dir {
                break;
            }
            at = parent;
        }
        for (ino, lino, inode) in records.into_iter().rev() {
            self.seen.insert(lino, ());
            self.insert_inode(ino, inode);
        }
        Ok(())
    }

    /// Copies a lower file's bytes up, once, before its first change —
    /// only the first `keep` of them when the change is a cut to `keep`
    /// bytes (a truncating open reads nothing from the lower; the caller
    /// then sets the length it wants).
    fn copy_up(&mut self, ino: Ino, keep: u64) -> Result<()> {
        if self.lower.is_none() {
            return Ok(()); // Nothing to copy up without a lower.
        }
        self.adopt(ino)?;
        let Some(Inode { data: Data::Lower { ino: lino, size }, .. }) = self.inodes.get(&ino) else {
            return Ok(());
        };
        let (lino, full) = (*lino, *size);
        let size = full.min(keep);
        self.charge_bytes(0, size)?;
        let lower = self.lower()?;
        let mut content = Content::default();
        let mut buf = vec![0; size.min(1 << 20) as usize];
        let mut offset = 0;
        while offset < size {
            // Never past `size`: that much is charged, and no more is kept.
            let want = (size - offset).min(buf.len() as u64) as usize;
            let n = lower.read_at(lino, offset, &mut buf[..want])?;
            if n == 0 {
                return Err(Error::Io(format!("lower file {lino} ended at {offset} of {size} bytes")));
            }
            content.write(offset, &buf[..n]);
            offset += n as u64;
        }
        self.inode_mut(ino)?.data = Data::File(content);
        Ok(())
    }

    fn touch_dir(&mut self, dir: Ino, now: Timestamp) -> Result<()> {
        let d = self.inode_mut(dir)?;
        d.mtime = now;
        d.ctime = now;
        Ok(())
    }

    /// Adds a new inode named `name` in `dir`, checking everything first.
    fn create(&mut self, dir: Ino, name: &str, data: Data, mode: u32, now: Timestamp) -> Result<Ino> {
        validate_name(name)?;
        self.live_dir(dir)?;
        if self.find(dir, name)?.is_some() {
            return Err(Error::Exists);
        }
        self.insert_new(dir, name, data, mode, now)
    }

    /// Adds a new inode named `name` in the directory `dir`, where the caller
    /// has checked that the name is valid and free. Every remaining check
    /// comes before the first change, so a failure leaves the tree as it was.
    fn insert_new(&mut self, dir: Ino, name: &str, data: Data, mode: u32, now: Timestamp) -> Result<Ino> {
        if self.limits.max_inodes.is_some_and(|max| self.usage.inodes >= max) {
            return Err(Error::Quota);
        }
        let is_dir = matches!(data, Data::Dir { .. });
        // Upper-born inodes never carry the lower tag.
        if self.next_ino & LOWER_TAG != 0 {
            return Err(Error::NoSpace);
        }
        let inode =
            Inode { data, mode: mode & 0o7777, nlink: if is_dir { 2 } else { 1 }, atime: now, mtime: now, ctime: now };
        let ino = self.next_ino;
        self.charge_bytes(0, inode.bytes(ino))?;
        self.next_ino += 1;
        self.usage.inodes += 1;
        let kind = inode.kind();
        self.insert_inode(ino, inode);
        self.insert_dirent(dir, name.into(), (ino, kind));
        let d = self.inode_mut(dir)?;
        if is_dir {
            d.nlink += 1;
        }
        d.mtime = now;
        d.ctime = now;
        Ok(ino)
    }

    /// Opens `name` in `dir`: creates it (`create`) or truncates it
    /// (`truncate`) as the flags say. Returns the inode.
    pub fn open(&mut self, dir: Ino, name: &str, opts: &OpenOptions, now: Timestamp) -> Result<Ino> {
        self.live_dir(dir)?;
        match self.open_existing(dir, name, opts)? {
            Some(ino) => {
                if opts.truncate && self.metadata(ino)?.kind == FileType::File {
                    self.set_len(ino, 0, now)?;
                }
                Ok(ino)
            }
            None => self.insert_new(dir, name, Data::File(Content::default()), opts.mode, now),
        }
    }

    /// Creates directory `name` in `dir`.
    pub fn mkdir(&mut self, dir: Ino, name: &str, mode: u32, now: Timestamp) -> Result<Ino> {
        self.create(dir, name, Data::Dir { parent: dir, lower: None }, mode, now)
    }

    /// Creates symlink `name` in `dir` to `target`.
    pub fn symlink(&mut self, dir: Ino, name: &str, target: &str, now: Timestamp) -> Result<Ino> {
        if target.is_empty() {
            return Err(Error::NotFound);
        }
        if target.len() > MAX_PATH {
            return Err(Error::NameTooLong);
        }
        if target.contains('\0') {
            return Err(Error::Invalid);
        }
        self.create(dir, name, Data::Symlink(target.into()), 0o777, now)
    }

    /// A regular file's inode, to read before changing it.
    fn file(&self, ino: Ino) -> Result<&Inode> {
        let i = self.inode(ino)?;
        match i.data {
            Data::File(_) | Data::Lower { .. } => Ok(i),
            Data::Dir { .. } => Err(Error::IsDir),
            Data::Symlink(_) => Err(Error::Invalid),
        }
    }

    /// A file's size once its bytes are copied up (which is when they count).
    fn upper_size(&mut self, ino: Ino) -> Result<u64> {
        self.copy_up(ino, u64::MAX)?;
        Ok(self.file(ino)?.size())
    }

    /// A file's inode to change, its bytes already copied up by the caller
    /// (who needed the upper size first).
    fn file_mut(&mut self, ino: Ino) -> Result<&mut Inode> {
        let i = self.inode_mut(ino)?;
        match i.data {
            Data::File(_) => Ok(i),
            Data::Lower { .. } => Err(Error::Io("copy-up left a lower file".into())),
            Data::Dir { .. } => Err(Error::IsDir),
            Data::Symlink(_) => Err(Error::Invalid),
        }
    }

    /// Sets a file's length, cutting or extending with zeros.
    pub fn set_len(&mut self, ino: Ino, len: u64, now: Timestamp) -> Result<()> {
        if len > MAX_FILE_SIZE {
            return Err(Error::FileTooLarge);
        }
        self.copy_up(ino, len)?;
        let old = self.file(ino)?.size();
        self.charge_bytes(old, len)?;
        let i = self.file_mut(ino)?;
        if let Data::File(c) = &mut i.data {
            c.set_len(len);
        }
        i.mtime = now;
        i.ctime = now;
        Ok(())
    }

    /// Writes `data` at `offset`.
    pub fn write_at(&mut self, ino: Ino, offset: u64, data: &[u8], now: Timestamp) -> Result<usize> {
        if data.is_empty() {
            return self.size_unchanged(ino, offset).map(|_| 0);
        }
        let old = self.upper_size(ino)?;
        self.write_sized(ino, old, offset, data, now)
    }

    /// Writes `data` at the end of the file; returns where it went.
    pub fn append(&mut self, ino: Ino, data: &[u8], now: Timestamp) -> Result<u64> {
        if data.is_empty() {
            return self.size_unchanged(ino, 0);
        }
        let old = self.upper_size(ino)?;
        self.write_sized(ino, old, old, data, now)?;
        Ok(old)
    }

    /// The size of file `ino`, for a zero-length write at `offset`, which
    /// POSIX has change nothing: a lower file stays in the lower.
    fn size_unchanged(&self, ino: Ino, offset: u64) -> Result<u64> {
        if offset > MAX_FILE_SIZE {
            return Err(Error::FileTooLarge);
        }
        let md = self.metadata(ino)?;
        match md.kind {
            FileType::File => Ok(md.size),
            FileType::Dir => Err(Error::IsDir),
            FileType::Symlink => Err(Error::Invalid),
        }
    }

    /// [`Tree::write_at`] of `data` (not empty) into a file whose upper size
    /// is `old`.
    fn write_sized(&mut self, ino: Ino, old: u64, offset: u64, data: &[u8], now: Timestamp) -> Result<usize> {
        let end = offset.checked_add(data.len() as u64).filter(|&e| e <= MAX_FILE_SIZE).ok_or(Error::FileTooLarge)?;
        self.charge_bytes(old, old.max(end))?;
        let i = self.file_mut(ino)?;
        if let Data::File(c) = &mut i.data {
            c.write(offset, data);
        }
        i.mtime = now;
        i.ctime = now;
        Ok(data.len())
    }

    /// Drops one link of `ino`; an inode left with none becomes an orphan.
    fn drop_link(&mut self, ino: Ino, now: Timestamp) -> Result<()> {
        let i = self.inode_mut(ino)?;
        i.nlink = if matches!(i.data, Data::Dir { .. }) { 0 } else { i.nlink - 1 };
        i.ctime = now;
        if i.nlink == 0 {
            self.orphans.push(ino);
        }
        Ok(())
    }

    /// Removes the non-directory `name` from `dir`.
    pub fn unlink(&mut self, dir: Ino, name: &str, now: Timestamp) -> Result<()> {
        validate_name(name)?;
        self.adopt(dir)?;
        let (ino, kind) = self.find(dir, name)?.ok_or(Error::NotFound)?;
        if kind == FileType::Dir {
            return Err(Error::IsDir);
        }
        let below = self.below(dir, name)?;
        self.adopt(ino)?;
        self.unname(dir, name, below);
        self.touch_dir(dir, now)?;
        self.drop_link(ino, now)
    }

    /// Removes the empty directory `name` from `dir`.
    pub fn rmdir(&mut self, dir: Ino, name: &str, now: Timestamp) -> Result<()> {
        validate_name(name)?;
        self.adopt(dir)?;
        let (ino, kind) = self.find(dir, name)?.ok_or(Error::NotFound)?;
        if kind != FileType::Dir {
            return Err(Error::NotDir);
        }
        if !self.is_empty_dir(ino)? {
            return Err(Error::NotEmpty);
        }
        let below = self.below(dir, name)?;
        self.adopt(ino)?;
        self.clear_removed_dir(ino)?;
        self.unname(dir, name, below);
        // A lower may miscount its directories' links: never below zero.
        let d = self.inode_mut(dir)?;
        d.nlink = d.nlink.saturating_sub(1);
        self.touch_dir(dir, now)?;
        self.drop_link(ino, now)
    }

    /// Adds name `name` in `dir` for the non-directory `ino`.
    pub fn link(&mut self, ino: Ino, dir: Ino, name: &str, now: Timestamp) -> Result<()> {
        validate_name(name)?;
        self.adopt(ino)?;
        let i = self.inode(ino)?;
        if matches!(i.data, Data::Dir { .. }) {
            return Err(Error::NotPermitted);
        }
        if i.nlink == 0 {
            return Err(Error::NotFound);
        }
        if i.nlink >= u64::from(u32::MAX) {
            return Err(Error::TooManyLinks);
        }
        let kind = i.kind();
        self.live_dir(dir)?;
        if self.find(dir, name)?.is_some() {
            return Err(Error::Exists);
        }
        self.insert_dirent(dir, name.into(), (ino, kind));
        let i = self.inode_mut(ino)?;
        i.nlink += 1;
        i.ctime = now;
        self.touch_dir(dir, now)
    }

    /// POSIX `rename(2)` of `from` in `from_dir` to `to` in `to_dir`.
    pub fn rename(&mut self, from_dir: Ino, from: &str, to_dir: Ino, to: &str, now: Timestamp) -> Result<()> {
        validate_name(from)?;
        validate_name(to)?;
        self.live_dir(from_dir)?;
        self.live_dir(to_dir)?;
        let (src, src_kind) = self.find(from_dir, from)?.ok_or(Error::NotFound)?;
        let replaced = self.find(to_dir, to)?;
        if let Some((dst, dst_kind)) = replaced {
            if dst == src {
                return Ok(()); // Two names of one inode: POSIX says do nothing.
            }
            match (src_kind == FileType::Dir, dst_kind == FileType::Dir) {
                (true, false) => return Err(Error::NotDir),
                (false, true) => return Err(Error::IsDir),
                (true, true) if !self.is_empty_dir(dst)? => return Err(Error::NotEmpty),
                _ => {}
            }
        }
        if src_kind == FileType::Dir {
            // A directory may not move beneath itself: walk up from the target.
            let mut d = to_dir;
            loop {
                if d == src {
                    return Err(Error::Invalid);
                }
                let parent = self.parent(d)?;
                if parent == d {
                    break;
                }
                d = parent;
            }
        }
        let below = self.below(from_dir, from)?;
        // Checks done; from here on only the lower can fail (adopting).
        self.adopt(src)?;
        if let Some((dst, dst_kind)) = replaced {
            self.adopt(dst)?;
            if dst_kind == FileType::Dir {
                self.clear_removed_dir(dst)?;
                let d = self.inode_mut(to_dir)?;
                d.nlink = d.nlink.saturating_sub(1);
            }
            self.drop_link(dst, now)?;
        }
        self.unname(from_dir, from, below);
        // Over the replaced entry, or a whiteout, if any.
        self.insert_dirent(to_dir, to.into(), (src, src_kind));
        if src_kind == FileType::Dir && from_dir != to_dir {
            let d = self.inode_mut(from_dir)?;
            d.nlink = d.nlink.saturating_sub(1);
            self.inode_mut(to_dir)?.nlink += 1;
            if let Data::Dir { parent, .. } = &mut self.inode_mut(src)?.data {
                *parent = to_dir;
            }
        }
        self.inode_mut(src)?.ctime = now;
        self.touch_dir(from_dir, now)?;
        self.touch_dir(to_dir, now)
    }

    /// Sets access and modification times; `now` fills [`SetTime::Now`].
    /// Keeping both changes nothing, not even the ctime (as Linux's
    /// `utimensat` with two `UTIME_OMIT`s).
    pub fn set_times(&mut self, ino: Ino, atime: SetTime, mtime: SetTime, now: Timestamp) -> Result<()> {
        if (atime, mtime) == (SetTime::Keep, SetTime::Keep) {
            return self.metadata(ino).map(|_| ());
        }
        self.adopt(ino)?;
        let i = self.inode_mut(ino)?;
        let pick = |t: SetTime, old: Timestamp| match t {
            SetTime::Keep => old,
            SetTime::Now => now,
            // Whole seconds carried out of the nanoseconds, as anywhere.
            SetTime::At(t) => Timestamp::new(t.secs, t.nanos),
        };
        i.atime = pick(atime, i.atime);
        i.mtime = pick(mtime, i.mtime);
        i.ctime = now;
        Ok(())
    }

    /// Sets permission bits.
    pub fn set_mode(&mut self, ino: Ino, mode: u32, now: Timestamp) -> Result<()> {
        self.adopt(ino)?;
        let i = self.inode_mut(ino)?;
        i.mode = mode & 0o7777;
        i.ctime = now;
        Ok(())
    }

    // ---- orphans -----------------------------------------------------------

    /// Inodes with no name left (open somewhere, or not yet reaped).
    pub fn orphans(&self) -> &[Ino] {
        &self.orphans
    }

    /// Frees the orphans `keep` does not keep: their inodes and contents
    /// go, and stop counting.
    pub fn reap_unless(&mut self, mut keep: impl FnMut(Ino) -> bool) {
        let mut orphans = std::mem::take(&mut self.orphans);
        orphans.retain(|&ino| {
            if keep(ino) {
                return true;
            }
            if let Some(i) = self.remove_inode(ino) {
                self.usage.bytes -= i.bytes(ino);
                self.usage.inodes -= u64::from(counted(ino));
            }
            false
        });
        self.orphans = orphans;
    }

    // ---- consistency -------------------------------------------------------

    /// Checks every structural invariant: entries point at live inodes,
    /// whiteouts hide lower names, directories' parents and every link
    /// count agree with the names the tree shows (the lower's included),
    /// orphans are exactly the unnamed inodes, usage adds up. For tests and
    /// fuzzers; O(n) in the upper and the lower.
    pub fn check_consistency(&self) -> std::result::Result<(), String> {
        use std::collections::{HashMap, HashSet};
        for (k, &(ino, kind)) in self.dirents.iter() {
            let i = self.inode(k.dir).map_err(|_| format!("entry {:?} in missing dir {}", k.name, k.dir))?;
            let Data::Dir { lower, .. } = i.data else {
                return Err(format!("entry {:?} in non-directory {}", k.name, k.dir));
            };
            if ino == WHITEOUT {
                let hides = lower.zip(self.lower.as_deref()).is_some_and(|(l, low)| low.lookup(l, &k.name).is_ok());
                if !hides {
                    return Err(format!("whiteout {:?} in {} hides no lower name", k.name, k.dir));
                }
                continue;
            }
            let target = self.inode(ino).map_err(|_| format!("entry {:?} names missing inode {ino}", k.name))?;
            if target.kind() != kind {
                return Err(format!("entry {:?} caches the wrong type", k.name));
            }
            if let Data::Dir { parent, .. } = target.data
                && parent != k.dir
            {
                return Err(format!("directory {ino} has parent {parent}, entry in {}", k.dir));
            }
        }
        // Every name the tree shows, from the root down, merged listings
        // included: a lower inode's count is checked like any other.
        let mut names: HashMap<Ino, u64> = HashMap::new();
        let mut subdirs: HashMap<Ino, u64> = HashMap::new();
        let (mut todo, mut dirs) = (vec![ROOT], HashSet::from([ROOT]));
        while let Some(dir) = todo.pop() {
            for e in self.read_dir(dir, None, usize::MAX).map_err(|e| format!("listing {dir}: {e}"))? {
                *names.entry(e.ino).or_default() += 1;
                if e.kind == FileType::Dir {
                    *subdirs.entry(dir).or_default() += 1;
                    if !dirs.insert(e.ino) {
                        return Err(format!("directory {} has two names", e.ino));
                    }
                    todo.push(e.ino);
                }
            }
        }
        let mut usage = Usage::default();
        for (&ino, i) in self.inodes.iter() {
            usage.bytes += i.bytes(ino);
            usage.inodes += u64::from(counted(ino));
            let named = names.get(&ino).copied().unwrap_or(0);
            let want = match i.data {
                Data::Dir { .. } if ino == ROOT || named > 0 => 2 + subdirs.get(&ino).copied().unwrap_or(0),
                _ => named,
            };
            if i.nlink != want {
                return Err(format!("inode {ino} nlink {} != {want}", i.nlink));
            }
            if (want == 0) != self.orphans.contains(&ino) {
                return Err(format!("inode {ino} orphan state wrong"));
            }
        }
        if usage != self.usage {
            return Err(format!("usage {:?} != counted {usage:?}", self.usage));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Inode numbers handed out in order make a balanced inode treap,
    /// whatever the seed; and with every other one gone, still a shallow
    /// one.
    #[test]
    fn inode_treap_is_balanced() {
        let now = Timestamp::new(0, 0);
        let mut t = Tree::new(now, Limits::default());
        let n = 1 << 14;
        for i in 0..n {
            t.open(ROOT, &format!("f{i}"), &OpenOptions::create(), now).unwrap();
        }
        // Consecutive numbers: 15 levels of files (each range has one
        // number of most trailing zeros) under the root directory; random
        // priorities would give a height of ~4.3 ln n, ~40.
        let h = t.inodes.height();
        assert!(h <= 17, "{h} levels for {} inodes", t.inodes.len());
        for i in (0..n).step_by(2) {
            t.unlink(ROOT, &format!("f{i}"), now).unwrap();
        }
        t.reap_unless(|_| false);
        assert_eq!(t.inodes.len(), n / 2 + 1);
        // Those left may all tie (an even seed): a random treap then, whose
        // height is ~4.3 ln n (~35 here), not the 8,193 of a list.
        let h = t.inodes.height();
        assert!(h <= 50, "{h} levels for {} inodes", t.inodes.len());
    }

    fn name() -> impl Strategy<Value = String> {
        // Short and long names over a tiny alphabet (NUL included, though
        // real names never hold one), so that shared heads, prefixes and
        // equal lengths are common.
        proptest::collection::vec(prop_oneof![Just('a'), Just('b'), Just('\0'), Just('é')], 0..40)
            .prop_map(|cs| cs.into_iter().collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

        /// Keys order exactly as `(dir, name bytes)`, whatever the names.
        #[test]
        fn keys_order_as_dir_then_name(a in name(), cut in 0usize..40, tail in name(), da in 0u64..2, db in 0u64..2) {
            // `b` shares a prefix of `a`: equal heads are common.
            let b: String = a.chars().take(cut).chain(tail.chars().take(cut % 5)).collect();
            let (ka, kb) = (DirKey::new(da, a.as_str().into()), DirKey::new(db, b.as_str().into()));
            prop_assert_eq!(ka.cmp(&kb), (da, a.as_bytes()).cmp(&(db, b.as_bytes())));
            prop_assert_eq!(ka.cmp_to(&Probe::new(db, &b)), ka.cmp(&kb));
        }
    }
}
