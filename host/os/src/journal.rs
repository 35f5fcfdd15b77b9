//! A durable in-memory tree: a [`MemFs`] whose every change is appended to
//! a write-ahead log on disk before it is acknowledged, and replayed when
//! the directory is opened again.
//!
//! A journal directory holds at most one checkpoint and one log:
//!
//! ```text
//! DIR/base-G.pack     the tree at checkpoint G (absent for G = 0)
//! DIR/journal-G.log   changes since then (format: packfs_core::journal)
//! DIR/lock            locked while a journal of the directory is open
//! ```
//!
//! Opening picks the highest `G` with its pack (or 0), mounts the tree as
//! an overlay over that pack, replays `journal-G.log`, cuts a torn tail off
//! it, and removes every file of another generation. A checkpoint writes
//! `base-(G+1).pack` and an empty `journal-(G+1).log`, each atomically, in
//! that order: a crash between them leaves a new pack with no log, which
//! opens as the pack alone — exactly the checkpointed tree.
//!
//! Durability: with [`SyncPolicy::EveryOp`] (the default) each change is
//! fdatasynced before it is published; with [`SyncPolicy::GroupCommit`] it
//! is published first and acknowledged once a sync covers it, so
//! concurrent writers share one fdatasync. A failed sync closes the log:
//! the kernel may have dropped the pages it could not write, so no later
//! sync could vouch for them. The changes it covered fail (`Io`), and, as
//! with any write whose fsync failed, may or may not be there after a
//! reopen.
//!
//! One journal open at a time, in this process or another: its log holds
//! an exclusive lock on `DIR/lock` for as long as it takes records (until
//! whoever holds its filesystem lets go, a checkpoint hands it on, or a
//! failed sync closes the log).

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use anyhow::{Context, Result, bail};
use packfs_core::journal::{HEADER_LEN, Header, Sink, replay};
use packfs_core::mem::{Limits, Tree};
use packfs_core::pack::{WriteError, write_pack};
use packfs_core::sync::lock;
use packfs_core::{Clock, Error, MemFs, OsError, system_clock};

use crate::mmap::open_pack;
use crate::publish::write_atomic;

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

/// An open journal directory and the filesystem it keeps durable.
pub struct Journal {
    dir: PathBuf,
    generation: u64,
    fs: Arc<MemFs>,
    log: Arc<LogFile>,
    policy: SyncPolicy,
    limits: Limits,
}

fn base_path(dir: &Path, g: u64) -> PathBuf {
    dir.join(format!("base-{g}.pack"))
}

fn log_path(dir: &Path, g: u64) -> PathBuf {
    dir.join(format!("journal-{g}.log"))
}

/// The generation in a journal directory's file name, and whether it is
/// the pack (`true`) or the log.
/// Only names of the exact form the journal writes: `journal-007.log` or
/// `base-+2.pack` are someone else's, and left alone.
fn parse_name(name: &str) -> Option<(u64, bool)> {
    let (g, pack) = match name.strip_prefix("base-").and_then(|n| n.strip_suffix(".pack")) {
        Some(g) => (g, true),
        None => (name.strip_prefix("journal-")?.strip_suffix(".log")?, false),
    };
    if !crate::publish::canonical_number(g) {
        return None;
    }
    Some((g.parse().ok()?, pack))
}

/// What a journal directory holds, read without changing anything on disk.
struct Loaded {
    generation: u64,
    /// The checkpoint with the log replayed onto it.
    tree: Tree,
    /// The log, open for writing, and the length of its good part.
    log: Option<(File, u64)>,
}

