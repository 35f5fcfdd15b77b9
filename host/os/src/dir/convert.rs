//! What the host says, in PackFS's terms: errnos as [`Error`]s, `stat`
//! results as [`Metadata`].

use std::sync::Arc;

use packfs_core::{Error, FileType, Ino, Metadata, OsError, Result, Timestamp};
use rustix::fs::Stat;
use rustix::io::Errno;

/// The one errno → PackFS error mapping. `EXDEV` from a resolution means
/// the path tried to leave the root.
pub(super) fn errno(e: Errno) -> Error {
    match e {
        Errno::NOENT => Error::NotFound,
        Errno::EXIST => Error::Exists,
        Errno::NOTDIR => Error::NotDir,
        Errno::ISDIR => Error::IsDir,
        Errno::NOTEMPTY => Error::NotEmpty,
        Errno::ACCESS => Error::Access,
        Errno::PERM => Error::NotPermitted,
        Errno::ROFS => Error::ReadOnly,
        Errno::LOOP => Error::Loop,
        Errno::NAMETOOLONG => Error::NameTooLong,
        Errno::NOSPC => Error::NoSpace,
        Errno::DQUOT => Error::Quota,
        Errno::XDEV => Error::NotPermitted,
        Errno::INVAL => Error::Invalid,
        Errno::FBIG => Error::FileTooLarge,
        Errno::BADF => Error::BadDescriptor,
        Errno::MLINK => Error::TooManyLinks,
        Errno::BUSY => Error::Busy,
        Errno::NOTSUP => Error::Unsupported,
        Errno::MFILE | Errno::NFILE => Error::NoDescriptors(OsError::new("", e.into())),
        e => Error::from(std::io::Error::from(e)),
    }
}

/// The error of a full host table, whichever (the module doc of `dir` says
/// when).
pub(super) fn no_fds(why: impl Into<Arc<str>>) -> Error {
    Error::NoDescriptors(OsError::new(why, Errno::NFILE.into()))
}

/// The PackFS type of a host file; devices, sockets and fifos are not
/// PackFS objects (`Unsupported`).
pub(super) fn kind(st: &Stat) -> Result<FileType> {
    match rustix::fs::FileType::from_raw_mode(st.st_mode) {
        rustix::fs::FileType::RegularFile => Ok(FileType::File),
        rustix::fs::FileType::Directory => Ok(FileType::Dir),
        rustix::fs::FileType::Symlink => Ok(FileType::Symlink),
        _ => Err(Error::Unsupported),
    }
}

/// What a host file that is not a PackFS object is.
pub(super) fn special(t: rustix::fs::FileType) -> &'static str {
    match t {
        rustix::fs::FileType::Fifo => "a fifo",
        rustix::fs::FileType::Socket => "a socket",
        rustix::fs::FileType::CharacterDevice | rustix::fs::FileType::BlockDevice => "a device",
        _ => "not a file, directory or symlink",
    }
}

/// A host time; one before 1970 reads as 1970 (PackFS times are unsigned).
fn time(secs: i64, nanos: i64) -> Timestamp {
    if secs < 0 {
        return Timestamp::new(0, 0);
    }
    Timestamp::new(secs as u64, nanos.clamp(0, 999_999_999) as u32)
}

/// Inode `ino`'s metadata from its `stat`.
pub(super) fn metadata(ino: Ino, st: &Stat) -> Result<Metadata> {
    Ok(Metadata {
        ino,
        kind: kind(st)?,
        size: st.st_size.max(0) as u64,
        mode: st.st_mode & 0o7777,
        nlink: st.st_nlink,
        atime: time(st.st_atime, st.st_atime_nsec as i64),
        mtime: time(st.st_mtime, st.st_mtime_nsec as i64),
        ctime: time(st.st_ctime, st.st_ctime_nsec as i64),
    })
}
