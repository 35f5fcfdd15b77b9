//! # packfs-os
//!
//! PackFS on the host's own filesystem — what needs the operating system,
//! and nothing of wasmtime:
//!
//! - [`dir`]: a host directory as a [`FileSystem`](packfs_core::FileSystem),
//!   contained beneath it (no symlink or `..` leads out);
//! - [`mmap`]: packs read in place from a read-only mapping, zero-copy;
//! - [`journal`]: a `MemFs` made durable by a write-ahead log, with
//!   checkpoints into packs;
//! - [`publish`]: files published atomically (`O_TMPFILE` + `linkat`, else
//!   a temporary name and `rename`), so a crash leaves the old file or the
//!   new one.
//!
//! `packfs-host` serves these trees to WASI guests; the `packfs` command
//! builds, inspects and unpacks packs with them.

#![warn(missing_docs, unreachable_pub)]
#![deny(unsafe_code)]

pub mod dir;
pub mod journal;
pub mod mmap;
pub mod publish;
