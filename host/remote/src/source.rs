//! [`RemoteSource`]: the bytes of a pack in a store, fetched extent by
//! extent (a version 1 blob, a version 2 chunk) as reads need them.
//!
//! A read of an extent that is not here blocks until it is: it is looked
//! for in the host-wide cache, else fetched, and checked against the
//! checksum the pack's index gives before any byte of it is served. A
//! miss fetches more than the one extent (`plan`): the rest of the file it
//! lies in, up to [`FIRST_WINDOW`]; reads that go on sequentially double
//! the window up to [`MAX_WINDOW`], the next one fetched while the reader
//! is halfway through the last (readahead) — within the file, and past its
//! end only once the reads have gone on from one file into the next. A
//! window goes out as requests of at most [`REQUEST_MAX`] bytes, each of
//! adjacent extents, at most [`DEMAND_PARALLEL`] at once. Each extent is
//! in one fetch at a time: other readers of it wait for that one.
//!
//! Memory: the pieces fetched to open, the extents fetched since, and a
//! table of 73 bytes per extent, for at most core's [`MAX_EXTENTS`] (the
//! open is lazy and refuses more): 1.1 GiB at most, whatever the pack
//! claims.

use std::collections::HashSet;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use packfs_core::pack::layout::MAX_EXTENTS;
use packfs_core::pack::{ByteSource, PackFs, Pieces, checksum};
use tokio::sync::Semaphore;

use crate::RemoteError;
use crate::cache::{Key, Scope};
use crate::early;
use crate::object::Object;

/// A miss that does not continue the last fetch brings at most this much.
pub const FIRST_WINDOW: u64 = 4 << 20;
/// The readahead window grows up to this.
pub const MAX_WINDOW: u64 = 64 << 20;
/// And starts from this.
const STREAM_START: u64 = 128 << 10;
/// One request brings at most this many bytes (more go out in parallel).
pub const REQUEST_MAX: u64 = 4 << 20;
/// Requests for reads under way at once, per pack.
pub const DEMAND_PARALLEL: usize = 8;
/// Requests for a trace's prefetch under way at once, per pack: a trace
/// lists scattered files, a request each, best all in one round trip.
pub const PREFETCH_PARALLEL: usize = 32;
/// How long a fetch waits for another process fetching the same extent
/// before it fetches the extent itself.
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// One extent, as the index gives it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Extent {
    pub start: u64,
    pub end: u64,
    pub sum: u64,
}

impl Extent {
    fn key(&self) -> Key {
        Key { sum: self.sum, len: self.end - self.start }
    }
}

/// What is known of each extent once the pack is open: 73 bytes per
/// extent (24 of [`Extent`], 8 of `span_end`, 40 of slot, 1 of `touched`),
/// for at most [`MAX_EXTENTS`] extents, which the open (lazy) checked:
/// 1.1 GiB at most, whatever the pack claims.
pub(crate) struct Table {
    pub extents: Box<[Extent]>,
    /// For each extent, the end of the last file holding it: how far a
    /// read of it will likely go.
    span_end: Box<[u64]>,
    slots: Box<[OnceLock<Bytes>]>,
    touched: Box<[AtomicBool]>,
}

impl Table {
    /// The table of `pack`, opened [`lazy`](packfs_core::pack::ReadOptions::lazy);
    /// `Err` for more extents than [`MAX_EXTENTS`] (which that open refused)
    /// or an extent the index cannot give.
    pub(crate) fn build<S: ByteSource>(pack: &PackFs<S>) -> Result<Table, String> {
        let n = pack.extent_count();
        if n > MAX_EXTENTS {
            return Err(format!("{n} extents, more than a lazily opened pack may have ({MAX_EXTENTS})"));
        }
        let mut extents = Vec::with_capacity(n as usize);
        for k in 0..n {
            let ((start, end), sum) =
                pack.extent(k).zip(pack.extent_checksum(k)).ok_or("an extent the index cannot give")?;
            extents.push(Extent { start, end, sum });
        }
        // A sweep over the files' extent ranges, which come in the order of
        // their contents, so by start: each extent's span ends where the
        // longest file running through it does. (Out of order, a file's
        // reach would count from a later extent: a shorter readahead, not a
        // wrong read.) No list of the files: a blob per 24 bytes of index.
        let mut files = pack.content_extents().filter(|r| !r.is_empty()).peekable();
        let mut span_end = Vec::with_capacity(extents.len());
        let mut reach = 0;
        for k in 0..n {
            while let Some(file) = files.next_if(|f| f.start <= k) {
                reach = reach.max(file.end);
            }
            span_end.push(reach.max(k + 1));
        }
        let len = extents.len();
        Ok(Table {
            extents: extents.into(),
            span_end: span_end.into(),
            slots: (0..len).map(|_| OnceLock::new()).collect(),
            touched: (0..len).map(|_| AtomicBool::new(false)).collect(),
        })
    }

