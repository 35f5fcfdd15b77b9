//! Arguments from JavaScript, checked and converted: every entry point
//! takes `JsValue`s and passes them through here, and a value of the wrong
//! type is a `TypeError` naming the argument.
//!
//! Not wasm-bindgen's typed parameters: for a `&str` or `String` its glue
//! trusts the value to be a string. Given a number or an object it reads
//! an `undefined` length, asks the module's allocator for 0 bytes, then
//! has it resize a pointer it never handed out, and the allocator faults
//! (`RuntimeError: memory access out of bounds`); given `undefined` or
//! `null` it throws a message naming no argument. A class parameter
//! (`&Pack`) is checked by the glue, but with a plain `Error` ("expected
//! instance of Pack").

// Views of JavaScript buffers are sized in u32s and JavaScript's numbers
// reach 2^53: a silent truncation here copies the wrong bytes.
#![warn(clippy::cast_possible_truncation)]

use js_sys::{Function, Reflect, Uint8Array};
use packfs_core::Code;
use wasm_bindgen::convert::TryFromJsValue;
use wasm_bindgen::{JsCast, JsValue};

use crate::error::{JsResult, js_error, type_error};

/// Argument `name`, a string.
pub(crate) fn string(v: &JsValue, name: &str) -> JsResult<String> {
    v.as_string().ok_or_else(|| type_error(&format!("{name} must be a string")))
}

/// Argument `name`, a number (its range is the caller's to check).
pub(crate) fn number(v: &JsValue, name: &str) -> JsResult<f64> {
    v.as_f64().ok_or_else(|| type_error(&format!("{name} must be a number")))
}

/// Field `key` of an `options` argument: `undefined` when there are no
/// options (`undefined` or `null`); an options value that is not an
/// object is a `TypeError`.
pub(crate) fn field(options: &Option<JsValue>, key: &str) -> JsResult<JsValue> {
    match options {
        None => Ok(JsValue::UNDEFINED),
        Some(o) if o.is_object() => Reflect::get(o, &key.into()),
        Some(_) => Err(type_error("options must be an object")),
    }
}

/// Argument `name`, an `ArrayBuffer` or `ArrayBufferView`: its bytes.
pub(crate) fn binary(v: &JsValue, name: &str) -> JsResult<Vec<u8>> {
    buffer(v)?.ok_or_else(|| type_error(&format!("{name} must be an ArrayBufferView or an ArrayBuffer")))
}

/// Argument `name`, data to write: binary as [`binary`], or a string
/// (UTF-8).
pub(crate) fn data(v: &JsValue, name: &str) -> JsResult<Vec<u8>> {
    if let Some(s) = v.as_string() {
        return Ok(s.into_bytes());
    }
    buffer(v)?.ok_or_else(|| type_error(&format!("{name} must be an ArrayBufferView, an ArrayBuffer or a string")))
}

/// The bytes of a binary value: an `ArrayBuffer` or any `ArrayBufferView`
/// (typed array or `DataView`); `None` for anything else.
fn buffer(v: &JsValue) -> JsResult<Option<Vec<u8>>> {
    if v.is_instance_of::<js_sys::ArrayBuffer>() {
        return copied(&Uint8Array::new(v)).map(Some);
    }
    if js_sys::ArrayBuffer::is_view(v) {
        // Any typed array or DataView: its bytes, whatever its element type
        // (`new Uint8Array(view)` would convert elements instead).
        let get = |key: &str| Reflect::get(v, &key.into());
        let (offset, len) = (get("byteOffset")?.as_f64(), get("byteLength")?.as_f64());
        if let (Some(offset), Some(len)) = (offset, len) {
            // Bytes past 4 GiB are past what a u32 view reaches, and more
            // than this module's memory holds.
            let (offset, len) = (u32_of(offset).ok_or_else(no_room)?, u32_of(len).ok_or_else(no_room)?);
            let view = Uint8Array::new_with_byte_offset_and_length(&get("buffer")?, offset, len);
            return copied(&view).map(Some);
        }
    }
    Ok(None)
}

/// A JavaScript byte offset or length as a u32, if it is one.
#[allow(clippy::cast_possible_truncation, reason = "the result is kept only when checked to be an integer u32 holds")]
fn u32_of(n: f64) -> Option<u32> {
    (n.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&n)).then_some(n as u32)
}

/// What a copy that cannot fit this module's memory throws.
fn no_room() -> JsValue {
    js_error(Code::InsufficientSpace, "insufficient-space: no memory for the data")
}

/// `bytes` copied into this module's memory, `insufficient-space` when it
/// has no room for them (rather than an abort).
fn copied(bytes: &Uint8Array) -> JsResult<Vec<u8>> {
    let len = bytes.length() as usize;
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| no_room())?;
    v.resize(len, 0);
    bytes.copy_to(&mut v);
    Ok(v)
}

/// Argument `name`, an object of class `T` (`MemFs`, `Pack` or
/// `Overlay`, called `class` in the message): a second handle on it.
/// wasm-bindgen lends Rust a class's object only through a typed
/// parameter; from a `JsValue` it can only move the object out of the
/// caller's hands. So this asks the object for a handle of its own (the
/// hidden `__share` every class has) and takes that, checked to be a `T`.
pub(crate) fn shared<T: TryFromJsValue>(v: &JsValue, name: &str, class: &str) -> JsResult<T> {
    let wrong = || type_error(&format!("{name} must be a {class}"));
    if !v.is_object() {
        return Err(wrong());
    }
    let share: Function = Reflect::get(v, &"__share".into())?.dyn_into().map_err(|_| wrong())?;
    T::try_from_js_value(share.call0(v)?).map_err(|_| wrong())
}
