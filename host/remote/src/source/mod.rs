//! [`RemoteSource`]: the bytes of a pack in a store, fetched extent by
//! extent (a version 1 blob, a version 2 chunk) as reads need them.
//!
//! A read of an extent that is not here blocks until it is: it is looked
//! for in the host-wide cache, else fetched, and checked against the
//! checksum the pack's index gives before any byte of it is served. A
//! miss fetches more than the one extent (`flight.rs`): the rest of the
//! file it lies in, up to [`FIRST_WINDOW`]; reads that go on sequentially
//! double the window up to [`MAX_WINDOW`], the next one fetched while the reader
//! is halfway through the last (readahead; after a few windows in a row, as
//! soon as it enters the last, and fourfold) — within the file, and past its
//! end only once the reads have gone on from one file into the next. A
//! window goes out as requests of at most [`REQUEST_MAX`] bytes, each of
//! adjacent extents, at most [`DEMAND_PARALLEL`] at once. Each extent is
//! in one fetch at a time: other readers of it wait for that one.
//!
//! Memory: the pieces fetched to open, the extents fetched since, and a
//! table of 73 bytes per extent (`table.rs`), for at most core's
//! [`MAX_EXTENTS`] (the open is lazy and refuses more): 1.1 GiB at most,
//! whatever the pack claims.
//!
//! [`FIRST_WINDOW`]: crate::FIRST_WINDOW
//! [`MAX_WINDOW`]: crate::MAX_WINDOW
//! [`REQUEST_MAX`]: crate::REQUEST_MAX
//! [`DEMAND_PARALLEL`]: crate::DEMAND_PARALLEL
//! [`MAX_EXTENTS`]: packfs_core::pack::layout::MAX_EXTENTS

mod fetch;
mod flight;
mod table;

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use packfs_core::pack::{ByteSource, Digest, PackFs, Pieces};
use packfs_core::sync::lock;
use tokio::sync::Semaphore;

use crate::early;
use crate::error::RemoteError;
use crate::extent_cache::Scope;
use crate::limits::{DEMAND_PARALLEL, PREFETCH_PARALLEL};
use crate::object::Object;
use crate::runtime;
use crate::trace::Trace;
use flight::Flight;
use table::{Table, checked};

/// Fetch counts for one pack.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct FetchStats {
    /// Requests sent to the store (opening included).
    pub requests: u64,
    /// Bytes they brought.
    pub bytes: u64,
    /// Extents that came from the store (with the open's requests too).
    pub fetched: u64,
    /// Of those fetched, the ones that came with the open's requests (in
    /// its tail).
    pub opened: u64,
    /// Extents taken from the host-wide cache.
    pub from_cache: u64,
}

#[derive(Default)]
struct Counters {
    fetched: AtomicU64,
    opened: AtomicU64,
    from_cache: AtomicU64,
}

/// What every handle on one pack shares.
struct Inner {
    /// The header and the index region with the trailer, fetched at open.
    pieces: Pieces,
    object: Arc<Object>,
    scope: Option<Scope>,
    table: OnceLock<Table>,
    flight: Mutex<Flight>,
    landed: Condvar,
    /// Reached when halfway through the last readahead window.
    trigger: AtomicU64,
    demand: Arc<Semaphore>,
    prefetch: Arc<Semaphore>,
    counters: Counters,
    /// First reads, in order, for a trace: 8 bytes per extent read.
    trace: Mutex<Vec<u64>>,
    wait: Duration,
    fail_fast: Duration,
    pin: Option<Digest>,
    /// 1 + the extents a published trace listed; 0: none found.
    published: AtomicU64,
}

/// A pack's bytes in a store; see the module doc. Made by
/// [`open`](crate::open). A clone is another handle on the same bytes:
/// keep one to ask for [`stats`](Self::stats) or a trace while the pack
/// is in use.
#[derive(Clone)]
pub struct RemoteSource {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for RemoteSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteSource").field("url", &self.inner.object.url).finish()
    }
}