fn load(dir: &Path, limits: Limits, clock: &Clock) -> Result<Loaded> {
    let mut generation = 0;
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let name = entry?.file_name();
        if let Some((g, true)) = name.to_str().and_then(parse_name) {
            generation = generation.max(g);
        }
    }
    let mut tree = if generation == 0 {
        None
    } else {
        let path = base_path(dir, generation);
        let pack = open_pack(&path).with_context(|| format!("opening checkpoint {}", path.display()))?;
        Some(Tree::overlay(Arc::new(pack), clock(), limits).context("mounting the checkpoint")?)
    };
    let path = log_path(dir, generation);
    let log = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(Loaded { generation, tree: tree.unwrap_or_else(|| Tree::new(clock(), limits)), log: None });
        }
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let header = Header::decode(&log).with_context(|| format!("{}", path.display()))?;
    if header.generation != generation {
        bail!("{}: log of generation {} where {generation} was expected", path.display(), header.generation);
    }
    let mut tree = tree.take().unwrap_or_else(|| Tree::new(header.created, limits));
    let replayed = replay(&mut tree, &log[HEADER_LEN..]).with_context(|| format!("replaying {}", path.display()))?;
    let file = File::options().write(true).open(&path).with_context(|| format!("opening {}", path.display()))?;
    Ok(Loaded { generation, tree, log: Some((file, HEADER_LEN as u64 + replayed.valid_len)) })
}

impl Journal {
    /// Opens (creating when missing) the journal directory `dir`.
    pub fn open(dir: &Path, policy: SyncPolicy, limits: Limits) -> Result<Journal> {
        if !dir.is_dir() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            // The new directory's name must outlive a crash, or so would
            // nothing acknowledged inside it.
            let parent = dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            File::open(parent).and_then(|p| p.sync_all()).with_context(|| format!("syncing {}", parent.display()))?;
        }
        let path = dir.join("lock");
        let lock = File::options().create(true).truncate(false).write(true).open(&path);
        let lock = lock.with_context(|| format!("opening {}", path.display()))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => bail!("journal {} is in use", dir.display()),
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("locking {}", path.display()));
            }
        }
        Self::open_locked(dir, lock, policy, limits)
    }

    fn open_locked(dir: &Path, lock: File, policy: SyncPolicy, limits: Limits) -> Result<Journal> {
        let clock = system_clock();
        let Loaded { generation, mut tree, log } = load(dir, limits, &clock)?;
        let (file, len) = match log {
            Some((file, valid)) => {
                // Cut a torn or damaged tail: appends go right after the last good record.
                if file.metadata()?.len() != valid {
                    file.set_len(valid).context("cutting the journal's torn tail")?;
                    file.sync_all()?;
                }
                (file, valid)
            }
            None => {
                let header = Header { generation, created: clock() };
                let path = log_path(dir, generation);
                write_atomic(&path, |f| f.write_all(&header.encode()))
                    .with_context(|| format!("creating {}", path.display()))?;
                if generation == 0 {
                    // Replay will start from an empty tree made at `created`.
                    tree = Tree::new(header.created, limits);
                }
                (File::options().write(true).open(&path)?, HEADER_LEN as u64)
            }
        };
        remove_other_generations(dir, generation)?;
        let log = Arc::new(LogFile::new(file, len, policy, Some(lock)));
        let fs = Arc::new(MemFs::journaled(tree, log.clone(), clock));
        Ok(Journal { dir: dir.to_path_buf(), generation, fs, log, policy, limits })
    }

    /// Reads the tree a journal directory describes, changing nothing on
    /// disk (for `packfs compact`).
    pub fn read(dir: &Path) -> Result<packfs_core::Snapshot> {
        Ok(packfs_core::Snapshot::from(load(dir, Limits::default(), &system_clock())?.tree))
    }

    /// The journaled filesystem.
    pub fn fs(&self) -> &Arc<MemFs> {
        &self.fs
    }

    /// The current checkpoint generation.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Compacts the tree into a new checkpoint pack and starts an empty
    /// log; returns the journal to use from now on. The filesystem before
    /// the checkpoint refuses further changes (`Io`): its handles belong to
    /// the old generation.
    pub fn checkpoint(self) -> Result<Journal> {
        let next = self.generation + 1;
        let base = base_path(&self.dir, next);
        // Closed between changes: a change recorded in the old log is in
        // the snapshot, and one begun after fails.
        let mut held = None;
        let snapshot = self.fs.settled_snapshot(|| held = self.log.close("the journal was checkpointed: reopen it"));
        let held = held.ok_or_else(|| anyhow::anyhow!("the journal was closed before its checkpoint"))?;
        write_atomic(&base, |f| {
            let mut out = io::BufWriter::new(f);
            write_pack(&snapshot, &mut out)?;
            out.flush().map_err(WriteError::from)
        })
        .with_context(|| format!("writing checkpoint {}", base.display()))?;
        let header = Header { generation: next, created: system_clock()() };
        let log = log_path(&self.dir, next);
        write_atomic(&log, |f| f.write_all(&header.encode())).with_context(|| format!("creating {}", log.display()))?;
        Journal::open_locked(&self.dir, held, self.policy, self.limits)
    }
}

