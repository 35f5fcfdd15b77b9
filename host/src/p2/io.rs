//! `wasi:io/streams` for synchronous stores, without a trip through tokio
//! when the stream is ready.
//!
//! wasmtime-wasi's synchronous streams run each blocking method
//! (`blocking-read`, `blocking-write-and-flush`, `blocking-flush`, and the
//! streams' drops, which may wait for a cancellation) through
//! `in_tokio`: a `block_on` of its fallback runtime, after a
//! `yield_now`, per call. PackFS's file streams are always ready, so
//! that is pure overhead, paid on every read and write a guest makes —
//! two to three calls per small file, one per 4 KiB a p1 guest writes.
//!
//! [`add_fast_paths`] redefines just those methods over wasmtime-wasi's own
//! asynchronous implementations (the very code its synchronous ones run):
//! the call's future is polled once, in tokio's ambient context; only if it
//! is not done at once does it go to `in_tokio` as before. Streams that
//! must wait (sockets, stdin) wait exactly as they did. What is lost is the
//! `tracing` span wasmtime-wasi's bindings open around these methods.

use std::pin::pin;
use std::task::{Context, Poll, Waker};

use wasmtime::component::{Linker, Resource, ResourceType};
use wasmtime_wasi::WasiView;
use wasmtime_wasi::p2::bindings::io::streams::{HostInputStream, HostOutputStream};
use wasmtime_wasi::p2::bindings::sync::io::streams::{Host as _, StreamError};
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, StreamResult};
use wasmtime_wasi::runtime::{in_tokio, with_ambient_tokio_runtime};

/// The `wasi:io/streams` instance wasmtime-wasi 48 to 50 links (its WIT is
/// `wasi:io@0.2.12`); guests importing any 0.2.x reach it by semver. Should
/// a wasmtime upgrade change it, the definitions below would land in a
/// second instance and instantiating every guest would fail: the guest
/// tests catch that.
const STREAMS: &str = "wasi:io/streams@0.2.12";

/// Runs `f` to completion: one poll when it is ready at once, else
/// wasmtime-wasi's `in_tokio`, as its synchronous bindings do.
fn run<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    match with_ambient_tokio_runtime(|| f.as_mut().poll(&mut cx)) {
        Poll::Ready(out) => out,
        Poll::Pending => in_tokio(f),
    }
}

type Lowered<T> = wasmtime::Result<(Result<T, StreamError>,)>;

/// A stream method's result as the bindings lower it: a `stream-error` for
/// the guest, or a trap.
fn lower<T>(table: &mut wasmtime::component::ResourceTable, r: StreamResult<T>) -> Lowered<T> {
    Ok((match r {
        Ok(v) => Ok(v),
        Err(e) => Err(table.convert_stream_error(e)?),
    },))
}

/// Replaces wasmtime-wasi's synchronous blocking stream methods and stream
/// drops in `linker` (which must already hold its `wasi:io/streams`) by
/// ones that skip tokio when the stream is ready.
pub(super) fn add_fast_paths<T: WasiView + 'static>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let defined = define(linker);
    linker.allow_shadowing(false);
    defined
}

fn define<T: WasiView + 'static>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    let mut inst = linker.instance(STREAMS)?;
    inst.func_wrap("[method]input-stream.blocking-read", |mut store, (s, len): (Resource<DynInputStream>, u64)| {
        let table = store.data_mut().ctx().table;
        let r = run(HostInputStream::blocking_read(table, s, len));
        lower(table, r)
    })?;
    inst.func_wrap(
        "[method]output-stream.blocking-write-and-flush",
        |mut store, (s, bytes): (Resource<DynOutputStream>, Vec<u8>)| {
            let table = store.data_mut().ctx().table;
            let r = run(HostOutputStream::blocking_write_and_flush(table, s, bytes));
            lower(table, r)
        },
    )?;
    inst.func_wrap("[method]output-stream.blocking-flush", |mut store, (s,): (Resource<DynOutputStream>,)| {
        let table = store.data_mut().ctx().table;
        let r = run(HostOutputStream::blocking_flush(table, s));
        lower(table, r)
    })?;
    inst.resource("input-stream", ResourceType::host::<DynInputStream>(), |mut store, rep| {
        let table = store.data_mut().ctx().table;
        run(HostInputStream::drop(table, Resource::new_own(rep)))
    })?;
    inst.resource("output-stream", ResourceType::host::<DynOutputStream>(), |mut store, rep| {
        let table = store.data_mut().ctx().table;
        run(HostOutputStream::drop(table, Resource::new_own(rep)))
    })?;
    Ok(())
}
