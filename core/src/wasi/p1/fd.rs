//! The `fd_*` functions: reads, writes, seeks, stats and listings of open
//! descriptors, and the table's own calls (close, renumber, prestat).

use std::sync::Arc;

use super::abi::{self, Errno, Fdstat, Filestat, fdflags, filetype, fstflags, rights, whence};
use super::memory::{
    COPY_CHUNK, Iovecs, Memory, at_most, check, fill_bytes, with_bytes, write_bytes, write_u32, write_u64,
};
use super::{Entry, File, Listing, Result, Wasi};
use crate::wasi::descriptor::Descriptor;
use crate::{Metadata, SetTime, Timestamp};

/// Where a write goes.
#[derive(Clone, Copy)]
enum WriteAt {
    /// The descriptor's position (`fd_write`).
    Cursor,
    /// This offset (`fd_pwrite`).
    Offset(u64),
}

impl Wasi {
    /// `fd_write`: writes the iovecs at the position (the end, in append
    /// mode); `*nwritten` gets the count.
    pub fn fd_write<M: Memory + ?Sized>(&mut self, mem: &mut M, fd: u32, iovs: u32, len: u32, nwritten: u32) -> Result {
        let iovs = Iovecs::new(mem, iovs, len)?;
        let n = self.write(mem, fd, &iovs, WriteAt::Cursor, nwritten)?;
        write_u32(mem, nwritten, n)
    }

    /// `fd_pwrite`: writes at `offset` without moving the position (at the
    /// end in append mode, as Linux `pwrite`).
    pub fn fd_pwrite<M: Memory + ?Sized>(
        &mut self,
        mem: &mut M,
        fd: u32,
        iovs: u32,
        len: u32,
        offset: u64,
        nwritten: u32,
    ) -> Result {
        let iovs = Iovecs::new(mem, iovs, len)?;
        let n = self.write(mem, fd, &iovs, WriteAt::Offset(offset), nwritten)?;
        write_u32(mem, nwritten, n)
    }

    fn write<M: Memory + ?Sized>(&mut self, mem: &mut M, fd: u32, iovs: &Iovecs, at: WriteAt, out: u32) -> Result<u32> {
        let Wasi { fds, scratch, .. } = self;
        match fds.get_mut(fd)? {
            Entry::File(f) => {
                // wasmtime's preview1 leaves this to the OS, whose write(2)
                // refuses a descriptor not open for writing with EBADF
                // before anything else (the preopen's access included).
                if !f.desc.flags().write {
                    return Err(Errno::BADF);
                }
                check(mem, out, 4)?;
                let start = match at {
                    WriteAt::Cursor => f.position,
                    WriteAt::Offset(offset) => offset,
                };
                // One call, one change: every buffer's bytes written whole
                // or not at all (one quota check, one journal record), in
                // every build, whether or not the memory lends them.
                let bytes = iovs.gather(mem, scratch)?;
                let total = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
                let written = match (bytes.is_empty(), f.append) {
                    (true, _) => Ok(()),
                    (false, true) => f.desc.append(bytes).map(|end| {
                        if let WriteAt::Cursor = at {
                            f.position = end;
                        }
                    }),
                    (false, false) => {
                        start.checked_add(u64::from(total)).ok_or(Errno::FBIG)?;
                        f.desc.write(bytes, start).map(drop)
                    }
                };
                // A large write's copy is not kept for the guest's life.
                if scratch.capacity() > COPY_CHUNK {
                    *scratch = Vec::new();
                }
                written?;
                if let (WriteAt::Cursor, false) = (at, f.append) {
                    // Each byte was written below 2^64: so is the end.
                    f.position = start.saturating_add(u64::from(total));
                }
                Ok(total)
            }
            Entry::Stdout(o) | Entry::Stderr(o) => {
                if let WriteAt::Offset(_) = at {
                    return Err(Errno::SPIPE);
                }
                check(mem, out, 4)?;
                iovs.each(mem, |mem, buf, len, _| with_bytes(mem, buf, len, scratch, |b| o.write(b).map(|()| b.len())))
            }
            _ => Err(Errno::BADF),
        }
    }

