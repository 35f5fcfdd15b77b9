//! A trace's extents asked for at open, with the trailer: the trace says
//! where they lie (`START LEN CHECKSUM`), so they need not wait for the
//! index, and a traced cold start spends its first round trips fetching
//! data. What comes is kept only once the index is here and confirms each
//! extent (same place, length and checksum; bytes that match it), and
//! only if the reply came from the version of the object the open pinned.
//!
//! Entries the host-wide cache holds are not asked for; entries another
//! process is fetching (their lock is held) are left to the ordinary
//! prefetch, which waits for it.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore};
use packfs_core::pack::{MERGE_GAP, merge_ranges};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use crate::extent_cache::{Key, Lock, Scope};
use crate::limits::{PREFETCH_PARALLEL, REQUEST_MAX};
use crate::object::body;
use crate::runtime::runtime;
use crate::trace::{Entry, Trace};

/// At most this many entries are asked for early (each holds its lock file
/// open until it lands); the ordinary prefetch takes the rest once the
/// pack is open, a request's worth of locks at a time.
const MAX_EARLY: usize = 256;

/// One request under way: its range, the trace entries in it, the locks
/// taken for them, and the reply (bytes and ETag).
pub(crate) struct Run {
    pub range: Range<u64>,
    pub entries: Vec<Entry>,
    pub locks: Vec<Lock>,
    pub reply: JoinHandle<Option<(Bytes, Option<String>)>>,
}

/// Starts the requests for `trace`'s entries: those next to each other
/// (in the trace's order, within [`MERGE_GAP`]) together, up to [`REQUEST_MAX`]
/// bytes a request.
pub(crate) fn start(store: &Arc<dyn ObjectStore>, path: &Path, trace: &Trace, scope: Option<&Scope>) -> Vec<Run> {
    let permits = Arc::new(Semaphore::new(PREFETCH_PARALLEL));
    let mut wanted = Vec::new();
    for &entry in trace.entries().iter().take(MAX_EARLY) {
        let Entry { start, len, sum, digest } = entry;
        let Some(end) = start.checked_add(len).filter(|_| len > 0) else { continue };
        let mut lock = None;
        if let Some(scope) = scope {
            // The address the cache has it under: by digest where the pack
            // has a digest table (and the trace says so).
            let key = match digest {
                Some(digest) => Key::Digest { digest, len },
                None => Key::Sum { sum, len },
            };
            // Here already, or another process fetches it: not now.
            match scope.try_lock(key) {
                Some(l) if !scope.has(key) => lock = Some(l),
                _ => continue,
            }
        }
        wanted.push((start..end, entry, lock));
    }
    // Extents a little apart (alignment) go together too.
    let merged = merge_ranges(wanted.iter().map(|(r, _, _)| r.clone()), MERGE_GAP, REQUEST_MAX);
    let mut wanted = wanted.into_iter();
    let groups = merged.into_iter().map(|m| {
        let members: Vec<_> = wanted.by_ref().take(m.members.len()).collect();
        let entries = members.iter().map(|(_, e, _)| *e).collect();
        (m.range, entries, members.into_iter().filter_map(|(_, _, l)| l).collect::<Vec<Lock>>())
    });
    groups
        .map(|(range, entries, locks)| {
            let (store, path, permits, r) = (Arc::clone(store), path.clone(), Arc::clone(&permits), range.clone());
            let reply = runtime().spawn(async move {
                let _permit = permits.acquire_owned().await.ok()?;
                let options = GetOptions { range: Some(GetRange::Bounded(r.clone())), ..GetOptions::default() };
                let reply = store.get_opts(&path, options).await.ok()?;
                let etag = reply.meta.e_tag.clone();
                let bytes = body(reply, r.end - r.start).await.ok()?;
                (bytes.len() as u64 == r.end - r.start).then_some((bytes, etag))
            });
            Run { range, entries, locks, reply }
        })
        .collect()
}
