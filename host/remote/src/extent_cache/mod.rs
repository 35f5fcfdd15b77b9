//! The host-wide cache: extents (version 1 blobs, version 2 chunks) of
//! remote packs, in a directory shared by every process on the host.
//!
//! **Addressed by content.** An extent is stored under what its bytes
//! hash to and their length, so identical extents of different packs, or
//! of versions of one pack, are fetched and stored once. An extent of a
//! pack with a digest table (`docs/pack-format.md` §18) is stored under its
//! BLAKE3 digest, in one directory for every origin: an entry is served
//! only if its bytes hash to its name, so no publisher can plant bytes
//! under another's digest. A pack without digests has only xxh3-64
//! checksums, which find corruption but are not collision-resistant:
//! someone who can publish a pack could make one whose chunk has another's
//! checksum. So such content is shared only between packs of one *origin*
//! (an S3 bucket at one endpoint, a directory of a web server): each origin
//! has a directory of its own, named by the SHA-256 of the origin.
//!
//! **Safe under concurrency and `kill -9`.** An entry is written to a
//! temporary file and renamed into place, so it appears whole or not at
//! all; and it is checked against its name on every use, so what a
//! crash or a full disk left torn is never served (it is deleted and
//! fetched again). A process about to fetch an extent holds an advisory
//! lock on the entry's lock file (`flock`, which the kernel drops when
//! the process dies); others wait for it, up to a bound, then fetch it
//! themselves: no process waits forever on another. The holder removes
//! the lock file before letting go, and eviction removes those whose
//! holder died, so lock files do not pile up.
//!
//! **Bounded.** Past its size limit, the least recently used entries go
//! (a use sets the entry's mtime). A process that has an entry mapped or
//! copied keeps it when the file is unlinked, so eviction never takes
//! bytes from an open reader.
//!
//! **Only its own names.** The cache works in a directory it made: one
//! that was new or empty when it first opened it, and that it then tagged
//! with a `CACHEDIR.TAG`; any other is refused ([`CacheError::NotACache`]).
//! In it, it reads, makes and removes only names of the forms in
//! `names.rs`, and leaves anything else alone, uncounted. It never follows
//! a symlink below the root, and enters no directory that is another
//! user's or writable by others (`dir.rs`). The root itself may be a
//! symlink (to another disk, say): it is followed once, at open, and the
//! target checked as a root is.

mod dir;
mod names;

use std::fs::File;
use std::hash::BuildHasher;
use std::io::{self, Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use bytes::Bytes;

use dir::Dir;
pub(crate) use names::Key;
use names::{EVICT_LOCK, SHARED, TAG, TAG_HEAD, TAG_NAME, TMP};

/// Entries at least this long are mapped rather than read: a mapping per
/// small entry would spend the process's map count (65,530 on Linux).
const MAP_FROM: u64 = 64 * 1024;

/// Temporary files older than this were left by a process that died.
const STALE_TMP: Duration = Duration::from_secs(3600);

/// The default size limit, 4 GiB.
pub const DEFAULT_CACHE_BYTES: u64 = 4 << 30;

/// Why [`Cache::open`] refused a directory. Each names it, and says why
/// in its message, once: the cause is a field, not also a `source()`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CacheError {
    /// It, or its `tmp`, could not be made, opened or read.
    #[error("{}: {error}", path.display())]
    Io {
        /// The directory, or the file in it, at fault.
        path: PathBuf,
        /// Why.
        error: io::Error,
    },
    /// It is another user's, or others may write to it: they could plant
    /// entries, or swap names under the cache.
    #[error(
        "{}: owned by uid {uid} with mode {mode:o}: a cache directory must be this user's and writable by no one else",
        path.display()
    )]
    NotPrivate {
        /// The directory.
        path: PathBuf,
        /// Its owner.
        uid: u32,
        /// Its permission bits.
        mode: u32,
    },
    /// It holds files and no tag of this cache: someone's directory, whose
    /// files are not the cache's to evict.
    #[error(
        "{}: not a packfs cache: it holds files and no packfs CACHEDIR.TAG (give a new or empty directory)",
        path.display()
    )]
    NotACache {
        /// The directory.
        path: PathBuf,
    },
}

/// What the cache did for this process.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    /// Extents found in the cache.
    pub hits: u64,
    /// Their bytes.
    pub hit_bytes: u64,
    /// Extents not found, and fetched.
    pub misses: u64,
    /// Extents written.
    pub stored: u64,
    /// Their bytes.
    pub stored_bytes: u64,
    /// Entries found damaged (and deleted).
    pub damaged: u64,
    /// Entries evicted by this process.
    pub evicted: u64,
}

