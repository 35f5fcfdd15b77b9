//! The one error type of every backend, and the one table from it to the
//! codes guests and scripts see.
//!
//! Each variant is one WASI `filesystem/types.error-code` ([`Code`], from
//! [`Error::code`]); every mapping — preview1's errno, `wasi:filesystem`'s
//! `error-code`, the browser's `code`, the POSIX name — derives from that
//! one `match`. Variants that describe *why* carry it (a corrupt pack says
//! where and what, an OS error keeps its source), the rest are the code
//! alone.

use std::sync::Arc;

use corrupt::CorruptPack;

/// What is wrong with a pack, and where (shown as `pack::CorruptPack`).
pub(crate) mod corrupt;

/// Result of a filesystem operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A filesystem error. Variant names follow WASI `error-code`.
///
/// Deliberately not `#[non_exhaustive]`: [`Error::code`] is one exhaustive
/// `match`, so a new variant cannot be added without deciding what a guest
/// sees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// `no-entry` (ENOENT): the name or inode does not exist.
    #[error("no such file or directory")]
    NotFound,
    /// `exist` (EEXIST): the name is already taken.
    #[error("file exists")]
    Exists,
    /// `not-directory` (ENOTDIR): a directory was needed.
    #[error("not a directory")]
    NotDir,
    /// `is-directory` (EISDIR): a non-directory was needed.
    #[error("is a directory")]
    IsDir,
    /// `not-empty` (ENOTEMPTY): the directory still has entries.
    #[error("directory not empty")]
    NotEmpty,
    /// `access` (EACCES): the handle lacks the right (read on a write-only
    /// handle, a path escaping its root).
    #[error("permission denied")]
    Access,
    /// `not-permitted` (EPERM): never allowed, whatever the rights (a hard
    /// link to a directory).
    #[error("operation not permitted")]
    NotPermitted,
    /// `read-only` (EROFS): the backend or mount is read-only.
    #[error("read-only filesystem")]
    ReadOnly,
    /// `loop` (ELOOP): too many symlink hops, or a symlink where none may be.
    #[error("too many levels of symbolic links")]
    Loop,
    /// `name-too-long` (ENAMETOOLONG): a name over [`MAX_NAME`] bytes or a
    /// path over [`MAX_PATH`] bytes.
    ///
    /// [`MAX_NAME`]: crate::path::MAX_NAME
    /// [`MAX_PATH`]: crate::path::MAX_PATH
    #[error("file name too long")]
    NameTooLong,
    /// `insufficient-space` (ENOSPC): the backing store is full.
    #[error("no space left on device")]
    NoSpace,
    /// `quota` (EDQUOT): a configured byte or inode limit would be exceeded.
    #[error("quota exceeded")]
    Quota,
    /// `cross-device` (EXDEV): rename or link across mounts.
    #[error("cross-device link")]
    CrossDevice,
    /// `invalid` (EINVAL): a malformed argument (NUL in a name, an empty
    /// name, a directory renamed into its own subtree).
    #[error("invalid argument")]
    Invalid,
    /// `file-too-large` (EFBIG): an offset or size past [`MAX_FILE_SIZE`].
    ///
    /// [`MAX_FILE_SIZE`]: crate::MAX_FILE_SIZE
    #[error("file too large")]
    FileTooLarge,
    /// `bad-descriptor` (EBADF): the inode handle is stale or was never open.
    #[error("bad file descriptor")]
    BadDescriptor,
    /// `too-many-links` (EMLINK): a link count would overflow.
    #[error("too many links")]
    TooManyLinks,
    /// `busy` (EBUSY): a mount point is in use (unmounting a mount with
    /// mounts inside it, renaming or removing a mount point).
    #[error("device or resource busy")]
    Busy,
    /// `unsupported` (ENOTSUP): the backend cannot do this at all.
    #[error("operation not supported")]
    Unsupported,
    /// `io` (EIO): the operating system failed; the source is kept.
    #[error("{0}")]
    Os(OsError),
    /// `nfile` (ENFILE) to a preview1 guest, `io` to a component (WASI
    /// 0.2 has no such code; wasmtime gives `io` for a host `EMFILE`): the
    /// host holds no more open files for this filesystem, whose budget of
    /// host descriptors is spent or the host's own table full. Closing
    /// files makes room. The OS error, or what the budget says, is kept.
    #[error("{0}")]
    NoDescriptors(OsError),
    /// `io` (EIO): a journal's bytes are not a valid journal (its header, or
    /// a record that does not apply); the payload says where and what.
    #[error("{0}")]
    CorruptJournal(CorruptJournal),
    /// `io` (EIO): a filesystem under this one (an overlay's lower, a
    /// mounted filesystem, a host directory, a journal) broke the
    /// [`FileSystem`] contract, holds what PackFS cannot, or can serve no
    /// more: `fault` says which.
    ///
    /// [`FileSystem`]: crate::FileSystem
    #[error("{detail}")]
    Backend {
        /// Which of the three.
        fault: BackendFault,
        /// What happened, in words: the whole message.
        detail: String,
    },
    /// `io` (EIO): a remote source failed (an HTTP request, a reply that
    /// is not one); `kind` says how.
    #[error("{url}: {detail}")]
    Remote {
        /// The pack's URL.
        url: String,
        /// How it failed.
        kind: RemoteFailure,
        /// What happened, in words (the message after the URL).
        detail: String,
    },
    /// `io` (EIO): a pack's content is not here yet (a lazy pack, read
    /// synchronously): its reader records what to fetch.
    #[error("pack content not loaded yet")]
    NotLoaded,
    /// `io` (EIO): a pack failed a check; the payload says where and which.
    #[error("{0}")]
    Corrupt(CorruptPack),
    /// `unsupported` (ENOTSUP): a pack of a format version, or needing a
    /// feature flag, this reader does not know.
    #[error("unsupported pack format version {version} (incompatible flags {incompat_flags:#x})")]
    UnsupportedVersion {
        /// The pack's format version.
        version: u32,
        /// The pack's incompatible-feature flags.
        incompat_flags: u32,
    },
}

