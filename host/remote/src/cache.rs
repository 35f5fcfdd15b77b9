//! The host-wide cache: extents (version 1 blobs, version 2 chunks) of
//! remote packs, in a directory shared by every process on the host.
//!
//! **Addressed by content.** An extent is stored under its checksum and
//! length, so identical extents of different packs, or of versions of one
//! pack, are fetched and stored once. The checksum (xxh3-64) finds
//! corruption, but it is not collision-resistant: someone who can publish
//! a pack could make one whose chunk has another's checksum. So content is
//! shared only between packs of one *origin* (an S3 bucket at one
//! endpoint, a directory of a web server): each origin has a directory of
//! its own, named by the SHA-256 of the origin.
//!
//! **Safe under concurrency and `kill -9`.** An entry is written to a
//! temporary file and renamed into place, so it appears whole or not at
//! all; and it is checked against its checksum on every use, so what a
//! crash or a full disk left torn is never served (it is deleted and
//! fetched again). A process about to fetch an extent holds an advisory
//! lock on the entry's lock file (`flock`, which the kernel drops when
//! the process dies); others wait for it, up to a bound, then fetch it
//! themselves: no process waits forever on another.
//!
//! **Bounded.** Past its size limit, the least recently used entries go
//! (a use sets the entry's mtime). A process that has an entry mapped or
//! copied keeps it when the file is unlinked, so eviction never takes
//! bytes from an open reader.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use packfs_core::pack::checksum;
use sha2::{Digest, Sha256};

/// Entries at least this long are mapped rather than read: a mapping per
/// small entry would spend the process's map count (65,530 on Linux).
const MAP_FROM: u64 = 64 * 1024;

/// Temporary files older than this were left by a process that died.
const STALE_TMP: Duration = Duration::from_secs(3600);

/// The default size limit, 4 GiB.
pub const DEFAULT_CACHE_BYTES: u64 = 4 << 30;

/// What the cache did for this process.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    /// Extents found in the cache, and their bytes.
    pub hits: u64,
    pub hit_bytes: u64,
    /// Extents not found, and fetched.
    pub misses: u64,
    /// Extents written, and their bytes.
    pub stored: u64,
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
    limit: u64,
    /// Bytes this process stored since it last looked at the total.
    since_scan: AtomicU64,
    counters: Counters,
}

/// An entry's name: the checksum and length of its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub sum: u64,
    pub len: u64,
}

/// One origin's part of the cache.
#[derive(Clone)]
pub(crate) struct Scope {
    cache: Arc<Cache>,
    dir: PathBuf,
}

