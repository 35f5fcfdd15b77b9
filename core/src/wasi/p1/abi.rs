//! The `wasi_snapshot_preview1` ABI: errno values, flag bits, and the byte
//! layouts of the records a guest passes or receives, as the witx
//! (`typenames.witx` of wasmtime-wasi 48) defines them. Little-endian,
//! offsets within each record.
//!
//! Arguments are decoded as wiggle decodes them for wasmtime's own
//! preview1: a flags or enum value that does not fit its representation is
//! `OVERFLOW`, one with bits or a tag the witx does not define is `INVAL`.

use crate::{Code, Error, FileType, Timestamp};

/// A WASI errno (`$errno`, u16).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Errno(pub u16);

#[allow(missing_docs, reason = "the witx names them")]
impl Errno {
    pub const SUCCESS: Errno = Errno(0);
    pub const TOOBIG: Errno = Errno(1);
    pub const ACCES: Errno = Errno(2);
    pub const AGAIN: Errno = Errno(6);
    pub const BADF: Errno = Errno(8);
    pub const BUSY: Errno = Errno(10);
    pub const DQUOT: Errno = Errno(19);
    pub const EXIST: Errno = Errno(20);
    pub const FAULT: Errno = Errno(21);
    pub const FBIG: Errno = Errno(22);
    pub const ILSEQ: Errno = Errno(25);
    pub const INTR: Errno = Errno(27);
    pub const INVAL: Errno = Errno(28);
    pub const IO: Errno = Errno(29);
    pub const ISDIR: Errno = Errno(31);
    pub const LOOP: Errno = Errno(32);
    pub const MFILE: Errno = Errno(33);
    pub const MLINK: Errno = Errno(34);
    pub const NAMETOOLONG: Errno = Errno(37);
    pub const NFILE: Errno = Errno(41);
    pub const NOENT: Errno = Errno(44);
    pub const NOMEM: Errno = Errno(48);
    pub const NOSPC: Errno = Errno(51);
    pub const NOSYS: Errno = Errno(52);
    pub const NOTDIR: Errno = Errno(54);
    pub const NOTEMPTY: Errno = Errno(55);
    pub const NOTSOCK: Errno = Errno(57);
    pub const NOTSUP: Errno = Errno(58);
    pub const OVERFLOW: Errno = Errno(61);
    pub const PERM: Errno = Errno(63);
    pub const PIPE: Errno = Errno(64);
    pub const RANGE: Errno = Errno(68);
    pub const ROFS: Errno = Errno(69);
    pub const SPIPE: Errno = Errno(70);
    pub const XDEV: Errno = Errno(75);
}

impl std::fmt::Display for Errno {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WASI errno {}", self.0)
    }
}

impl std::error::Error for Errno {}

impl From<Error> for Errno {
    fn from(e: Error) -> Self {
        errno(&e)
    }
}

/// The errno a guest sees for a PackFS error, as wasmtime's preview1 maps
/// the `wasi:filesystem` error code of the same name.
pub fn errno(e: &Error) -> Errno {
    // The one preview1 errno with no `wasi:filesystem` code.
    if let Error::NoDescriptors(_) = e {
        return Errno::NFILE;
    }
    match e.code() {
        Code::NoEntry => Errno::NOENT,
        Code::Exist => Errno::EXIST,
        Code::NotDirectory => Errno::NOTDIR,
        Code::IsDirectory => Errno::ISDIR,
        Code::NotEmpty => Errno::NOTEMPTY,
        Code::Access => Errno::ACCES,
        Code::NotPermitted => Errno::PERM,
        Code::ReadOnly => Errno::ROFS,
        Code::Loop => Errno::LOOP,
        Code::NameTooLong => Errno::NAMETOOLONG,
        Code::InsufficientSpace => Errno::NOSPC,
        Code::Quota => Errno::DQUOT,
        Code::CrossDevice => Errno::XDEV,
        Code::Invalid => Errno::INVAL,
        Code::FileTooLarge => Errno::FBIG,
        Code::BadDescriptor => Errno::BADF,
        Code::TooManyLinks => Errno::MLINK,
        Code::Busy => Errno::BUSY,
        Code::WouldBlock => Errno::AGAIN,
        Code::Unsupported => Errno::NOTSUP,
        Code::Io => Errno::IO,
    }
}

