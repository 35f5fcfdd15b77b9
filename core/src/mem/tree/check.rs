//! Orphans (inodes with no name left) and the structural consistency check.

use super::inode::counted;
use super::*;
use crate::{FileType, Ino};

impl Tree {
    // ---- orphans -----------------------------------------------------------

    /// Inodes with no name left (open somewhere, or not yet reaped), in
    /// order.
    pub fn orphans(&self) -> Vec<Ino> {
        self.orphans.iter().map(|(&ino, _)| ino).collect()
    }

    /// Frees the orphans made since the last reap (and those
    /// [`reconsider`](Tree::reconsider)ed) that `keep` does not keep: their
    /// inodes and contents go, and stop counting. Work in proportion to
    /// those alone, however many orphans are held open.
    pub fn reap_unless(&mut self, mut keep: impl FnMut(Ino) -> bool) {
        for ino in std::mem::take(&mut self.unreaped) {
            if self.orphans.get(&ino).is_some() && !keep(ino) {
                self.reap(ino);
            }
        }
    }

    /// Frees every orphan: no handle has any open.
    pub fn reap_all(&mut self) {
        self.unreaped.clear();
        while let Some((&ino, _)) = self.orphans.iter().next() {
            self.reap(ino);
        }
    }

    /// Has the next [`reap_unless`](Tree::reap_unless) look at `ino` again,
    /// if it is an orphan: its last handle closed.
    pub fn reconsider(&mut self, ino: Ino) {
        if self.orphans.get(&ino).is_some() {
            self.unreaped.push(ino);
        }
    }

    fn reap(&mut self, ino: Ino) {
        self.orphans.remove(&ino);
        // A removed directory holds no entries; should one hold some, they
        // go with it, or they would name nothing and count for ever.
        if self.has_entries_here(ino) {
            let keys: Vec<DirKey> = self
                .dirents
                .iter_from(|k| k.dir >= ino)
                .take_while(|(k, _)| k.dir == ino)
                .map(|(k, _)| k.clone())
                .collect();
            for key in keys {
                self.remove_dirent(&key);
            }
        }
        if let Some(i) = self.remove_inode(ino) {
            self.usage.bytes -= i.charge(ino);
            self.usage.inodes -= u64::from(counted(ino));
        }
    }

    // ---- consistency -------------------------------------------------------

    /// Checks every structural invariant: the root is its own parent,
    /// entries lie in named directories and point at live inodes,
    /// whiteouts hide lower names, directories' parents and every link
    /// count agree with the names the tree shows (the lower's included),
    /// so every directory is reached from the root once and walks up to
    /// it, orphans are exactly the unnamed inodes, usage adds up. For
    /// restoring an image, tests and fuzzers; O(n) in the upper and the
    /// lower.
    pub fn check_consistency(&self) -> std::result::Result<(), String> {
        use std::collections::{HashMap, HashSet};
        // The root is its own parent, and merges the lower's root.
        let root_lower = self.lower.as_ref().map(|l| l.root());
        match self.inode(ROOT).map(|i| &i.data) {
            Ok(&Data::Dir { parent: ROOT, lower }) if lower == root_lower => {}
            _ => return Err("the root is not a directory of its own, over the lower's root".into()),
        }
        for (k, &(ino, kind)) in self.dirents.iter() {
            let i = self.inode(k.dir).map_err(|_| format!("entry {:?} in missing dir {}", k.name, k.dir))?;
            let Data::Dir { lower, .. } = i.data else {
                return Err(format!("entry {:?} in non-directory {}", k.name, k.dir));
            };
            // A directory loses its entries as it loses its name.
            if i.nlink == 0 {
                return Err(format!("entry {:?} in removed directory {}", k.name, k.dir));
            }
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
                // A lower name shows through: of a lower inode not gone.
                if self.inodes.get(&e.ino).is_none() && self.lower_only(e.ino).is_none() {
                    return Err(format!("entry {:?} in {dir} names removed inode {}", e.name, e.ino));
                }
                *names.entry(e.ino).or_default() += 1;
                if e.kind == FileType::Dir {
                    *subdirs.entry(dir).or_default() += 1;
                    if !dirs.insert(e.ino) {
                        return Err(format!("directory {} has two names", e.ino));
                    }
                    // Named here, a lower one too: walks up end at the root.
                    if self.parent(e.ino) != Ok(dir) {
                        return Err(format!("directory {} listed in {dir} has another parent", e.ino));
                    }
                    todo.push(e.ino);
                }
            }
        }
        // An inode only the lower holds has the lower's count, which its
        // adoption takes: each of its names still shows (a name is hidden
        // only by a change, which adopts the inode first).
        for (&ino, &named) in &names {
            if self.inodes.get(&ino).is_some() {
                continue;
            }
            let md = self.metadata(ino).map_err(|e| format!("lower inode {ino}: {e}"))?;
            let (have, want) = match md.kind {
                // Below 2, the lower does not count subdirectories.
                FileType::Dir if md.nlink < 2 => (0, 0),
                FileType::Dir => (md.nlink, 2 + subdirs.get(&ino).copied().unwrap_or(0)),
                _ => (md.nlink.max(1), named),
            };
            if have != want {
                return Err(format!("lower inode {ino} nlink {have} != {want}"));
            }
        }
        let mut usage = Usage { bytes: self.dirents.iter().map(|(k, _)| entry_bytes(&k.name)).sum(), inodes: 0 };
        for (&ino, i) in self.inodes.iter() {
            usage.bytes += i.charge(ino);
            usage.inodes += u64::from(counted(ino));
            let named = names.get(&ino).copied().unwrap_or(0);
            let want = match i.data {
                Data::Dir { .. } if ino == ROOT || named > 0 => 2 + subdirs.get(&ino).copied().unwrap_or(0),
                _ => named,
            };
            if i.nlink != want {
                return Err(format!("inode {ino} nlink {} != {want}", i.nlink));
            }
            if (want == 0) != self.orphans.get(&ino).is_some() {
                return Err(format!("inode {ino} orphan state wrong"));
            }
            // Nothing shows through a removed directory.
            if want == 0 && matches!(i.data, Data::Dir { lower: Some(_), .. }) {
                return Err(format!("removed directory {ino} still merges a lower one"));
            }
        }
        if usage != self.usage {
            return Err(format!("usage {:?} != counted {usage:?}", self.usage));
        }
        Ok(())
    }
}
