//! The overlay's side of a [`Tree`]: numbering lower inodes, finding a
//! name below, adopting a lower inode (and its parents) when it is to
//! change, copying a lower file up, and whiteouts.

use std::sync::Arc;

use super::key::Probe;
use super::*;
use crate::mem::content::Content;
use crate::path::MAX_PATH;
use crate::{BackendFault, DirEntry, Error, FileSystem, FileType, Ino, Metadata, Result, Timestamp};

/// The number a lower inode has here. An overlay's own numbers carry the
/// tag, so an overlay cannot be the lower of another (nor can anything with
/// numbers of 2^47 and above): `Unsupported`.
pub(super) fn tag(lino: Ino) -> Result<Ino> {
    if lino >= LOWER_TAG {
        return Err(Error::Unsupported);
    }
    Ok(lino | LOWER_TAG)
}

/// The number lower inode `lino` has here: the lower's root is the root.
pub(super) fn from_lower(lower: &dyn FileSystem, lino: Ino) -> Result<Ino> {
    if lino == lower.root() { Ok(ROOT) } else { tag(lino) }
}

/// The record a lower inode gets here, named in directory `parent`.
pub(super) fn lower_record(lower: &dyn FileSystem, lino: Ino, md: &Metadata, parent: Ino) -> Result<Inode> {
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
pub(super) fn lower_subdirs(lower: &dyn FileSystem, ldir: Ino) -> Result<u64> {
    let mut count = 0;
    each_lower_page(lower, ldir, |page| {
        count += page.iter().filter(|e| e.kind == FileType::Dir).count() as u64;
        Ok(())
    })?;
    Ok(count)
}

/// Calls `each` with every page of lower directory `ldir`'s listing, in
/// order. A lower whose page does not move past the name it was given
/// (its first or its last name not after it) would be listed for ever:
/// `Contract`.
pub(super) fn each_lower_page(
    lower: &dyn FileSystem,
    ldir: Ino,
    mut each: impl FnMut(&[DirEntry]) -> Result<()>,
) -> Result<()> {
    let mut after: Option<Arc<str>> = None;
    loop {
        let page = lower.read_dir(ldir, after.as_deref(), LOWER_PAGE)?;
        let Some(last) = page.last() else { return Ok(()) };
        if after
            .as_deref()
            .is_some_and(|a| page[0].name.as_bytes() <= a.as_bytes() || last.name.as_bytes() <= a.as_bytes())
        {
            return Err(Error::backend(BackendFault::Contract, format!("lower directory {ldir} lists no further")));
        }
        after = Some(last.name.clone());
        each(&page)?;
    }
}

impl Tree {
    /// An empty upper over `lower`: every lower entry shows through until
    /// changed, and no change ever reaches `lower`. The lower must answer
    /// [`FileSystem::parent`] (packs and in-memory trees do): `Unsupported`
    /// otherwise.
    pub fn overlay(lower: Arc<dyn FileSystem>, now: Timestamp, limits: Quota) -> Result<Self> {
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

    /// True when the lower has the name `name` in `dir` (hidden or not).
    pub(super) fn below(&self, dir: Ino, name: &str) -> Result<bool> {
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
    pub(super) fn unname(&mut self, dir: Ino, name: &str, below: bool) {
        if below {
            self.insert_dirent(dir, name.into(), (WHITEOUT, FileType::File));
        } else {
            let at = Probe::new(dir, name);
            if let Some((key, _)) = self.dirents.remove_with(|k| k.cmp_to(&at)) {
                self.usage.bytes -= entry_bytes(&key.name);
                self.touched(Touch::Dirent(key));
            }
        }
    }

    /// Adopts directory `dir` to change its entries: `NotFound` once it has
    /// lost its name (it may still be open), as POSIX has it.
    pub(super) fn live_dir(&mut self, dir: Ino) -> Result<()> {
        self.adopt(dir)?;
        match self.inode(dir)? {
            Inode { data: Data::Dir { .. }, nlink: 0, .. } => Err(Error::NotFound),
            Inode { data: Data::Dir { .. }, .. } => Ok(()),
            _ => Err(Error::NotDir),
        }
    }

    /// The lower filesystem, for an inode that only it holds: one tagged as
    /// lower-origin and never adopted here.
    pub(super) fn lower_only(&self, ino: Ino) -> Option<(&dyn FileSystem, Ino)> {
        let lower = self.lower.as_deref()?;
        let lino = ino & !LOWER_TAG;
        (ino & LOWER_TAG != 0 && self.seen.get(&lino).is_none()).then_some((lower, lino))
    }

    /// Where `dir`'s entries live: here (`None`) or in a lower directory.
    pub(super) fn dir_source(&self, dir: Ino) -> Result<Option<(&dyn FileSystem, Ino)>> {
        match self.inodes.get(&dir) {
            Some(Inode { data: Data::Dir { lower: Some(l), .. }, .. }) => Ok(Some((self.lower()?, *l))),
            Some(Inode { data: Data::Dir { lower: None, .. }, .. }) => Ok(None),
            Some(_) => Err(Error::NotDir),
            None => self.lower_only(dir).map(Some).ok_or(Error::NotFound),
        }
    }

    pub(super) fn lower(&self) -> Result<&dyn FileSystem> {
        self.lower
            .as_deref()
            .ok_or_else(|| Error::backend(BackendFault::Contract, "lower-backed inode without a lower filesystem"))
    }

    /// Gives `ino`, if only the lower holds it so far (it was found through
    /// a merged directory), a record here, so that it can change;
    /// a directory's parents first, up to one this tree holds, so that
    /// every directory here knows its parent.
    pub(super) fn adopt(&mut self, ino: Ino) -> Result<()> {
        let mut records = Vec::new();
        let mut at = ino;
        while let Some((lower, lino)) = self.lower_only(at) {
            // A sane lower's directories nest no deeper than a path allows.
            if records.len() > MAX_PATH / 2 {
                return Err(Error::backend(
                    BackendFault::Unrepresentable,
                    format!("lower directory {lino} nests too deep"),
                ));
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
    pub(super) fn copy_up(&mut self, ino: Ino, keep: u64) -> Result<()> {
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
        // A lazy lower (a pack fetched piece by piece) is asked for every
        // missing piece of what is copied at once, before any is read: a
        // read stopping at each would fetch a piece a round, and the call
        // run again from the start each time.
        lower.loaded(lino, 0, size)?;
        let mut content = Content::default();
        let mut buf = vec![0; size.min(1 << 20) as usize];
        let mut offset = 0;
        while offset < size {
            // Never past `size`: that much is charged, and no more is kept.
            let want = (size - offset).min(buf.len() as u64) as usize;
            let n = lower.read_at(lino, offset, &mut buf[..want])?;
            if n == 0 {
                return Err(Error::backend(
                    BackendFault::Contract,
                    format!("lower file {lino} ended at {offset} of {size} bytes"),
                ));
            }
            content.write(offset, &buf[..n]);
            offset += n as u64;
        }
        self.inode_mut(ino)?.data = Data::File(content);
        Ok(())
    }
}
