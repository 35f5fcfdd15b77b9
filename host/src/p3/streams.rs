//! The streams of `wasi:filesystem@0.3.0`: a file read from an offset
//! (`read-via-stream`), written at one or appended to (`write-via-stream`,
//! `append-via-stream`), and a directory's entries (`read-directory`).
//!
//! Each producer and consumer does its I/O when it is polled. Bytes move
//! straight between the backend and the guest's buffer (wasmtime's direct
//! views), at most [`MAX_IO_CHUNK`] per poll, so no poll makes the host
//! hold more than that. The one wait is a read that may wait on the
//! network ([`FileSystem::may_wait`](packfs_core::FileSystem::may_wait):
//! a remote pack fetching): that read runs on tokio's blocking pool, under
//! the guest's deadline, into a buffer of [`HOST_READ`] bytes, and the
//! stream is pending meanwhile, so the executor's thread goes on with other
//! guests' tasks. A stream's outcome is sent once, on its `future`: `ok` at
//! the end (or when the guest drops the stream), or the error that ended
//! it.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::BytesMut;
use tokio::sync::oneshot;
use wasmtime::StoreContextMut;
use wasmtime::component::{Destination, Source, StreamConsumer, StreamProducer, StreamResult, VecBuffer};

use super::bindings::types::{DirectoryEntry, ErrorCode};
use super::convert::descriptor_type;
use super::offload::Offload;
use crate::filesystem::waits::Waits;
use crate::filesystem::{DirStream, MAX_IO_CHUNK};
use packfs_core::wasi::descriptor::Node;

/// The bytes a host-side reader of a file stream is given per poll
/// (a guest reader is given what its buffer holds, up to [`MAX_IO_CHUNK`]).
const HOST_READ: usize = 64 << 10;

/// Directory entries handed over per poll.
const ENTRIES_PER_POLL: usize = 128;

/// Where a stream's outcome goes: sent once, `ok` if nothing else was.
pub(crate) struct Outcome(Option<oneshot::Sender<Result<(), ErrorCode>>>);

impl Outcome {
    pub(crate) fn new(tx: oneshot::Sender<Result<(), ErrorCode>>) -> Self {
        Outcome(Some(tx))
    }

    fn send(&mut self, result: Result<(), ErrorCode>) {
        if let Some(tx) = self.0.take() {
            // The guest may have dropped the future: nobody to tell.
            let _ = tx.send(result);
        }
    }
}

impl Drop for Outcome {
    fn drop(&mut self) {
        self.send(Ok(()));
    }
}

/// `read-via-stream`: a file from an offset to its end.
pub(crate) struct FileProducer {
    node: Arc<Node>,
    position: u64,
    outcome: Outcome,
    /// A read that may wait.
    waiting: Offload<packfs_core::Result<BytesMut>>,
}

impl FileProducer {
    pub(crate) fn new(node: Arc<Node>, position: u64, outcome: Outcome, waits: Waits) -> Self {
        FileProducer { node, position, outcome, waiting: Offload::new(waits) }
    }

    /// `Completed` after `n` bytes were read, `Dropped` at the end or on
    /// an error (sent on the future).
    fn advance(&mut self, read: packfs_core::Result<usize>) -> StreamResult {
        match read {
            Ok(0) => {
                self.outcome.send(Ok(()));
                StreamResult::Dropped
            }
            Ok(n) => {
                self.position += n as u64;
                StreamResult::Completed
            }
            Err(e) => {
                self.outcome.send(Err(e.code().into()));
                StreamResult::Dropped
            }
        }
    }
}

