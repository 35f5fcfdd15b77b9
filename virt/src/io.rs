//! `wasi:io`, exported: a stream is a file's (served here) or the host's
//! (stdio, a host directory's files: forwarded), and so are errors and
//! pollables. A file's stream is
//! always ready: each call does its I/O on the spot, so its pollable is
//! ready at once, and `poll` waits on the host only when none of ours is.
//!
//! Stream rules, as the host's adapter (host/src/p2/streams.rs): end of
//! file is `closed`; a failure is `last-operation-failed` carrying the
//! PackFS error, which `filesystem-error-code` gives back, and closes the
//! stream.

use std::cell::Cell;
use std::sync::Arc;

use packfs_core::wasi::descriptor::Node;

use crate::Virt;
use crate::bindings::exports::wasi::io::{error, poll, streams};
use crate::bindings::wasi::io as host;
use crate::fs::MAX_IO_CHUNK;
use crate::held::Held;

type StreamResult<T> = Result<T, streams::StreamError>;

/// A `wasi:io/error`: a PackFS error or the host's.
pub(crate) enum IoError {
    Fs(packfs_core::Error),
    Host(host::error::Error),
}

impl error::Guest for Virt {
    type Error = IoError;
}

impl error::GuestError for IoError {
    fn to_debug_string(&self) -> String {
        match self {
            IoError::Fs(e) => e.to_string(),
            IoError::Host(e) => e.to_debug_string(),
        }
    }
}

fn failed(e: packfs_core::Error) -> streams::StreamError {
    streams::StreamError::LastOperationFailed(error::Error::new(IoError::Fs(e)))
}

/// The host's stream error as ours.
fn host_error(e: host::streams::StreamError) -> streams::StreamError {
    match e {
        host::streams::StreamError::Closed => streams::StreamError::Closed,
        host::streams::StreamError::LastOperationFailed(e) => {
            streams::StreamError::LastOperationFailed(error::Error::new(IoError::Host(e)))
        }
    }
}

/// A `wasi:io/poll` pollable: ready now, or the host's.
pub(crate) enum Ready {
    Now,
    Host(host::poll::Pollable),
}

impl poll::Guest for Virt {
    type Pollable = Ready;

    fn poll(list: Vec<poll::PollableBorrow<'_>>) -> Vec<u32> {
        let mut now = Vec::new();
        let (mut hosts, mut at) = (Vec::new(), Vec::new());
        for (i, p) in list.iter().enumerate() {
            match p.get::<Ready>() {
                Ready::Now => now.push(i as u32),
                Ready::Host(h) => {
                    hosts.push(h);
                    at.push(i as u32);
                }
            }
        }
        if !now.is_empty() {
            // Without waiting: the host's that are ready too are reported.
            now.extend(hosts.iter().zip(&at).filter(|(h, _)| h.ready()).map(|(_, &i)| i));
            now.sort_unstable();
            return now;
        }
        // An empty list traps in the host, as the interface says it must.
        host::poll::poll(&hosts).into_iter().map(|i| at[i as usize]).collect()
    }
}

impl poll::GuestPollable for Ready {
    fn ready(&self) -> bool {
        match self {
            Ready::Now => true,
            Ready::Host(h) => h.ready(),
        }
    }

    fn block(&self) {
        if let Ready::Host(h) = self {
            h.block();
        }
    }
}

fn pollable(r: Ready) -> poll::Pollable {
    poll::Pollable::new(r)
}

/// A file read from a position onwards.
pub(crate) struct FileReader {
    node: Arc<Node>,
    position: Cell<u64>,
    closed: Cell<bool>,
    _held: Held,
}

impl FileReader {
    pub(crate) fn new(node: Arc<Node>, position: u64, held: Held) -> Self {
        FileReader { node, position: Cell::new(position), closed: Cell::new(false), _held: held }
    }

