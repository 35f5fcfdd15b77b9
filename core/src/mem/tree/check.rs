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
        if let Some(i) = self.remove_inode(ino) {
            self.usage.bytes -= i.charge(ino);
            self.usage.inodes -= u64::from(counted(ino));
        }
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
        }
        if usage != self.usage {
            return Err(format!("usage {:?} != counted {usage:?}", self.usage));
        }
        Ok(())
    }
}