impl<D: 'static> StreamProducer<D> for FileProducer {
    type Item = u8;
    type Buffer = BytesMut;

    fn poll_produce<'a>(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut store: StoreContextMut<'a, D>,
        mut dst: Destination<'a, u8, Self::Buffer>,
        finish: bool,
    ) -> Poll<wasmtime::Result<StreamResult>> {
        let me = self.get_mut();
        let (ino, position) = (me.node.ino, me.position);
        let want = dst.remaining(&mut store).map_or(HOST_READ, |n| n.min(MAX_IO_CHUNK));
        if !me.waiting.running() && !me.node.fs.may_wait(ino, position, want as u64) {
            me.waiting.cancel();
            let mut dst = dst.as_direct(store, HOST_READ);
            let buf = dst.remaining();
            // A zero-length read asks whether bytes are ready: they are.
            if buf.is_empty() {
                return Poll::Ready(Ok(StreamResult::Completed));
            }
            let len = buf.len().min(MAX_IO_CHUNK);
            let read = me.node.fs.read_at(ino, position, &mut buf[..len]);
            if let Ok(n) = read {
                dst.mark_written(n);
            }
            return Poll::Ready(Ok(me.advance(read)));
        }
        if !me.waiting.running() {
            match me.waiting.poll_turn(cx) {
                // The guest cancels a read still waiting its turn; one
                // under way is let finish, as its bytes may be delivered.
                Poll::Pending if finish && me.waiting.cancel() => return Poll::Ready(Ok(StreamResult::Cancelled)),
                Poll::Pending => return Poll::Pending,
                Poll::Ready(turn) => turn?,
            }
            let (node, mut buf) = (Arc::clone(&me.node), dst.take_buffer());
            me.waiting.run(move || {
                buf.resize(HOST_READ, 0);
                let n = node.fs.read_at(node.ino, position, &mut buf)?;
                buf.truncate(n);
                Ok(buf)
            });
        }
        let read = ready!(me.waiting.poll(cx))?;
        Poll::Ready(Ok(match read {
            Ok(buf) => {
                let n = buf.len();
                dst.set_buffer(buf);
                me.advance(Ok(n))
            }
            Err(e) => me.advance(Err(e)),
        }))
    }
}

/// Where a [`FileConsumer`] writes.
pub(crate) enum Place {
    At(u64),
    Append,
}

/// `write-via-stream` and `append-via-stream`: a file written from the
/// guest's stream until it ends.
pub(crate) struct FileConsumer {
    node: Arc<Node>,
    place: Place,
    /// Sync after every write (the descriptor asked for integrity sync).
    sync: bool,
    outcome: Outcome,
    /// A write that may wait (its copy-up reads a remote lower), with the
    /// bytes it took; its result is their count.
    waiting: Offload<(packfs_core::Result<()>, usize)>,
    /// A write has landed: no later one copies up.
    landed: bool,
}

impl FileConsumer {
    pub(crate) fn new(node: Arc<Node>, place: Place, sync: bool, outcome: Outcome, waits: Waits) -> Self {
        FileConsumer { node, place, sync, outcome, waiting: Offload::new(waits), landed: false }
    }

    /// Where the next write goes: `None` at the end.
    fn at(&self) -> Option<u64> {
        match self.place {
            Place::At(position) => Some(position),
            Place::Append => None,
        }
    }

    /// `Completed` after `len` bytes were written, or `Dropped` with the
    /// error sent on the future.
    fn advance(&mut self, written: packfs_core::Result<()>, len: usize) -> StreamResult {
        match written {
            Ok(()) => {
                if let Place::At(position) = &mut self.place {
                    *position += len as u64;
                }
                self.landed = true;
                StreamResult::Completed
            }
            Err(e) => {
                self.outcome.send(Err(e.code().into()));
                StreamResult::Dropped
            }
        }
    }
}