    /// The extent a trace entry `(start, len, checksum)` names, if the pack
    /// has exactly that one.
    pub(crate) fn find(&self, (start, len, sum): (u64, u64, u64)) -> Option<u64> {
        let k = self.extents.partition_point(|e| e.start < start);
        let e = self.extents.get(k)?;
        (e.start == start && e.end - e.start == len && e.sum == sum).then_some(k as u64)
    }

    fn here(&self, k: u64) -> bool {
        self.slots[k as usize].get().is_some()
    }
}

/// Fetch counts for one pack.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct FetchStats {
    /// Requests sent to the store (opening included).
    pub requests: u64,
    /// Bytes they brought.
    pub bytes: u64,
    /// Extents that came from the store (with the open's requests too),
    /// and from the cache.
    pub fetched: u64,
    /// Of those fetched, the ones that came with the open's requests (in
    /// its tail).
    pub opened: u64,
    pub from_cache: u64,
}

#[derive(Default)]
struct Counters {
    fetched: AtomicU64,
    opened: AtomicU64,
    from_cache: AtomicU64,
}

/// Which extents are being fetched, and where reads were going.
#[derive(Default)]
struct Flight {
    under_way: HashSet<u64>,
    /// The extent after the last window a miss fetched.
    next: u64,
    /// That window's size in bytes.
    ahead: u64,
    /// Where the file it was in ends (the extent after its last).
    file_end: u64,
    /// Whether reads have been streaming across files.
    across: bool,
    failed: Option<(Instant, String)>,
}

pub(crate) struct Inner {
    /// The header and the index region with the trailer, fetched at open.
    pieces: Pieces,
    pub object: Arc<Object>,
    scope: Option<Scope>,
    pub table: OnceLock<Table>,
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
}