/// What [`RemoteSource::new`] takes besides the pieces.
pub(crate) struct Parts {
    /// The object, pinned to the version opened.
    pub(crate) object: Arc<Object>,
    /// This pack's part of the host-wide cache, if there is one.
    pub(crate) scope: Option<Scope>,
    /// The longest a read waits for its extent.
    pub(crate) wait: Duration,
    /// How long after a failed fetch reads fail at once.
    pub(crate) fail_fast: Duration,
    /// The digest the pack was opened pinned to.
    pub(crate) pin: Option<Digest>,
}

impl RemoteSource {
    pub(crate) fn new(pieces: Pieces, p: Parts) -> RemoteSource {
        let inner = Inner {
            pieces,
            object: p.object,
            scope: p.scope,
            table: OnceLock::new(),
            flight: Mutex::new(Flight::default()),
            landed: Condvar::new(),
            trigger: AtomicU64::new(u64::MAX),
            demand: Arc::new(Semaphore::new(DEMAND_PARALLEL)),
            prefetch: Arc::new(Semaphore::new(PREFETCH_PARALLEL)),
            counters: Counters::default(),
            trace: Mutex::new(Vec::new()),
            wait: p.wait,
            fail_fast: p.fail_fast,
            pin: p.pin,
            published: AtomicU64::new(0),
        };
        RemoteSource { inner: Arc::new(inner) }
    }

    /// The pack's URL.
    pub fn url(&self) -> &str {
        &self.inner.object.url
    }

    /// The digest the pack was opened pinned to: every byte it served is
    /// that pack's. `None`: unpinned, its bytes are whatever the store
    /// holds.
    pub fn pin(&self) -> Option<Digest> {
        self.inner.pin
    }

    /// What fetching has cost so far.
    pub fn stats(&self) -> FetchStats {
        let c = &self.inner.counters;
        FetchStats {
            requests: self.inner.object.requests.load(Ordering::Relaxed),
            bytes: self.inner.object.bytes.load(Ordering::Relaxed),
            fetched: c.fetched.load(Ordering::Relaxed),
            opened: c.opened.load(Ordering::Relaxed),
            from_cache: c.from_cache.load(Ordering::Relaxed),
        }
    }

    /// The last fetch's failure, if one failed: the cause behind a read's
    /// `EIO`.
    pub fn last_error(&self) -> Option<String> {
        lock(&self.inner.flight).failed.as_ref().map(|(_, e)| e.clone())
    }

    /// The trace of what `packs` read so far, one after another: each
    /// extent once, in the order first read.
    pub fn record<'a>(packs: impl IntoIterator<Item = &'a RemoteSource>) -> Trace {
        let mut entries = Vec::new();
        for p in packs {
            let Some(t) = p.inner.table.get() else { continue };
            entries.extend(lock(&p.inner.trace).iter().map(|&k| t.entry(k)));
        }
        entries.into_iter().collect()
    }

    /// [`prefetch`](Self::prefetch)es a trace found published beside the
    /// pack, and remembers how many of its extents it listed.
    pub(crate) fn found_trace(&self, trace: &Trace) {
        let n = self.prefetch(trace);
        self.inner.published.store(n as u64 + 1, Ordering::Relaxed);
    }

    /// How many of this pack's extents a trace published beside it listed:
    /// `None` while none was found (missing, or not come yet).
    pub fn published_trace(&self) -> Option<u64> {
        self.inner.published.load(Ordering::Relaxed).checked_sub(1)
    }

    /// Starts fetching, in the background, the extents of this pack that
    /// `trace` lists, in its order (adjacent ones together, several
    /// requests at once); reads of what it does not list are fetched on
    /// demand as ever. Returns how many of its extents the pack has.
    pub fn prefetch(&self, trace: &Trace) -> usize {
        let Some(t) = self.inner.table.get() else { return 0 };
        let ks: Vec<u64> = trace.entries().iter().filter_map(|entry| t.find(entry)).collect();
        let runs = lock(&self.inner.flight).runs(t, ks.iter().copied());
        self.inner.launch(runs, &self.inner.prefetch);
        ks.len()
    }
}

