#![doc = include_str!("../README.md")]
//!
//! ## What is where
//!
//! What needs the operating system, and nothing of wasmtime:
//!
//! - [`beneath`]: the rule every path into a host directory is opened by
//!   (`openat2` `RESOLVE_BENEATH`), for [`dir`] and whoever else writes
//!   there;
//! - [`dir`]: a host directory as a [`FileSystem`](packfs_core::FileSystem),
//!   contained beneath it (no symlink or `..` leads out);
//! - [`mmap`]: packs read in place from a read-only mapping, zero-copy;
//! - [`pack`]: a host directory to a pack, as `packfs pack` makes one;
//! - [`journal`]: a `MemFs` made durable by a write-ahead log, with
//!   checkpoints into packs;
//! - [`publish`]: files published atomically (`O_TMPFILE` + `linkat`, else
//!   a temporary name and `rename`), so a crash leaves the old file or the
//!   new one.
//!
//! Built on [`packfs_core`] (the filesystems, the pack and journal
//! formats); `packfs-host` serves these trees to WASI guests, and the
//! `packfs` command (`packfs-cli`) builds, inspects and unpacks packs with
//! them.
//!
//! ```
//! use packfs_core::pack::write_pack;
//! use packfs_core::{FileSystem, MemFs, OpenOptions};
//!
//! let fs = MemFs::new();
//! let f = fs.open(fs.root(), "index.html", &OpenOptions::create())?;
//! fs.write_at(f, 0, b"<h1>hi</h1>")?;
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("site.pack");
//! write_pack(&fs.snapshot(), std::fs::File::create(&path)?)?;
//!
//! // Mapped read-only; the bytes are read in place.
//! let pack = packfs_os::mmap::open_pack(&path)?;
//! let ino = pack.lookup(pack.root(), "index.html")?;
//! assert_eq!(*pack.file_bytes(ino)?, *b"<h1>hi</h1>");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod beneath;
pub mod dir;
pub mod journal;
pub mod mmap;
pub mod pack;
pub mod publish;
