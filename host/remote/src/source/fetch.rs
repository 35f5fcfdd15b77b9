//! How a remote source brings extents: from the host-wide cache, else from
//! the store (one more try for a reply that was wrong), checked, written to
//! the cache, then handed to the readers waiting.

use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::Inner;
use super::table::{Table, checked};
use crate::error::RemoteError;
use crate::extent_cache::Key;
use crate::limits::LOCK_WAIT;

impl Inner {
    /// Brings the extents `run`: from the cache, else from the store.
    /// Extents another process is fetching are waited for (up to
    /// [`LOCK_WAIT`]) and then taken from the cache.
    pub(super) async fn fetch_run(self: &Arc<Self>, run: Range<u64>) -> Result<(), RemoteError> {
        let t = self.table.get().expect("fetches start once the table is set");
        let Some(scope) = &self.scope else {
            let got = self.fetch(t, run).await?;
            self.keep(t, got).await;
            return Ok(());
        };
        let (mut mine, mut locks, mut others) = (Vec::new(), Vec::new(), Vec::new());
        for k in run {
            let key = t.key(k);
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
            let key = t.key(k);
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
    pub(super) async fn keep(&self, t: &Table, got: Vec<(u64, Bytes)>) {
        let mut mapped = Vec::new();
        if let Some(scope) = &self.scope {
            let (scope, keyed) = (scope.clone(), got.iter().map(|(k, b)| (t.key(*k), b.clone())).collect());
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
                let what = format!("bytes {}..{} do not match the pack's digest or checksum", e.start, e.end);
                return Err(RemoteError::Reply { url: self.object.url.clone(), what });
            };
            got.push((k, bytes));
        }
        Ok(got)
    }
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