    /// `fd_read`: reads into the iovecs from the position; `*nread` gets
    /// the count (0 at the end).
    pub fn fd_read<M: Memory + ?Sized>(&mut self, mem: &mut M, fd: u32, iovs: u32, len: u32, nread: u32) -> Result {
        let iovs = Iovecs::new(mem, iovs, len)?;
        let Wasi { fds, scratch, .. } = self;
        let total = match fds.get_mut(fd)? {
            Entry::File(f) => {
                check(mem, nread, 4)?;
                let total = read_file(mem, &f.desc, &iovs, f.position, scratch)?;
                f.position += u64::from(total);
                total
            }
            Entry::Stdin(input) => {
                check(mem, nread, 4)?;
                // One read, into the first buffer that takes bytes: a
                // second would wait for more input.
                match iovs.first() {
                    Some((buf, len)) => fill_bytes(mem, buf, len, scratch, |b| input.read(b))?,
                    None => 0,
                }
            }
            _ => return Err(Errno::BADF),
        };
        write_u32(mem, nread, total)
    }

    /// `fd_pread`: reads at `offset` without moving the position.
    pub fn fd_pread<M: Memory + ?Sized>(
        &mut self,
        mem: &mut M,
        fd: u32,
        iovs: u32,
        len: u32,
        offset: u64,
        nread: u32,
    ) -> Result {
        let iovs = Iovecs::new(mem, iovs, len)?;
        let Wasi { fds, scratch, .. } = self;
        let n = match fds.get(fd)? {
            Entry::File(f) => {
                check(mem, nread, 4)?;
                read_file(mem, &f.desc, &iovs, offset, scratch)?
            }
            Entry::Stdin(_) => return Err(Errno::SPIPE),
            _ => return Err(Errno::BADF),
        };
        write_u32(mem, nread, n)
    }

    /// `fd_seek`: moves the position; `*newoffset` gets it.
    pub fn fd_seek<M: Memory + ?Sized>(&mut self, mem: &mut M, fd: u32, offset: i64, how: i32, out: u32) -> Result {
        let how = abi::tag::<u8>(how, 3)?;
        let f = self.seekable(fd)?;
        check(mem, out, 8)?;
        let pos = match how {
            whence::SET => u64::try_from(offset).map_err(|_| Errno::INVAL)?,
            whence::CUR => f.position.checked_add_signed(offset).ok_or(Errno::INVAL)?,
            _ => f.desc.stat()?.size.checked_add_signed(offset).ok_or(Errno::INVAL)?,
        };
        f.position = pos;
        write_u64(mem, out, pos)
    }

    /// `fd_tell`: the position.
    pub fn fd_tell<M: Memory + ?Sized>(&mut self, mem: &mut M, fd: u32, out: u32) -> Result {
        let pos = self.seekable(fd)?.position;
        write_u64(mem, out, pos)
    }

    /// A file to seek: stdio is `SPIPE`, anything else `BADF`.
    fn seekable(&mut self, fd: u32) -> Result<&mut File> {
        match self.fds.get_mut(fd)? {
            Entry::File(f) => Ok(f),
            Entry::Stdin(_) | Entry::Stdout(_) | Entry::Stderr(_) => Err(Errno::SPIPE),
            Entry::Dir(_) => Err(Errno::BADF),
        }
    }

    /// `fd_close`: any descriptor, stdio and preopens included.
    pub fn fd_close<M: Memory + ?Sized>(&mut self, _mem: &mut M, fd: u32) -> Result {
        self.fds.remove(fd).map(drop)
    }

    /// `fd_renumber`: moves `from` to `to`, closing what `to` was; both
    /// must be open.
    pub fn fd_renumber<M: Memory + ?Sized>(&mut self, _mem: &mut M, from: u32, to: u32) -> Result {
        self.fds.renumber(from, to)
    }

    /// `fd_fdstat_get`.
    pub fn fd_fdstat_get<M: Memory + ?Sized>(&mut self, mem: &mut M, fd: u32, out: u32) -> Result {
        let stat = match self.fds.get(fd)? {
            Entry::Stdin(i) => stdio_fdstat(i.is_terminal(), rights::FD_READ),
            Entry::Stdout(o) | Entry::Stderr(o) => stdio_fdstat(o.is_terminal(), rights::FD_WRITE),
            Entry::Dir(d) if d.preopen.is_some() => Fdstat {
                filetype: filetype::DIRECTORY,
                flags: 0,
                rights_base: rights::PREOPEN_BASE,
                rights_inheriting: rights::PREOPEN_INHERITING,
            },
            Entry::Dir(d) => desc_fdstat(&d.desc, 0),
            Entry::File(f) => {
                let mut flags = 0;
                if f.append {
                    flags |= fdflags::APPEND;
                }
                if f.nonblock {
                    flags |= fdflags::NONBLOCK;
                }
                desc_fdstat(&f.desc, flags)
            }
        };
        write_bytes(mem, out, &stat.encode())
    }

