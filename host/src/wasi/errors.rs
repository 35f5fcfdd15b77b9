//! Errors: `packfs_core::Error` → WASI `error-code`, kept apart from traps.

use packfs_core::Error;
use wasmtime::component::ResourceTableError;

use super::bindings::types::ErrorCode;

/// The error of a `wasi:filesystem/types` function: a code the guest sees,
/// or a trap (a host bug or a bad resource handle) that ends the guest.
#[derive(Debug)]
pub enum FsError {
    /// Returned to the guest.
    Code(ErrorCode),
    /// Traps the guest.
    Trap(wasmtime::Error),
}

impl From<Error> for FsError {
    fn from(e: Error) -> Self {
        FsError::Code(error_code(&e))
    }
}

impl From<ErrorCode> for FsError {
    fn from(code: ErrorCode) -> Self {
        FsError::Code(code)
    }
}

impl From<ResourceTableError> for FsError {
    fn from(e: ResourceTableError) -> Self {
        FsError::Trap(e.into())
    }
}

/// The WASI `error-code` for a PackFS error: the one place they are mapped.
pub fn error_code(e: &Error) -> ErrorCode {
    match e {
        Error::NotFound => ErrorCode::NoEntry,
        Error::Exists => ErrorCode::Exist,
        Error::NotDir => ErrorCode::NotDirectory,
        Error::IsDir => ErrorCode::IsDirectory,
        Error::NotEmpty => ErrorCode::NotEmpty,
        Error::Access => ErrorCode::Access,
        Error::NotPermitted => ErrorCode::NotPermitted,
        Error::ReadOnly => ErrorCode::ReadOnly,
        Error::Loop => ErrorCode::Loop,
        Error::NameTooLong => ErrorCode::NameTooLong,
        Error::NoSpace => ErrorCode::InsufficientSpace,
        Error::Quota => ErrorCode::Quota,
        Error::CrossDevice => ErrorCode::CrossDevice,
        Error::Invalid => ErrorCode::Invalid,
        Error::FileTooLarge => ErrorCode::FileTooLarge,
        Error::BadDescriptor => ErrorCode::BadDescriptor,
        Error::TooManyLinks => ErrorCode::TooManyLinks,
        Error::Unsupported => ErrorCode::Unsupported,
        Error::Busy => ErrorCode::Busy,
        Error::Io(_) | Error::Corrupt(_) => ErrorCode::Io,
        Error::UnsupportedVersion { .. } => ErrorCode::Unsupported,
    }
}
