//! The filesystem every WASI version serves, apart from any one version.
//!
//! As in wasmtime-wasi, a version-neutral context sits under thin
//! per-version adapters:
//!
//! ```text
//!   p1 (crate::p1)            p2 (crate::p2)             p3 (crate::p3)
//!   packfs_core::wasi::p1     wasi:filesystem 0.2        wasi:filesystem 0.3
//!          │                          └──── this module ────┘
//!          └──────── packfs_core::wasi::descriptor (the model) ───┘
//! ```
//!
//! - [`packfs_core::wasi::descriptor`]: the model. What a [`Descriptor`]
//!   is, every permission check and mount crossing, behaviour as
//!   wasmtime-wasi on a real directory (the oracle of the guest tests);
//! - `ctx`: the preopen table ([`PackFsCtx`]), one for both component
//!   versions;
//! - `view`: what the host functions borrow ([`PackFsCtxView`]), and the
//!   calls both versions make alike;
//! - `recent`: the last name resolved, so `metadata-hash-at` after
//!   `stat-at` or a directory entry does not walk again;
//! - `dir_stream`: directory listings ([`DirStream`]), and how many a
//!   guest may hold;
//! - `error`: [`TrappableError`], a version's `error-code` or a trap;
//! - `convert`: the conversions both versions write alike, once.
//!
//! A preview1 module needs none of it: `packfs_core::wasi::p1` is the
//! whole of preview1 over the same model.

mod convert;
mod ctx;
mod dir_stream;
mod error;
mod recent;
mod view;
#[cfg(feature = "p3")]
pub(crate) mod waits;

pub(crate) use convert::conversions;
pub use ctx::{PackFsCtx, PackFsCtxBuilder};
pub use dir_stream::{DirStream, MAX_DIR_STREAMS};
pub use error::TrappableError;
pub use packfs_core::wasi::Descriptor;
pub use view::{PackFsCtxView, PackFsFilesystem, PackFsView};

/// Most bytes one stream call reads or accepts: bounds the host memory a
/// guest can make one call allocate.
pub(crate) const MAX_IO_CHUNK: usize = 1 << 20;
