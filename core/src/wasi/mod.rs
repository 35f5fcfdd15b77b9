//! WASI over PackFS, written once for every target: the descriptor model
//! both WASI versions share, and preview1 itself.
//!
//! - [`descriptor`]: what a WASI descriptor is over a [`FileSystem`] and
//!   what each operation on it may do, with every permission check;
//!   behaviour as wasmtime-wasi on a real directory;
//! - [`p1`]: `wasi_snapshot_preview1`, every function, over a guest memory
//!   the embedder lends ([`p1::Memory`]); the host binds it into wasmtime's
//!   core-module linker, the browser into a Worker's imports.
//!
//! A guest's deadline, which every wait of preview1 keeps, is
//! [`crate::deadline`]'s: a remote pack's fetch keeps it too.
//!
//! `wasi:filesystem` 0.2 and 0.3 (components) are served by the host over
//! the same [`descriptor`] model, and 0.2 in JavaScript by `packfs-web`
//! (components transpiled by jco).
//!
//! [`FileSystem`]: crate::FileSystem

pub mod descriptor;
pub mod p1;

pub use descriptor::{Access, Descriptor, device_number};