    /// `fd_fdstat_set_flags`: only `APPEND` and `NONBLOCK` change, as in
    /// wasmtime; the sync flags are `INVAL`.
    pub fn fd_fdstat_set_flags<M: Memory + ?Sized>(&mut self, _mem: &mut M, fd: u32, flags: i32) -> Result {
        let flags = abi::flags::<u16>(flags, fdflags::ALL)?;
        let f = self.file_mut(fd)?;
        if flags & (fdflags::DSYNC | fdflags::SYNC | fdflags::RSYNC) != 0 {
            return Err(Errno::INVAL);
        }
        f.append = flags & fdflags::APPEND != 0;
        f.nonblock = flags & fdflags::NONBLOCK != 0;
        Ok(())
    }

    /// `fd_fdstat_set_rights`: rights are not kept, so `NOTSUP`, as in
    /// wasmtime.
    pub fn fd_fdstat_set_rights<M: Memory + ?Sized>(&mut self, _mem: &mut M, fd: u32, base: i64, inh: i64) -> Result {
        abi::flags::<u64>(base, rights::ALL)?;
        abi::flags::<u64>(inh, rights::ALL)?;
        self.desc(fd)?;
        Err(Errno::NOTSUP)
    }

    /// `fd_filestat_get`.
    pub fn fd_filestat_get<M: Memory + ?Sized>(&mut self, mem: &mut M, fd: u32, out: u32) -> Result {
        let stat = match self.fds.get(fd)? {
            Entry::Stdin(i) => Filestat { filetype: stdio_type(i.is_terminal()), ..Filestat::default() },
            Entry::Stdout(o) | Entry::Stderr(o) => {
                Filestat { filetype: stdio_type(o.is_terminal()), ..Filestat::default() }
            }
            Entry::Dir(d) => filestat(d.desc.metadata_hash().0, d.desc.stat()?)?,
            Entry::File(f) => filestat(f.desc.metadata_hash().0, f.desc.stat()?)?,
        };
        write_bytes(mem, out, &stat.encode())
    }

    /// `fd_filestat_set_size`: `ftruncate`.
    pub fn fd_filestat_set_size<M: Memory + ?Sized>(&mut self, _mem: &mut M, fd: u32, size: u64) -> Result {
        Ok(self.file(fd)?.desc.set_size(size)?)
    }

    /// `fd_filestat_set_times`: `futimens`; not of a preopen (as wasmtime).
    pub fn fd_filestat_set_times<M: Memory + ?Sized>(
        &mut self,
        _mem: &mut M,
        fd: u32,
        atim: u64,
        mtim: u64,
        flags: i32,
    ) -> Result {
        let (atime, mtime) = set_times(atim, mtim, flags)?;
        match self.fds.get(fd)? {
            Entry::File(super::File { desc, .. }) | Entry::Dir(super::Dir { desc, preopen: None, .. }) => {
                Ok(desc.set_times(atime, mtime)?)
            }
            // wasmtime holds a preopen as an `O_PATH` descriptor, whose
            // times it cannot set (setting none succeeds, where it may).
            Entry::Dir(super::Dir { desc, .. }) => {
                desc.set_times(SetTime::Keep, SetTime::Keep)?;
                if (atime, mtime) == (SetTime::Keep, SetTime::Keep) { Ok(()) } else { Err(Errno::BADF) }
            }
            _ => Err(Errno::BADF),
        }
    }

    /// `fd_advise`: a hint, taken and ignored (files only).
    pub fn fd_advise<M: Memory + ?Sized>(
        &mut self,
        _mem: &mut M,
        fd: u32,
        _offset: u64,
        _len: u64,
        advice: i32,
    ) -> Result {
        abi::tag::<u8>(advice, 6)?;
        Ok(self.file(fd)?.desc.advise()?)
    }

    /// `fd_allocate`: `NOTSUP`, as in wasmtime (files only).
    pub fn fd_allocate<M: Memory + ?Sized>(&mut self, _mem: &mut M, fd: u32, _offset: u64, _len: u64) -> Result {
        self.file(fd)?;
        Err(Errno::NOTSUP)
    }

    /// `fd_datasync` (files only, as in wasmtime).
    pub fn fd_datasync<M: Memory + ?Sized>(&mut self, _mem: &mut M, fd: u32) -> Result {
        Ok(self.file(fd)?.desc.sync()?)
    }

    /// `fd_sync` (files only, as in wasmtime).
    pub fn fd_sync<M: Memory + ?Sized>(&mut self, _mem: &mut M, fd: u32) -> Result {
        Ok(self.file(fd)?.desc.sync()?)
    }