/// `$rights` bits (u64).
pub mod rights {
    #![allow(missing_docs, reason = "the witx names them")]
    pub const FD_DATASYNC: u64 = 1 << 0;
    pub const FD_READ: u64 = 1 << 1;
    pub const FD_SEEK: u64 = 1 << 2;
    pub const FD_FDSTAT_SET_FLAGS: u64 = 1 << 3;
    pub const FD_SYNC: u64 = 1 << 4;
    pub const FD_TELL: u64 = 1 << 5;
    pub const FD_WRITE: u64 = 1 << 6;
    pub const FD_ADVISE: u64 = 1 << 7;
    pub const FD_ALLOCATE: u64 = 1 << 8;
    pub const PATH_CREATE_DIRECTORY: u64 = 1 << 9;
    pub const PATH_CREATE_FILE: u64 = 1 << 10;
    pub const PATH_LINK_SOURCE: u64 = 1 << 11;
    pub const PATH_LINK_TARGET: u64 = 1 << 12;
    pub const PATH_OPEN: u64 = 1 << 13;
    pub const FD_READDIR: u64 = 1 << 14;
    pub const PATH_READLINK: u64 = 1 << 15;
    pub const PATH_RENAME_SOURCE: u64 = 1 << 16;
    pub const PATH_RENAME_TARGET: u64 = 1 << 17;
    pub const PATH_FILESTAT_GET: u64 = 1 << 18;
    pub const PATH_FILESTAT_SET_SIZE: u64 = 1 << 19;
    pub const PATH_FILESTAT_SET_TIMES: u64 = 1 << 20;
    pub const FD_FILESTAT_GET: u64 = 1 << 21;
    pub const FD_FILESTAT_SET_SIZE: u64 = 1 << 22;
    pub const FD_FILESTAT_SET_TIMES: u64 = 1 << 23;
    pub const PATH_SYMLINK: u64 = 1 << 24;
    pub const PATH_REMOVE_DIRECTORY: u64 = 1 << 25;
    pub const PATH_UNLINK_FILE: u64 = 1 << 26;
    pub const POLL_FD_READWRITE: u64 = 1 << 27;
    pub const SOCK_SHUTDOWN: u64 = 1 << 28;
    pub const SOCK_ACCEPT: u64 = 1 << 29;
    pub const ALL: u64 = (1 << 30) - 1;

    /// What wasmtime reports for a preopened directory, which many
    /// userlands expect.
    pub const PREOPEN_BASE: u64 = PATH_CREATE_DIRECTORY
        | PATH_CREATE_FILE
        | PATH_LINK_SOURCE
        | PATH_LINK_TARGET
        | PATH_OPEN
        | FD_READDIR
        | PATH_READLINK
        | PATH_RENAME_SOURCE
        | PATH_RENAME_TARGET
        | PATH_SYMLINK
        | PATH_REMOVE_DIRECTORY
        | PATH_UNLINK_FILE
        | PATH_FILESTAT_GET
        | PATH_FILESTAT_SET_TIMES
        | FD_FILESTAT_GET
        | FD_FILESTAT_SET_TIMES;
    /// ... and what it says files opened beneath one may have.
    pub const PREOPEN_INHERITING: u64 = PREOPEN_BASE
        | FD_DATASYNC
        | FD_READ
        | FD_SEEK
        | FD_FDSTAT_SET_FLAGS
        | FD_SYNC
        | FD_TELL
        | FD_WRITE
        | FD_ADVISE
        | FD_ALLOCATE
        | FD_FILESTAT_GET
        | FD_FILESTAT_SET_SIZE
        | FD_FILESTAT_SET_TIMES
        | POLL_FD_READWRITE;
}

/// `$fdflags` (u16).
pub mod fdflags {
    #![allow(missing_docs, reason = "the witx names them")]
    pub const APPEND: u16 = 1 << 0;
    pub const DSYNC: u16 = 1 << 1;
    pub const NONBLOCK: u16 = 1 << 2;
    pub const RSYNC: u16 = 1 << 3;
    pub const SYNC: u16 = 1 << 4;
    pub const ALL: u16 = (1 << 5) - 1;
}

