//! Generated bindings for `wasi:filesystem/{types,preopens}` (WIT copied
//! from wasmtime-wasi 48, package version 0.2.12; guests importing
//! 0.2.0..=0.2.12 link against it by semver), and the error type their
//! functions return.

#![allow(missing_docs, reason = "generated; the WIT documents it")]

wasmtime::component::bindgen!({
    path: "wit",
    world: "packfs:host/filesystem",
    imports: { default: trappable },
    trappable_error_type: {
        "wasi:filesystem/types.error-code" => crate::wasi::bindings::FsError,
    },
    with: {
        "wasi:io": wasmtime_wasi::p2::bindings::io,
        "wasi:clocks": wasmtime_wasi::p2::bindings::clocks,
        "wasi:filesystem/types.descriptor": packfs_core::wasi::Descriptor,
        "wasi:filesystem/types.directory-entry-stream": crate::wasi::streams::DirStream,
    },
    // The wasi:io resources are wasmtime-wasi's async ones.
    require_store_data_send: true,
});

pub use self::wasi::filesystem::{preopens, types};

/// The error of a `wasi:filesystem/types` function: a code the guest sees,
/// or a trap (a host bug or a bad resource handle) that ends the guest.
#[derive(Debug)]
pub enum FsError {
    /// Returned to the guest.
    Code(types::ErrorCode),
    /// Traps the guest.
    Trap(wasmtime::Error),
}
