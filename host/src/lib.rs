//! # packfs-host
//!
//! Presents PackFS trees to WASI guest programs as ordinary preopened
//! directories, on wasmtime 48. Guests use `std::fs`, wasi-libc stdio,
//! anything that speaks `wasi:filesystem` — their I/O lands in a PackFS
//! [`FileSystem`](packfs_core::FileSystem), never on the host disk.
//!
//! ```text
//!   guest (wasip2 component, or wasip1 module + preview1 adapter)
//!       │ wasi:filesystem/{types,preopens}      │ wasi:io, clocks, cli, …
//!   wasi::types ── descriptor model ──┐        wasmtime-wasi
//!       │ paths: packfs_core::resolve  │ one ResourceTable shared
//!   Arc<dyn FileSystem>: MemFs · Snapshot · pack · overlay · mount table
//! ```
//!
//! - [`wasi`]: the filesystem host and the `add_to_linker` functions that
//!   plug it into any `wasmtime::component::Linker`;
//! - [`p1`]: loading p1 core modules through the adapter, with an on-disk
//!   cache of compiled components;
//! - [`Runner`]: load and run a command guest against PackFS preopens.
//!
//! What it does not do: no host directories (a `dir` backend is another
//! [`FileSystem`](packfs_core::FileSystem)); no `wasi:filesystem` 0.3
//! (p3); no per-descriptor `mutate-directory` enforcement beyond the
//! preopen's [`Access`](wasi::Access), as in wasmtime-wasi.

#![warn(missing_docs, unreachable_pub)]

pub mod dir;
pub mod journal;
pub mod load;
pub mod mmap;
pub mod p1;
pub mod publish;
mod run;
pub mod wasi;

pub use run::{GuestState, Limits, P1State, RunError, Runner};
