//! Errors as JavaScript sees them: an `Error` whose `code` names the WASI
//! `error-code` (`"no-entry"`, `"exist"`, `"quota"`, ...) and whose `errno`
//! names the POSIX one (`"ENOENT"`, ...).

use packfs_core::Error;
use wasm_bindgen::JsValue;

/// The WASI `filesystem/types.error-code` name of an error.
pub fn code(e: &Error) -> &'static str {
    e.code().name()
}

/// The message of a thrown error: `code: what[: path]`.
pub fn message(e: &Error, path: Option<&str>) -> String {
    match path {
        Some(p) => format!("{}: {e}: {p}", code(e)),
        None => format!("{}: {e}", code(e)),
    }
}

/// A JavaScript `Error` with `code` and `errno` properties (made in one
/// call into JavaScript).
pub fn js_error(code: &str, errno: &str, message: &str) -> JsValue {
    crate::glue::make_error(message, code, errno)
}

/// `e` as a JavaScript `Error`, naming `path` when there is one.
pub fn to_js(e: &Error, path: Option<&str>) -> JsValue {
    js_error(code(e), e.errno_name(), &message(e, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_wasi_names() {
        assert_eq!(code(&Error::NotFound), "no-entry");
        assert_eq!(code(&Error::Quota), "quota");
        assert_eq!(code(&Error::Remote("x".into())), "io");
        assert_eq!(message(&Error::NotDir, Some("a/b")), "not-directory: not a directory: a/b");
        assert_eq!(message(&Error::ReadOnly, None), "read-only: read-only filesystem");
    }
}
