//! The reads of a [`Tree`]: lookups, metadata, contents, links and
//! listings, each answered here or, for what only the lower has, by the
//! lower. A merged directory's listing interleaves both in name order.

use std::cmp::Ordering;
use std::sync::Arc;

use super::key::Probe;
use super::overlay::{from_lower, tag};
use super::*;
use crate::path::validate_name;
use crate::{BackendFault, DirEntry, Error, FileType, Ino, Metadata, OpenOptions, Result};

impl Tree {
    /// The entry `name` in `dir` here (a whiteout included).
    pub(super) fn entry(&self, dir: Ino, name: &str) -> Option<(Ino, FileType)> {
        let at = Probe::new(dir, name);
        self.dirents.get_with(|k| k.cmp_to(&at)).map(|(_, &v)| v)
    }

    /// The entry `name` in `dir`: here, or in the lower where `dir` is
    /// merged and nothing here has the name.
    pub(super) fn find(&self, dir: Ino, name: &str) -> Result<Option<(Ino, FileType)>> {
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

    pub(super) fn is_empty_dir(&self, dir: Ino) -> Result<bool> {
        if self.dir_source(dir)?.is_some() {
            // Merged: whiteouts here and the lower's entries count.
            return Ok(self.read_dir(dir, None, 1)?.is_empty());
        }
        Ok(!self.has_entries_here(dir))
    }

    /// Whether any entry (a whiteout included) is keyed under `dir` here.
    pub(super) fn has_entries_here(&self, dir: Ino) -> bool {
        self.dirents.first_where(|k| k.dir >= dir).is_some_and(|(k, _)| k.dir == dir)
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

    /// [`FileSystem::may_wait`]: a file still in the lower asks the lower.
    pub fn may_wait(&self, ino: Ino, offset: u64, len: u64) -> bool {
        let (lower, lino) = match self.inodes.get(&ino) {
            Some(Inode { data: Data::Lower { ino, .. }, .. }) => match self.lower() {
                Ok(lower) => (lower, *ino),
                Err(_) => return false,
            },
            Some(_) => return false,
            None => match self.lower_only(ino) {
                Some(at) => at,
                None => return false,
            },
        };
        lower.may_wait(lino, offset, len)
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
                if let (Some(a), Some(first), Some(last)) = (&below_after, page.first(), page.last())
                    && (first.name.as_bytes() <= a.as_bytes() || last.name.as_bytes() <= a.as_bytes())
                {
                    return Err(Error::backend(
                        BackendFault::Contract,
                        format!("lower directory {ldir} lists {:?} after {a:?}", last.name),
                    ));
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