/// A pack's bytes in a store; see the module doc. Made by
/// [`open`](crate::open). A clone is another handle on the same bytes:
/// keep one to ask for [`stats`](Self::stats) or a trace while the pack
/// is in use.
#[derive(Clone)]
pub struct RemoteSource {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for RemoteSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteSource").field("url", &self.inner.object.url).finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What [`Inner::new`] takes.
pub(crate) struct Parts {
    pub object: Arc<Object>,
    pub scope: Option<Scope>,
    pub wait: Duration,
    pub fail_fast: Duration,
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
        };
        RemoteSource { inner: Arc::new(inner) }
    }

    /// The pack's URL.
    pub fn url(&self) -> &str {
        &self.inner.object.url
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

    /// The extents read so far, each once, in the order first read.
    pub(crate) fn first_reads(&self) -> Vec<Extent> {
        let Some(t) = self.inner.table.get() else { return Vec::new() };
        lock(&self.inner.trace).iter().map(|&k| t.extents[k as usize]).collect()
    }

    /// Starts fetching `ks` (extent numbers, in the order wanted) in the
    /// background, adjacent ones together; those here or under way are
    /// left out.
    pub(crate) fn prefetch(&self, ks: &[u64]) {
        let Some(t) = self.inner.table.get() else { return };
        let mut f = lock(&self.inner.flight);
        let runs = self.inner.runs(&mut f, t, ks.iter().copied());
        drop(f);
        self.inner.launch(runs, &self.inner.prefetch);
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
        for (at, bytes) in data {
            let bytes = Bytes::from(bytes);
            for k in pack.extents_within(at..at + bytes.len() as u64) {
                if let Some(b) = checked(t, k, at, &bytes) {
                    inner.land(t, k, b, false);
                    inner.counters.opened.fetch_add(1, Ordering::Relaxed);
                }
            }
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
                .filter_map(|&entry| t.find(entry))
                .filter(|&k| !t.here(k) && f.under_way.insert(k))
                .collect();
            taken.push((run, ks));
        }
        drop(f);
        for (run, ks) in taken {
            let me = Arc::clone(&self.inner);
            crate::runtime().spawn(async move {
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
                let runs = self.plan(&mut f, t, next, false);
                drop(f);
                self.launch(runs, &self.demand);
            }
        }
    }

    /// Blocks until extent `k` is here, or fetching it failed, or the
    /// wait ran out.
    fn wait_for(self: &Arc<Self>, t: &Table, k: u64) {
        let e = t.extents[k as usize];
        if let Some(scope) = &self.scope
            && let Some(bytes) = scope.get(e.key())
        {
            self.land(t, k, bytes, true);
            return;
        }
        // No longer than the guest's own deadline leaves, if it has one.
        let deadline = Instant::now() + packfs_core::wasi::deadline::cut(self.wait);
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
                let runs = self.plan(&mut f, t, k, true);
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

    /// The extents a miss at `k` fetches (see the module doc), as runs,
    /// now marked under way.
    fn plan(&self, f: &mut Flight, t: &Table, k: u64, demand: bool) -> Vec<Range<u64>> {
        let n = t.extents.len() as u64;
        let sequential = k == f.next && k > 0;
        // Reads streaming across files: a read went on from where the last
        // window ended into the next file. Until one does, a window stops
        // at its file's end, however sequential the reads within it.
        f.across = sequential && (f.across || (demand && k >= f.file_end));
        // A miss elsewhere takes the rest of its file, up to FIRST_WINDOW;
        // a sequential one doubles the last window, from a chunk's worth,
        // so that two files that merely lie side by side cost little.
        let limit = if sequential { (f.ahead * 2).clamp(STREAM_START, MAX_WINDOW) } else { FIRST_WINDOW };
        let file_end = t.span_end[k as usize];
        let start = t.extents[k as usize].start;
        let mut j = k + 1;
        while j < n && t.extents[j as usize].end - start <= limit && (f.across || j < file_end) {
            j += 1;
        }
        (f.next, f.file_end) = (j, file_end.max(j));
        f.ahead = t.extents[j as usize - 1].end - start;
        // Read ahead, halfway through this window, if there is more to read
        // (and not on the strength of an older window).
        let more = (f.across || j < file_end) && j < n;
        self.trigger.store(if more { k + (j - k).div_ceil(2) } else { u64::MAX }, Ordering::Relaxed);
        self.runs(f, t, k..j)
    }

    /// `ks` less the extents here or under way, as runs of adjacent
    /// extents of at most [`REQUEST_MAX`] bytes, marked under way.
    fn runs(&self, f: &mut Flight, t: &Table, ks: impl IntoIterator<Item = u64>) -> Vec<Range<u64>> {
        let mut runs: Vec<Range<u64>> = Vec::new();
        for k in ks {
            if k >= t.extents.len() as u64 || t.here(k) || !f.under_way.insert(k) {
                continue;
            }
            match runs.last_mut() {
                Some(r)
                    if r.end == k && t.extents[k as usize].end - t.extents[r.start as usize].start <= REQUEST_MAX =>
                {
                    r.end = k + 1
                }
                _ => runs.push(k..k + 1),
            }
        }
        runs
    }

    fn launch(self: &Arc<Self>, runs: Vec<Range<u64>>, permits: &Arc<Semaphore>) {
        for run in runs {
            let (me, permits) = (Arc::clone(self), Arc::clone(permits));
            crate::runtime().spawn(async move {
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

    /// Brings the extents `run`: from the cache, else from the store.
    /// Extents another process is fetching are waited for (up to
    /// [`LOCK_WAIT`]) and then taken from the cache.
    async fn fetch_run(self: &Arc<Self>, run: Range<u64>) -> Result<(), RemoteError> {
        let t = self.table.get().expect("fetches start once the table is set");
        let Some(scope) = &self.scope else {
            let got = self.fetch(t, run).await?;
            self.keep(t, got).await;
            return Ok(());
        };
        let (mut mine, mut locks, mut others) = (Vec::new(), Vec::new(), Vec::new());
        for k in run {
            let key = t.extents[k as usize].key();
            if t.here(k) {
                continue;
            }
            if let Some(bytes) = scope.get(key) {
                self.land(t, k, bytes, true);
            } else if let Some(l) = scope.try_lock(key) {
                // Another process may have stored it meanwhile.
                match scope.get(key) {
                    Some(bytes) => self.land(t, k, bytes, true),
                    None => {
                        scope.missed();
                        locks.push(l);
                        mine.push(k);
                    }
                }
            } else {
                others.push(k);
            }
        }
        let mut result = Ok(());
        for group in adjacent(&mine) {
            match self.fetch(t, group).await {
                Ok(got) => self.keep(t, got).await,
                Err(e) => result = Err(e),
            }
        }
        drop(locks);
        for k in others {
            let key = t.extents[k as usize].key();
            let since = Instant::now();
            loop {
                let lock = scope.try_lock(key);
                if lock.is_some() || since.elapsed() > LOCK_WAIT {
                    if let Some(bytes) = scope.get(key) {
                        self.land(t, k, bytes, true);
                    } else {
                        scope.missed();
                        match self.fetch(t, k..k + 1).await {
                            Ok(got) => self.keep(t, got).await,
                            Err(e) => result = Err(e),
                        }
                    }
                    break;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        result
    }

    /// Writes fetched (and checked) extents to the cache, if there is one,
    /// then lets their readers go on: in that order, so that a process
    /// ending once its reads are done leaves in the cache all it read. The
    /// writes run off the runtime's threads, which carry the other requests.
    async fn keep(&self, t: &Table, got: Vec<(u64, Bytes)>) {
        let mut mapped = Vec::new();
        if let Some(scope) = &self.scope {
            let (scope, keyed) =
                (scope.clone(), got.iter().map(|(k, b)| (t.extents[*k as usize].key(), b.clone())).collect());
            mapped = tokio::task::spawn_blocking(move || {
                let keyed: Vec<(Key, Bytes)> = keyed;
                keyed.into_iter().map(|(key, bytes)| scope.put(key, &bytes)).collect::<Vec<_>>()
            })
            .await
            .unwrap_or_default();
        }
        let mut mapped = mapped.into_iter();
        for (k, bytes) in got {
            // The mapped entry where there is one: the reply's buffer goes.
            self.land(t, k, mapped.next().flatten().unwrap_or(bytes), false);
        }
        self.landed.notify_all();
    }

    /// Fetches extents `run` in one request; returns each, checked against
    /// its checksum, or the first failure.
    async fn fetch(&self, t: &Table, run: Range<u64>) -> Result<Vec<(u64, Bytes)>, RemoteError> {
        match self.fetch_once(t, run.clone()).await {
            // The store's client retried what it knows to retry; a reply
            // that was wrong (or broke off) gets one more try here.
            Err(RemoteError::Changed { url }) => Err(RemoteError::Changed { url }),
            Err(_) => self.fetch_once(t, run).await,
            ok => ok,
        }
    }

    async fn fetch_once(&self, t: &Table, run: Range<u64>) -> Result<Vec<(u64, Bytes)>, RemoteError> {
        let (first, last) = (t.extents[run.start as usize], t.extents[run.end as usize - 1]);
        let body = self.object.get(first.start..last.end).await?;
        if body.len() as u64 != last.end - first.start {
            let what = format!("{} bytes for a range of {}", body.len(), last.end - first.start);
            return Err(RemoteError::Reply { url: self.object.url.clone(), what });
        }
        let mut got = Vec::with_capacity((run.end - run.start) as usize);
        for k in run {
            let Some(bytes) = checked(t, k, first.start, &body) else {
                let e = t.extents[k as usize];
                let what = format!("bytes {}..{} do not match the pack's checksum", e.start, e.end);
                return Err(RemoteError::Reply { url: self.object.url.clone(), what });
            };
            got.push((k, bytes));
        }
        Ok(got)
    }
}

/// Extent `k`'s bytes out of `body`, fetched from `at`, if they pass the
/// extent's checksum.
fn checked(t: &Table, k: u64, at: u64, body: &Bytes) -> Option<Bytes> {
    let e = t.extents[k as usize];
    let bytes = body.slice((e.start - at) as usize..(e.end - at) as usize);
    (checksum(&bytes) == e.sum).then_some(bytes)
}

/// `ks` (increasing) cut into runs of consecutive numbers.
fn adjacent(ks: &[u64]) -> Vec<Range<u64>> {
    let mut out: Vec<Range<u64>> = Vec::new();
    for &k in ks {
        match out.last_mut() {
            Some(r) if r.end == k => r.end = k + 1,
            _ => out.push(k..k + 1),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What [`Table`]'s doc says an extent costs.
    #[test]
    fn an_extent_costs_the_table_73_bytes() {
        let per = size_of::<Extent>() + size_of::<u64>() + size_of::<OnceLock<Bytes>>() + size_of::<AtomicBool>();
        assert_eq!(per, 73);
    }
}