/// What is wrong with a journal, and where. (A torn tail is not this:
/// replay stops before it, and says so.)
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("corrupt journal at byte {offset}: {kind}")]
pub struct CorruptJournal {
    /// Byte offset in the log file, header included, of the header (0) or
    /// the record at fault.
    pub offset: u64,
    /// What is wrong there.
    pub kind: CorruptJournalKind,
}

/// The check a journal's header or record failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CorruptJournalKind {
    /// The log is shorter than its header.
    #[error("{available} bytes, shorter than the {needed}-byte header")]
    Truncated {
        /// Bytes of the header.
        needed: u64,
        /// Bytes there were.
        available: u64,
    },
    /// The magic number is not that of this version's journals: not a
    /// journal, or one of a version this reader does not know.
    #[error("not a PackFS journal of this version (magic \"{}\")", .found.escape_ascii())]
    BadMagic {
        /// The file's first 8 bytes.
        found: [u8; 8],
    },
    /// A header field holds a value the format does not allow.
    #[error("header field {field} is {value}")]
    BadField {
        /// The field's name as `docs/journal-format.md` spells it.
        field: &'static str,
        /// The value found.
        value: u64,
    },
    /// A record is cut short or fails its checksum, and a good record
    /// follows it: damage in the middle of the log, not a torn tail.
    /// Nothing is cut: that would lose the records from `next` on.
    #[error("record {record} is damaged (short or failing its checksum), and a good record follows at byte {next}")]
    DamagedRecord {
        /// The bad record's number in the log, from 0.
        record: u64,
        /// Byte offset in the log file of the first good record after it.
        next: u64,
    },
    /// A record's checksum holds but its payload does not decode: a record
    /// type, flag or value this version does not know (written by a newer
    /// one?), or damage the checksum missed. Nothing is cut.
    #[error("record {record} does not decode: {}", unknown_record(*.tag))]
    UnknownRecord {
        /// The record's number in the log, from 0.
        record: u64,
        /// Its tag byte; `None` when the payload is too short to hold one.
        tag: Option<u8>,
    },
    /// A version-2 log's image of its tree contradicts itself, or does not
    /// end before the first change (the log is written whole with its
    /// image, so this is never a torn tail).
    #[error("record {record} breaks the log's image of its tree: {why}")]
    BadImage {
        /// The record's number in the log, from 0.
        record: u64,
        /// What is wrong.
        why: &'static str,
    },
    /// A record that decodes fails to apply to the tree replayed so far:
    /// the log does not belong to the checkpoint it was replayed onto.
    #[error("record {record} ({op}) does not apply: {error}")]
    DoesNotApply {
        /// The record's number in the log, from 0.
        record: u64,
        /// The op it holds, its bytes given as their count.
        op: String,
        /// What applying it returned.
        error: Box<Error>,
    },
}

