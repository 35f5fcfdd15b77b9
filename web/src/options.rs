//! The options objects of the API (`FsOptions`, `PackOptions`,
//! `CompactOptions`, `MkdirOptions` in types.d.ts) and number arguments,
//! read into core's types. A field of the wrong type is a `TypeError`; one
//! of the right type but out of range is `invalid`.

use packfs_core::Code;
use packfs_core::mem::Quota;
use packfs_core::pack::{Compression, DEFAULT_CHUNK_SIZE, Digest, PackOptions, ReadOptions, is_chunk_size};
use wasm_bindgen::JsValue;

use crate::arg;
use crate::error::{JsResult, js_error, type_error};

/// A number option, if present: a non-negative integer.
pub(crate) fn opt_u64(options: &Option<JsValue>, key: &str) -> JsResult<Option<u64>> {
    let v = arg::field(options, key)?;
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    let n = v.as_f64().ok_or_else(|| type_error(&format!("options.{key} must be a number")))?;
    whole(n)
        .map(Some)
        .ok_or_else(|| js_error(Code::Invalid, &format!("invalid: option {key} must be a non-negative integer")))
}

/// A boolean option, if present: `true` or `false`, nothing else.
pub(crate) fn opt_bool(options: &Option<JsValue>, key: &str) -> JsResult<Option<bool>> {
    let v = arg::field(options, key)?;
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    v.as_bool().map(Some).ok_or_else(|| type_error(&format!("options.{key} must be true or false")))
}

/// `n` as a count of bytes: a non-negative integer JavaScript holds exactly.
fn whole(n: f64) -> Option<u64> {
    (n >= 0.0 && n.fract() == 0.0 && n <= 2f64.powi(53)).then_some(n as u64)
}

/// `compact`'s options.
pub(crate) fn pack_options(options: &Option<JsValue>) -> JsResult<PackOptions> {
    let bad = |what: &str| js_error(Code::Invalid, &format!("invalid: {what}"));
    let compress = arg::field(options, "compress")?;
    let compress = match compress.as_string() {
        Some(c) => Some(c),
        None if compress.is_undefined() || compress.is_null() => None,
        None => return Err(type_error("options.compress must be a string")),
    };
    // The browser's zstd encoder has one level, about zstd's 1.
    let compression = Compression::parse(compress.as_deref().unwrap_or("none"), 3)
        .map_err(|e| bad(&format!("option compress: {e}")))?;
    let chunk = opt_u64(options, "chunkSize")?.unwrap_or(DEFAULT_CHUNK_SIZE);
    if !is_chunk_size(chunk) {
        return Err(bad("option chunkSize must be a power of two from 4096 to 1048576"));
    }
    Ok(PackOptions::new().compress(compression).chunk_size(chunk))
}

/// The quotas of a writable filesystem (`FsOptions`).
pub(crate) fn quota(options: &Option<JsValue>) -> JsResult<Quota> {
    Ok(Quota { max_bytes: opt_u64(options, "maxBytes")?, max_inodes: opt_u64(options, "maxInodes")? })
}

/// How to open a pack (`PackOptions`); `default` is `verifyOnRead`'s.
/// `digest` pins it: `blake3:` and 64 hex digits, as `packfs info` prints.
pub(crate) fn read_options(options: &Option<JsValue>, default: bool) -> JsResult<ReadOptions> {
    let v = arg::field(options, "digest")?;
    let pin = match v.as_string() {
        Some(text) => {
            Some(text.parse::<Digest>().map_err(|e| js_error(Code::Invalid, &format!("invalid: option {e}")))?)
        }
        None if v.is_undefined() || v.is_null() => None,
        None => return Err(type_error("options.digest must be a string")),
    };
    Ok(ReadOptions::new().verify_on_read(opt_bool(options, "verifyOnRead")?.unwrap_or(default)).pin(pin))
}

/// Argument `len` of `truncate`: a file length, a non-negative integer.
pub(crate) fn length(len: &JsValue) -> JsResult<u64> {
    whole(arg::number(len, "len")?)
        .ok_or_else(|| js_error(Code::Invalid, "invalid: a length must be a non-negative integer"))
}
