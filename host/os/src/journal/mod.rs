//! A durable in-memory tree: a [`MemFs`] whose every change is appended to
//! a write-ahead log on disk before it is acknowledged, and replayed when
//! the directory is opened again.
//!
//! A journal directory holds at most one checkpoint and one log:
//!
//! ```text
//! DIR/base-G.pack     the tree at checkpoint G (absent for G = 0)
//! DIR/journal-G.log   changes since then (docs/journal-format.md)
//! DIR/lock            locked while a journal of the directory is open
//! ```
//!
//! Opening picks the highest `G` with its pack (or 0), mounts the tree as
//! an overlay over that pack, replays `journal-G.log`, cuts a torn tail off
//! it, and removes every file of another generation. A log damaged
//! anywhere but its tail, or holding a record of a newer version, is
//! refused ([`JournalError::Corrupt`]) and left as it was: nothing
//! acknowledged is cut away. A checkpoint writes
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
//! The log is kept in proportion to the tree, while the tree is in use.
//! Once the log is [`REWRITE_FACTOR`] times longer than when it was last
//! rewritten, and than the tree's usage, and longer than
//! [`CHECKPOINT_FROM`], it is rewritten, between two changes, as the
//! image of the tree over its checkpoint (journal format version 2): every
//! inode with its number, so that open handles and the records after it
//! still name the same inodes (a checkpoint pack renumbers them). The new
//! log is published atomically, as a checkpoint's files are. So a guest
//! rewriting a file for ever keeps a log of about twice the tree, and the
//! next open reads no more. A journal is also checkpointed into a new pack
//! when it is opened, or closed ([`Journal::close`], as `packfs run` does
//! when the guest ends), with a log longer than its checkpoint pack and
//! than [`CHECKPOINT_FROM`]. Should a rewrite fail (a full disk), the old
//! log goes on, and under a quota ([`Quota::max_bytes`]) it may then
//! grow by at most [`LOG_PER_QUOTA`] times the quota (at least
//! [`LOG_MIN`]): a change past that fails with `Quota`. Replay reads the
//! log a record at a time: it holds the tree and one record.
//!
//! One journal open at a time, in this process or another: its log holds
//! an exclusive lock on `DIR/lock` for as long as it takes records (until
//! whoever holds its filesystem lets go, a checkpoint hands it on, or a
//! failed sync closes the log).

mod error;
mod log_file;

pub use error::JournalError;
pub use log_file::{REWRITE_FACTOR, SyncPolicy};

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use packfs_core::journal::{HEADER_LEN, Header, RECORD_HEAD, Replay, Tail};
use packfs_core::mem::{Quota, Tree};
use packfs_core::pack::{WriteError, write_pack};
use packfs_core::{Clock, MemFs, system_clock};

use crate::mmap::{OpenPackError, open_pack};
use crate::publish::write_atomic;
use log_file::{LogFile, Rewrite};

/// A log longer than its tree is checkpointed at open and close, once it
/// is longer than this too.
pub const CHECKPOINT_FROM: u64 = 1 << 20;
/// Under a quota, a log may grow by this many times the quota between
/// checkpoints ...
pub const LOG_PER_QUOTA: u64 = 16;
/// ... and by at least this much.
pub const LOG_MIN: u64 = 64 << 20;

/// What a journal call returns.
pub type Result<T, E = JournalError> = std::result::Result<T, E>;

