//! The `path_*` functions: everything named by a path under a directory
//! descriptor. The walk and every check are the descriptor model's; this
//! reads the guest's arguments and writes its results.

use super::abi::{self, Errno, LOOKUP_SYMLINK_FOLLOW, fdflags, oflags, rights};
use super::fd::{filestat, set_times};
use super::memory::{Memory, at_most, check, read_str, write_bytes, write_u32};
use super::{Dir, Entry, File, Listing, Result, Wasi};
use crate::path::MAX_PATH;
use crate::wasi::descriptor::{Flags, OpenFlags};

/// A path argument: at most `MAX_PATH` bytes of UTF-8.
fn path<M: Memory + ?Sized>(mem: &M, ptr: u32, len: u32) -> Result<String> {
    read_str(mem, ptr, len, MAX_PATH)
}

fn follows(flags: i32) -> Result<bool> {
    Ok(abi::flags::<u32>(flags, LOOKUP_SYMLINK_FOLLOW)? != 0)
}

impl Wasi {
    /// `path_create_directory`: `mkdirat`.
    pub fn path_create_directory<M: Memory + ?Sized>(&mut self, mem: &mut M, fd: u32, p: u32, len: u32) -> Result {
        let dir = self.dir(fd)?;
        Ok(dir.create_directory_at(&path(mem, p, len)?)?)
    }

    /// `path_filestat_get`: `fstatat`.
    pub fn path_filestat_get<M: Memory + ?Sized>(
        &mut self,
        mem: &mut M,
        fd: u32,
        flags: i32,
        p: u32,
        len: u32,
        out: u32,
    ) -> Result {
        let follow = follows(flags)?;
        let dir = self.dir(fd)?;
        let p = path(mem, p, len)?;
        check(mem, out, u64::from(abi::FILESTAT_SIZE))?;
        let (ino, meta) = dir.stat_at(follow, &p, None)?;
        let stat = filestat(dir.metadata_hash_of(ino).0, meta)?;
        write_bytes(mem, out, &stat.encode())
    }

    /// `path_filestat_set_times`: `utimensat`.
    #[allow(clippy::too_many_arguments, reason = "the preview1 signature")]
    pub fn path_filestat_set_times<M: Memory + ?Sized>(
        &mut self,
        mem: &mut M,
        fd: u32,
        flags: i32,
        p: u32,
        len: u32,
        atim: u64,
        mtim: u64,
        fst: i32,
    ) -> Result {
        let follow = follows(flags)?;
        let (atime, mtime) = set_times(atim, mtim, fst)?;
        let dir = self.dir(fd)?;
        Ok(dir.set_times_at(follow, &path(mem, p, len)?, atime, mtime)?)
    }

    /// `path_link`: `linkat`.
    #[allow(clippy::too_many_arguments, reason = "the preview1 signature")]
    pub fn path_link<M: Memory + ?Sized>(
        &mut self,
        mem: &mut M,
        old_fd: u32,
        old_flags: i32,
        old: u32,
        old_len: u32,
        new_fd: u32,
        new: u32,
        new_len: u32,
    ) -> Result {
        let follow = follows(old_flags)?;
        let (from, to) = (self.dir(old_fd)?, self.dir(new_fd)?);
        let (old, new) = (path(mem, old, old_len)?, path(mem, new, new_len)?);
        Ok(from.link_at(follow, &old, to, &new)?)
    }