/// An entry's fetch lock, released when dropped (or when the process dies).
pub(crate) struct Lock(#[allow(dead_code)] File);

impl Cache {
    /// Opens (making it, private to the user, if need be) the cache in
    /// `dir`, holding at most about `limit` bytes.
    /// It must be this user's and writable by no one else: another user
    /// able to write there could plant entries.
    pub fn open(dir: &Path, limit: u64) -> io::Result<Cache> {
        fs::DirBuilder::new().recursive(true).mode(0o700).create(dir.join("tmp"))?;
        let meta = fs::metadata(dir)?;
        if meta.uid() != rustix::process::geteuid().as_raw() || meta.mode() & 0o022 != 0 {
            let why = format!("{} is another user's or writable by others", dir.display());
            return Err(io::Error::new(io::ErrorKind::PermissionDenied, why));
        }
        // No scan here: opening stays cheap for every run; stores
        // trigger eviction (`put`).
        Ok(Cache { dir: dir.to_owned(), limit, since_scan: AtomicU64::new(0), counters: Counters::default() })
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
        let name: String = Sha256::digest(origin.as_bytes())[..16].iter().map(|b| format!("{b:02x}")).collect();
        Scope { dir: self.dir.join(name), cache: Arc::clone(self) }
    }

    /// Brings the cache under its limit, least recently used entries first,
    /// unless another process is at it. Also removes temporary files that
    /// a dead process left.
    pub fn evict(&self) -> io::Result<()> {
        self.since_scan.store(0, Ordering::Relaxed);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(self.dir.join("evict.lock"))?;
        if lock.try_lock().is_err() {
            return Ok(());
        }
        let now = SystemTime::now();
        for e in fs::read_dir(self.dir.join("tmp"))?.flatten() {
            let old = e
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| now.duration_since(t).unwrap_or_default() > STALE_TMP);
            if old {
                let _ = fs::remove_file(e.path());
            }
        }
        let mut entries = Vec::new();
        let mut total = 0u64;
        for origin in fs::read_dir(&self.dir)?.flatten() {
            let name = origin.file_name();
            if name == "tmp" || !origin.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            for fan in fs::read_dir(origin.path())?.flatten() {
                for e in fs::read_dir(fan.path()).into_iter().flatten().flatten() {
                    let Ok(m) = e.metadata() else { continue };
                    if e.file_name().to_string_lossy().ends_with(".lock") {
                        continue;
                    }
                    total += m.len();
                    entries.push((m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len(), e.path()));
                }
            }
        }
        if total <= self.limit {
            return Ok(());
        }
        // Down to 90%, so that the next few stores do not evict again.
        let target = self.limit / 10 * 9;
        entries.sort_unstable_by_key(|(t, _, _)| *t);
        for (_, len, path) in entries {
            if total <= target {
                break;
            }
            if fs::remove_file(&path).is_ok() {
                let _ = fs::remove_file(path.with_extension("lock"));
                total -= len;
                self.counters.evicted.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    }
}

impl Scope {
    fn path(&self, key: Key) -> PathBuf {
        self.dir.join(format!("{:02x}", key.sum >> 56)).join(format!("{:016x}-{}", key.sum, key.len))
    }

    /// The entry's bytes, checked against `key`; `None` when it is not
    /// here (or damaged, and then deleted).
    pub(crate) fn get(&self, key: Key) -> Option<Bytes> {
        let c = &self.cache.counters;
        let path = self.path(key);
        let mut file = File::open(&path).ok()?;
        let bytes = read(&mut file, key.len)?;
        if checksum(&bytes) != key.sum {
            c.damaged.fetch_add(1, Ordering::Relaxed);
            let _ = fs::remove_file(&path);
            return None;
        }
        c.hits.fetch_add(1, Ordering::Relaxed);
        c.hit_bytes.fetch_add(key.len, Ordering::Relaxed);
        // The use, for LRU: best effort.
        let _ = file.set_modified(SystemTime::now());
        Some(bytes)
    }

    /// Whether the entry is there (not checked: a read of it checks).
    pub(crate) fn has(&self, key: Key) -> bool {
        fs::metadata(self.path(key)).is_ok_and(|m| m.len() == key.len)
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
        let path = self.path(key);
        let write = || -> io::Result<File> {
            let fan = path.parent().expect("entries are in a fan dir");
            fs::DirBuilder::new().recursive(true).mode(0o700).create(fan)?;
            let mut tmp = tempfile::Builder::new().prefix("put").tempfile_in(self.cache.dir.join("tmp"))?;
            tmp.write_all(bytes)?;
            tmp.persist(&path).map_err(|e| e.error)
        };
        let file = write().ok()?;
        let c = &self.cache.counters;
        c.stored.fetch_add(1, Ordering::Relaxed);
        c.stored_bytes.fetch_add(key.len, Ordering::Relaxed);
        let since = self.cache.since_scan.fetch_add(key.len, Ordering::Relaxed) + key.len;
        if since > self.cache.limit / 8 {
            let _ = self.cache.evict();
        }
        map(&file, key.len)
    }

    /// The entry's fetch lock, if no other holder has it now.
    pub(crate) fn try_lock(&self, key: Key) -> Option<Lock> {
        let path = self.path(key).with_extension("lock");
        let open = || OpenOptions::new().create(true).truncate(false).write(true).mode(0o600).open(&path);
        let file = open()
            .or_else(|_| {
                fs::DirBuilder::new().recursive(true).mode(0o700).create(path.parent().expect("in a fan dir"))?;
                open()
            })
            .ok()?;
        file.try_lock().ok().map(|()| Lock(file))
    }
}

/// `file`, `len` bytes long, mapped, if it is large enough to be worth it.
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