    /// `fd_prestat_get`: a preopen's name length.
    pub fn fd_prestat_get<M: Memory + ?Sized>(&mut self, mem: &mut M, fd: u32, out: u32) -> Result {
        let Entry::Dir(super::Dir { preopen: Some(path), .. }) = self.fds.get(fd)? else {
            return Err(Errno::BADF);
        };
        let len = u32::try_from(path.len()).map_err(|_| Errno::OVERFLOW)?;
        let mut rec = [0u8; 8];
        rec[4..].copy_from_slice(&len.to_le_bytes());
        write_bytes(mem, out, &rec)
    }

    /// `fd_prestat_dir_name`: a preopen's name, without a NUL.
    pub fn fd_prestat_dir_name<M: Memory + ?Sized>(&mut self, mem: &mut M, fd: u32, buf: u32, len: u32) -> Result {
        let Entry::Dir(super::Dir { preopen: Some(path), .. }) = self.fds.get(fd)? else {
            return Err(Errno::NOTDIR);
        };
        if path.len() > len as usize {
            return Err(Errno::NAMETOOLONG);
        }
        write_bytes(mem, buf, path.as_bytes())
    }

    /// `fd_readdir`: as many entries as fit in `buf`, from `cookie` on,
    /// the last cut off where the buffer ends; `*used` gets the bytes
    /// written (less than `len` only when the listing ended).
    pub fn fd_readdir<M: Memory + ?Sized>(
        &mut self,
        mem: &mut M,
        fd: u32,
        buf: u32,
        len: u32,
        cookie: u64,
        used: u32,
    ) -> Result {
        let Entry::Dir(dir) = self.fds.get_mut(fd)? else { return Err(Errno::BADF) };
        check(mem, buf, u64::from(len))?;
        check(mem, used, 4)?;
        let node = Arc::clone(dir.desc.lister()?);
        let mut out = DirentWriter { mem, at: buf, cap: len };
        let mut pos = cookie;
        // `.` and `..` first, both with the directory's own inode (as
        // wasmtime: the parent's is not known to a sandboxed walk).
        let own = dir.desc.metadata_hash().0;
        for (i, name) in [".", ".."].into_iter().enumerate().skip(usize::try_from(cookie).unwrap_or(usize::MAX)) {
            if !out.entry(i as u64 + 1, own, filetype::DIRECTORY, name) {
                return write_u32(mem, used, len);
            }
            pos = i as u64 + 1;
        }
        // Where the directory's own entries resume: after the entry whose
        // cookie is `pos`, if the last call ended with it; else from the
        // start, skipping as many entries as wasmtime would.
        let mut after: Option<Arc<str>> = None;
        let mut skip = 0u64;
        if pos > 2 {
            match dir.listing.name_at(pos) {
                Some(name) => after = Some(Arc::clone(name)),
                None => skip = pos - 2,
            }
        }
        let mut last = None;
        let mut full = false;
        while !full {
            // Each entry takes at least a header and a byte of name.
            let want = (out.cap as usize / (abi::DIRENT_SIZE + 1) + 1).min(256);
            let page = node.fs.read_dir(node.ino, after.as_deref(), if skip > 0 { 256 } else { want })?;
            let Some(end) = page.last() else { break };
            after = Some(Arc::clone(&end.name));
            for e in page {
                if skip > 0 {
                    skip -= 1;
                    continue;
                }
                let ino = dir.desc.metadata_hash_of(e.ino).0;
                pos += 1;
                let whole = out.fits(&e.name);
                full = !out.entry(pos, ino, abi::filetype_of(e.kind), &e.name);
                if whole {
                    last = Some((pos, e.name));
                }
                if full {
                    break;
                }
            }
        }
        let written = len - out.cap;
        // A call that wrote no whole entry leaves the place where the
        // guest will ask again.
        if last.is_some() {
            dir.listing = Listing { last };
        }
        write_u32(mem, used, written)
    }
}

/// Writes dirents into the guest's buffer, cutting the last one off where
/// the buffer ends, as wasmtime does.
struct DirentWriter<'m, M: Memory + ?Sized> {
    mem: &'m mut M,
    at: u32,
    cap: u32,
}

