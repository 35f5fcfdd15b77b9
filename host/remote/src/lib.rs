//! PackFS packs read lazily from object stores: `s3://BUCKET/KEY` in any
//! S3-compatible store, or an `http(s)://` URL read with Range requests.
//!
//! [`open`] costs three ranged requests in two round trips (the trailer;
//! then the header and the index region at once) and fetches no byte of
//! file data. From
//! then on each extent (a version 1 blob, a version 2 chunk) is fetched on
//! its first read, checked against the index's checksum before any byte
//! of it is served, and kept in the host-wide [`Cache`], which is shared by
//! every process on the host and addressed by content. See `source.rs`
//! for fetching and readahead, `cache.rs` for the cache, `object.rs` for
//! how a replaced object is noticed, [`trace`] for recording what a run
//! read and prefetching it the next time.
//!
//! What a pack in a store can make the host hold is bounded by core's
//! limits for lazily opened packs (`packfs_core::pack::layout`): an index
//! region of at most 1 GiB fetched (`MAX_FETCHED_INDEX`, refused before
//! it is fetched) and 1 GiB decoded (`MAX_DECODED_INDEX`), at most 2^24
//! extents (`MAX_EXTENTS`), each with about 73 bytes of the source's own
//! table. A pack past one is [`RemoteError::Pack`] with
//! `CorruptKind::TooLarge`, before anything is allocated for it.

pub mod cache;
mod early;
mod location;
mod object;
mod profile;
mod source;
mod store;
pub mod trace;

use std::future::Future;

use object_store::ObjectStoreExt;
use std::sync::{Arc, OnceLock};

use packfs_core::pack::{ByteSource, LazyOpen, OpenStep, PackFs, ReadOptions};

pub use cache::{Cache, CacheStats, DEFAULT_CACHE_BYTES};
pub use location::{BadLocation, Location};
pub use source::{DEMAND_PARALLEL, FIRST_WINDOW, FetchStats, MAX_WINDOW, PREFETCH_PARALLEL, REQUEST_MAX, RemoteSource};
pub use store::NetOptions;

/// A pack in a store, open.
pub type RemotePack = PackFs<RemoteSource>;

/// What can go wrong reading a remote pack. Each names the URL.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// Not a URL PackFS reads.
    #[error(transparent)]
    Location(#[from] BadLocation),
    /// The store refused, failed, or could not be reached in time (after
    /// retries).
    #[error("{url}: {source}")]
    Store {
        url: String,
        #[source]
        source: object_store::Error,
    },
    /// The object is another than the one opened.
    #[error("{url}: the pack changed in the store since it was opened")]
    Changed { url: String },
    /// A reply that is not what was asked for.
    #[error("{url}: bad reply: {what}")]
    Reply { url: String, what: String },
    /// The bytes are no pack, or a damaged one.
    #[error("{url}: {source}")]
    Pack {
        url: String,
        #[source]
        source: packfs_core::Error,
    },
}

/// How [`open`] reads.
#[derive(Clone, Default)]
pub struct RemoteOptions {
    /// The host-wide cache ([`Cache::open`]); none: extents live in this
    /// process only.
    pub cache: Option<Arc<Cache>>,
    /// Time bounds and retries.
    pub net: NetOptions,
    /// A trace to prefetch: its extents are asked for with the open's
    /// first request, and kept once the index confirms them.
    pub prefetch: Option<Arc<trace::Trace>>,
    /// The reader's own options. Its per-read checksum check may be off:
    /// every extent is checked on arrival, against the same checksums.
    pub read: ReadOptions,
}

/// The runtime the store clients run on: one for the process, its
/// threads apart from the callers', who wait on channels and so may be
/// anywhere, inside another runtime too.
pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("packfs-fetch")
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
}

/// Runs `f` on the runtime and waits for it.
pub(crate) fn block_on<F>(f: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    runtime().spawn(async move {
        let _ = tx.send(f.await);
    });
    rx.recv().expect("the task sends before it ends")
}

/// Opens the pack at `location`; see the crate doc.
pub fn open(location: &Location, options: &RemoteOptions) -> Result<RemotePack, RemoteError> {
    open_as(location, options, |s| s)
}

