#![doc = include_str!("../README.md")]
//!
//! ## What is where
//!
//! - [`FileSystem`]: the one object-safe backend trait, over inodes and
//!   single names, with errors ([`Error`]) that each map onto one WASI
//!   `error-code`;
//! - [`treap::Treap`]: the persistent ordered map every index is built on;
//! - [`MemFs`]: the in-memory backend, with lock-free MVCC snapshot reads
//!   ([`Snapshot`]), O(1) forks, quotas ([`mem::Quota`]) and atomic
//!   multi-operation batches — and, over a read-only lower filesystem, the
//!   overlay ([`MemFs::overlay`]);
//! - [`pack`]: the read-only random-access archive format: a streaming,
//!   deduplicating writer (compaction of any tree) and a zero-copy reader;
//! - [`mount`]: the mount table, itself a `FileSystem`;
//! - [`journal`]: the write-ahead log format that makes a `MemFs` durable
//!   (the host writes the file);
//! - [`path`] and [`resolve`]: name validation and the path walk that
//!   resolves `..` and symlinks *above* the backends, never past the root;
//!   [`read_file`] and [`write_file`]: a whole file by path;
//! - [`wasi`]: the WASI descriptor model and `wasi_snapshot_preview1`
//!   itself, over any guest memory (wasmtime's, or a browser Worker's);
//! - [`deadline`]: a guest's deadline as every wait made on its behalf
//!   sees it (preview1's sleeps and stdio, a remote pack's fetch).
//!
//! ```text
//!   host (WASI) / web (JS) / CLI
//!              │ paths
//!        resolve::resolve ── `..`, symlinks, containment
//!              │ (dir inode, name)
//!        dyn FileSystem ── MountTable ─┬─ MemFs · Snapshot · overlay
//!              │                       ├─ PackFs (pack bytes, mmap, fetch)
//!              │                       └─ (host: DirFs)
//!        Tree = Treap<(dir, name) → ino> + Treap<ino → inode>
//! ```
//!
//! What it does not do: no OS file I/O, no clock of its own on
//! `wasm32-unknown-unknown` (pass a [`Clock`]), no permission checks per
//! handle (the layer holding handles enforces read/write rights).
//!
//! ```
//! use packfs_core::{resolve, FileSystem, MemFs, OpenOptions};
//!
//! let fs = MemFs::new();
//! let root = fs.root();
//! let etc = fs.mkdir(root, "etc", 0o755)?;
//! let f = fs.open(etc, "motd", &OpenOptions::create())?;
//! fs.write_at(f, 0, b"hi\n")?;
//! fs.close(f);
//! fs.symlink(root, "m", "etc/motd")?;
//!
//! let ino = resolve::resolve(&fs, root, "etc/../m", true)?;
//! assert_eq!(ino, f);
//! assert_eq!(resolve::resolve(&fs, root, "..", true), Err(packfs_core::Error::NotPermitted));
//! # Ok::<(), packfs_core::Error>(())
//! ```

#![forbid(unsafe_code)]

pub mod deadline;
mod error;
mod fold;
mod fs;
pub mod journal;
pub mod mem;
mod meta;
pub mod mount;
pub mod pack;
pub mod path;
pub mod resolve;
pub mod sync;
pub mod treap;
pub mod virt;
pub mod wasi;
mod whole;

pub use error::{BackendFault, Code, Error, OsError, RemoteFailure, Result};
pub use fs::FileSystem;
pub use mem::{MemFs, Snapshot};
pub use meta::{Clock, DirEntry, FileType, Ino, Metadata, OpenOptions, SetTime, Timestamp, system_clock};
pub use whole::{read_file, write_file};

/// Largest file size and offset (POSIX `off_t` is signed 64-bit).
pub const MAX_FILE_SIZE: u64 = i64::MAX as u64;
