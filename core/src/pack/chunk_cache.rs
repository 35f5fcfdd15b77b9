//! [`ChunkCache`]: decoded chunks of a compressed pack, bounded in bytes,
//! least recently used out first. Readers of one chunk decode it once: the
//! first takes the chunk's slot and decodes, the others wait on that slot
//! (never on the whole cache). A chunk being read stays alive in its
//! readers' hands even once evicted, so the bound is on what the cache
//! keeps, plus what readers hold at that moment.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::sync::lock;

use crate::Result;

/// One chunk's slot: empty until decoded (again empty if decoding failed,
/// for the next reader to try).
type Slot = Arc<Mutex<Option<Arc<[u8]>>>>;

struct Entry {
    slot: Slot,
    used: u64,
    len: u64,
}

#[derive(Default)]
struct Lru {
    /// chunk -> its slot, last use, and decoded length once counted.
    slots: HashMap<u64, Entry>,
    /// last use -> chunk, oldest first.
    order: BTreeMap<u64, u64>,
    /// Bytes of the decoded chunks in `slots`.
    bytes: u64,
    clock: u64,
}

/// The cache; see the module doc.
pub(crate) struct ChunkCache {
    limit: u64,
    lru: Mutex<Lru>,
    /// Chunks decoded so far, for tests and benchmarks.
    pub(crate) decoded: AtomicU64,
}

impl ChunkCache {
    /// A cache keeping at most `limit` bytes of decoded chunks.
    pub(crate) fn new(limit: u64) -> Self {
        ChunkCache { limit, lru: Mutex::new(Lru::default()), decoded: AtomicU64::new(0) }
    }

    /// Chunk `k`, decoded by `decode` if no reader has it.
    pub(crate) fn get(&self, k: u64, decode: impl FnOnce() -> Result<Vec<u8>>) -> Result<Arc<[u8]>> {
        let slot = {
            let mut lru = lock(&self.lru);
            lru.clock += 1;
            let now = lru.clock;
            let e = lru.slots.entry(k).or_insert_with(|| Entry { slot: Slot::default(), used: 0, len: 0 });
            let (slot, used) = (e.slot.clone(), std::mem::replace(&mut e.used, now));
            lru.order.remove(&used);
            lru.order.insert(now, k);
            slot
        };
        let mut held = lock(&slot);
        if let Some(bytes) = &*held {
            return Ok(bytes.clone());
        }
        let bytes: Arc<[u8]> = match decode() {
            Ok(b) => b.into(),
            Err(e) => {
                // Not kept: the next reader tries again, and `holds` does
                // not report a chunk that is not there.
                drop(held);
                self.forget(k, &slot);
                return Err(e);
            }
        };
        self.decoded.fetch_add(1, Ordering::Relaxed);
        *held = Some(bytes.clone());
        drop(held);
        self.account(k, &slot, bytes.len() as u64);
        Ok(bytes)
    }

    /// Drops chunk `k`'s slot, if it is still `slot`, after a failed decode.
    fn forget(&self, k: u64, slot: &Slot) {
        let mut lru = lock(&self.lru);
        if lru.slots.get(&k).is_some_and(|e| Arc::ptr_eq(&e.slot, slot))
            && let Some(e) = lru.slots.remove(&k)
        {
            lru.order.remove(&e.used);
        }
    }

    /// Counts a newly decoded chunk and evicts the least recently used ones
    /// (never `k` itself) while the cache holds more than its limit. It
    /// never takes a slot's lock while holding the cache's: a reader
    /// decoding holds its slot and then wants the cache.
    fn account(&self, k: u64, slot: &Slot, len: u64) {
        let mut lru = lock(&self.lru);
        match lru.slots.get_mut(&k) {
            Some(e) if Arc::ptr_eq(&e.slot, slot) => e.len = len,
            // Evicted while it was being decoded: its readers have it; the
            // cache does not.
            _ => return,
        }
        lru.bytes += len;
        while lru.bytes > self.limit {
            let Some((&used, &old)) = lru.order.iter().find(|&(_, &c)| c != k) else { break };
            lru.order.remove(&used);
            if let Some(e) = lru.slots.remove(&old) {
                lru.bytes -= e.len;
            }
        }
    }

    /// Whether `len` more bytes fit under the limit now.
    pub(crate) fn has_room(&self, len: u64) -> bool {
        lock(&self.lru).bytes.saturating_add(len) <= self.limit
    }

    /// Whether chunk `k` is kept decoded (or being decoded) now.
    pub(crate) fn holds(&self, k: u64) -> bool {
        lock(&self.lru).slots.contains_key(&k)
    }

    /// Bytes of decoded chunks kept now.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> u64 {
        lock(&self.lru).bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn chunks_decode_once_and_the_bound_holds() {
        let cache = ChunkCache::new(3 * 100);
        let decodes = AtomicUsize::new(0);
        let get = |k: u64| {
            cache
                .get(k, || {
                    decodes.fetch_add(1, Ordering::Relaxed);
                    Ok(vec![u8::try_from(k).unwrap(); 100])
                })
                .unwrap()
        };
        for k in 0..3 {
            assert_eq!(get(k)[0], u8::try_from(k).unwrap());
        }
        assert_eq!(decodes.load(Ordering::Relaxed), 3);
        get(0); // 0 is now the most recent: 1 goes first.
        get(3);
        assert_eq!(decodes.load(Ordering::Relaxed), 4);
        assert!(cache.bytes() <= 300, "{}", cache.bytes());
        get(0);
        get(2);
        assert_eq!(decodes.load(Ordering::Relaxed), 4, "0, 2 and 3 stayed");
        get(1);
        assert_eq!(decodes.load(Ordering::Relaxed), 5, "1 was evicted");
        // A failed decode is not kept: the next reader tries again.
        assert!(cache.get(9, || Err(crate::Error::NotLoaded)).is_err());
        assert!(!cache.holds(9));
        assert_eq!(cache.get(9, || Ok(vec![9])).unwrap()[..], [9]);
    }

    #[test]
    fn concurrent_readers_of_one_chunk_decode_it_once() {
        let cache = ChunkCache::new(1 << 20);
        let decodes = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    let b = cache
                        .get(7, || {
                            decodes.fetch_add(1, Ordering::Relaxed);
                            std::thread::sleep(std::time::Duration::from_millis(20));
                            Ok(vec![1; 1000])
                        })
                        .unwrap();
                    assert_eq!(b.len(), 1000);
                });
            }
        });
        assert_eq!(decodes.load(Ordering::Relaxed), 1);
    }
}