    fn read(&self, len: u64) -> StreamResult<Vec<u8>> {
        if self.closed.get() {
            return Err(streams::StreamError::Closed);
        }
        let len = usize::try_from(len).unwrap_or(usize::MAX).min(MAX_IO_CHUNK);
        if len == 0 {
            return Ok(Vec::new());
        }
        match scratch(len, |buf| self.node.fs.read_at(self.node.ino, self.position.get(), buf)) {
            Ok(bytes) if bytes.is_empty() => {
                self.closed.set(true);
                Err(streams::StreamError::Closed)
            }
            Ok(bytes) => {
                self.position.set(self.position.get() + bytes.len() as u64);
                Ok(bytes)
            }
            Err(e) => {
                self.closed.set(true);
                Err(failed(e))
            }
        }
    }
}

thread_local! {
    /// Where reads land before the bytes read are copied out: a guest
    /// asking for 1 MiB of a 100-byte file costs 100 bytes, not a 1 MiB
    /// buffer zeroed.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `read` on a buffer of `len` bytes (at most [`MAX_IO_CHUNK`]) and
/// returns the bytes it says it read.
pub(crate) fn scratch(
    len: usize,
    read: impl FnOnce(&mut [u8]) -> packfs_core::Result<usize>,
) -> packfs_core::Result<Vec<u8>> {
    SCRATCH.with_borrow_mut(|buf| {
        if buf.len() < len {
            buf.resize(len, 0);
        }
        let n = read(&mut buf[..len])?;
        Ok(buf[..n.min(len)].to_vec())
    })
}

/// An input stream: a file's, or the host's (stdin; a host file's, which
/// is counted among what the guest holds).
pub(crate) enum Reader {
    File(FileReader),
    Host { s: host::streams::InputStream, _held: Option<Held> },
}

impl streams::Guest for Virt {
    type InputStream = Reader;
    type OutputStream = Writer;
}

impl streams::GuestInputStream for Reader {
    fn read(&self, len: u64) -> StreamResult<Vec<u8>> {
        match self {
            Reader::File(f) => f.read(len),
            Reader::Host { s: h, .. } => h.read(len).map_err(host_error),
        }
    }

    fn blocking_read(&self, len: u64) -> StreamResult<Vec<u8>> {
        match self {
            Reader::File(f) => f.read(len),
            Reader::Host { s: h, .. } => h.blocking_read(len).map_err(host_error),
        }
    }

    fn skip(&self, len: u64) -> StreamResult<u64> {
        match self {
            Reader::File(f) => f.read(len).map(|b| b.len() as u64),
            Reader::Host { s: h, .. } => h.skip(len).map_err(host_error),
        }
    }

    fn blocking_skip(&self, len: u64) -> StreamResult<u64> {
        match self {
            Reader::File(f) => f.read(len).map(|b| b.len() as u64),
            Reader::Host { s: h, .. } => h.blocking_skip(len).map_err(host_error),
        }
    }

    fn subscribe(&self) -> poll::Pollable {
        pollable(match self {
            Reader::File(..) => Ready::Now,
            Reader::Host { s: h, .. } => Ready::Host(h.subscribe()),
        })
    }
}

/// A file written from a position onwards, or appended to.
pub(crate) struct FileWriter {
    node: Arc<Node>,
    /// Where the next write goes; `None`: appended.
    at: Cell<Option<u64>>,
    /// Sync after every write (the descriptor asked for integrity sync).
    sync: bool,
    closed: Cell<bool>,
    _held: Held,
}

impl FileWriter {
    pub(crate) fn at(node: Arc<Node>, position: u64, sync: bool, held: Held) -> Self {
        FileWriter { node, at: Cell::new(Some(position)), sync, closed: Cell::new(false), _held: held }
    }

    pub(crate) fn append(node: Arc<Node>, sync: bool, held: Held) -> Self {
        FileWriter { node, at: Cell::new(None), sync, closed: Cell::new(false), _held: held }
    }

    fn open(&self) -> StreamResult<()> {
        if self.closed.get() { Err(streams::StreamError::Closed) } else { Ok(()) }
    }

    fn write(&self, data: &[u8]) -> StreamResult<()> {
        self.open()?;
        if data.is_empty() {
            return Ok(());
        }
        let at = self.at.get();
        self.node.write_to(at, data, self.sync).map_err(|e| {
            self.closed.set(true);
            failed(e)
        })?;
        self.at.set(at.map(|p| p + data.len() as u64));
        Ok(())
    }
}

/// An output stream: a file's, or the host's (stdout, stderr; a host
/// file's, counted among what the guest holds).
pub(crate) enum Writer {
    File(FileWriter),
    Host { s: host::streams::OutputStream, _held: Option<Held> },
}

impl Writer {
    /// Zeroes, a piece at a time (a file's stream takes any length).
    fn zeroes(&self, len: u64) -> StreamResult<()> {
        let Writer::File(f) = self else { unreachable!("only for a file's stream") };
        let mut left = len;
        let zeros = vec![0; MAX_IO_CHUNK.min(usize::try_from(len).unwrap_or(usize::MAX))];
        while left > 0 {
            let n = zeros.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            f.write(&zeros[..n])?;
            left -= n as u64;
        }
        Ok(())
    }
}

impl streams::GuestOutputStream for Writer {
    fn check_write(&self) -> StreamResult<u64> {
        match self {
            Writer::File(f) => f.open().map(|()| MAX_IO_CHUNK as u64),
            Writer::Host { s: h, .. } => h.check_write().map_err(host_error),
        }
    }

    fn write(&self, contents: Vec<u8>) -> StreamResult<()> {
        match self {
            Writer::File(f) => f.write(&contents),
            Writer::Host { s: h, .. } => h.write(&contents).map_err(host_error),
        }
    }

    fn blocking_write_and_flush(&self, contents: Vec<u8>) -> StreamResult<()> {
        match self {
            Writer::File(f) => f.write(&contents),
            Writer::Host { s: h, .. } => h.blocking_write_and_flush(&contents).map_err(host_error),
        }
    }

    fn flush(&self) -> StreamResult<()> {
        match self {
            Writer::File(f) => f.open(),
            Writer::Host { s: h, .. } => h.flush().map_err(host_error),
        }
    }

    fn blocking_flush(&self) -> StreamResult<()> {
        match self {
            Writer::File(f) => f.open(),
            Writer::Host { s: h, .. } => h.blocking_flush().map_err(host_error),
        }
    }

    fn subscribe(&self) -> poll::Pollable {
        pollable(match self {
            Writer::File(..) => Ready::Now,
            Writer::Host { s: h, .. } => Ready::Host(h.subscribe()),
        })
    }

    fn write_zeroes(&self, len: u64) -> StreamResult<()> {
        match self {
            Writer::File(..) => self.zeroes(len),
            Writer::Host { s: h, .. } => h.write_zeroes(len).map_err(host_error),
        }
    }

    fn blocking_write_zeroes_and_flush(&self, len: u64) -> StreamResult<()> {
        match self {
            Writer::File(..) => self.zeroes(len),
            Writer::Host { s: h, .. } => h.blocking_write_zeroes_and_flush(len).map_err(host_error),
        }
    }

    fn splice(&self, src: streams::InputStreamBorrow<'_>, len: u64) -> StreamResult<u64> {
        self.splice_from(src.get::<Reader>(), len, false)
    }

    fn blocking_splice(&self, src: streams::InputStreamBorrow<'_>, len: u64) -> StreamResult<u64> {
        self.splice_from(src.get::<Reader>(), len, true)
    }
}

impl Writer {
    /// `splice`: the host's own between two of its streams, else a read
    /// then a write of what the read gave: at most what this stream takes
    /// now, or, blocking, in pieces of what it takes (a host's stream takes
    /// at most 4 KiB a `blocking-write-and-flush`).
    fn splice_from(&self, src: &Reader, len: u64, blocking: bool) -> StreamResult<u64> {
        use streams::{GuestInputStream, GuestOutputStream};
        if let (Writer::Host { s: out, .. }, Reader::Host { s: input, .. }) = (self, src) {
            let done = if blocking { out.blocking_splice(input, len) } else { out.splice(input, len) };
            return done.map_err(host_error);
        }
        let room = if blocking { len } else { len.min(self.check_write()?) };
        let bytes = if blocking { src.blocking_read(room)? } else { src.read(room)? };
        let n = bytes.len() as u64;
        match (self, blocking) {
            (Writer::Host { s: h, .. }, true) => {
                for piece in bytes.chunks(4096) {
                    h.blocking_write_and_flush(piece).map_err(host_error)?;
                }
            }
            _ => self.write(bytes)?,
        }
        Ok(n)
    }
}
