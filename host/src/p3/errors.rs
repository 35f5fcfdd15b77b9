//! Errors: `packfs_core::Error` → WASI 0.3 `error-code`, kept apart from
//! traps.

use packfs_core::{Code, Error};
use wasmtime::component::ResourceTableError;

use super::bindings::FsError;
use super::bindings::types::ErrorCode;

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

/// The WASI 0.3 `error-code` for a PackFS error, from its [`Code`].
pub fn error_code(e: &Error) -> ErrorCode {
    match e.code() {
        Code::NoEntry => ErrorCode::NoEntry,
        Code::Exist => ErrorCode::Exist,
        Code::NotDirectory => ErrorCode::NotDirectory,
        Code::IsDirectory => ErrorCode::IsDirectory,
        Code::NotEmpty => ErrorCode::NotEmpty,
        Code::Access => ErrorCode::Access,
        Code::NotPermitted => ErrorCode::NotPermitted,
        Code::ReadOnly => ErrorCode::ReadOnly,
        Code::Loop => ErrorCode::Loop,
        Code::NameTooLong => ErrorCode::NameTooLong,
        Code::InsufficientSpace => ErrorCode::InsufficientSpace,
        Code::Quota => ErrorCode::Quota,
        Code::CrossDevice => ErrorCode::CrossDevice,
        Code::Invalid => ErrorCode::Invalid,
        Code::FileTooLarge => ErrorCode::FileTooLarge,
        Code::BadDescriptor => ErrorCode::BadDescriptor,
        Code::TooManyLinks => ErrorCode::TooManyLinks,
        Code::Unsupported => ErrorCode::Unsupported,
        Code::Busy => ErrorCode::Busy,
        // 0.3 has no would-block (a call waits instead), and nothing on
        // the host answers it (only the browser's synchronous reads).
        Code::WouldBlock => ErrorCode::Busy,
        Code::Io => ErrorCode::Io,
    }
}