/// An open journal directory and the filesystem it keeps durable.
pub struct Journal {
    dir: PathBuf,
    generation: u64,
    fs: Arc<MemFs>,
    log: Arc<LogFile>,
    policy: SyncPolicy,
    limits: Quota,
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

fn load(dir: &Path, limits: Quota, clock: &Clock) -> Result<Loaded> {
    let mut generation = 0;
    for entry in std::fs::read_dir(dir).map_err(JournalError::io("reading", dir))? {
        let name = entry.map_err(JournalError::io("reading", dir))?.file_name();
        if let Some((g, true)) = name.to_str().and_then(parse_name) {
            generation = generation.max(g);
        }
    }
    let mut tree = if generation == 0 {
        None
    } else {
        let path = base_path(dir, generation);
        let pack = open_pack(&path).map_err(|e| match e {
            OpenPackError::Io { path, source } => JournalError::Io { doing: "mapping", path, source },
            OpenPackError::Pack { path, source } => JournalError::Corrupt { path, source },
        })?;
        let mounted = Tree::overlay(Arc::new(pack), clock(), limits);
        Some(mounted.map_err(|source| JournalError::Corrupt { path, source })?)
    };
    let path = log_path(dir, generation);
    let file = match File::options().read(true).write(true).open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(Loaded { generation, tree: tree.unwrap_or_else(|| Tree::new(clock(), limits)), log: None });
        }
        Err(e) => return Err(JournalError::io("opening", path)(e)),
    };
    let corrupt = |source| JournalError::Corrupt { path: path.clone(), source };
    let reading = |e| JournalError::io("reading", &path)(e);
    let size = file.metadata().map_err(reading)?.len();
    let mut log = io::BufReader::with_capacity(1 << 20, &file);
    let mut record = Vec::new();
    read_up_to(&mut log, HEADER_LEN as u64, &mut record).map_err(reading)?;
    let header = Header::decode(&record).map_err(corrupt)?;
    if header.generation != generation {
        return Err(JournalError::WrongGeneration { path, expected: generation, found: header.generation });
    }
    let mut tree = tree.take().unwrap_or_else(|| Tree::new(header.created, limits));
    let mut replay = Replay::new(&mut tree, &header);
    // A record at a time, so that replay holds the tree and one record,
    // never the whole log.
    let mut at = HEADER_LEN as u64;
    loop {
        record.clear();
        read_up_to(&mut log, RECORD_HEAD as u64, &mut record).map_err(reading)?;
        if record.is_empty() {
            break;
        }
        let whole = record.first_chunk::<4>().map(|len| RECORD_HEAD as u64 + u64::from(u32::from_le_bytes(*len)));
        // A length past the end of the file is not read into memory.
        let whole = whole.filter(|&n| at + n <= size);
        if let Some(n) = whole {
            read_up_to(&mut log, n - RECORD_HEAD as u64, &mut record).map_err(reading)?;
        }
        if whole.is_none() || replay.records(&record).map_err(corrupt)? != Tail::Clean {
            // A bad record: a torn tail or damage, as what follows it says.
            log.read_to_end(&mut record).map_err(reading)?;
            replay.records(&record).map_err(corrupt)?;
            break;
        }
        at += record.len() as u64;
    }
    let replayed = replay.finish().map_err(corrupt)?;
    drop(log);
    Ok(Loaded { generation, tree, log: Some((file, HEADER_LEN as u64 + replayed.valid_len)) })
}

/// Appends up to `n` more bytes of `from` to `to`: fewer only at the end.
fn read_up_to(from: &mut impl Read, n: u64, to: &mut Vec<u8>) -> io::Result<()> {
    from.take(n).read_to_end(to).map(drop)
}

impl Journal {
    /// Opens (creating when missing) the journal directory `dir`.
    pub fn open(dir: &Path, policy: SyncPolicy, limits: Quota) -> Result<Journal> {
        let journal = Self::open_as_it_is(dir, policy, limits)?;
        // A log past its bound (left by a run that ended without closing,
        // or written before there were bounds) is read once, here.
        if journal.log_outgrew_tree() { journal.checkpoint() } else { Ok(journal) }
    }

