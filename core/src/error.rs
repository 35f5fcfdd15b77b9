//! The one error type of every backend.
//!
//! Each variant names one WASI `filesystem/types.error-code`; the host maps
//! them in one exhaustive `match`. Variants that describe *why* carry it
//! (a corrupt pack says where and what), the rest are the errno alone.

/// Result of a filesystem operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A filesystem error. Variant names follow WASI `error-code`.
///
/// Deliberately not `#[non_exhaustive]`: the host's mapping onto WASI
/// `error-code` is one exhaustive `match`, so a new variant cannot be added
/// without deciding what a guest sees.
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
    /// `io` (EIO): the backend failed; the message says how.
    #[error("i/o error: {0}")]
    Io(String),
    /// `io` (EIO): a pack failed a check; the payload says where and which.
    #[error("{0}")]
    Corrupt(crate::pack::CorruptPack),
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

impl Error {
    /// The POSIX errno name, for messages and tests.
    pub fn errno_name(&self) -> &'static str {
        match self {
            Error::NotFound => "ENOENT",
            Error::Exists => "EEXIST",
            Error::NotDir => "ENOTDIR",
            Error::IsDir => "EISDIR",
            Error::NotEmpty => "ENOTEMPTY",
            Error::Access => "EACCES",
            Error::NotPermitted => "EPERM",
            Error::ReadOnly => "EROFS",
            Error::Loop => "ELOOP",
            Error::NameTooLong => "ENAMETOOLONG",
            Error::NoSpace => "ENOSPC",
            Error::Quota => "EDQUOT",
            Error::CrossDevice => "EXDEV",
            Error::Invalid => "EINVAL",
            Error::FileTooLarge => "EFBIG",
            Error::BadDescriptor => "EBADF",
            Error::TooManyLinks => "EMLINK",
            Error::Busy => "EBUSY",
            Error::Unsupported => "ENOTSUP",
            Error::Io(_) | Error::Corrupt(_) => "EIO",
            Error::UnsupportedVersion { .. } => "ENOTSUP",
        }
    }
}
