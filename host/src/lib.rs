//! # packfs-host
//!
//! Presents PackFS trees to WASI guest programs as ordinary preopened
//! directories, on wasmtime 48. Guests use `std::fs`, wasi-libc stdio,
//! anything that speaks WASI — their I/O lands in a PackFS
//! [`FileSystem`](packfs_core::FileSystem), never on the host disk unless
//! a `packfs_os::dir::DirFs` says so.
//!
//! ```text
//!   p1 core module                         p2 component
//!       │ wasi_snapshot_preview1               │ wasi:filesystem    │ io, clocks, cli, …
//!   p1: packfs_core::wasi::p1             wasi::types             wasmtime-wasi
//!       └────────── packfs_core::wasi::descriptor (the model) ──┘
//!                   │ paths: packfs_core::resolve
//!   Arc<dyn FileSystem>: MemFs · Snapshot · pack (mmap) · overlay · mount table · DirFs
//! ```
//!
//! Serving guests:
//! - [`p1`]: PackFS's own preview1 linked into a core-module `Linker`, with
//!   this process's clocks, randomness and stdio;
//! - [`wasi`]: `wasi:filesystem` 0.2 for components, and the
//!   `add_to_linker` functions that plug it into a component `Linker`;
//! - [`load`]: compiling guests, with an on-disk cache of compiled code;
//! - [`Runner`]: load and run a command guest against PackFS preopens,
//!   with [`Limits`] on memory and time.
//!
//! The trees on the host's own filesystem — host directories, mapped
//! packs, journals — are `packfs-os`'s, which needs no wasmtime.
//!
//! What it does not do: no `wasi:filesystem` 0.3 (p3); no sockets for p1
//! guests (their `sock_*` calls answer as wasmtime's do); no
//! per-descriptor `mutate-directory` enforcement beyond the preopen's
//! [`Access`](wasi::Access), as in wasmtime-wasi.

#![warn(missing_docs, unreachable_pub)]
#![deny(unsafe_code)]

pub mod load;
pub mod p1;
mod run;
pub mod wasi;

pub use run::{GuestState, Limits, P1State, RunError, Runner};
