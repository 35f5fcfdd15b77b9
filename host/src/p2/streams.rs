//! File streams (`read-via-stream`, `write-via-stream`, `append-via-stream`)
//! as wasmtime-wasi's `wasi:io` streams; directory listings are
//! [`DirStream`](crate::filesystem::DirStream)s.
//!
//! Every stream is always ready: each call does its I/O on the spot (a
//! read of a remote pack's bytes not fetched yet fetches them within the
//! call), so no pollable has anything to wait for. (WASI 0.3's streams,
//! in `p3`, do wait: see there.) Stream rules from `wasi:io`: end of file
//! is [`StreamError::Closed`] (an empty read means "not ready yet", and
//! `blocking-read` traps after ten of those); a failure is
//! [`StreamError::LastOperationFailed`] carrying the `packfs_core::Error`,
//! which `filesystem-error-code` downcasts back, and closes the stream.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use packfs_core::Result;
use wasmtime_wasi::async_trait;
use wasmtime_wasi::p2::{InputStream, OutputStream, Pollable, StreamError, StreamResult};

use crate::filesystem::MAX_IO_CHUNK;
use packfs_core::wasi::descriptor::Node;

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

/// A file written from a position onwards, or appended to.
pub(crate) struct FileWriter {
    node: Arc<Node>,
    /// Where the next write goes; `None`: appended.
    at: Option<u64>,
    /// Sync after every write (the descriptor asked for integrity sync).
    sync: bool,
    closed: bool,
}

impl FileWriter {
    pub(crate) fn at(node: Arc<Node>, position: u64, sync: bool) -> Self {
        FileWriter { node, at: Some(position), sync, closed: false }
    }

    pub(crate) fn append(node: Arc<Node>, sync: bool) -> Self {
        FileWriter { node, at: None, sync, closed: false }
    }

    fn write_all(&mut self, data: &[u8]) -> Result<()> {
        self.node.write_to(self.at, data, self.sync)?;
        if let Some(position) = &mut self.at {
            *position += data.len() as u64;
        }
        Ok(())
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
