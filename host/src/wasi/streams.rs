//! File streams (`read-via-stream`, `write-via-stream`, `append-via-stream`)
//! and directory listings (`read-directory`).
//!
//! Every stream is always ready: each call does its I/O on the spot (a
//! read of a remote pack's bytes not fetched yet fetches them within the
//! call), so no pollable has anything to wait for. (WASI 0.3's streams,
//! in `p3`, do wait: see there.) Stream rules from `wasi:io`: end of file
//! is [`StreamError::Closed`] (an empty read means "not ready yet", and
//! `blocking-read` traps after ten of those); a failure is
//! [`StreamError::LastOperationFailed`] carrying the `packfs_core::Error`,
//! which `filesystem-error-code` downcasts back, and closes the stream.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use packfs_core::{DirEntry, Result};
use wasmtime_wasi::async_trait;
use wasmtime_wasi::p2::{InputStream, OutputStream, Pollable, StreamError, StreamResult};

use packfs_core::wasi::descriptor::{At, Node, write_all};

/// Most bytes one stream call reads or accepts: bounds the host memory a
/// guest can make one call allocate.
pub(crate) const MAX_IO_CHUNK: usize = 1 << 20;

/// Directory entries fetched from the backend per batch.
const DIR_BATCH: usize = 128;

/// Most directory streams one guest holds at once (`insufficient-memory`
/// past it). Each holds a batch of names, so this bounds the host memory
/// a guest's listings take: at most 512 × 128 names, 20 MiB at the
/// longest names, whatever the number of its other resources.
pub const MAX_DIR_STREAMS: usize = 512;

/// The directory streams a guest holds, shared by its context and each
/// stream (which gives its place back when dropped).
#[derive(Clone, Default)]
pub(crate) struct StreamCount(Arc<std::sync::atomic::AtomicUsize>);

impl StreamCount {
    /// A place for one more stream, if there is room.
    fn take(&self) -> Option<StreamPlace> {
        use std::sync::atomic::Ordering;
        let n = &self.0;
        n.fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| (c < MAX_DIR_STREAMS).then_some(c + 1)).ok()?;
        Some(StreamPlace(self.clone()))
    }
}

/// One stream's place in its guest's [`StreamCount`].
struct StreamPlace(StreamCount);

impl Drop for StreamPlace {
    fn drop(&mut self) {
        (self.0).0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

fn failed(e: packfs_core::Error) -> StreamError {
    StreamError::LastOperationFailed(wasmtime::Error::new(e))
}

/// A file read from a position onwards.
pub(crate) struct FileReader {
    node: Arc<Node>,
    position: u64,
    closed: bool,
}

impl FileReader {
    pub(crate) fn new(node: Arc<Node>, position: u64) -> Self {
        FileReader { node, position, closed: false }
    }
}

#[async_trait]
impl Pollable for FileReader {
    async fn ready(&mut self) {}
}

impl InputStream for FileReader {
    fn read(&mut self, size: usize) -> StreamResult<Bytes> {
        if self.closed {
            return Err(StreamError::Closed);
        }
        if size == 0 {
            return Ok(Bytes::new());
        }
        let mut buf = BytesMut::zeroed(size.min(MAX_IO_CHUNK));
        let n = match self.node.fs.read_at(self.node.ino, self.position, &mut buf) {
            Ok(0) => {
                self.closed = true;
                return Err(StreamError::Closed);
            }
            Ok(n) => n,
            Err(e) => {
                self.closed = true;
                return Err(failed(e));
            }
        };
        buf.truncate(n);
        self.position += n as u64;
        Ok(buf.freeze())
    }
}

/// Where a [`FileWriter`] writes.
enum Mode {
    At(u64),
    Append,
}

/// A file written from a position onwards, or appended to.
pub(crate) struct FileWriter {
    node: Arc<Node>,
    mode: Mode,
    /// Sync after every write (the descriptor asked for integrity sync).
    sync: bool,
    closed: bool,
}

impl FileWriter {
    pub(crate) fn at(node: Arc<Node>, position: u64, sync: bool) -> Self {
        FileWriter { node, mode: Mode::At(position), sync, closed: false }
    }

    pub(crate) fn append(node: Arc<Node>, sync: bool) -> Self {
        FileWriter { node, mode: Mode::Append, sync, closed: false }
    }

    fn write_all(&mut self, data: &[u8]) -> Result<()> {
        let (fs, ino) = (&self.node.fs, self.node.ino);
        match &mut self.mode {
            Mode::At(position) => {
                write_all(&**fs, ino, *position, data)?;
                *position += data.len() as u64;
            }
            Mode::Append => {
                fs.append(ino, data)?;
            }
        }
        if self.sync { fs.sync(ino) } else { Ok(()) }
    }

    fn open(&self) -> StreamResult<()> {
        if self.closed { Err(StreamError::Closed) } else { Ok(()) }
    }
}

#[async_trait]
impl Pollable for FileWriter {
    async fn ready(&mut self) {}
}

impl OutputStream for FileWriter {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.open()?;
        if bytes.is_empty() {
            return Ok(());
        }
        self.write_all(&bytes).map_err(|e| {
            self.closed = true;
            failed(e)
        })
    }

    fn flush(&mut self) -> StreamResult<()> {
        self.open()
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        self.open()?;
        Ok(MAX_IO_CHUNK)
    }
}

/// A directory's entries in the backend's stable order, fetched in batches
/// and resumed by name: entries added or removed meanwhile neither repeat
/// nor shift the rest. The `directory-entry-stream` resource.
pub struct DirStream {
    node: Arc<Node>,
    _place: StreamPlace,
    /// The name to resume after; `None` before the first batch.
    after: Option<Arc<str>>,
    batch: VecDeque<DirEntry>,
    /// The [`Recent`](super::recent::Recent) epoch the batch was read in.
    batch_epoch: u64,
    done: bool,
}

impl DirStream {
    /// A stream over `node`, if `count` has room for one more.
    pub(crate) fn new(node: Arc<Node>, count: &StreamCount) -> Option<Self> {
        let place = count.take()?;
        Some(DirStream { node, _place: place, after: None, batch: VecDeque::new(), batch_epoch: 0, done: false })
    }

    /// The next entry; `epoch` is the guest's current one, and the entry
    /// comes with the epoch of the batch it was read in.
    pub(crate) fn next_entry(&mut self, epoch: u64) -> Result<Option<(DirEntry, u64)>> {
        if self.batch.is_empty() && !self.done {
            let entries = self.node.fs.read_dir(self.node.ino, self.after.as_deref(), DIR_BATCH)?;
            // A short page need not be the last (a backend may filter its
            // pages); only an empty one is.
            self.done = entries.is_empty();
            if let Some(last) = entries.last() {
                self.after = Some(Arc::clone(&last.name));
            }
            self.batch = entries.into();
            self.batch_epoch = epoch;
        }
        Ok(self.batch.pop_front().map(|e| (e, self.batch_epoch)))
    }

    /// The directory listed.
    pub(crate) fn at(&self) -> At {
        self.node.at()
    }
}
