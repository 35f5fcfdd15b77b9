//! Writes that change names and metadata: unlink, rmdir, link, rename,
//! times and modes.

use super::*;
use crate::path::validate_name;
use crate::{BackendFault, Error, FileType, Ino, Result, SetTime, Timestamp};

impl Tree {
    /// Drops one link of `ino`; an inode left with none becomes an orphan.
    pub(super) fn drop_link(&mut self, ino: Ino, now: Timestamp) -> Result<()> {
        let i = self.inode_mut(ino)?;
        // Never below zero, whatever a lower or a log said the count was.
        i.nlink = if matches!(i.data, Data::Dir { .. }) { 0 } else { i.nlink.saturating_sub(1) };
        i.ctime = now;
        if i.nlink == 0 {
            self.orphans.insert(ino, ());
            self.unreaped.push(ino);
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
        // Before what the names are, as Linux's renameat checks: a
        // directory may not move beneath itself, nor a name onto a
        // directory above it.
        if src_kind == FileType::Dir && self.within(src, to_dir)? {
            return Err(Error::Invalid);
        }
        if let Some((dst, FileType::Dir)) = replaced
            && self.within(dst, from_dir)?
        {
            return Err(Error::NotEmpty);
        }
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

    /// Directory `dir` is `ancestor` or beneath it: a walk up from `dir`.
    /// Parents here never form a cycle (an image that has one is refused);
    /// should they, the walk ends once it has taken more steps here than
    /// there are inodes here, not under the writer lock for ever. Steps
    /// through the lower are not counted: a pack's parents are checked
    /// acyclic when it opens.
    fn within(&self, ancestor: Ino, mut dir: Ino) -> Result<bool> {
        let mut steps_here = 0;
        loop {
            if dir == ancestor {
                return Ok(true);
            }
            let parent = self.parent(dir)?;
            if parent == dir {
                return Ok(false);
            }
            steps_here += usize::from(self.inodes.get(&dir).is_some());
            if steps_here > self.inodes.len() {
                return Err(Error::backend(BackendFault::Contract, format!("directory {dir}'s parents form a cycle")));
            }
            dir = parent;
        }
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
}
