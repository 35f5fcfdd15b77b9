//! Opening a pack in a store: core's [`LazyOpen`] plan, driven by
//! `object_store` requests on the [`runtime`](crate::runtime) (the tail,
//! then the header and the rest of the index region at once), with a
//! trace's extents asked for early beside it; then the source over what
//! came, and its extent table.

use std::sync::Arc;

use packfs_core::pack::{ByteSource, LazyOpen, OpenStep, PackFs, ReadOptions};

use crate::early;
use crate::error::RemoteError;
use crate::extent_cache::Cache;
use crate::location::Location;
use crate::object::Object;
use crate::runtime;
use crate::runtime::block_on;
use crate::source::{Parts, RemoteSource};
use crate::store::{NetOptions, connect};
use crate::trace::{MAX_TRACE_BYTES, Trace};

/// A pack in a store, open.
pub type RemotePack = PackFs<RemoteSource>;

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
    pub prefetch: Option<Arc<Trace>>,
    /// The reader's own options. Its per-read checksum check may be off:
    /// every extent is checked on arrival, against the same checksums.
    pub read: ReadOptions,
    /// Without a `prefetch` trace, look for one published beside the
    /// pack, `PACK.trace` (as `packfs run --record-trace` writes it), asked
    /// for with the open's first request: found, it is prefetched as
    /// `prefetch` would be; missing, it costs that one request.
    pub find_trace: bool,
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
    let store = connect(location, &options.net)?;
    let scope = options.cache.as_ref().map(|c| c.scope(&store.origin));
    let early = options.prefetch.as_ref().map(|t| early::start(&store.store, &store.path, t, scope.as_ref()));
    let look = options.find_trace && options.prefetch.is_none();
    let (objects, path, early_scope) = (Arc::clone(&store.store), store.path.clone(), scope.clone());
    let opening = url.clone();
    let (opened, published) = block_on(async move {
        let open = fetch_open(opening, Arc::clone(&objects), path.clone());
        if !look {
            return (open.await, Published::None);
        }
        // The trace is asked for beside the tail; if it comes before the
        // open is done, its extents are asked for at once, as a trace given
        // at open has them asked for with the tail.
        let mut reply = published_trace(Arc::clone(&objects), &path);
        tokio::pin!(open);
        tokio::select! {
            biased;
            opened = &mut open => (opened, Published::Later(reply)),
            trace = &mut reply => {
                let published = match trace {
                    Ok(Some(trace)) => {
                        let runs = early::start(&objects, &path, &trace, early_scope.as_ref());
                        Published::Now(trace, runs)
                    }
                    _ => Published::None,
                };
                (open.await, published)
            }
        }
    });
    let (object, plan) = opened?;
    let pack_err = |error: packfs_core::Error| RemoteError::Pack { url: url.clone(), error };
    let wait = options.net.retry_timeout + options.net.timeout * 2;
    let mut handle = None;
    let (pack, data) = plan
        .open_as(options.read, |pieces| {
            let pin = options.read.pin_given();
            let parts = Parts { object, scope, wait, fail_fast: options.net.fail_fast, pin };
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
        handle.prefetch(trace);
    }
    match published {
        Published::Now(trace, runs) => {
            handle.adopt(runs);
            handle.found_trace(&trace);
        }
        // Prefetched when it comes, while the reads go on.
        Published::Later(reply) => {
            let source = handle.clone();
            runtime::runtime().spawn(async move {
                if let Ok(Some(trace)) = reply.await {
                    source.found_trace(&trace);
                }
            });
        }
        Published::None => {}
    }
    Ok(pack)
}

/// A trace published beside the pack: come during the open (its early
/// requests under way), still to come, or none.
enum Published {
    Now(Trace, Vec<early::Run>),
    Later(tokio::task::JoinHandle<Option<Trace>>),
    None,
}

/// Asks for the trace published beside the pack at `path`, `PATH.trace`:
/// a trace if there is one that parses, within [`MAX_TRACE_BYTES`]; `None`
/// otherwise (missing, unreadable or not a trace: the run goes on without
/// it).
fn published_trace(
    objects: Arc<dyn object_store::ObjectStore>,
    path: &object_store::path::Path,
) -> tokio::task::JoinHandle<Option<Trace>> {
    let path = object_store::path::Path::from(format!("{path}.trace"));
    runtime::runtime().spawn(async move {
        let reply = object_store::ObjectStoreExt::get(&*objects, &path).await.ok()?;
        let text = crate::object::body(reply, MAX_TRACE_BYTES).await.ok()?;
        Trace::parse(std::str::from_utf8(&text).ok()?).ok()
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
) -> Result<(Arc<Object>, LazyOpen), RemoteError> {
    let pack_err = |error| RemoteError::Pack { url: url.clone(), error };
    let mut plan = LazyOpen::new();
    let OpenStep::Tail(len) = plan.next() else { unreachable!("a plan that knows no size asks for the tail first") };
    let (object, at, tail, size) = Object::open(url.clone(), store, path, len).await?;
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
