#![doc = include_str!("../README.md")]
//!
//! ## What is where
//!
//! - [`FileSystem`]: the one object-safe backend trait, over inodes and
//!   single names, with errors ([`Error`]) that each map onto one WASI
//!   `error-code`;
//! - [`MemFs`]: the in-memory backend, with lock-free MVCC snapshot reads
//!   ([`Snapshot`]), O(1) forks, quotas ([`mem::Quota`]) and atomic
//!   multi-operation batches — and, over a read-only lower filesystem, the
//!   overlay ([`MemFs::overlay`]);
//! - [`pack`]: the read-only random-access archive format: a streaming,
//!   deduplicating writer (compaction of any tree) and a zero-copy reader;
//! - [`mount`]: the mount table, itself a `FileSystem`;
//! - [`path`]: name validation; [`read_file`] and [`write_file`]: a whole
//!   file by path, resolving `..` and symlinks *above* the backends, never
//!   past the root.
//!
//! ```text
//!   host (WASI) / web (JS) / CLI
//!              │ paths: `..`, symlinks, containment
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
//! Beside this face, hidden from the documentation and outside the API
//! (they change without notice, as rustls's `internal` does): the plumbing
//! PackFS's host and packfs-web share — the treap, the locks, the path
//! walk, the WASI descriptor model and preview1, the journal's format,
//! `packfs virt`'s image, deadlines.
//!
//! ```
//! use packfs_core::{FileSystem, MemFs, OpenOptions, read_file};
//!
//! let fs = MemFs::new();
//! let root = fs.root();
//! let etc = fs.mkdir(root, "etc", 0o755)?;
//! let f = fs.open(etc, "motd", &OpenOptions::create())?;
//! fs.write_at(f, 0, b"hi\n")?;
//! fs.close(f);
//! fs.symlink(root, "m", "etc/motd")?;
//!
//! assert_eq!(read_file(&fs, "etc/../m")?, b"hi\n");
//! assert_eq!(read_file(&fs, "../etc/motd"), Err(packfs_core::Error::NotPermitted));
//! # Ok::<(), packfs_core::Error>(())
//! ```

#![forbid(unsafe_code)]

mod digest;
mod error;
mod fold;
mod fs;
pub mod mem;
mod meta;
pub mod mount;
pub mod pack;
pub mod path;
mod whole;

// The plumbing (see above): public for PackFS's own crates, not an API.
#[doc(hidden)]
pub mod deadline;
#[doc(hidden)]
pub mod journal;
#[doc(hidden)]
pub mod resolve;
#[doc(hidden)]
pub mod sync;
#[doc(hidden)]
pub mod treap;
#[doc(hidden)]
pub mod virt;
#[doc(hidden)]
pub mod wasi;

pub use error::{BackendFault, Code, CorruptJournal, CorruptJournalKind, Error, OsError, RemoteFailure, Result};
pub use fs::FileSystem;
pub use mem::memfs::{MemFs, MemFsBuilder, Snapshot};
pub use meta::{Clock, DirEntry, FileType, Ino, Metadata, OpenOptions, SetTime, Timestamp, system_clock};
pub use whole::{read_file, write_file};

/// Largest file size and offset (POSIX `off_t` is signed 64-bit).
pub const MAX_FILE_SIZE: u64 = i64::MAX as u64;