/// [`open`], with the reader over `wrap(source)`: for a program whose
/// packs are of several kinds (mapped files and remote ones, say) in one
/// source type.
pub fn open_as<S: ByteSource>(
    location: &Location,
    options: &RemoteOptions,
    wrap: impl FnOnce(RemoteSource) -> S,
) -> Result<PackFs<S>, RemoteError> {
    let url = location.to_string();
    let store = store::connect(location, &options.net)?;
    let scope = options.cache.as_ref().map(|c| c.scope(&store.origin));
    let early = options.prefetch.as_ref().map(|t| early::start(&store.store, &store.path, t, scope.as_ref()));
    let (object, plan) = block_on(fetch_open(url.clone(), Arc::clone(&store.store), store.path.clone()))?;
    let pack_err = |source: packfs_core::Error| RemoteError::Pack { url: url.clone(), source };
    let wait = options.net.retry_timeout + options.net.timeout * 2;
    let mut handle = None;
    let (pack, data) = plan
        .open_as(options.read, |pieces| {
            let parts = source::Parts { object, scope, wait, fail_fast: options.net.fail_fast };
            let source = RemoteSource::new(pieces, parts);
            handle = Some(source.clone());
            wrap(source)
        })
        .map_err(pack_err)?;
    let handle = handle.expect("the open made its source");
    // Held to a lazily opened pack's limits (core's `layout`): the
    // extent table built next is bounded by them.
    handle.index(&pack, data).map_err(|what| RemoteError::Reply { url: url.clone(), what })?;
    if let Some(trace) = &options.prefetch {
        handle.adopt(early.unwrap_or_default());
        // The rest: what the cache holds, and what others are fetching.
        trace.prefetch(&handle);
    }
    Ok(pack)
}

/// The whole object at `location` (a trace, say), if it is at most
/// `limit` bytes long.
pub fn read_object(location: &Location, net: &NetOptions, limit: u64) -> Result<Vec<u8>, RemoteError> {
    let url = location.to_string();
    let store = store::connect(location, net)?;
    block_on(async move {
        let failed = |source| RemoteError::Store { url: url.clone(), source };
        let reply = store.store.get(&store.path).await.map_err(failed)?;
        if reply.meta.size > limit {
            return Err(RemoteError::Reply {
                url: url.clone(),
                what: format!("{} bytes, more than {limit}", reply.meta.size),
            });
        }
        Ok(reply.bytes().await.map_err(failed)?.to_vec())
    })
}

/// Writes `bytes` as the object at `location`, whole.
pub fn write_object(location: &Location, net: &NetOptions, bytes: Vec<u8>) -> Result<(), RemoteError> {
    let url = location.to_string();
    let store = store::connect(location, net)?;
    block_on(async move {
        store.store.put(&store.path, bytes.into()).await.map_err(|source| RemoteError::Store { url, source })?;
        Ok(())
    })
}

/// The open's requests, as core's [`LazyOpen`] plan asks: the tail, then
/// the header and the rest of the index region at once. Returns the object,
/// pinned to the version the first reply came from, and the plan, ready
/// to open.
async fn fetch_open(
    url: String,
    store: Arc<dyn object_store::ObjectStore>,
    path: object_store::path::Path,
) -> Result<(Arc<object::Object>, LazyOpen), RemoteError> {
    let pack_err = |source| RemoteError::Pack { url: url.clone(), source };
    let mut plan = LazyOpen::new();
    let OpenStep::Tail(len) = plan.next() else { unreachable!("a plan that knows no size asks for the tail first") };
    let (object, at, tail, size) = object::Object::open(url.clone(), store, path, len).await?;
    let object = Arc::new(object);
    plan.accept_tail(at, tail.to_vec(), size).map_err(pack_err)?;
    // Then the rest, all at once, until the plan says open.
    while let OpenStep::Fetch(ranges) = plan.next() {
        let asks: Vec<_> = ranges
            .into_iter()
            .map(|r| {
                let o = Arc::clone(&object);
                (r.start, tokio::spawn(async move { o.get(r).await }))
            })
            .collect();
        for (start, ask) in asks {
            let bytes = ask.await.expect("a request task does not panic")?;
            plan.accept(start, bytes.to_vec()).map_err(pack_err)?;
        }
    }
    Ok((object, plan))
}
