//! Orphans (inodes with no name left) and the structural consistency check.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

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
            let _ = self.clear_removed_dir(ino);
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
    /// it, a lower inode hidden is one this tree has taken, orphans are
    /// exactly the unnamed inodes, usage adds up. For restoring an image,
    /// tests and fuzzers: time O(n) in the upper and the lower, memory in
    /// the upper and the directories.
    pub fn check_consistency(&self) -> std::result::Result<(), String> {
        // The root is its own parent, and merges the lower's root.
        let root_lower = self.lower.as_ref().map(|l| l.root());
        match self.inode(ROOT).map(|i| &i.data) {
            Ok(&Data::Dir { parent: ROOT, lower }) if lower == root_lower => {}
            _ => return Err("the root is not a directory of its own, over the lower's root".into()),
        }
        self.check_entries()?;
        self.check_hidden()?;
        let shown = self.names_shown()?;
        self.check_counts(&shown)
    }

    /// Each entry here: in a named directory, of a live inode of its kind
    /// (a directory's parent being where it is named); a whiteout, or an
    /// entry over a lower name, hides a lower inode this tree has taken.
    fn check_entries(&self) -> std::result::Result<(), String> {
        for (k, &(ino, kind)) in self.dirents.iter() {
            let i = self.inode(k.dir).map_err(|_| format!("entry {:?} in missing dir {}", k.name, k.dir))?;
            let Data::Dir { lower, .. } = i.data else {
                return Err(format!("entry {:?} in non-directory {}", k.name, k.dir));
            };
            // A directory loses its entries as it loses its name.
            if i.nlink == 0 {
                return Err(format!("entry {:?} in removed directory {}", k.name, k.dir));
            }
            // A lower name is hidden only by a change, which takes (adopts)
            // its inode first: one hidden but not taken would keep the
            // lower's count, which a link by number would then raise.
            let below = match lower.zip(self.lower.as_deref()) {
                Some((l, low)) => match low.lookup(l, &k.name) {
                    Ok(lino) => Some(lino),
                    Err(Error::NotFound) => None,
                    Err(e) => return Err(format!("looking {:?} up below {}: {e}", k.name, k.dir)),
                },
                None => None,
            };
            if below.is_some_and(|lino| self.seen.get(&lino).is_none()) {
                return Err(format!("entry {:?} in {} hides a lower inode never taken", k.name, k.dir));
            }
            if ino == WHITEOUT {
                if below.is_none() {
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
        Ok(())
    }

    /// A lower directory hides its lower entries only once removed (a live
    /// one merges its own), and then every one of them was taken first (it
    /// was emptied), as they were of one gone altogether.
    fn check_hidden(&self) -> std::result::Result<(), String> {
        let Some(lower) = self.lower.as_deref() else { return Ok(()) };
        for (&lino, ()) in self.seen.iter() {
            let ino = super::overlay::from_lower(lower, lino).map_err(|e| format!("lower inode {lino}: {e}"))?;
            let hides = match self.inodes.get(&ino) {
                Some(Inode { data: Data::Dir { lower: None, .. }, nlink, .. }) if ino != ROOT => {
                    if *nlink > 0 {
                        return Err(format!("directory {ino} of the lower merges nothing"));
                    }
                    true
                }
                Some(_) => false,
                None => lower.metadata(lino).map_err(|e| format!("lower inode {lino}: {e}"))?.kind == FileType::Dir,
            };
            if !hides {
                continue;
            }
            let mut untaken = None;
            super::overlay::each_lower_page(lower, lino, |page| {
                untaken = untaken.or_else(|| page.iter().find(|e| self.seen.get(&e.ino).is_none()).map(|e| e.ino));
                Ok(())
            })
            .map_err(|e| format!("listing {lino}: {e}"))?;
            if let Some(hidden) = untaken {
                return Err(format!("lower inode {hidden} hidden in {ino}, never taken"));
            }
        }
        Ok(())
    }

    /// Every name the tree shows, from the root down, merged listings
    /// included, of the inodes whose counts are to be checked: those here,
    /// and those only the lower holds with more than one name there (one
    /// with one shows it, or is hidden, and so taken). Every directory is
    /// reached once, and names its parent.
    fn names_shown(&self) -> std::result::Result<Shown, String> {
        let mut shown = Shown::default();
        let (mut todo, mut dirs) = (vec![ROOT], HashSet::from([ROOT]));
        while let Some(dir) = todo.pop() {
            let mut after: Option<Arc<str>> = None;
            loop {
                let page = self.read_dir(dir, after.as_deref(), PAGE).map_err(|e| format!("listing {dir}: {e}"))?;
                let Some(last) = page.last() else { break };
                after = Some(last.name.clone());
                for e in page {
                    let here = self.inodes.get(&e.ino).is_some();
                    // A lower name shows through: of a lower inode not gone.
                    if !here && self.lower_only(e.ino).is_none() {
                        return Err(format!("entry {:?} in {dir} names removed inode {}", e.name, e.ino));
                    }
                    if e.kind == FileType::Dir {
                        *shown.subdirs.entry(dir).or_default() += 1;
                        if !dirs.insert(e.ino) {
                            return Err(format!("directory {} has two names", e.ino));
                        }
                        // Named here, a lower one too: walks up end at the root.
                        if self.parent(e.ino) != Ok(dir) {
                            return Err(format!("directory {} listed in {dir} has another parent", e.ino));
                        }
                        todo.push(e.ino);
                    }
                    let counted = here
                        || e.kind != FileType::Dir
                            && self.metadata(e.ino).map_err(|err| format!("lower inode {}: {err}", e.ino))?.nlink > 1;
                    if counted {
                        *shown.names.entry(e.ino).or_default() += 1;
                    }
                }
            }
        }
        Ok(shown)
    }

    /// Link counts, orphans and usage against the names shown.
    fn check_counts(&self, shown: &Shown) -> std::result::Result<(), String> {
        // One only the lower holds has the lower's count, which its
        // adoption takes: each of its names still shows.
        for (&ino, &named) in &shown.names {
            if self.inodes.get(&ino).is_none() {
                let have = self.metadata(ino).map_err(|e| format!("lower inode {ino}: {e}"))?.nlink;
                if have != named {
                    return Err(format!("lower inode {ino} nlink {have} != {named}"));
                }
            }
        }
        let overflow = || "usage past what a tree counts".to_string();
        let mut usage = Usage { bytes: 0, inodes: 0 };
        for (k, _) in self.dirents.iter() {
            usage.bytes = usage.bytes.checked_add(entry_bytes(&k.name)).ok_or_else(overflow)?;
        }
        for (&ino, i) in self.inodes.iter() {
            usage.bytes = usage.bytes.checked_add(i.charge(ino)).ok_or_else(overflow)?;
            usage.inodes += u64::from(counted(ino));
            let named = shown.names.get(&ino).copied().unwrap_or(0);
            let want = match i.data {
                Data::Dir { .. } if ino == ROOT || named > 0 => 2 + shown.subdirs.get(&ino).copied().unwrap_or(0),
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

/// Entries asked for per listing by the consistency check.
const PAGE: usize = 1024;

/// What [`Tree::names_shown`] counts: names per inode, subdirectories
/// per directory.
#[derive(Default)]
struct Shown {
    names: HashMap<Ino, u64>,
    subdirs: HashMap<Ino, u64>,
}
