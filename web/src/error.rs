//! Errors as JavaScript sees them: an `Error` whose `code` names the WASI
//! `error-code` (`"no-entry"`, `"exist"`, `"quota"`, ...) and whose `errno`
//! names the POSIX one (`"ENOENT"`, ...), both from core's [`Code`]; and the
//! `TypeError` of an argument of the wrong type.

use packfs_core::{Code, Error};
use wasm_bindgen::JsValue;

/// What every entry point returns: a thrown JavaScript value on failure.
pub(crate) type JsResult<T> = Result<T, JsValue>;

/// The WASI `filesystem/types.error-code` name of an error.
pub fn code(e: &Error) -> &'static str {
    e.code().name()
}

/// The message of a thrown error: `code: what[: path]`.
pub fn message(e: &Error, path: Option<&str>) -> String {
    message_as(code(e), e, path)
}

fn message_as(code: &str, e: &Error, path: Option<&str>) -> String {
    match path {
        Some(p) => format!("{code}: {e}: {p}"),
        None => format!("{code}: {e}"),
    }
}

/// A JavaScript `Error` of `code` with `message`, its `code` and `errno`
/// properties set from it (made in one call into JavaScript).
pub fn js_error(code: Code, message: &str) -> JsValue {
    crate::glue::make_error(message, code.name(), code.errno_name())
}

/// `e` as a JavaScript `Error`, naming `path` when there is one.
pub fn to_js(e: &Error, path: Option<&str>) -> JsValue {
    js_error(e.code(), &message(e, path))
}

/// The `would-block` error of a synchronous call that needed content of a
/// lazy pack not fetched yet ([`Error::NotLoaded`]), naming `path`.
pub fn would_block(path: Option<&str>) -> JsValue {
    js_error(Code::WouldBlock, &message_as(Code::WouldBlock.name(), &Error::NotLoaded, path))
}

/// A `TypeError` (an argument of the wrong type) with `message`, its
/// `code` "invalid", `errno` "EINVAL".
pub(crate) fn type_error(message: &str) -> JsValue {
    crate::glue::make_type_error(message, Code::Invalid.name(), Code::Invalid.errno_name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_wasi_names() {
        assert_eq!(code(&Error::NotFound), "no-entry");
        assert_eq!(code(&Error::Quota), "quota");
        assert_eq!(
            code(&Error::Remote { url: "u".into(), kind: packfs_core::RemoteFailure::Timeout, detail: "x".into() }),
            "io"
        );
        assert_eq!(message(&Error::NotDir, Some("a/b")), "not-directory: not a directory: a/b");
        assert_eq!(message(&Error::ReadOnly, None), "read-only: read-only filesystem");
        assert_eq!(
            message_as(Code::WouldBlock.name(), &Error::NotLoaded, Some("f")),
            "would-block: pack content not loaded yet: f"
        );
    }

    /// `ErrorCode` in types.d.ts names every code an error can carry.
    #[test]
    fn error_code_type_lists_every_code() {
        let types = include_str!("types.d.ts");
        let start = types.find("export type ErrorCode =").expect("ErrorCode is declared");
        let union = &types[start..start + types[start..].find(';').expect("ErrorCode ends")];
        #[rustfmt::skip]
        let codes = [
            Code::NoEntry, Code::Exist, Code::NotDirectory, Code::IsDirectory, Code::NotEmpty, Code::Access,
            Code::NotPermitted, Code::ReadOnly, Code::Loop, Code::NameTooLong, Code::InsufficientSpace, Code::Quota,
            Code::CrossDevice, Code::Invalid, Code::FileTooLarge, Code::BadDescriptor, Code::TooManyLinks, Code::Busy,
            Code::WouldBlock, Code::Unsupported, Code::Io,
        ];
        for c in codes {
            // Exhaustive: a new code fails to build here until it is listed.
            match c {
                Code::NoEntry
                | Code::Exist
                | Code::NotDirectory
                | Code::IsDirectory
                | Code::NotEmpty
                | Code::Access
                | Code::NotPermitted
                | Code::ReadOnly
                | Code::Loop
                | Code::NameTooLong
                | Code::InsufficientSpace
                | Code::Quota
                | Code::CrossDevice
                | Code::Invalid
                | Code::FileTooLarge
                | Code::BadDescriptor
                | Code::TooManyLinks
                | Code::Busy
                | Code::WouldBlock
                | Code::Unsupported
                | Code::Io => {}
            }
            assert!(union.contains(&format!("\"{}\"", c.name())), "{} missing from ErrorCode", c.name());
        }
    }
}