impl RemoteSource {
    /// Builds the extent table of `pack`, opened over this source, and keeps
    /// the extents lying wholly in `data` (bytes that came with the open,
    /// `(offset, bytes)`) that pass their checksums. `Err` as
    /// [`Table::build`] says, or when called twice.
    pub(crate) fn index<S: ByteSource>(&self, pack: &PackFs<S>, data: Vec<(u64, Vec<u8>)>) -> Result<(), String> {
        let inner = &self.inner;
        inner.table.set(Table::build(pack)?).map_err(|_| "the table built twice")?;
        let t = inner.table.get().expect("just set");
        let mut came = Vec::new();
        for (at, bytes) in data {
            let bytes = Bytes::from(bytes);
            for k in pack.extents_within(at..at + bytes.len() as u64) {
                if let Some(b) = checked(t, k, at, &bytes) {
                    came.push((t.key(k), b.clone()));
                    inner.land(t, k, b, false);
                    inner.counters.opened.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        // Cached too, off the open's path: a trace lists them, and its
        // requests at the next open (which go before the tail is in) skip
        // only what the cache holds.
        if let Some(scope) = inner.scope.clone()
            && !came.is_empty()
        {
            runtime::runtime().spawn_blocking(move || {
                for (key, bytes) in came {
                    if !scope.has(key) {
                        scope.put(key, &bytes);
                    }
                }
            });
        }
        Ok(())
    }

    /// Takes over the requests [`early`](crate::early) started at open: marks
    /// their extents under way (so no read fetches them again), then, as
    /// each reply comes, keeps the extents it confirms.
    pub(crate) fn adopt(&self, runs: Vec<early::Run>) {
        let Some(t) = self.inner.table.get() else { return };
        let mut f = lock(&self.inner.flight);
        let mut taken = Vec::with_capacity(runs.len());
        for run in runs {
            let ks: Vec<u64> = run
                .entries
                .iter()
                .filter_map(|entry| t.find(entry))
                .filter(|&k| !t.here(k) && f.under_way.insert(k))
                .collect();
            taken.push((run, ks));
        }
        drop(f);
        for (run, ks) in taken {
            let me = Arc::clone(&self.inner);
            runtime::runtime().spawn(async move {
                let t = me.table.get().expect("adopted once the table is set");
                let reply = run.reply.await.ok().flatten();
                let mut got = Vec::new();
                // A reply from another version than the one opened is dropped.
                if let Some((bytes, etag)) = reply
                    && (etag.is_none() || me.object.etag().is_none() || etag.as_deref() == me.object.etag())
                {
                    got = ks.iter().filter_map(|&k| Some((k, checked(t, k, run.range.start, &bytes)?))).collect();
                }
                me.keep(t, got).await;
                drop(run.locks);
                me.settle(ks, Ok(()));
            });
        }
    }
}

impl ByteSource for RemoteSource {
    fn size(&self) -> u64 {
        self.inner.pieces.size()
    }

    fn get(&self, range: Range<u64>) -> Option<&[u8]> {
        self.inner.pieces.get(&range)
    }

    /// Every extent is checked as it arrives (`table.rs`), by digest where
    /// the pack has a digest table.
    fn checks_extents(&self) -> bool {
        true
    }

    fn at_hand(&self, k: u64, range: Range<u64>) -> bool {
        let here = || Some(self.inner.table.get()?.slots.get(usize::try_from(k).ok()?)?.get().is_some());
        range.is_empty() || self.inner.pieces.get(&range).is_some() || here() == Some(true)
    }

    fn extent(&self, k: u64, range: Range<u64>) -> Option<&[u8]> {
        if range.is_empty() {
            return Some(&[]);
        }
        if let Some(bytes) = self.inner.pieces.get(&range) {
            return Some(bytes);
        }
        let inner = &self.inner;
        let t = inner.table.get()?;
        let slot = t.slots.get(usize::try_from(k).ok()?)?;
        let e = t.extents[k as usize];
        if (e.start, e.end) != (range.start, range.end) {
            return None;
        }
        inner.touch(t, k);
        if slot.get().is_none() {
            inner.wait_for(t, k);
        }
        slot.get().map(|b| &b[..])
    }
}

impl Inner {
    /// Notes a read of `k`: for the trace, and for readahead.
    fn touch(self: &Arc<Self>, t: &Table, k: u64) {
        let seen = &t.touched[k as usize];
        if !seen.load(Ordering::Relaxed) && !seen.swap(true, Ordering::Relaxed) {
            lock(&self.trace).push(k);
        }
        if k >= self.trigger.load(Ordering::Relaxed) {
            let mut f = lock(&self.flight);
            // Only a read inside the last window (past its middle) reads
            // on; one that jumped past it is a miss of its own.
            if k < self.trigger.load(Ordering::Relaxed) || k >= f.next {
                return;
            }
            self.trigger.store(u64::MAX, Ordering::Relaxed);
            let next = f.next;
            if next < t.extents.len() as u64 {
                let (runs, trigger) = f.plan(t, next, false);
                self.trigger.store(trigger, Ordering::Relaxed);
                drop(f);
                self.launch(runs, &self.demand);
            }
        }
    }

    /// Blocks until extent `k` is here, or fetching it failed, or the
    /// wait ran out.
    fn wait_for(self: &Arc<Self>, t: &Table, k: u64) {
        if let Some(scope) = &self.scope
            && let Some(bytes) = scope.get(t.key(k))
        {
            self.land(t, k, bytes, true);
            return;
        }
        // No longer than the guest's own deadline leaves, if it has one.
        let deadline = Instant::now() + packfs_core::deadline::cut(self.wait);
        let mut f = lock(&self.flight);
        let mut asked = false;
        loop {
            if t.here(k) || self.object.changed() {
                return;
            }
            if !f.under_way.contains(&k) {
                let recent_failure = f.failed.as_ref().is_some_and(|(at, _)| at.elapsed() < self.fail_fast);
                if asked || recent_failure {
                    return;
                }
                asked = true;
                let (runs, trigger) = f.plan(t, k, true);
                self.trigger.store(trigger, Ordering::Relaxed);
                drop(f);
                self.launch(runs, &self.demand);
                f = lock(&self.flight);
                continue;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            f = self.landed.wait_timeout(f, left).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    fn launch(self: &Arc<Self>, runs: Vec<Range<u64>>, permits: &Arc<Semaphore>) {
        for run in runs {
            let (me, permits) = (Arc::clone(self), Arc::clone(permits));
            runtime::runtime().spawn(async move {
                let permit = permits.acquire_owned().await;
                let result = me.fetch_run(run.clone()).await;
                drop(permit);
                me.settle(run, result);
            });
        }
    }

    /// Ends a fetch of `ks`: they are no longer under way (whether they
    /// came or not), and their readers wake.
    fn settle(&self, ks: impl IntoIterator<Item = u64>, result: Result<(), RemoteError>) {
        let mut f = lock(&self.flight);
        if let Err(e) = result {
            f.failed = Some((Instant::now(), e.to_string()));
        }
        for k in ks {
            f.under_way.remove(&k);
        }
        drop(f);
        self.landed.notify_all();
    }

    /// Keeps extent `k`'s bytes, which passed their checksum.
    fn land(&self, t: &Table, k: u64, bytes: Bytes, cached: bool) {
        if t.slots[k as usize].set(bytes).is_ok() {
            let c = if cached { &self.counters.from_cache } else { &self.counters.fetched };
            c.fetch_add(1, Ordering::Relaxed);
        }
    }
}
