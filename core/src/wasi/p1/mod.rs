//! `wasi_snapshot_preview1`, served from PackFS: every function of the witx
//! that wasmtime-wasi 48 ships, over the [`descriptor`](super::descriptor)
//! model, a guest [`Memory`] and an embedder's [`Platform`] and stdio.
//!
//! One [`Wasi`] is one guest's state: its descriptor table, arguments,
//! environment, stdio and platform. Each preview1 function is a method
//! taking the guest's memory and the call's raw arguments; it returns the
//! errno ([`Errno`]) the guest sees, or for `proc_exit` an [`Exit`]. The
//! host binds the methods into wasmtime's core-module linker; the browser
//! build binds each to an export of its own, which a guest's trampoline
//! calls, and `proc_exit` through [`calls::call`].
//!
//! ```
//! use std::sync::Arc;
//! use packfs_core::MemFs;
//! use packfs_core::wasi::{Access, p1::{Wasi, io::Capture}};
//! # use packfs_core::wasi::p1::io::Platform;
//! # struct Fixed;
//! # impl Platform for Fixed {
//! #     fn wall_clock(&self) -> packfs_core::Timestamp { Default::default() }
//! #     fn monotonic_clock(&self) -> u64 { 0 }
//! #     fn random(&mut self, buf: &mut [u8]) { buf.fill(4) }
//! #     fn sleep(&mut self, _: u64) {}
//! # }
//!
//! let out = Capture::new(1 << 20);
//! let mut wasi = Wasi::builder(Box::new(Fixed))
//!     .arg("guest")
//!     .stdout(Box::new(out.clone()))
//!     .preopen("/data", Arc::new(MemFs::new()), Access::ReadWrite)
//!     .build()?;
//! // The guest's memory: an iovec at 0 for the 3 bytes at 8.
//! let mut mem = vec![0u8; 64];
//! mem[0..4].copy_from_slice(&8u32.to_le_bytes());
//! mem[4..8].copy_from_slice(&3u32.to_le_bytes());
//! mem[8..11].copy_from_slice(b"hi\n");
//! wasi.fd_write(&mut mem[..], 1, 0, 1, 16)?;
//! assert_eq!(out.contents(), b"hi\n");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Behaviour is wasmtime 48's native preview1 on a real directory (the
//! guest tests' oracle), but for these deliberate differences:
//!
//! - **A bad pointer is `EFAULT`**, where wasmtime traps: a pointer or
//!   length outside memory never ends the guest or the host. Results are
//!   written only after the call succeeds, and their pointers are checked
//!   before anything changes, so a call that fails with `EFAULT` did
//!   nothing. Misaligned pointers are accepted (wasmtime traps).
//! - **An argument that is no value of its type is `EINVAL`** (flag bits
//!   or an enum tag the witx does not define; `EOVERFLOW` for one too wide
//!   for its type), where wasmtime traps.
//! - **Reads and writes take every iovec**, as `readv(2)`/`writev(2)` do
//!   on a regular file; wasmtime moves only the first non-empty one. More
//!   than 1,024 iovecs (`IOV_MAX`) is `EINVAL`, as `readv(2)` says.
//! - **`fd_readdir` resumes after the last name listed**, so a call costs
//!   O(entries returned) and entries removed meanwhile (a guest removing
//!   what it lists) neither repeat nor hide others; wasmtime lists the
//!   directory from the start on each call and skips as many entries as
//!   the cookie says (O(n²) over a directory). Cookies are the same
//!   numbers.
//! - **`proc_exit` takes any status**; wasmtime traps on one of 126 or
//!   more.
//! - **A guest holds at most [`WasiBuilder::max_fds`] descriptors**
//!   (`EMFILE` after), so it cannot grow the host's table without bound.
//! - **Paths answer as Linux does where wasmtime (cap-std) does not**:
//!   opening a symlink with `O_DIRECTORY` and without following it is
//!   `ENOTDIR` (wasmtime: `ELOOP`); a path ending in `/` must name a
//!   directory, through a symlink too (wasmtime: `stat("link-to-file/")`
//!   without following succeeds, `rmdir("dir/")` is `EINVAL`), except
//!   where Linux looks no further than the name: `path_open` with
//!   `O_CREAT` is `EISDIR` before the last name is looked up, and
//!   `path_unlink_file` refuses the name for what it is itself (a symlink,
//!   not followed, is `ENOTDIR`). A path ending in `/` whose last symlink
//!   leads out of the preopen is `EPERM` for every call, as leaving it,
//!   whatever else is wrong with the call (but a missing old name in
//!   `path_link`, below); wasmtime answers so to most, but `mkdir`
//!   `EEXIST`, `rename` `ENOTDIR` and `path_open` with `O_CREAT` `EISDIR`,
//!   and `stat` without following succeeds.
//! - **`path_link` follows a symlink in the old path when asked**
//!   (`linkat(AT_SYMLINK_FOLLOW)`); wasmtime refuses with `EINVAL`. Like
//!   `linkat(2)`, it answers for the old path before the new one (a
//!   missing old name is `ENOENT` whatever the new one is).
//! - **`path_filestat_set_times` changing neither time** walks to the
//!   last name's directory and stops there (Linux's `utimensat` looks at
//!   nothing; wasmtime resolves the last symlink too), refusing only a
//!   path that leaves the preopen.
//! - **`poll_oneoff` reports every subscription ready when it returns**: a
//!   clock already due beside a ready descriptor too (wasmtime's
//!   zero-length sleep yields once first, so it reports the descriptor
//!   alone).