/// What is unknown in a record whose checksum holds, for
/// [`CorruptJournalKind::UnknownRecord`]'s message.
fn unknown_record(tag: Option<u8>) -> String {
    match tag {
        Some(1..=17) => "a flag, value or length this version does not know".into(),
        Some(tag) => format!("tag {tag}, a record type this version does not know"),
        None => "too short to hold a record type".into(),
    }
}

/// An operating-system error with what was being done, kept whole (its
/// `kind` and raw errno through [`OsError::source`]). Equal to another of
/// the same kind and message.
#[derive(Debug, Clone)]
pub struct OsError {
    what: Arc<str>,
    source: Arc<std::io::Error>,
}

impl OsError {
    /// `source`, met while doing `what` ("journal append").
    pub fn new(what: impl Into<Arc<str>>, source: std::io::Error) -> Self {
        OsError { what: what.into(), source: Arc::new(source) }
    }

    /// The OS error.
    pub fn source(&self) -> &std::io::Error {
        &self.source
    }
}

impl PartialEq for OsError {
    fn eq(&self, other: &Self) -> bool {
        self.what == other.what
            && self.source.kind() == other.source.kind()
            && self.source.to_string() == other.source.to_string()
    }
}

impl Eq for OsError {}

impl std::fmt::Display for OsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.what.is_empty() { write!(f, "{}", self.source) } else { write!(f, "{}: {}", self.what, self.source) }
    }
}

/// The OS error is in the message, so it is not also a `source()`: an
/// error report (anyhow's `{:#}`) would say it twice. [`OsError::source`]
/// gives it.
impl std::error::Error for OsError {}

/// Why a filesystem under this one failed ([`Error::Backend`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BackendFault {
    /// It broke the [`FileSystem`](crate::FileSystem) contract: a lower
    /// directory listed out of order, a lower file shorter than its size,
    /// a write that wrote nothing, a source that changed while it was
    /// packed.
    Contract,
    /// It holds what PackFS cannot: a name or symlink target that is not
    /// UTF-8, a fifo or socket, an inode number past what a mount has
    /// bits for, more entries than a pack holds, directories nested deeper
    /// than an overlay follows.
    Unrepresentable,
    /// It serves no more: closed after a failure it could not undo, or
    /// past a time limit.
    Closed,
}

/// How a remote source failed ([`Error::Remote`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RemoteFailure {
    /// The server answered with this HTTP status.
    Status(u16),
    /// The pack changed on the server since it was opened (another
    /// `ETag` or `Last-Modified`).
    Changed,
    /// A reply that is not an answer to the request (a partial reply
    /// without a usable `Content-Range`, say).
    BadReply,
    /// The request took longer than its time limit.
    Timeout,
    /// The request could not be made or did not complete (the network,
    /// CORS, a request the browser refused).
    Transport,
}

impl Error {
    /// An [`Error::Backend`].
    pub fn backend(fault: BackendFault, detail: impl Into<String>) -> Error {
        Error::Backend { fault, detail: detail.into() }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Os(OsError::new("", e))
    }
}

/// A WASI `filesystem/types.error-code`: what a PackFS [`Error`] is to a
/// guest or a script, whatever it says of why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs, reason = "named as the WIT names them")]
pub enum Code {
    NoEntry,
    Exist,
    NotDirectory,
    IsDirectory,
    NotEmpty,
    Access,
    NotPermitted,
    ReadOnly,
    Loop,
    NameTooLong,
    InsufficientSpace,
    Quota,
    CrossDevice,
    Invalid,
    FileTooLarge,
    BadDescriptor,
    TooManyLinks,
    Busy,
    /// Not now: the call would have to wait. No [`Error`] maps to it (a
    /// guest's call that needs bytes not here waits, or fails and runs
    /// again, [`Error::NotLoaded`]); a browser's synchronous method that
    /// needs content still on the network answers it.
    WouldBlock,
    Unsupported,
    Io,
}

