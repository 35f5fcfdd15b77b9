//! [`Candidates`]: the table that finds dedup candidates, blobs whose
//! (hash, length) key matches a new content's.

use hashbrown::HashTable;

/// The end of a chain of dedup candidates.
pub(super) const NO_BLOB: u32 = u32::MAX;

/// The table hash of a candidate slot, spread from its 32-bit tag.
fn slot(tag: u32) -> u64 {
    u64::from(tag).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Dedup keys -> the first blob with that key. A slot holds 32 bits of
/// the key's table hash (its tag) and the blob: 8 bytes, and regrowing reads
/// no blob record. New keys gather in `recent`, small enough to stay cached,
/// and move to `settled` in batches: once `settled` outgrows the caches an
/// insert is a cache miss, and a batch of inserts overlaps them where one
/// per file stalled each file (1.2x the time per entry at 320,000 files).
/// Each key is in one of the two.
pub(super) struct Candidates {
    recent: HashTable<(u32, u32)>,
    settled: HashTable<(u32, u32)>,
}

impl Candidates {
    const RECENT: usize = 256;

    pub(super) fn new() -> Self {
        Candidates { recent: HashTable::with_capacity(Self::RECENT), settled: HashTable::new() }
    }

    pub(super) fn reserve(&mut self, keys: usize) {
        let _ = self.settled.try_reserve(keys, |&(t, _)| slot(t));
    }

    /// The first blob of the key with `tag` for which `same` holds.
    pub(super) fn find(&self, tag: u32, same: impl Fn(u32) -> bool) -> Option<u32> {
        let eq = |&(t, b): &(u32, u32)| t == tag && same(b);
        self.recent.find(slot(tag), eq).or_else(|| self.settled.find(slot(tag), eq)).map(|&(_, b)| b)
    }

    /// Adds a key that [`find`](Self::find) did not find.
    pub(super) fn insert(&mut self, tag: u32, blob: u32) {
        self.recent.insert_unique(slot(tag), (tag, blob), |&(t, _)| slot(t));
        if self.recent.len() == Self::RECENT {
            for e in self.recent.drain() {
                self.settled.insert_unique(slot(e.0), e, |&(t, _)| slot(t));
            }
        }
    }
}
