//! Generated bindings for `wasi:filesystem@0.3.0` (`types`, `preopens`;
//! WIT copied from wasmtime-wasi 48, the same in 50), and the error type their functions
//! return.
//!
//! As wasmtime-wasi's own p3 bindings: the WIT's `async func`s are
//! concurrent host functions given an `Accessor`, and the four functions
//! that return streams get the store, to make them.

#![allow(missing_docs, reason = "generated; the WIT documents it")]

wasmtime::component::bindgen!({
    path: "wit-p3",
    world: "packfs:host/filesystem",
    imports: {
        "wasi:filesystem/types.[method]descriptor.read-via-stream": store | trappable,
        "wasi:filesystem/types.[method]descriptor.write-via-stream": store | trappable,
        "wasi:filesystem/types.[method]descriptor.append-via-stream": store | trappable,
        "wasi:filesystem/types.[method]descriptor.read-directory": store | trappable,
        default: trappable,
    },
    trappable_error_type: {
        "wasi:filesystem/types.error-code" => crate::p3::bindings::FsError,
    },
    with: {
        "wasi:clocks": wasmtime_wasi::p3::bindings::clocks,
        "wasi:filesystem/types.descriptor": packfs_core::wasi::Descriptor,
    },
    require_store_data_send: true,
});

pub use self::wasi::filesystem::{preopens, types};

/// The error of a 0.3 `wasi:filesystem/types` function.
pub type FsError = crate::filesystem::TrappableError<types::ErrorCode>;
