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
//!
//! Here: the [`Tree`] value and the primitives every operation goes
//! through. Beside it, what it holds (`key`: an entry's key; `inode`:
//! inode numbers and records; `quota`: [`Quota`] and [`Usage`]) and what
//! it does (`read`: lookups, metadata, contents, listings; `data`: making
//! inodes and writing content; `names`: links, renames, times, modes;
//! `overlay`: the lower's side; `check`: orphans and the consistency
//! check).

mod check;
mod data;
mod image;
mod inode;
mod key;
mod names;
mod overlay;
mod quota;
mod read;

use std::sync::Arc;

use crate::treap::Treap;
use crate::{Error, FileSystem, FileType, Ino, Result, Timestamp};
use inode::{Data, Inode};
use quota::entry_bytes;

pub use image::{CONTENT_PIECE, Part, Shape};
pub use inode::{LOWER_TAG, ROOT};
pub(crate) use key::DirKey;
pub use quota::{ENTRY_BYTES, INODE_BYTES, Quota, Usage};

/// What directories add to their rank in the inode treap (see
/// [`Tree::rank`]), above any a file can have.
const DIR_RANK: u8 = 64;

/// Lower entries asked for per `read_dir` call while merging.
const LOWER_PAGE: usize = 256;

/// The inode number of a whiteout entry: the lower name is removed.
const WHITEOUT: Ino = 0;

/// A complete filesystem as a persistent value: every read and write
/// operation of PackFS's in-memory backend, with no locking and no clock.
/// [`MemFs`](crate::MemFs) publishes versions of it; `batch` hands one out
/// to apply several operations atomically.
#[derive(Clone)]
pub struct Tree {
    dirents: Treap<DirKey, (Ino, FileType)>,
    inodes: Treap<Ino, Inode>,
    /// Inodes with no name left, kept while a handle has them open. A
    /// guest may hold many (every file it opened, then unlinked), so a
    /// persistent set: no change costs in proportion to them.
    orphans: Treap<Ino, ()>,
    /// Orphans made since the last reap: the only ones a reap after a
    /// change has to look at (an older one is reaped by its last close).
    unreaped: Vec<Ino>,
    next_ino: Ino,
    usage: Usage,
    quota: Quota,
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

/// How many of the latest touches a new one is checked against.
const RECENT_TOUCHES: usize = 8;

/// A key a change touched, for [`Tree::catch_up`].
#[derive(Clone, PartialEq)]
pub(crate) enum Touch {
    Inode(Ino),
    Dirent(DirKey),
}

impl Tree {
    /// An empty tree: a root directory with mode `0o755`.
    pub fn new(now: Timestamp, quota: Quota) -> Self {
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
            orphans: Treap::new(),
            unreaped: Vec::new(),
            next_ino: ROOT + 1,
            usage: Usage { bytes: INODE_BYTES, inodes: 1 },
            quota,
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

    /// The quota in force.
    pub fn quota(&self) -> Quota {
        self.quota
    }

    /// Replaces the quota; usage above a new one stays, growth fails.
    pub fn set_quota(&mut self, quota: Quota) {
        self.quota = quota;
    }

    /// `Quota` if a change that started at `before` grew past a limit (a
    /// change that shrinks is always allowed). Content is charged as it is
    /// written, before it is copied in; names and records are counted as
    /// they come and checked here, once the change is done.
    pub(crate) fn check_growth(&self, before: Usage) -> Result<()> {
        let over = |now: u64, then: u64, max: Option<u64>| now > then && max.is_some_and(|m| now > m);
        if over(self.usage.bytes, before.bytes, self.quota.max_bytes)
            || over(self.usage.inodes, before.inodes, self.quota.max_inodes)
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
        // Most removed directories hold nothing here: no walk then.
        let keys: Vec<DirKey> = if !self.has_entries_here(dir) {
            Vec::new()
        } else {
            self.dirents.iter_from(|k| k.dir >= dir).take_while(|(k, _)| k.dir == dir).map(|(k, _)| k.clone()).collect()
        };
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
            // Catching up reads a key's final value, so once is enough; an
            // operation touches its few keys again and again (an inode's
            // link count, then its times), so the last few are looked at.
            if !log.iter().rev().take(RECENT_TOUCHES).any(|k| *k == key) {
                log.push(key);
            }
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
        self.orphans = to.orphans.clone();
        self.unreaped.clone_from(&to.unreaped);
        self.seen = to.seen.clone();
        self.next_ino = to.next_ino;
        self.usage = to.usage;
        self.quota = to.quota;
        self.lower.clone_from(&to.lower);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OpenOptions;

    /// Inode numbers handed out in order make a balanced inode treap,
    /// whatever the seed; and with every other one gone, still a shallow
    /// one.
    #[test]
    fn inode_treap_is_balanced() {
        let now = Timestamp::new(0, 0);
        let mut t = Tree::new(now, Quota::default());
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
        t.reap_all();
        assert_eq!(t.inodes.len(), n / 2 + 1);
        // Those left may all tie (an even seed): a random treap then, whose
        // height is ~4.3 ln n (~35 here), not the 8,193 of a list.
        let h = t.inodes.height();
        assert!(h <= 50, "{h} levels for {} inodes", t.inodes.len());
    }

    /// A reap after a change looks at the orphans that change made, not at
    /// every orphan held open: a guest holding many unlinked files open
    /// must not make each later change cost in proportion to them.
    #[test]
    fn a_reap_looks_only_at_new_orphans() {
        let now = Timestamp::new(0, 0);
        let mut t = Tree::new(now, Quota::default());
        let create = OpenOptions::create();
        let held: Vec<Ino> = (0..1000)
            .map(|i| {
                let ino = t.open(ROOT, &format!("f{i}"), &create, now).unwrap();
                t.unlink(ROOT, &format!("f{i}"), now).unwrap();
                ino
            })
            .collect();
        t.reap_unless(|_| true);
        assert_eq!(t.orphans(), held);

        let last = t.open(ROOT, "last", &create, now).unwrap();
        t.unlink(ROOT, "last", now).unwrap();
        let mut looked = Vec::new();
        t.reap_unless(|ino| {
            looked.push(ino);
            false
        });
        assert_eq!(looked, [last]);
        assert_eq!(t.orphans().len(), 1000);

        // A held orphan whose last handle closes is looked at again.
        t.reconsider(held[7]);
        t.reconsider(ROOT);
        t.reap_unless(|_| false);
        assert_eq!(t.orphans().len(), 999);
        assert!(!t.orphans().contains(&held[7]));
        t.reap_all();
        assert!(t.orphans().is_empty());
        t.check_consistency().unwrap();
        assert_eq!(t.usage().inodes, 1);
    }
}