    /// `path_open`: `openat`. Of the rights only `FD_READ` and `FD_WRITE`
    /// count, as in wasmtime; `*opened` gets the new descriptor.
    #[allow(clippy::too_many_arguments, reason = "the preview1 signature")]
    pub fn path_open<M: Memory + ?Sized>(
        &mut self,
        mem: &mut M,
        fd: u32,
        dirflags: i32,
        p: u32,
        len: u32,
        oflags: i32,
        base: i64,
        inheriting: i64,
        fdflags: i32,
        opened: u32,
    ) -> Result {
        let follow = follows(dirflags)?;
        let o = abi::flags::<u16>(oflags, oflags::ALL)?;
        let base = abi::flags::<u64>(base, rights::ALL)?;
        abi::flags::<u64>(inheriting, rights::ALL)?;
        let fdf = abi::flags::<u16>(fdflags, fdflags::ALL)?;
        let p = path(mem, p, len)?;
        let dir = match self.fds.get(fd)? {
            Entry::Dir(d) => &d.desc,
            Entry::File(_) => return Err(Errno::NOTDIR),
            _ => return Err(Errno::BADF),
        };
        check(mem, opened, 4)?;
        if self.fds.open() >= self.fds.max {
            return Err(Errno::MFILE);
        }
        let open = OpenFlags {
            create: o & oflags::CREAT != 0,
            directory: o & oflags::DIRECTORY != 0,
            exclusive: o & oflags::EXCL != 0,
            truncate: o & oflags::TRUNC != 0,
        };
        let flags = Flags {
            read: base & rights::FD_READ != 0,
            write: base & rights::FD_WRITE != 0,
            mutate_directory: false,
            file_sync: fdf & fdflags::SYNC != 0,
            data_sync: fdf & fdflags::DSYNC != 0,
            read_sync: fdf & fdflags::RSYNC != 0,
        };
        let desc = dir.open_at(follow, &p, open, flags)?;
        let entry = if desc.is_dir() {
            Entry::Dir(Dir { desc, preopen: None, listing: Listing::default() })
        } else {
            Entry::File(File {
                desc,
                position: 0,
                append: fdf & fdflags::APPEND != 0,
                nonblock: fdf & fdflags::NONBLOCK != 0,
            })
        };
        let new = self.fds.push(entry)?;
        write_u32(mem, opened, new)
    }

    /// `path_readlink`: the target, cut to the buffer (no NUL); `*used`
    /// gets its length.
    #[allow(clippy::too_many_arguments, reason = "the preview1 signature")]
    pub fn path_readlink<M: Memory + ?Sized>(
        &mut self,
        mem: &mut M,
        fd: u32,
        p: u32,
        len: u32,
        buf: u32,
        buf_len: u32,
        used: u32,
    ) -> Result {
        let dir = self.dir(fd)?;
        let p = path(mem, p, len)?;
        check(mem, buf, u64::from(buf_len))?;
        check(mem, used, 4)?;
        let target = dir.readlink_at(&p)?;
        let n = at_most(target.len(), buf_len);
        write_bytes(mem, buf, &target.as_bytes()[..n as usize])?;
        write_u32(mem, used, n)
    }

    /// `path_remove_directory`: `unlinkat(AT_REMOVEDIR)`.
    pub fn path_remove_directory<M: Memory + ?Sized>(&mut self, mem: &mut M, fd: u32, p: u32, len: u32) -> Result {
        let dir = self.dir(fd)?;
        Ok(dir.remove_directory_at(&path(mem, p, len)?)?)
    }

    /// `path_unlink_file`: `unlinkat`.
    pub fn path_unlink_file<M: Memory + ?Sized>(&mut self, mem: &mut M, fd: u32, p: u32, len: u32) -> Result {
        let dir = self.dir(fd)?;
        Ok(dir.unlink_file_at(&path(mem, p, len)?)?)
    }

    /// `path_rename`: `renameat`.
    #[allow(clippy::too_many_arguments, reason = "the preview1 signature")]
    pub fn path_rename<M: Memory + ?Sized>(
        &mut self,
        mem: &mut M,
        fd: u32,
        old: u32,
        old_len: u32,
        new_fd: u32,
        new: u32,
        new_len: u32,
    ) -> Result {
        let (from, to) = (self.dir(fd)?, self.dir(new_fd)?);
        let (old, new) = (path(mem, old, old_len)?, path(mem, new, new_len)?);
        Ok(from.rename_at(&old, to, &new)?)
    }

    /// `path_symlink`: `symlinkat(old, fd, new)`.
    pub fn path_symlink<M: Memory + ?Sized>(
        &mut self,
        mem: &mut M,
        old: u32,
        old_len: u32,
        fd: u32,
        new: u32,
        new_len: u32,
    ) -> Result {
        let dir = self.dir(fd)?;
        let (target, new) = (path(mem, old, old_len)?, path(mem, new, new_len)?);
        Ok(dir.symlink_at(&target, &new)?)
    }
}