/// `$oflags` (u16).
pub mod oflags {
    #![allow(missing_docs, reason = "the witx names them")]
    pub const CREAT: u16 = 1 << 0;
    pub const DIRECTORY: u16 = 1 << 1;
    pub const EXCL: u16 = 1 << 2;
    pub const TRUNC: u16 = 1 << 3;
    pub const ALL: u16 = (1 << 4) - 1;
}

/// `$fstflags` (u16).
pub mod fstflags {
    #![allow(missing_docs, reason = "the witx names them")]
    pub const ATIM: u16 = 1 << 0;
    pub const ATIM_NOW: u16 = 1 << 1;
    pub const MTIM: u16 = 1 << 2;
    pub const MTIM_NOW: u16 = 1 << 3;
    pub const ALL: u16 = (1 << 4) - 1;
}

/// `$lookupflags` (u32): follow a symlink at the end of the path.
pub const LOOKUP_SYMLINK_FOLLOW: u32 = 1;
/// `$riflags` (u16): peek, wait for all.
pub const RIFLAGS_ALL: u16 = 0b11;
/// `$sdflags` (u8): shut reading, writing.
pub const SDFLAGS_ALL: u8 = 0b11;

/// `$filetype` (u8).
pub mod filetype {
    #![allow(missing_docs, reason = "the witx names them")]
    pub const UNKNOWN: u8 = 0;
    pub const CHARACTER_DEVICE: u8 = 2;
    pub const DIRECTORY: u8 = 3;
    pub const REGULAR_FILE: u8 = 4;
    pub const SYMBOLIC_LINK: u8 = 7;
}

/// The `$filetype` of a PackFS inode type.
pub fn filetype_of(kind: FileType) -> u8 {
    match kind {
        FileType::File => filetype::REGULAR_FILE,
        FileType::Dir => filetype::DIRECTORY,
        FileType::Symlink => filetype::SYMBOLIC_LINK,
    }
}

/// Nanoseconds since the epoch (`$timestamp`), `OVERFLOW` past u64.
pub fn nanos(t: Timestamp) -> Result<u64, Errno> {
    t.secs.checked_mul(1_000_000_000).and_then(|ns| ns.checked_add(u64::from(t.nanos))).ok_or(Errno::OVERFLOW)
}

/// A flags argument: `OVERFLOW` if it does not fit the flags' type `T`
/// (u16, u32 or u64), `INVAL` with a bit outside `valid`.
pub fn flags<T>(v: impl TryInto<T>, valid: T) -> Result<T, Errno>
where
    T: Copy + PartialEq + Default + std::ops::BitAnd<Output = T> + std::ops::Not<Output = T>,
{
    let v = v.try_into().map_err(|_| Errno::OVERFLOW)?;
    if v & !valid != T::default() { Err(Errno::INVAL) } else { Ok(v) }
}

/// An enum argument with tags `0..count`: `OVERFLOW` if it does not fit
/// the tag's type `T` (u8 or u32), `INVAL` past the last tag.
pub fn tag<T: PartialOrd>(v: impl TryInto<T>, count: T) -> Result<T, Errno> {
    let v = v.try_into().map_err(|_| Errno::OVERFLOW)?;
    if v < count { Ok(v) } else { Err(Errno::INVAL) }
}

/// `$whence` tags.
pub mod whence {
    #![allow(missing_docs, reason = "the witx names them")]
    pub const SET: u8 = 0;
    pub const CUR: u8 = 1;
    pub const END: u8 = 2;
}

/// `$clockid` tags.
pub mod clockid {
    #![allow(missing_docs, reason = "the witx names them")]
    pub const REALTIME: u32 = 0;
    pub const MONOTONIC: u32 = 1;
    pub const COUNT: u32 = 4;
}

/// `$eventtype` tags, which are also the `$subscription_u` tags.
pub mod eventtype {
    #![allow(missing_docs, reason = "the witx names them")]
    pub const CLOCK: u8 = 0;
    pub const FD_READ: u8 = 1;
    pub const FD_WRITE: u8 = 2;
}

