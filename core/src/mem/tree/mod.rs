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

mod check;
mod data;
mod names;
mod overlay;

use std::cmp::Ordering;
use std::sync::Arc;

use super::content::Content;
use crate::path::{MAX_PATH, validate_name};
use crate::treap::Treap;
use crate::{
    DirEntry, Error, FileSystem, FileType, Ino, MAX_FILE_SIZE, Metadata, OpenOptions, Result, SetTime, Timestamp,
};
use overlay::{counted, from_lower, lower_record, tag};

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
    /// Most bytes of host memory the tree holds: file content and symlink
    /// targets by length (a sparse file counts whole), each directory
    /// entry's name and [`ENTRY_BYTES`] (hard links, whiteouts and renames
    /// into new names included), and [`INODE_BYTES`] per inode. Names and
    /// links are not free: a guest cannot grow the host by them either.
    pub max_bytes: Option<u64>,
    /// Most inodes, the root included.
    pub max_inodes: Option<u64>,
}

/// What [`Limits::max_bytes`] charges for a directory entry besides its
/// name: what the host holds for one, measured (its key and node in the
/// entry treap, in the current version and in the writer's spare, and the
/// allocator's share): 200,000 links of 248-byte names took 528 bytes each.
pub const ENTRY_BYTES: u64 = 288;

/// What [`Limits::max_bytes`] charges for an inode besides its content:
/// its record and node in the inode treap, likewise (200,000 empty files
/// took 608 bytes each, entries included).
pub const INODE_BYTES: u64 = 320;

/// The charge of an entry named `name`.
fn entry_bytes(name: &str) -> u64 {
    ENTRY_BYTES + name.len() as u64
}

/// What a filesystem holds now, in the units of [`Limits`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Bytes charged: content, symlink targets, entries, inodes.
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

    /// Content bytes this inode counts against [`Limits::max_bytes`]: what
    /// the upper layer holds, not what it borrows from the lower.
    fn bytes(&self, ino: Ino) -> u64 {
        match &self.data {
            Data::File(c) => c.len(),
            Data::Symlink(t) if ino & LOWER_TAG == 0 => t.len() as u64,
            _ => 0,
        }
    }

    /// All this inode counts against [`Limits::max_bytes`]: its content
    /// and, born here, its record. Lower inodes adopted here are bounded
    /// by the lower, not by the guest.
    fn charge(&self, ino: Ino) -> u64 {
        self.bytes(ino) + if counted(ino) { INODE_BYTES } else { 0 }
    }
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
            usage: Usage { bytes: INODE_BYTES, inodes: 1 },
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

    /// `Quota` if a change that started at `before` grew past a limit (a
    /// change that shrinks is always allowed). Content is charged as it is
    /// written, before it is copied in; names and records are counted as
    /// they come and checked here, once the change is done.
    pub(crate) fn check_growth(&self, before: Usage) -> Result<()> {
        let over = |now: u64, then: u64, max: Option<u64>| now > then && max.is_some_and(|m| now > m);
        if over(self.usage.bytes, before.bytes, self.limits.max_bytes)
            || over(self.usage.inodes, before.inodes, self.limits.max_inodes)
        {
            return Err(Error::Quota);
        }
        Ok(())
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

    /// Adds (or replaces) an entry, counting it against the limits.
    fn insert_dirent(&mut self, dir: Ino, name: Arc<str>, value: (Ino, FileType)) {
        let cost = entry_bytes(&name);
        let key = DirKey::new(dir, name);
        self.touched(Touch::Dirent(key.clone()));
        if self.dirents.insert(key, value).is_none() {
            self.usage.bytes = self.usage.bytes.saturating_add(cost);
        }
    }

    /// Removes an entry, and its charge.
    fn remove_dirent(&mut self, key: &DirKey) {
        if self.dirents.remove(key).is_some() {
            self.usage.bytes -= entry_bytes(&key.name);
        }
        self.touched(Touch::Dirent(key.clone()));
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
            self.remove_dirent(&key);
        }
        if let Data::Dir { lower, .. } = &mut self.inode_mut(dir)?.data {
            *lower = None;
        }
        Ok(())
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

    /// [`FileSystem::loaded`]: a file still in the lower asks the lower.
    pub fn loaded(&self, ino: Ino, offset: u64, len: u64) -> Result<()> {
        let (lower, lino) = match self.inodes.get(&ino) {
            Some(Inode { data: Data::Lower { ino, .. }, .. }) => (self.lower()?, *ino),
            Some(_) => return Ok(()),
            None => match self.lower_only(ino) {
                Some(at) => at,
                None => return Ok(()),
            },
        };
        lower.loaded(lino, offset, len)
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
                    return Err(Error::Backend(format!("lower directory {ldir} lists {:?} after {a:?}", e.name)));
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
