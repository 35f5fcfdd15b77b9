//! Writes that make inodes and change content: create, open, mkdir,
//! symlink, set_len, write, append, and the byte quota they charge.

use super::*;
use crate::mem::content::Content;
use crate::path::{MAX_PATH, validate_name};
use crate::{BackendFault, Error, FileType, Ino, MAX_FILE_SIZE, OpenOptions, Result, Timestamp};

impl Tree {
    // ---- writes ------------------------------------------------------------

    pub(super) fn charge_bytes(&mut self, old: u64, new: u64) -> Result<()> {
        // Sparse files count whole: three of the largest size overflow.
        let bytes = (self.usage.bytes - old).checked_add(new).ok_or(Error::NoSpace)?;
        if new > old && self.quota.max_bytes.is_some_and(|max| bytes > max) {
            return Err(Error::Quota);
        }
        self.usage.bytes = bytes;
        Ok(())
    }

    pub(super) fn touch_dir(&mut self, dir: Ino, now: Timestamp) -> Result<()> {
        let d = self.inode_mut(dir)?;
        d.mtime = now;
        d.ctime = now;
        Ok(())
    }

    /// Adds a new inode named `name` in `dir`, checking everything first.
    pub(super) fn create(&mut self, dir: Ino, name: &str, data: Data, mode: u32, now: Timestamp) -> Result<Ino> {
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
    pub(super) fn insert_new(&mut self, dir: Ino, name: &str, data: Data, mode: u32, now: Timestamp) -> Result<Ino> {
        if self.quota.max_inodes.is_some_and(|max| self.usage.inodes >= max) {
            return Err(Error::Quota);
        }
        let is_dir = matches!(data, Data::Dir { .. });
        // Upper-born inodes stay below the lower tag (and so within the
        // mount table's bits).
        if self.next_ino >= LOWER_TAG {
            return Err(Error::NoSpace);
        }
        let inode =
            Inode { data, mode: mode & 0o7777, nlink: if is_dir { 2 } else { 1 }, atime: now, mtime: now, ctime: now };
        let ino = self.next_ino;
        self.charge_bytes(0, inode.bytes(ino))?;
        self.next_ino += 1;
        self.usage.inodes += 1;
        self.usage.bytes = self.usage.bytes.saturating_add(INODE_BYTES);
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
        check_target(target)?;
        self.create(dir, name, Data::Symlink(target.into()), 0o777, now)
    }

    /// A regular file's inode, to read before changing it.
    pub(super) fn file(&self, ino: Ino) -> Result<&Inode> {
        let i = self.inode(ino)?;
        match i.data {
            Data::File(_) | Data::Lower { .. } => Ok(i),
            Data::Dir { .. } => Err(Error::IsDir),
            Data::Symlink(_) => Err(Error::Invalid),
        }
    }

    /// A file's size once its bytes are copied up (which is when they count).
    pub(super) fn upper_size(&mut self, ino: Ino) -> Result<u64> {
        self.copy_up(ino, u64::MAX)?;
        Ok(self.file(ino)?.size())
    }

    /// A file's inode to change, its bytes already copied up by the caller
    /// (who needed the upper size first).
    pub(super) fn file_mut(&mut self, ino: Ino) -> Result<&mut Inode> {
        let i = self.inode_mut(ino)?;
        match i.data {
            Data::File(_) => Ok(i),
            Data::Lower { .. } => Err(Error::backend(BackendFault::Contract, "copy-up left a lower file")),
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
    pub(super) fn size_unchanged(&self, ino: Ino, offset: u64) -> Result<u64> {
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
    pub(super) fn write_sized(
        &mut self,
        ino: Ino,
        old: u64,
        offset: u64,
        data: &[u8],
        now: Timestamp,
    ) -> Result<usize> {
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
}

/// A symbolic link's target as `symlink` takes one (and a pack can hold).
pub(super) fn check_target(target: &str) -> Result<()> {
    if target.is_empty() {
        return Err(Error::NotFound);
    }
    if target.len() > MAX_PATH {
        return Err(Error::NameTooLong);
    }
    if target.contains('\0') {
        return Err(Error::Invalid);
    }
    Ok(())
}
