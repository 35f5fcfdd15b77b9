//! The writer: any [`FileSystem`] to a pack, streamed to a
//! [`std::io::Write`].
//!
//! One breadth-first walk from the root writes file contents to the data
//! section as it meets them; the index (inode, dirent, blob and string
//! tables) is kept in memory and written after the data, then the trailer.
//! Memory is O(index) plus two 64 KiB buffers, never O(data), and the
//! output is never sought. Equal contents are stored once, shared only
//! after a byte-by-byte comparison.
//!
//! The source should not change while it is packed: pack a [`Snapshot`]
//! (`MemFs::snapshot()`, O(1)), not a live [`MemFs`]. A change the writer
//! notices (a file shorter than its size, bytes that no longer match their
//! first read or their checksum) is [`WriteError::SourceChanged`].
//!
//! - `options`: [`PackOptions`], [`write_pack`] and [`PackStats`], the way in;
//! - `walk`: the writer's state and the breadth-first walk;
//! - `read`: reading a source file in 64 KiB pieces;
//! - `dedup` and `candidates`: storing each content once;
//! - `samples`: the pass that trains version 2's zstd dictionary;
//! - `chunker`: version 2's content space, cut into compressed chunks;
//! - `emit`: the index and the trailer, after the data;
//! - `out`: the output sink all of them write through;
//! - `error`: [`WriteError`].
//!
//! [`FileSystem`]: crate::FileSystem
//! [`Snapshot`]: crate::Snapshot
//! [`MemFs`]: crate::MemFs

mod candidates;
mod chunker;
mod dedup;
mod emit;
mod error;
mod options;
mod out;
mod read;
mod samples;
mod walk;

pub use error::WriteError;
pub use options::{PackOptions, PackStats, write_pack};
