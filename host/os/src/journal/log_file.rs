//! [`LogFile`]: the journal's log file as a [`Sink`] — positional appends,
//! and fdatasyncs shared between waiting writers — and the
//! [`SyncPolicy`] that says when a change becomes durable.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use packfs_core::journal::{HEADER_LEN, Header, Sink, encode_part};
use packfs_core::mem::Tree;
use packfs_core::sync::lock;
use packfs_core::{BackendFault, Error, OsError, system_clock};

use crate::publish::write_atomic_keeping;

/// A log is rewritten as the image of its tree once it is this many times
/// longer than when it was last rewritten, and than the tree's usage, and
/// longer than `CHECKPOINT_FROM` (1 MiB): a rewrite writes about what the changes
/// since the last one wrote, so the log stays within this factor of its
/// tree, and writing it costs at most as much again.
pub const REWRITE_FACTOR: u64 = 2;

/// When a change becomes durable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SyncPolicy {
    /// fdatasync each change before anyone sees it.
    #[default]
    EveryOp,
    /// Publish, then acknowledge once an fdatasync shared with concurrent
    /// writers covers the change.
    GroupCommit,
}

/// The log file as a [`Sink`]: positional appends, and fdatasyncs shared
/// between waiting writers.
pub(super) struct LogFile {
    /// The log file: replaced whole when the log is rewritten.
    file: Mutex<Arc<File>>,
    policy: SyncPolicy,
    /// Where the log is, and what it is rewritten with; `None` for a log
    /// that is never rewritten.
    rewrite: Option<Rewrite>,
    append: Mutex<AppendState>,
    /// Sequence number of the last record appended.
    appended: AtomicU64,
    synced: Mutex<SyncState>,
    synced_cv: Condvar,
}

struct AppendState {
    len: u64,
    /// The log's length when it was last rewritten (or opened): it is
    /// rewritten once it is [`REWRITE_FACTOR`] times that, and its tree.
    rewritten: u64,
    /// The most bytes the log may reach ([`LogFile::limit`]); a record
    /// past it is refused as `Quota`.
    limit: Option<u64>,
    seq: u64,
    /// Set when a failed append could not be undone, when a sync failed,
    /// or after a checkpoint.
    closed: Option<&'static str>,
    /// `DIR/lock`, locked, for as long as the log takes records (whoever
    /// still holds the filesystem): two processes appending to one log
    /// would overwrite each other's records.
    owner: Option<File>,
}

/// What rewriting the log needs: its path and header, and how far it may
/// grow past its tree.
pub(super) struct Rewrite {
    pub(super) path: PathBuf,
    pub(super) generation: u64,
    /// How much the log may grow beyond its length after a rewrite.
    pub(super) grows: Option<u64>,
    /// No log shorter than this is rewritten.
    pub(super) from: u64,
}

struct SyncState {
    synced: u64,
    syncing: bool,
    /// A sync failed: nothing past `synced` is known to be on disk.
    failed: bool,
}

impl LogFile {
    pub(super) fn new(file: File, len: u64, policy: SyncPolicy, owner: Option<File>) -> Self {
        LogFile {
            file: Mutex::new(Arc::new(file)),
            policy,
            rewrite: None,
            append: Mutex::new(AppendState { len, rewritten: len, limit: None, seq: 0, closed: None, owner }),
            appended: AtomicU64::new(0),
            synced: Mutex::new(SyncState { synced: 0, syncing: false, failed: false }),
            synced_cv: Condvar::new(),
        }
    }

    /// Refuses records (`Quota`) that would take the log past `limit`
    /// bytes.
    pub(super) fn limit(self, limit: Option<u64>) -> Self {
        lock(&self.append).limit = limit;
        self
    }

    /// Rewrites the log as `rewrite` says once it outgrows its tree.
    pub(super) fn rewritten(mut self, rewrite: Rewrite) -> Self {
        self.rewrite = Some(rewrite);
        self
    }

    /// The log's length in bytes, and the most it may reach.
    pub(super) fn len(&self) -> (u64, Option<u64>) {
        let st = lock(&self.append);
        (st.len, st.limit)
    }

    /// Takes no more records; hands back the directory's lock, which it
    /// no longer needs (the first time).
    pub(super) fn close(&self, why: &'static str) -> Option<File> {
        let mut st = lock(&self.append);
        st.closed.get_or_insert(why);
        st.owner.take()
    }
}

impl Sink for LogFile {
    fn append(&self, record: &[u8]) -> packfs_core::Result<u64> {
        let mut st = lock(&self.append);
        if let Some(why) = st.closed {
            return Err(Error::backend(BackendFault::Closed, why));
        }
        if st.limit.is_some_and(|limit| st.len.saturating_add(record.len() as u64) > limit) {
            return Err(Error::Quota);
        }
        let file = lock(&self.file).clone();
        if let Err(e) = file.write_all_at(record, st.len) {
            // A record half on disk would end replay early and hide every
            // later one: take it back, or take no more.
            if file.set_len(st.len).is_err() {
                st.closed = Some("a failed journal append could not be undone");
            }
            return Err(Error::Os(OsError::new("journal append", e)));
        }
        st.len += record.len() as u64;
        st.seq += 1;
        self.appended.store(st.seq, Ordering::Release);
        Ok(st.seq)
    }

