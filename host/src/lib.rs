#![doc = include_str!("../README.md")]
// The docs describe the default features: without `p2` or `p3` some of
// their links have nothing to point at.
#![cfg_attr(not(all(feature = "p2", feature = "p3")), allow(rustdoc::broken_intra_doc_links))]
//!
//! ## What is where
//!
//! packfs-host presents PackFS trees to WASI guest programs as ordinary preopened
//! directories, on wasmtime 48 to 50. Guests use `std::fs`, wasi-libc stdio,
//! anything that speaks WASI — their I/O lands in a PackFS
//! [`FileSystem`](packfs_core::FileSystem), never on the host disk unless
//! a `packfs_os::dir::DirFs` says so.
//!
//! ```text
//!   p1 core module              p2 / p3 component
//!       │ wasi_snapshot_preview1    │ wasi:filesystem 0.2, 0.3       │ io, clocks, cli, …
//!   p1: packfs_core::wasi::p1   p2::types, p3::types               wasmtime-wasi
//!       │                         └─ filesystem (ctx, view, listings)
//!       └────────── packfs_core::wasi::descriptor (the model) ──┘
//!                   │ paths: packfs_core::resolve
//!   Arc<dyn FileSystem>: MemFs · Snapshot · pack (mmap) · overlay · mount table · DirFs
//! ```
//!
//! Serving guests:
//! - [`p1`]: PackFS's own preview1 linked into a core-module `Linker`, with
//!   this process's clocks, randomness and stdio;
//! - [`filesystem`]: what components of every version share, apart from
//!   any one version: the preopen table ([`PackFsCtx`](filesystem::PackFsCtx)),
//!   the view host functions borrow, listings, the error type;
//! - [`p2`]: `wasi:filesystem` 0.2 for components, and the
//!   `add_to_linker` functions that plug it into a component `Linker`;
//! - [`p3`]: `wasi:filesystem` 0.3 for async components, beside 0.2;
//! - [`load`]: compiling guests, with an on-disk cache of compiled code;
//! - [`Runner`]: load and run a command guest against PackFS preopens,
//!   with [`Limits`] on memory and time, and a [`Pool`] of sandboxes;
//! - [`virt`]: PackFS composed into a component, for any host.
//!
//! Features, all on by default: `p2` serves components (it brings
//! wasmtime-wasi, and so tokio); `p3` serves WASI 0.3 components too (the
//! component model's async); `virt` composes components. An embedder who
//! runs p1 modules alone turns them off (`default-features = false`).
//!
//! The trees on the host's own filesystem — host directories, mapped
//! packs, journals — are [`packfs_os`]'s, which needs no wasmtime; packs
//! in object stores and on web servers, and an opener of packs wherever
//! they are (`packfs_remote::packs::Packs`), are `packfs_remote`'s; the
//! filesystems themselves and preview1 are [`packfs_core`]'s.
//!
//! A plugin host adds preview1 to its own linker and gives the guest a
//! tree; here the guest writes "hi" to stdout, which the host captures:
//!
//! ```
//! use std::sync::Arc;
//! use packfs_core::MemFs;
//! use packfs_host::p1::{HostPlatform, Wasi, add_to_linker};
//! use packfs_host::{Access, Capture};
//! use wasmtime::{Engine, Linker, Module, Store};
//!
//! let engine = Engine::default();
//! let mut linker = Linker::<Wasi>::new(&engine);
//! add_to_linker(&mut linker, |wasi| wasi)?;
//! let stdout = Capture::new(1024);
//! let wasi = Wasi::builder(Box::new(HostPlatform::default()))
//!     .stdout(Box::new(stdout.clone()))
//!     .preopen("/", Arc::new(MemFs::new()), Access::ReadWrite)
//!     .build()?;
//! let guest = wat::parse_str(r#"(module
//!     (import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
//!     (memory (export "memory") 1)
//!     (data (i32.const 8) "hi")
//!     (func (export "_start")
//!         (i32.store (i32.const 0) (i32.const 8)) (i32.store (i32.const 4) (i32.const 2))
//!         (drop (call $w (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 16)))))"#)?;
//! let mut store = Store::new(&engine, wasi);
//! let instance = linker.instantiate(&mut store, &Module::new(&engine, guest)?)?;
//! instance.get_typed_func::<(), ()>(&mut store, "_start")?.call(&mut store, ())?;
//! assert_eq!(stdout.contents(), b"hi");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! What it does not do: no sockets for p1
//! guests (their `sock_*` calls answer as wasmtime's do); no
//! per-descriptor `mutate-directory` enforcement beyond the preopen's
//! [`Access`], as in wasmtime-wasi.

#[cfg(feature = "p2")]
pub mod filesystem;
mod limits;
pub mod load;
pub mod p1;
#[cfg(feature = "p2")]
pub mod p2;
#[cfg(feature = "p3")]
pub mod p3;
mod pool;
mod run;
mod sandbox;
#[cfg(feature = "virt")]
pub mod virt;

pub use limits::{Limits, MAX_TIMEOUT, RunError, Unenforceable};
pub use pool::Pool;
pub use run::{Prepared, Runner, RunnerBuilder};
pub use sandbox::{Access, Capture, Output, Sandbox, Stdin};
/// The wasmtime an embedder hands its engine and linkers from: the one
/// this crate links.
pub use wasmtime;
/// The wasmtime-wasi whose `WasiCtx` components get: the one this crate
/// links.
#[cfg(feature = "p2")]
pub use wasmtime_wasi;

/// The project README's Rust example, compiled as a doc test so that it
/// cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ProjectReadme;