impl<D: 'static> StreamConsumer<D> for FileConsumer {
    type Item = u8;

    /// A write that may wait waits for its turn first, taking nothing (a
    /// guest cancelling it then takes back its bytes untouched); with its
    /// turn it takes the bytes and stays pending until it is done (wasmtime
    /// tells the writer `completed` only then; a guest cancelling it now
    /// waits for it too, as the bytes are already given).
    fn poll_consume(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        store: StoreContextMut<D>,
        src: Source<u8>,
        finish: bool,
    ) -> Poll<wasmtime::Result<StreamResult>> {
        let me = self.get_mut();
        if me.waiting.running() {
            return me.poll_waiting(cx);
        }
        let mut src = src.as_direct(store);
        let len = src.remaining().len().min(MAX_IO_CHUNK);
        // Writing a file still in a lower layer copies all of it up first;
        // once a write has landed, the file is the upper's own.
        if len == 0 || me.landed || !me.node.fs.may_wait(me.node.ino, 0, u64::MAX) {
            me.waiting.cancel();
            if len == 0 {
                return Poll::Ready(Ok(StreamResult::Completed));
            }
            let written = me.node.write_to(me.at(), &src.remaining()[..len], me.sync);
            if written.is_ok() {
                src.mark_read(len);
            }
            return Poll::Ready(Ok(me.advance(written, len)));
        }
        match me.waiting.poll_turn(cx) {
            Poll::Pending if finish && me.waiting.cancel() => return Poll::Ready(Ok(StreamResult::Cancelled)),
            Poll::Pending => return Poll::Pending,
            Poll::Ready(turn) => turn?,
        }
        // The bytes are copied only now, with a turn: a write waiting for
        // one holds none (the guest may lend one buffer to many streams).
        let (node, data, at, sync) = (Arc::clone(&me.node), src.remaining()[..len].to_vec(), me.at(), me.sync);
        src.mark_read(len);
        me.waiting.run(move || (node.write_to(at, &data, sync), len));
        me.poll_waiting(cx)
    }
}

impl FileConsumer {
    /// The write under way: pending, or done and reported.
    fn poll_waiting(&mut self, cx: &mut Context<'_>) -> Poll<wasmtime::Result<StreamResult>> {
        let (written, len) = ready!(self.waiting.poll(cx))?;
        Poll::Ready(Ok(self.advance(written, len)))
    }
}

/// `read-directory`: a directory's entries, in the backend's order, each
/// once (a [`DirStream`], resumed by name).
pub(crate) struct DirProducer {
    stream: DirStream,
    outcome: Outcome,
}

impl DirProducer {
    pub(crate) fn new(stream: DirStream, outcome: Outcome) -> Self {
        DirProducer { stream, outcome }
    }
}

impl<D: 'static> StreamProducer<D> for DirProducer {
    type Item = DirectoryEntry;
    type Buffer = VecBuffer<DirectoryEntry>;

    fn poll_produce<'a>(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        mut store: StoreContextMut<'a, D>,
        mut dst: Destination<'a, DirectoryEntry, Self::Buffer>,
        _finish: bool,
    ) -> Poll<wasmtime::Result<StreamResult>> {
        let me = self.get_mut();
        let want = dst.remaining(&mut store).unwrap_or(ENTRIES_PER_POLL).min(ENTRIES_PER_POLL);
        if want == 0 {
            return Poll::Ready(Ok(StreamResult::Completed));
        }
        let mut out = Vec::with_capacity(want);
        let mut result = StreamResult::Completed;
        while out.len() < want {
            // The epoch is for entries the recent name remembers; a 0.3
            // listing remembers none (its entries reach the guest in
            // batches, past the host call), so any epoch will do.
            match me.stream.next_entry(0) {
                Ok(Some((e, _))) => {
                    out.push(DirectoryEntry { type_: descriptor_type(e.kind), name: e.name.to_string() })
                }
                Ok(None) => {
                    me.outcome.send(Ok(()));
                    result = StreamResult::Dropped;
                    break;
                }
                Err(e) => {
                    me.outcome.send(Err(e.code().into()));
                    result = StreamResult::Dropped;
                    break;
                }
            }
        }
        dst.set_buffer(out.into());
        Poll::Ready(Ok(result))
    }
}