impl Code {
    /// Its WIT name (`"no-entry"`, ...), as the browser's errors carry it.
    pub fn name(self) -> &'static str {
        match self {
            Code::NoEntry => "no-entry",
            Code::Exist => "exist",
            Code::NotDirectory => "not-directory",
            Code::IsDirectory => "is-directory",
            Code::NotEmpty => "not-empty",
            Code::Access => "access",
            Code::NotPermitted => "not-permitted",
            Code::ReadOnly => "read-only",
            Code::Loop => "loop",
            Code::NameTooLong => "name-too-long",
            Code::InsufficientSpace => "insufficient-space",
            Code::Quota => "quota",
            Code::CrossDevice => "cross-device",
            Code::Invalid => "invalid",
            Code::FileTooLarge => "file-too-large",
            Code::BadDescriptor => "bad-descriptor",
            Code::TooManyLinks => "too-many-links",
            Code::Busy => "busy",
            Code::WouldBlock => "would-block",
            Code::Unsupported => "unsupported",
            Code::Io => "io",
        }
    }

    /// The POSIX errno name (`"ENOENT"`, ...).
    pub fn errno_name(self) -> &'static str {
        match self {
            Code::NoEntry => "ENOENT",
            Code::Exist => "EEXIST",
            Code::NotDirectory => "ENOTDIR",
            Code::IsDirectory => "EISDIR",
            Code::NotEmpty => "ENOTEMPTY",
            Code::Access => "EACCES",
            Code::NotPermitted => "EPERM",
            Code::ReadOnly => "EROFS",
            Code::Loop => "ELOOP",
            Code::NameTooLong => "ENAMETOOLONG",
            Code::InsufficientSpace => "ENOSPC",
            Code::Quota => "EDQUOT",
            Code::CrossDevice => "EXDEV",
            Code::Invalid => "EINVAL",
            Code::FileTooLarge => "EFBIG",
            Code::BadDescriptor => "EBADF",
            Code::TooManyLinks => "EMLINK",
            Code::Busy => "EBUSY",
            Code::WouldBlock => "EAGAIN",
            Code::Unsupported => "ENOTSUP",
            Code::Io => "EIO",
        }
    }
}

impl Error {
    /// What the error is to a guest: the one table every mapping derives
    /// from.
    pub fn code(&self) -> Code {
        match self {
            Error::NotFound => Code::NoEntry,
            Error::Exists => Code::Exist,
            Error::NotDir => Code::NotDirectory,
            Error::IsDir => Code::IsDirectory,
            Error::NotEmpty => Code::NotEmpty,
            Error::Access => Code::Access,
            Error::NotPermitted => Code::NotPermitted,
            Error::ReadOnly => Code::ReadOnly,
            Error::Loop => Code::Loop,
            Error::NameTooLong => Code::NameTooLong,
            Error::NoSpace => Code::InsufficientSpace,
            Error::Quota => Code::Quota,
            Error::CrossDevice => Code::CrossDevice,
            Error::Invalid => Code::Invalid,
            Error::FileTooLarge => Code::FileTooLarge,
            Error::BadDescriptor => Code::BadDescriptor,
            Error::TooManyLinks => Code::TooManyLinks,
            Error::Busy => Code::Busy,
            Error::Unsupported | Error::UnsupportedVersion { .. } => Code::Unsupported,
            Error::Os(_)
            | Error::NoDescriptors(_)
            | Error::CorruptJournal(_)
            | Error::Backend { .. }
            | Error::Remote { .. }
            | Error::NotLoaded
            | Error::Corrupt(_) => Code::Io,
        }
    }

    /// The POSIX errno name, for messages and tests.
    pub fn errno_name(&self) -> &'static str {
        self.code().errno_name()
    }
}

impl From<CorruptPack> for Error {
    fn from(c: CorruptPack) -> Self {
        Error::Corrupt(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error report (anyhow's `{:#}`) prints each error of the chain:
    /// none may also say its source's message.
    #[test]
    fn an_os_error_says_its_cause_once() {
        let e = OsError::new("journal append", std::io::Error::from(std::io::ErrorKind::NotFound));
        assert_eq!(e.to_string(), "journal append: entity not found");
        assert!(std::error::Error::source(&e).is_none(), "the cause is in the message");
        assert_eq!(OsError::source(&e).kind(), std::io::ErrorKind::NotFound, "and kept");
        assert!(std::error::Error::source(&Error::Os(e)).is_none());
    }
}