#[derive(Default)]
struct Counters {
    hits: AtomicU64,
    hit_bytes: AtomicU64,
    misses: AtomicU64,
    stored: AtomicU64,
    stored_bytes: AtomicU64,
    damaged: AtomicU64,
    evicted: AtomicU64,
}

/// The cache directory, open.
pub struct Cache {
    dir: PathBuf,
    /// The root as opened: every name in the cache is reached from it,
    /// never by path, so a link changed later redirects nothing.
    root: Dir,
    limit: u64,
    /// Bytes this process stored since it last looked at the total.
    since_scan: AtomicU64,
    counters: Counters,
}

/// One origin's part of the cache.
#[derive(Clone)]
pub(crate) struct Scope {
    cache: Arc<Cache>,
    origin: String,
}

/// An entry's fetch lock, released when dropped (or when the process
/// dies); none where the cache cannot keep the entry anyway (its fan
/// directory is not the cache's to use), so that no one waits for it.
pub(crate) struct Lock {
    _held: Option<Held>,
}

/// A lock file, locked. It is removed before it is let go, so that lock
/// files exist only while held; a lock then taken on the removed file is
/// seen to be no lock ([`Scope::try_lock`]).
struct Held {
    /// Closed (the lock let go) after `drop` removed it.
    file: File,
    scope: Scope,
    key: Key,
}

impl Drop for Held {
    fn drop(&mut self) {
        // The fan directory is reached again from the root, rather than
        // kept open: a fetch holds hundreds of locks, and each open file
        // counts against the process's limit.
        let name = self.key.lock_name();
        if let Ok(fan) = self.scope.fan(self.key, false)
            && fan.holds(&name, &self.file)
        {
            let _ = fan.remove(&name);
        }
    }
}