    fn sync(&self, seq: u64) -> packfs_core::Result<()> {
        let mut st = lock(&self.synced);
        loop {
            if st.synced >= seq {
                return Ok(());
            }
            if st.failed {
                return Err(Error::backend(BackendFault::Closed, "an earlier journal sync failed: reopen the journal"));
            }
            if st.syncing {
                st = self.synced_cv.wait(st).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            // Lead: one fdatasync for everything appended so far.
            st.syncing = true;
            let target = self.appended.load(Ordering::Acquire);
            drop(st);
            let file = lock(&self.file).clone();
            let result = file.sync_data();
            st = lock(&self.synced);
            st.syncing = false;
            match result {
                Ok(()) => st.synced = st.synced.max(target),
                Err(_) => st.failed = true,
            }
            self.synced_cv.notify_all();
            if let Err(e) = result {
                drop(st);
                // The lock goes too: another process may reopen and recover it.
                drop(self.close("a journal sync failed: reopen the journal"));
                return Err(Error::Os(OsError::new("journal sync", e)));
            }
        }
    }

    fn durable_before_visible(&self) -> bool {
        self.policy == SyncPolicy::EveryOp
    }

    fn published(&self, tree: &Tree) {
        let Some(rewrite) = &self.rewrite else { return };
        let mut st = lock(&self.append);
        let outgrown = st.len > rewrite.from.max(st.rewritten.saturating_mul(REWRITE_FACTOR));
        if st.closed.is_some() || !outgrown || st.len <= tree.usage().bytes.saturating_mul(REWRITE_FACTOR) {
            return;
        }
        // Called under the tree's writer lock: no change is being recorded,
        // and every one recorded so far is in `tree`.
        let mut published = false;
        let written = write_atomic_keeping(&rewrite.path, |f| {
            let header = Header { generation: rewrite.generation, created: system_clock()(), image: true };
            let mut out = BufWriter::with_capacity(1 << 20, &*f);
            out.write_all(&header.encode())?;
            let mut record = Vec::new();
            let mut len = HEADER_LEN as u64;
            tree.image(|part| {
                record.clear();
                encode_part(&part, header.created, &mut record);
                len += record.len() as u64;
                out.write_all(&record)
            })?;
            out.flush()?;
            drop(out);
            published = true;
            Ok::<_, io::Error>(len)
        });
        match written {
            // Appends go to the file now at the log's path, which is not
            // always the one written above (see `write_atomic_keeping`).
            Ok((len, file)) => {
                *lock(&self.file) = Arc::new(file);
                (st.len, st.rewritten) = (len, len);
                st.limit = rewrite.grows.map(|g| len.saturating_add(g));
                // The new log, synced whole, holds every change appended
                // so far.
                let mut synced = lock(&self.synced);
                synced.synced = synced.synced.max(self.appended.load(Ordering::Acquire));
                self.synced_cv.notify_all();
            }
            // The old log may have been replaced by one this handle does
            // not write: take no more records.
            Err(_) if published => _ = st.closed.get_or_insert("the journal's log could not be rewritten: reopen it"),
            // The old log stands; try again once it has doubled.
            Err(_) => st.rewritten = st.len,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use packfs_core::mem::{Quota, Tree};
    use packfs_core::{FileSystem, MemFs, system_clock};

    use super::*;

    #[test]
    fn a_failed_sync_closes_the_log() {
        // fdatasync of /dev/null fails (EINVAL); its writes succeed.
        let file = File::options().write(true).open("/dev/null").unwrap();
        for policy in [SyncPolicy::EveryOp, SyncPolicy::GroupCommit] {
            let log = Arc::new(LogFile::new(file.try_clone().unwrap(), 0, policy, None));
            let fs = MemFs::journaled(Tree::new(system_clock()(), Quota::default()), log.clone(), system_clock());
            assert!(matches!(fs.mkdir(fs.root(), "a", 0o755), Err(Error::Backend { .. } | Error::Os(_))));
            if policy == SyncPolicy::EveryOp {
                assert_eq!(fs.lookup(fs.root(), "a"), Err(Error::NotFound), "not published");
            }
            // Nothing is recorded or acknowledged after it, even if a
            // later sync would succeed.
            assert!(matches!(fs.mkdir(fs.root(), "b", 0o755), Err(Error::Backend { .. } | Error::Os(_))));
            assert!(matches!(log.append(b"x"), Err(Error::Backend { .. } | Error::Os(_))));
            assert!(matches!(log.sync(1), Err(Error::Backend { .. } | Error::Os(_))));
        }
    }
}