fn remove_other_generations(dir: &Path, keep: u64) -> Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if let Some((g, _)) = entry.file_name().to_str().and_then(parse_name)
            && g != keep
        {
            std::fs::remove_file(entry.path()).with_context(|| format!("removing {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// The log file as a [`Sink`]: positional appends, and fdatasyncs shared
/// between waiting writers.
struct LogFile {
    file: File,
    policy: SyncPolicy,
    append: Mutex<AppendState>,
    /// Sequence number of the last record appended.
    appended: AtomicU64,
    synced: Mutex<SyncState>,
    synced_cv: Condvar,
}

struct AppendState {
    len: u64,
    seq: u64,
    /// Set when a failed append could not be undone, when a sync failed,
    /// or after a checkpoint.
    closed: Option<&'static str>,
    /// `DIR/lock`, locked, for as long as the log takes records (whoever
    /// still holds the filesystem): two processes appending to one log
    /// would overwrite each other's records.
    owner: Option<File>,
}

struct SyncState {
    synced: u64,
    syncing: bool,
    /// A sync failed: nothing past `synced` is known to be on disk.
    failed: bool,
}

impl LogFile {
    fn new(file: File, len: u64, policy: SyncPolicy, owner: Option<File>) -> Self {
        LogFile {
            file,
            policy,
            append: Mutex::new(AppendState { len, seq: 0, closed: None, owner }),
            appended: AtomicU64::new(0),
            synced: Mutex::new(SyncState { synced: 0, syncing: false, failed: false }),
            synced_cv: Condvar::new(),
        }
    }

    /// Takes no more records; hands back the directory's lock, which it
    /// no longer needs (the first time).
    fn close(&self, why: &'static str) -> Option<File> {
        let mut st = lock(&self.append);
        st.closed.get_or_insert(why);
        st.owner.take()
    }
}

impl Sink for LogFile {
    fn append(&self, record: &[u8]) -> packfs_core::Result<u64> {
        let mut st = lock(&self.append);
        if let Some(why) = st.closed {
            return Err(Error::Backend(why.into()));
        }
        if let Err(e) = self.file.write_all_at(record, st.len) {
            // A record half on disk would end replay early and hide every
            // later one: take it back, or take no more.
            if self.file.set_len(st.len).is_err() {
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
                return Err(Error::Backend("an earlier journal sync failed: reopen the journal".into()));
            }
            if st.syncing {
                st = self.synced_cv.wait(st).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            // Lead: one fdatasync for everything appended so far.
            st.syncing = true;
            let target = self.appended.load(Ordering::Acquire);
            drop(st);
            let result = self.file.sync_data();
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use packfs_core::{FileSystem, OpenOptions};

    /// Opening removes other generations' files, and nothing else: names
    /// not of the exact form the journal writes are someone else's.
    #[test]
    fn only_its_own_names_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let theirs = ["journal-007.log", "base-+2.pack", "journal-1.log.bak", "base-01.pack", "notes.txt"];
        for name in theirs {
            std::fs::write(dir.path().join(name), name).unwrap();
        }
        std::fs::write(dir.path().join("journal-5.log"), b"an old generation's log").unwrap();
        let j = Journal::open(dir.path(), SyncPolicy::EveryOp, Limits::default()).unwrap();
        drop(j);
        for name in theirs {
            assert_eq!(std::fs::read_to_string(dir.path().join(name)).unwrap(), name);
        }
        assert!(!dir.path().join("journal-5.log").exists(), "another generation's log goes");
        assert_eq!(parse_name("journal-12.log"), Some((12, false)));
        assert_eq!(parse_name("base-0.pack"), Some((0, true)));
        assert_eq!(parse_name("journal-007.log"), None);
    }

    fn put(fs: &MemFs, name: &str, data: &[u8]) {
        let f = fs.open(fs.root(), name, &OpenOptions::create()).unwrap();
        fs.write_at(f, 0, data).unwrap();
        fs.close(f);
    }

    fn get(fs: &dyn FileSystem, name: &str) -> Vec<u8> {
        let ino = fs.lookup(fs.root(), name).unwrap();
        let mut buf = vec![0; fs.metadata(ino).unwrap().size as usize];
        fs.read_at(ino, 0, &mut buf).unwrap();
        buf
    }

    #[test]
    fn reopen_replays_and_checkpoint_compacts() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path(), SyncPolicy::EveryOp, Limits::default()).unwrap();
        put(j.fs(), "a", b"one");
        let created = j.fs().metadata(1).unwrap().mtime;
        drop(j);
        let j = Journal::open(dir.path(), SyncPolicy::GroupCommit, Limits::default()).unwrap();
        assert_eq!(get(&**j.fs(), "a"), b"one");
        assert_eq!(j.fs().metadata(1).unwrap().mtime, created, "replay restores times too");
        let old = j.fs().clone();
        let j = j.checkpoint().unwrap();
        assert_eq!(j.generation(), 1);
        assert!(old.mkdir(old.root(), "lost", 0o755).is_err(), "the old generation takes no changes");
        put(j.fs(), "b", b"two");
        drop(j);
        let mut names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        assert_eq!(names, ["base-1.pack", "journal-1.log", "lock"]);
        let j = Journal::open(dir.path(), SyncPolicy::EveryOp, Limits::default()).unwrap();
        assert_eq!(get(&**j.fs(), "a"), b"one");
        assert_eq!(get(&**j.fs(), "b"), b"two");
        assert_eq!(get(&Journal::read(dir.path()).unwrap(), "b"), b"two");
    }

    #[test]
    fn a_torn_tail_is_cut_and_appends_continue_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path(), SyncPolicy::EveryOp, Limits::default()).unwrap();
        put(j.fs(), "a", b"kept");
        drop(j);
        let log = log_path(dir.path(), 0);
        let whole = std::fs::metadata(&log).unwrap().len();
        // Half a record of garbage, as a crash mid-append leaves it.
        let mut f = File::options().append(true).open(&log).unwrap();
        f.write_all(&[0x30, 0, 0, 0, 1, 2, 3]).unwrap();
        drop(f);
        let j = Journal::open(dir.path(), SyncPolicy::EveryOp, Limits::default()).unwrap();
        assert_eq!(std::fs::metadata(&log).unwrap().len(), whole);
        put(j.fs(), "b", b"after");
        drop(j);
        let j = Journal::open(dir.path(), SyncPolicy::EveryOp, Limits::default()).unwrap();
        assert_eq!((get(&**j.fs(), "a"), get(&**j.fs(), "b")), (b"kept".to_vec(), b"after".to_vec()));
    }

    #[test]
    fn a_failed_sync_closes_the_log() {
        // fdatasync of /dev/null fails (EINVAL); its writes succeed.
        let file = File::options().write(true).open("/dev/null").unwrap();
        for policy in [SyncPolicy::EveryOp, SyncPolicy::GroupCommit] {
            let log = Arc::new(LogFile::new(file.try_clone().unwrap(), 0, policy, None));
            let fs = MemFs::journaled(Tree::new(system_clock()(), Limits::default()), log.clone(), system_clock());
            assert!(matches!(fs.mkdir(fs.root(), "a", 0o755), Err(Error::Backend(_) | Error::Os(_))));
            if policy == SyncPolicy::EveryOp {
                assert_eq!(fs.lookup(fs.root(), "a"), Err(Error::NotFound), "not published");
            }
            // Nothing is recorded or acknowledged after it, even if a
            // later sync would succeed.
            assert!(matches!(fs.mkdir(fs.root(), "b", 0o755), Err(Error::Backend(_) | Error::Os(_))));
            assert!(matches!(log.append(b"x"), Err(Error::Backend(_) | Error::Os(_))));
            assert!(matches!(log.sync(1), Err(Error::Backend(_) | Error::Os(_))));
        }
    }

    #[test]
    fn limits_change_on_a_journaled_filesystem() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path(), SyncPolicy::EveryOp, Limits::default()).unwrap();
        j.fs().set_limits(Limits { max_bytes: None, max_inodes: Some(2) });
        j.fs().mkdir(j.fs().root(), "a", 0o755).unwrap();
        assert_eq!(j.fs().mkdir(j.fs().root(), "b", 0o755), Err(Error::Quota));
    }

    #[test]
    fn a_journal_is_open_in_one_place_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path(), SyncPolicy::EveryOp, Limits::default()).unwrap();
        let again = Journal::open(dir.path(), SyncPolicy::EveryOp, Limits::default());
        assert!(again.err().unwrap().to_string().contains("in use"));
        let j = j.checkpoint().unwrap();
        assert!(Journal::open(dir.path(), SyncPolicy::EveryOp, Limits::default()).is_err(), "the lock is kept");
        // Whoever still holds the filesystem can still write the log: the
        // lock stays with it.
        let fs = j.fs().clone();
        drop(j);
        assert!(Journal::open(dir.path(), SyncPolicy::EveryOp, Limits::default()).is_err(), "held by the filesystem");
        drop(fs);
        Journal::open(dir.path(), SyncPolicy::EveryOp, Limits::default()).unwrap();
    }

    /// Writers keep changing the filesystem while it is checkpointed: every
    /// change acknowledged before the checkpoint closed the log is kept.
    #[test]
    fn checkpoints_keep_every_acknowledged_change() {
        use std::sync::atomic::AtomicUsize;
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::open(dir.path(), SyncPolicy::EveryOp, Limits::default()).unwrap();
        let mut acknowledged = Vec::new();
        for round in 0..4 {
            let made = Arc::new(AtomicUsize::new(0));
            let writer = {
                let (fs, made) = (j.fs().clone(), made.clone());
                std::thread::spawn(move || {
                    let mut ok = Vec::new();
                    for i in 0.. {
                        let name = format!("r{round}-{i}");
                        match fs.mkdir(fs.root(), &name, 0o755) {
                            Ok(_) => ok.push(name),
                            Err(Error::Backend(_) | Error::Os(_)) => return ok,
                            Err(e) => panic!("{name}: {e}"),
                        }
                        made.fetch_add(1, Ordering::Relaxed);
                    }
                    unreachable!()
                })
            };
            while made.load(Ordering::Relaxed) < 3 {
                std::thread::yield_now();
            }
            j = j.checkpoint().unwrap();
            acknowledged.extend(writer.join().unwrap());
        }
        drop(j);
        let j = Journal::open(dir.path(), SyncPolicy::EveryOp, Limits::default()).unwrap();
        for name in &acknowledged {
            assert!(j.fs().lookup(j.fs().root(), name).is_ok(), "{name} was acknowledged, then lost");
        }
    }

    #[test]
    fn group_commit_shares_syncs_between_threads() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path(), SyncPolicy::GroupCommit, Limits::default()).unwrap();
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let fs = j.fs().clone();
                std::thread::spawn(move || {
                    for i in 0..50 {
                        fs.mkdir(fs.root(), &format!("t{t}-{i}"), 0o755).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        drop(j);
        let j = Journal::open(dir.path(), SyncPolicy::EveryOp, Limits::default()).unwrap();
        assert_eq!(j.fs().read_dir(j.fs().root(), None, 1000).unwrap().len(), 200);
    }
}