    /// [`open`](Self::open) without the checkpoint of a long log.
    fn open_as_it_is(dir: &Path, policy: SyncPolicy, limits: Quota) -> Result<Journal> {
        if !dir.is_dir() {
            std::fs::create_dir_all(dir).map_err(JournalError::io("creating", dir))?;
            // The new directory's name must outlive a crash, or so would
            // nothing acknowledged inside it.
            let parent = dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            File::open(parent).and_then(|p| p.sync_all()).map_err(JournalError::io("syncing", parent))?;
        }
        let path = dir.join("lock");
        let lock = File::options().create(true).truncate(false).write(true).open(&path);
        let lock = lock.map_err(JournalError::io("opening", &path))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(JournalError::InUse { dir: dir.to_owned() }),
            Err(std::fs::TryLockError::Error(e)) => return Err(JournalError::io("locking", path)(e)),
        }
        Self::open_locked(dir, lock, policy, limits)
    }

    fn open_locked(dir: &Path, lock: File, policy: SyncPolicy, limits: Quota) -> Result<Journal> {
        let clock = system_clock();
        let Loaded { generation, mut tree, log } = load(dir, limits, &clock)?;
        let (file, len) = match log {
            Some((file, valid)) => {
                // Cut a torn tail (replay refused anything else): appends
                // go right after the last good record.
                let cut = || -> io::Result<()> {
                    if file.metadata()?.len() != valid {
                        file.set_len(valid)?;
                        file.sync_all()?;
                    }
                    Ok(())
                };
                cut().map_err(JournalError::io("cutting the torn tail of", log_path(dir, generation)))?;
                (file, valid)
            }
            None => {
                let header = Header { generation, created: clock(), image: false };
                let path = log_path(dir, generation);
                write_atomic(&path, |f| f.write_all(&header.encode())).map_err(JournalError::io("creating", &path))?;
                if generation == 0 {
                    // Replay will start from an empty tree made at `created`.
                    tree = Tree::new(header.created, limits);
                }
                (File::options().write(true).open(&path).map_err(JournalError::io("opening", path))?, HEADER_LEN as u64)
            }
        };
        remove_other_generations(dir, generation)?;
        let grows = limits.max_bytes.map(|q| q.saturating_mul(LOG_PER_QUOTA).max(LOG_MIN));
        let rewrite = Rewrite { path: log_path(dir, generation), generation, grows, from: CHECKPOINT_FROM };
        let log = LogFile::new(file, len, policy, Some(lock)).limit(grows.map(|g| len.saturating_add(g)));
        let log = Arc::new(log.rewritten(rewrite));
        let fs = Arc::new(MemFs::journaled(tree, log.clone(), clock));
        Ok(Journal { dir: dir.to_path_buf(), generation, fs, log, policy, limits })
    }

    /// Reads the tree a journal directory describes, changing nothing on
    /// disk (for `packfs compact`).
    pub fn read(dir: &Path) -> Result<packfs_core::Snapshot> {
        Ok(packfs_core::Snapshot::from(load(dir, Quota::default(), &system_clock())?.tree))
    }

    /// The journaled filesystem.
    pub fn fs(&self) -> &Arc<MemFs> {
        &self.fs
    }

    /// The current checkpoint generation.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The log's length in bytes.
    pub fn log_len(&self) -> u64 {
        self.log.len().0
    }

    /// Whether the log has no room for a record of `len` bytes more (under
    /// a quota, [`LOG_PER_QUOTA`]): changes that big are refused until a
    /// checkpoint.
    pub fn log_full(&self, len: u64) -> bool {
        let (at, limit) = self.log.len();
        limit.is_some_and(|l| at.saturating_add(len) > l)
    }

    /// Whether the log is longer than the tree (its checkpoint pack) and
    /// than [`CHECKPOINT_FROM`].
    fn log_outgrew_tree(&self) -> bool {
        let tree = match self.generation {
            0 => 0,
            g => std::fs::metadata(base_path(&self.dir, g)).map_or(0, |m| m.len()),
        };
        self.log_len().saturating_sub(HEADER_LEN as u64) > tree.max(CHECKPOINT_FROM)
    }

    /// Ends the journal's use: a checkpoint if the log is longer than the
    /// tree (and than [`CHECKPOINT_FROM`]), so that the next open reads at
    /// most that much log. The filesystem refuses changes after it, as
    /// after [`checkpoint`](Self::checkpoint).
    pub fn close(self) -> Result<()> {
        if self.log_outgrew_tree() {
            self.checkpoint()?;
        }
        Ok(())
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
        let snapshot = self.fs.settled(|tree| {
            held = self.log.close("the journal was checkpointed: reopen it");
            packfs_core::Snapshot::from(tree.clone())
        });
        let held = held.ok_or(JournalError::Closed)?;
        write_atomic(&base, |f| {
            let mut out = io::BufWriter::new(f);
            write_pack(&snapshot, &mut out)?;
            out.flush().map_err(WriteError::from)
        })
        .map_err(|source| JournalError::Checkpoint { path: base, source })?;
        let header = Header { generation: next, created: system_clock()(), image: false };
        let log = log_path(&self.dir, next);
        write_atomic(&log, |f| f.write_all(&header.encode())).map_err(JournalError::io("creating", log))?;
        Journal::open_locked(&self.dir, held, self.policy, self.limits)
    }
}

/// Removes other generations' files, and the temporaries dead writers
/// left of any generation's (a kill between naming and renaming one).
fn remove_other_generations(dir: &Path, keep: u64) -> Result<()> {
    crate::publish::remove_stale_temporaries(dir, |target| parse_name(target).is_some());
    for entry in std::fs::read_dir(dir).map_err(JournalError::io("reading", dir))? {
        let entry = entry.map_err(JournalError::io("reading", dir))?;
        if let Some((g, _)) = entry.file_name().to_str().and_then(parse_name)
            && g != keep
        {
            std::fs::remove_file(entry.path()).map_err(JournalError::io("removing", entry.path()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