impl Cache {
    /// Opens the cache in `dir`, holding at most about `limit` bytes. A
    /// new directory is made, private to the user; an existing one must be
    /// empty or a cache already (see the module doc), and this user's and
    /// writable by no one else: another user able to write there could
    /// plant entries.
    pub fn open(dir: &Path, limit: u64) -> Result<Cache, CacheError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |error| CacheError::Io { path, error }
        };
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(io(dir))?;
        let root = Dir::root(dir).map_err(io(dir))?;
        if let Some((uid, mode)) = root.exposed().map_err(io(dir))? {
            return Err(CacheError::NotPrivate { path: dir.to_owned(), uid, mode });
        }
        if !claim(&root).map_err(io(dir))? {
            return Err(CacheError::NotACache { path: dir.to_owned() });
        }
        root.make_dir(TMP).map_err(io(&dir.join(TMP)))?;
        // No scan here: opening stays cheap for every run; stores
        // trigger eviction (`put`).
        Ok(Cache { dir: dir.to_owned(), root, limit, since_scan: AtomicU64::new(0), counters: Counters::default() })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What the cache did for this process so far.
    pub fn stats(&self) -> CacheStats {
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        CacheStats {
            hits: get(&c.hits),
            hit_bytes: get(&c.hit_bytes),
            misses: get(&c.misses),
            stored: get(&c.stored),
            stored_bytes: get(&c.stored_bytes),
            damaged: get(&c.damaged),
            evicted: get(&c.evicted),
        }
    }

    pub(crate) fn scope(self: &Arc<Self>, origin: &str) -> Scope {
        Scope { origin: names::origin(origin), cache: Arc::clone(self) }
    }

    /// The fan directory `fan` of origin directory `origin`, each checked
    /// on the way; made if `make`.
    fn fan(&self, origin: &str, fan: &str, make: bool) -> io::Result<Dir> {
        if make { self.root.make_dir(origin)?.make_dir(fan) } else { self.root.dir(origin)?.dir(fan) }
    }

    /// Brings the cache under its limit, least recently used entries first,
    /// unless another process is at it. Also removes temporary files and
    /// lock files that a dead process left.
    pub fn evict(&self) -> io::Result<()> {
        self.since_scan.store(0, Ordering::Relaxed);
        let Some(lock) = self.root.open_lock(EVICT_LOCK, true) else {
            return Err(io::Error::other(format!("{}: cannot open {EVICT_LOCK}", self.dir.display())));
        };
        if lock.try_lock().is_err() {
            return Ok(());
        }
        self.sweep_tmp();
        // Entries: (mtime, length, origin, key). A directory that is a
        // symlink, or not private, is skipped (`Dir::dir` refuses both).
        let mut entries = Vec::new();
        let mut total = 0u64;
        for origin in self.root.names()?.into_iter().filter(|n| names::is_origin(n) || n == SHARED) {
            let Ok(o) = self.root.dir(&origin) else { continue };
            let shared = origin == SHARED;
            let origin: Arc<str> = origin.into();
            for fan in o.names().unwrap_or_default().into_iter().filter(|n| names::is_fan(n)) {
                let Ok(f) = o.dir(&fan) else { continue };
                // Only an entry of this very fan and kind, and its lock.
                let ours = |entry: &str| Key::parse(entry, shared).filter(|k| k.fan() == fan);
                for name in f.names().unwrap_or_default() {
                    if let Some(entry) = name.strip_suffix(".lock") {
                        if ours(entry).is_some() {
                            remove_dead_lock(&f, &name);
                        }
                    } else if let Some(key) = ours(&name)
                        && let Some(st) = f.stat(&name)
                    {
                        total += st.len;
                        entries.push((st.mtime, st.len, Arc::clone(&origin), key));
                    }
                }
            }
        }
        if total <= self.limit {
            return Ok(());
        }
        // Down to 90%, so that the next few stores do not evict again.
        let target = self.limit / 10 * 9;
        entries.sort_unstable_by_key(|e| e.0);
        for (_, len, origin, key) in entries {
            if total <= target {
                break;
            }
            // Reached again from the root, each directory checked again.
            if self.fan(&origin, &key.fan(), false).and_then(|f| f.remove(&key.name())).is_ok() {
                total -= len;
                self.counters.evicted.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// Removes the temporary files, of the cache's form, that a dead
    /// process left.
    fn sweep_tmp(&self) {
        let Ok(tmp) = self.root.dir(TMP) else { return };
        let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
        let stale = i64::try_from(now.saturating_sub(STALE_TMP).as_secs()).unwrap_or(i64::MAX);
        for name in tmp.names().unwrap_or_default().into_iter().filter(|n| names::is_tmp(n)) {
            if tmp.stat(&name).is_some_and(|st| st.mtime.0 < stale) {
                let _ = tmp.remove(&name);
            }
        }
    }
}

/// Whether `root` is the cache's: it holds the cache's tag, or it held
/// nothing (but perhaps a tag a process died writing) and now does.
fn claim(root: &Dir) -> io::Result<bool> {
    if tag(root)?.is_some_and(|t| t.starts_with(TAG_HEAD.as_bytes())) {
        return Ok(true);
    }
    // Under a lock on the root, so that of two processes making one cache
    // neither takes the other's tag, half written, for a stranger's file.
    // Best effort: where a directory cannot be locked (NFS), they race.
    let _lock = root.lock();
    let tag = tag(root)?;
    if tag.as_ref().is_some_and(|t| t.starts_with(TAG_HEAD.as_bytes())) {
        return Ok(true);
    }
    let torn = tag.is_some_and(|t| TAG.as_bytes().starts_with(&t));
    if root.names()?.iter().any(|n| !(torn && n == TAG_NAME)) {
        return Ok(false);
    }
    let _ = root.remove(TAG_NAME);
    root.create_new(TAG_NAME)?.write_all(TAG.as_bytes())?;
    Ok(true)
}

/// The start of the root's tag, if it has one that is a regular file.
fn tag(root: &Dir) -> io::Result<Option<Vec<u8>>> {
    let Some(file) = root.open(TAG_NAME) else { return Ok(None) };
    let mut head = Vec::new();
    file.take(TAG.len() as u64).read_to_end(&mut head)?;
    Ok(Some(head))
}

/// Removes the lock file `name` if no one holds it: its holder died (a
/// live one removes its own).
fn remove_dead_lock(fan: &Dir, name: &str) {
    if let Some(file) = fan.open_lock(name, false)
        && file.try_lock().is_ok()
        && fan.holds(name, &file)
    {
        let _ = fan.remove(name);
    }
}

impl Scope {
    /// The fan directory of `key`, made if `make`.
    fn fan(&self, key: Key, make: bool) -> io::Result<Dir> {
        let dir = if key.shared() { SHARED } else { &self.origin };
        self.cache.fan(dir, &key.fan(), make)
    }

    /// The entry's bytes, checked against `key`; `None` when it is not
    /// here (or damaged, and then deleted).
    pub(crate) fn get(&self, key: Key) -> Option<Bytes> {
        let c = &self.cache.counters;
        let (fan, name) = (self.fan(key, false).ok()?, key.name());
        let mut file = fan.open(&name)?;
        let bytes = read(&mut file, key.len())?;
        if !key.matches(&bytes) {
            c.damaged.fetch_add(1, Ordering::Relaxed);
            // Unless another process put a good one there meanwhile.
            if fan.holds(&name, &file) {
                let _ = fan.remove(&name);
            }
            return None;
        }
        c.hits.fetch_add(1, Ordering::Relaxed);
        c.hit_bytes.fetch_add(key.len(), Ordering::Relaxed);
        // The use, for LRU: best effort.
        let _ = file.set_modified(SystemTime::now());
        Some(bytes)
    }

    /// Whether the entry is there (not checked: a read of it checks).
    pub(crate) fn has(&self, key: Key) -> bool {
        self.fan(key, false).is_ok_and(|f| f.stat(&key.name()).is_some_and(|st| st.len == key.len()))
    }

    /// Counts an extent that was not in the cache and is being fetched.
    pub(crate) fn missed(&self) {
        self.cache.counters.misses.fetch_add(1, Ordering::Relaxed);
    }

    /// Stores `bytes` (already checked against `key`) as the entry, whole
    /// or not at all, and returns the entry mapped when it is large: the
    /// page cache then holds it once for every process reading it. Failing
    /// to store is no error to the reader, who has the bytes: the cache is
    /// only a cache.
    pub(crate) fn put(&self, key: Key, bytes: &[u8]) -> Option<Bytes> {
        let file = self.write(key, bytes).ok()?;
        let c = &self.cache.counters;
        c.stored.fetch_add(1, Ordering::Relaxed);
        c.stored_bytes.fetch_add(key.len(), Ordering::Relaxed);
        let since = self.cache.since_scan.fetch_add(key.len(), Ordering::Relaxed) + key.len();
        if since > self.cache.limit / 8 {
            let _ = self.cache.evict();
        }
        map(&file, key.len())
    }

    /// Writes the entry to a new temporary file and renames it into place.
    fn write(&self, key: Key, bytes: &[u8]) -> io::Result<File> {
        let fan = self.fan(key, true)?;
        let tmp = self.cache.root.dir(TMP)?;
        let (mut file, name) = create_tmp(&tmp)?;
        let done = file.write_all(bytes).and_then(|()| tmp.rename(&name, &fan, &key.name()));
        if done.is_err() {
            let _ = tmp.remove(&name);
        }
        done.map(|()| file)
    }

    /// The entry's fetch lock, if no other holder has it now.
    pub(crate) fn try_lock(&self, key: Key) -> Option<Lock> {
        let Ok(fan) = self.fan(key, true) else { return Some(Lock { _held: None }) };
        let name = key.lock_name();
        // A lock taken on a file its holder removed just before letting go
        // is no lock: try the new file.
        for _ in 0..3 {
            let Some(file) = fan.open_lock(&name, true) else { return Some(Lock { _held: None }) };
            file.try_lock().ok()?;
            if fan.holds(&name, &file) {
                return Some(Lock { _held: Some(Held { file, scope: self.clone(), key }) });
            }
        }
        None
    }
}

/// A new temporary file in `tmp`, and its name.
fn create_tmp(tmp: &Dir) -> io::Result<(File, String)> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut tries = 0;
    loop {
        // Random across processes (each `RandomState` is keyed afresh), and
        // distinct within one.
        let n = std::hash::RandomState::new().hash_one((std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
        let name = names::tmp(n);
        match tmp.create_new(&name) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < 8 => tries += 1,
            r => return r.map(|f| (f, name)),
        }
    }
}

/// `file`, `len` bytes long, mapped, if it is large enough to be worth it.
#[allow(unsafe_code, reason = "mapping a cache entry: see SAFETY")]
fn map(file: &File, len: u64) -> Option<Bytes> {
    if len < MAP_FROM {
        return None;
    }
    // SAFETY: entries are never written in place (they are renamed into
    // place whole, and deleted), so the mapped bytes do not change.
    let map = unsafe { memmap2::Mmap::map(file) }.ok()?;
    (map.len() as u64 == len).then(|| Bytes::from_owner(map))
}

/// `file`'s bytes if it is `len` bytes long: mapped when large.
fn read(file: &mut File, len: u64) -> Option<Bytes> {
    if file.metadata().ok()?.len() != len {
        return None;
    }
    if let Some(mapped) = map(file, len) {
        return Some(mapped);
    }
    let mut buf = Vec::with_capacity(usize::try_from(len).ok()?);
    file.read_to_end(&mut buf).ok()?;
    (buf.len() as u64 == len).then(|| Bytes::from(buf))
}