// Guest pointers and lengths are 32 bits and the web build's usize is too:
// a silent truncation here reads or writes the wrong guest bytes.
#![warn(clippy::cast_possible_truncation)]

pub mod abi;
pub mod calls;
mod fd;
pub mod io;
mod memory;
mod path;
mod proc;

use std::collections::BTreeSet;
use std::sync::Arc;

pub use abi::Errno;
pub use io::{Input, Output, Platform};
pub use memory::Memory;

use super::Access;
use super::descriptor::{Descriptor, device_number};
use crate::FileSystem;

/// The result of a preview1 function: success, or the errno the guest sees.
pub type Result<T = ()> = std::result::Result<T, Errno>;

/// `proc_exit` was called: the guest ends with this status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit(pub u32);

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the guest exited with status {}", self.0)
    }
}

impl std::error::Error for Exit {}

/// Default for [`WasiBuilder::max_fds`].
pub const DEFAULT_MAX_FDS: usize = 1 << 16;

/// One open descriptor.
enum Entry {
    Stdin(Box<dyn Input>),
    Stdout(Box<dyn Output>),
    Stderr(Box<dyn Output>),
    Dir(Dir),
    File(File),
}

/// A directory descriptor.
struct Dir {
    desc: Descriptor,
    /// The guest path it was preopened at; `None` for one `path_open` opened.
    preopen: Option<String>,
    /// The names the last `fd_readdir` returned, to resume after one.
    listing: Listing,
}

/// A file descriptor.
struct File {
    desc: Descriptor,
    position: u64,
    append: bool,
    nonblock: bool,
}

/// Where the last `fd_readdir` left off: the cookie (`d_next`) of the
/// last entry it wrote whole, and that entry's name, so that a call
/// resuming there goes on after the name — what wasi-libc and Rust's std
/// pass back. Any other cookie is found by counting from the start.
///
/// One name, not the call's whole listing: a descriptor holds at most one
/// name (255 bytes or less) of host memory for its listing, however big
/// the guest's buffers, so a guest's descriptors hold at most
/// [`WasiBuilder::max_fds`] of them.
#[derive(Default)]
struct Listing {
    last: Option<(u64, Arc<str>)>,
}

impl Listing {
    /// The name of the entry whose cookie is `cookie`, if it is the one
    /// the last call ended with.
    fn name_at(&self, cookie: u64) -> Option<&Arc<str>> {
        self.last.as_ref().filter(|(c, _)| *c == cookie).map(|(_, name)| name)
    }
}

/// The descriptor table: numbers are handed out as wasmtime does, the
/// highest freed one first, else one past the highest ever used.
struct Fds {
    slots: Vec<Option<Entry>>,
    /// Every empty slot.
    free: BTreeSet<u32>,
    /// Most open at once.
    max: usize,
}

impl Fds {
    fn get(&self, fd: u32) -> Result<&Entry> {
        self.slots.get(fd as usize).and_then(Option::as_ref).ok_or(Errno::BADF)
    }

    fn get_mut(&mut self, fd: u32) -> Result<&mut Entry> {
        self.slots.get_mut(fd as usize).and_then(Option::as_mut).ok_or(Errno::BADF)
    }

    /// Descriptors open now.
    fn open(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    fn push(&mut self, entry: Entry) -> Result<u32> {
        if self.open() >= self.max {
            return Err(Errno::MFILE);
        }
        let fd = match self.free.pop_last() {
            Some(fd) => fd,
            None => {
                let fd = u32::try_from(self.slots.len()).map_err(|_| Errno::MFILE)?;
                self.slots.push(None);
                fd
            }
        };
        self.slots[fd as usize] = Some(entry);
        Ok(fd)
    }

    fn remove(&mut self, fd: u32) -> Result<Entry> {
        let entry = self.slots.get_mut(fd as usize).and_then(Option::take).ok_or(Errno::BADF)?;
        self.free.insert(fd);
        Ok(entry)
    }

    /// Moves `from` to `to`, closing what `to` held.
    fn renumber(&mut self, from: u32, to: u32) -> Result<()> {
        self.get(from)?;
        self.get(to)?;
        if from == to {
            return Ok(());
        }
        drop(self.remove(to)?);
        let entry = self.remove(from)?;
        self.free.remove(&to);
        self.slots[to as usize] = Some(entry);
        Ok(())
    }
}

/// One guest's preview1 state. Build it with [`Wasi::builder`].
pub struct Wasi {
    fds: Fds,
    args: Vec<String>,
    env: Vec<String>,
    platform: Box<dyn Platform>,
    /// Copy buffer for memories that lend no slices.
    scratch: Vec<u8>,
}

impl Wasi {
    /// Starts a guest's state: no arguments, no environment, stdin empty,
    /// stdout and stderr discarded, no preopens.
    pub fn builder(platform: Box<dyn Platform>) -> WasiBuilder {
        WasiBuilder {
            platform,
            args: Vec::new(),
            env: Vec::new(),
            stdin: Box::new(io::Empty),
            stdout: Box::new(io::Discard),
            stderr: Box::new(io::Discard),
            preopens: Vec::new(),
            max_fds: DEFAULT_MAX_FDS,
        }
    }