impl<M: Memory + ?Sized> DirentWriter<'_, M> {
    /// Whether an entry named `name` fits whole in what is left.
    fn fits(&self, name: &str) -> bool {
        (abi::DIRENT_SIZE + name.len()) as u64 <= u64::from(self.cap)
    }

    /// Writes one entry; false once the buffer is full.
    fn entry(&mut self, next: u64, ino: u64, kind: u8, name: &str) -> bool {
        // A name is at most 255 bytes; one past 4 GiB would fit no buffer.
        let Ok(len) = u32::try_from(name.len()) else { return false };
        let header = abi::dirent(next, ino, len, kind);
        self.put(&header) && self.put(name.as_bytes())
    }

    fn put(&mut self, bytes: &[u8]) -> bool {
        let n = at_most(bytes.len(), self.cap);
        // In bounds: the whole buffer was checked. Past its last byte `at`
        // is never used again, and may be 2^32 at the top of memory.
        self.mem.write(self.at, &bytes[..n as usize]);
        self.cap -= n;
        self.at = self.at.wrapping_add(n);
        self.cap > 0
    }
}

/// Reads a file into the iovecs from `offset`, stopping at the end. With
/// nothing to read into, the descriptor must still allow reading.
///
/// A read of a lazy pack whose bytes are not all here fails whole, before
/// any byte reaches the guest ([`Descriptor::loaded`]): the embedder
/// fetches what it wanted and runs the call again
/// ([`calls::loading`](super::calls::loading)). Read piece by
/// piece, it would stop short at the first missing extent.
fn read_file<M: Memory + ?Sized>(
    mem: &mut M,
    desc: &Descriptor,
    iovs: &Iovecs,
    offset: u64,
    scratch: &mut Vec<u8>,
) -> Result<u32> {
    match iovs.total() {
        0 => drop(desc.reader()?),
        total => desc.loaded(offset, total)?,
    }
    iovs.each(mem, |mem, buf, len, done| {
        let mut at = offset.checked_add(u64::from(done)).ok_or(Errno::INVAL)?;
        fill_bytes(mem, buf, len, scratch, |b| {
            let n = desc.read_into(b, at)?;
            at += n as u64;
            Ok(n)
        })
    })
}

fn stdio_type(terminal: bool) -> u8 {
    if terminal { filetype::CHARACTER_DEVICE } else { filetype::UNKNOWN }
}

fn stdio_fdstat(terminal: bool, rights: u64) -> Fdstat {
    Fdstat { filetype: stdio_type(terminal), flags: 0, rights_base: rights, rights_inheriting: rights }
}

/// A descriptor's rights, as wasmtime derives them from its flags.
fn desc_fdstat(d: &Descriptor, mut flags: u16) -> Fdstat {
    let f = d.flags();
    let mut base = rights::ALL;
    if d.is_dir() {
        base &= !(rights::FD_SEEK | rights::FD_FILESTAT_SET_SIZE | rights::PATH_FILESTAT_SET_SIZE);
    }
    if !f.read {
        base &= !(rights::FD_READ | rights::FD_READDIR);
    }
    if !f.write {
        base &= !rights::FD_WRITE;
    }
    if f.data_sync {
        flags |= fdflags::DSYNC;
    }
    if f.read_sync {
        flags |= fdflags::RSYNC;
    }
    if f.file_sync {
        flags |= fdflags::SYNC;
    }
    let filetype = if d.is_dir() { filetype::DIRECTORY } else { filetype::REGULAR_FILE };
    Fdstat { filetype, flags, rights_base: base, rights_inheriting: base }
}

/// A `filestat` of metadata, as wasmtime fills it: device 1, the inode the
/// lower word of the metadata hash.
pub(super) fn filestat(ino: u64, m: Metadata) -> Result<Filestat> {
    Ok(Filestat {
        dev: 1,
        ino,
        filetype: abi::filetype_of(m.kind),
        nlink: m.nlink,
        size: m.size,
        atim: abi::nanos(m.atime)?,
        mtim: abi::nanos(m.mtime)?,
        ctim: abi::nanos(m.ctime)?,
    })
}

/// The two `set_times` of a `fstflags` and its times: a time both set and
/// `NOW` is `INVAL`.
pub(super) fn set_times(atim: u64, mtim: u64, flags: i32) -> Result<(SetTime, SetTime)> {
    let flags = abi::flags::<u16>(flags, fstflags::ALL)?;
    let one = |t: u64, set: u16, now: u16| match (flags & set != 0, flags & now != 0) {
        (true, true) => Err(Errno::INVAL),
        (true, false) => Ok(SetTime::At(Timestamp::new(t / 1_000_000_000, (t % 1_000_000_000) as u32))),
        (false, true) => Ok(SetTime::Now),
        (false, false) => Ok(SetTime::Keep),
    };
    Ok((one(atim, fstflags::ATIM, fstflags::ATIM_NOW)?, one(mtim, fstflags::MTIM, fstflags::MTIM_NOW)?))
}