/// `$eventrwflags`: the peer hung up (a file read at its end).
pub const EVENT_FD_READWRITE_HANGUP: u16 = 1;
/// `$subclockflags`: the timeout is an absolute time.
pub const SUBSCRIPTION_CLOCK_ABSTIME: u16 = 1;

/// `$filestat`: 64 bytes.
pub const FILESTAT_SIZE: u32 = 64;
/// `$fdstat`: 24 bytes.
pub const FDSTAT_SIZE: u32 = 24;
/// `$dirent` header: 24 bytes, then the name.
pub const DIRENT_SIZE: usize = 24;
/// `$subscription`: 48 bytes.
pub const SUBSCRIPTION_SIZE: u32 = 48;
/// `$event`: 32 bytes.
pub const EVENT_SIZE: u32 = 32;
/// `$iovec` / `$ciovec`: 8 bytes.
pub const IOVEC_SIZE: u32 = 8;

/// A `$filestat` record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Filestat {
    /// Device id (wasmtime reports 1 for every file).
    pub dev: u64,
    /// Inode number (the lower word of the metadata hash).
    pub ino: u64,
    /// `$filetype`.
    pub filetype: u8,
    /// Hard links.
    pub nlink: u64,
    /// Size in bytes.
    pub size: u64,
    /// Access time, nanoseconds.
    pub atim: u64,
    /// Modification time, nanoseconds.
    pub mtim: u64,
    /// Status change time, nanoseconds.
    pub ctim: u64,
}

impl Filestat {
    /// The record's bytes.
    pub fn encode(&self) -> [u8; FILESTAT_SIZE as usize] {
        let mut b = [0; FILESTAT_SIZE as usize];
        b[0..8].copy_from_slice(&self.dev.to_le_bytes());
        b[8..16].copy_from_slice(&self.ino.to_le_bytes());
        b[16] = self.filetype;
        b[24..32].copy_from_slice(&self.nlink.to_le_bytes());
        b[32..40].copy_from_slice(&self.size.to_le_bytes());
        b[40..48].copy_from_slice(&self.atim.to_le_bytes());
        b[48..56].copy_from_slice(&self.mtim.to_le_bytes());
        b[56..64].copy_from_slice(&self.ctim.to_le_bytes());
        b
    }
}

/// A `$fdstat` record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fdstat {
    /// `$filetype`.
    pub filetype: u8,
    /// `$fdflags`.
    pub flags: u16,
    /// `$rights` the descriptor has.
    pub rights_base: u64,
    /// `$rights` descriptors opened through it may have.
    pub rights_inheriting: u64,
}

impl Fdstat {
    /// The record's bytes.
    pub fn encode(&self) -> [u8; FDSTAT_SIZE as usize] {
        let mut b = [0; FDSTAT_SIZE as usize];
        b[0] = self.filetype;
        b[2..4].copy_from_slice(&self.flags.to_le_bytes());
        b[8..16].copy_from_slice(&self.rights_base.to_le_bytes());
        b[16..24].copy_from_slice(&self.rights_inheriting.to_le_bytes());
        b
    }
}

/// A `$dirent` header: the entry's cookie, inode, name length and type.
pub fn dirent(next: u64, ino: u64, namlen: u32, filetype: u8) -> [u8; DIRENT_SIZE] {
    let mut b = [0; DIRENT_SIZE];
    b[0..8].copy_from_slice(&next.to_le_bytes());
    b[8..16].copy_from_slice(&ino.to_le_bytes());
    b[16..20].copy_from_slice(&namlen.to_le_bytes());
    b[20] = filetype;
    b
}

/// An `$event` record.
pub fn event(userdata: u64, error: Errno, kind: u8, nbytes: u64, flags: u16) -> [u8; EVENT_SIZE as usize] {
    let mut b = [0; EVENT_SIZE as usize];
    b[0..8].copy_from_slice(&userdata.to_le_bytes());
    b[8..10].copy_from_slice(&error.0.to_le_bytes());
    b[10] = kind;
    b[16..24].copy_from_slice(&nbytes.to_le_bytes());
    b[24..26].copy_from_slice(&flags.to_le_bytes());
    b
}

/// A little-endian integer at `at` of a record read from the guest.
pub fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

/// As [`u64_at`], 32 bits.
pub fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut w = [0; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

/// As [`u64_at`], 16 bits.
pub fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