    fn file(&self, fd: u32) -> Result<&File> {
        match self.fds.get(fd)? {
            Entry::File(f) => Ok(f),
            _ => Err(Errno::BADF),
        }
    }

    fn file_mut(&mut self, fd: u32) -> Result<&mut File> {
        match self.fds.get_mut(fd)? {
            Entry::File(f) => Ok(f),
            _ => Err(Errno::BADF),
        }
    }

    fn dir(&self, fd: u32) -> Result<&Descriptor> {
        match self.fds.get(fd)? {
            Entry::Dir(d) => Ok(&d.desc),
            _ => Err(Errno::BADF),
        }
    }

    /// A file or directory descriptor (not stdio).
    fn desc(&self, fd: u32) -> Result<&Descriptor> {
        match self.fds.get(fd)? {
            Entry::Dir(d) => Ok(&d.desc),
            Entry::File(f) => Ok(&f.desc),
            _ => Err(Errno::BADF),
        }
    }
}

/// Builds a [`Wasi`].
pub struct WasiBuilder {
    platform: Box<dyn Platform>,
    args: Vec<String>,
    env: Vec<String>,
    stdin: Box<dyn Input>,
    stdout: Box<dyn Output>,
    stderr: Box<dyn Output>,
    preopens: Vec<(String, Arc<dyn FileSystem>, Access)>,
    max_fds: usize,
}

impl WasiBuilder {
    /// Appends an argument (the first is the program's name).
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Appends arguments.
    pub fn args<S: Into<String>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable.
    pub fn env(mut self, key: impl AsRef<str>, value: impl AsRef<str>) -> Self {
        self.env.push(format!("{}={}", key.as_ref(), value.as_ref()));
        self
    }

    /// Where stdin comes from.
    pub fn stdin(mut self, input: Box<dyn Input>) -> Self {
        self.stdin = input;
        self
    }

    /// Where stdout goes.
    pub fn stdout(mut self, output: Box<dyn Output>) -> Self {
        self.stdout = output;
        self
    }

    /// Where stderr goes.
    pub fn stderr(mut self, output: Box<dyn Output>) -> Self {
        self.stderr = output;
        self
    }

    /// Shows the root of `fs` at `guest_path`, as descriptor 3, 4, ... in
    /// the order given. With [`Access::ReadOnly`], every change through it
    /// is `EPERM`, as wasmtime does for a read-only preopen.
    pub fn preopen(mut self, guest_path: impl Into<String>, fs: Arc<dyn FileSystem>, access: Access) -> Self {
        self.preopens.push((guest_path.into(), fs, access));
        self
    }

    /// Most descriptors the guest may hold at once, stdio and preopens
    /// included ([`DEFAULT_MAX_FDS`] unless set).
    pub fn max_fds(mut self, max: usize) -> Self {
        self.max_fds = max;
        self
    }

    /// The guest's state; fails only if a preopen's root cannot be pinned
    /// (a broken backend).
    pub fn build(self) -> crate::Result<Wasi> {
        let mut fds = Fds { slots: Vec::new(), free: BTreeSet::new(), max: usize::MAX };
        let mut push = |e| fds.push(e).map_err(|_| crate::Error::Invalid);
        push(Entry::Stdin(self.stdin))?;
        push(Entry::Stdout(self.stdout))?;
        push(Entry::Stderr(self.stderr))?;
        let filesystems: Vec<_> = self.preopens.iter().map(|(_, fs, _)| Arc::clone(fs)).collect();
        for (path, fs, access) in self.preopens {
            let desc = Descriptor::preopen(&fs, access, device_number(filesystems.iter(), &fs))?;
            push(Entry::Dir(Dir { desc, preopen: Some(path), listing: Listing::default() }))?;
        }
        fds.max = self.max_fds;
        Ok(Wasi { fds, args: self.args, env: self.env, platform: self.platform, scratch: Vec::new() })
    }
}

#[cfg(test)]
mod tests;
