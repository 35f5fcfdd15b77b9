//! Generated bindings for `wasi:filesystem/{types,preopens}` (WIT copied
//! from wasmtime-wasi 48, package version 0.2.12, as in 50; guests importing
//! 0.2.0..=0.2.12 link against it by semver), and the error type their
//! functions return.

#![allow(missing_docs, reason = "generated; the WIT documents it")]

wasmtime::component::bindgen!({
    path: "wit",
    world: "packfs:host/filesystem",
    imports: { default: trappable },
    trappable_error_type: {
        "wasi:filesystem/types.error-code" => crate::p2::bindings::FsError,
    },
    with: {
        "wasi:io": wasmtime_wasi::p2::bindings::io,
        "wasi:clocks": wasmtime_wasi::p2::bindings::clocks,
        "wasi:filesystem/types.descriptor": packfs_core::wasi::Descriptor,
        "wasi:filesystem/types.directory-entry-stream": crate::filesystem::DirStream,
    },
    // The wasi:io resources are wasmtime-wasi's async ones.
    require_store_data_send: true,
});

pub use self::wasi::filesystem::{preopens, types};

/// The error of a 0.2 `wasi:filesystem/types` function.
pub type FsError = crate::filesystem::TrappableError<types::ErrorCode>;
