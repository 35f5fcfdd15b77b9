//! A folded-multiply hash for the crate's own integer-keyed tables (inode
//! numbers, dedup keys), seeded per table from `RandomState`: SipHash, the
//! std default, cost more than all the rest of a lookup in them.

use std::hash::{BuildHasher, Hasher, RandomState};

/// The 128-bit product of `a` and `b`, its halves xored: one multiply that
/// mixes every bit of both into the result.
pub(crate) fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

/// Builds [`Fold`] hashers with this table's seed.
#[derive(Clone, Copy)]
pub(crate) struct FoldState(u64);

pub(crate) struct Fold(u64);

impl FoldState {
    pub(crate) fn new() -> Self {
        FoldState(RandomState::new().hash_one(0x7061_636b_7772_6974_u64))
    }
}

impl Default for FoldState {
    fn default() -> Self {
        Self::new()
    }
}

impl BuildHasher for FoldState {
    type Hasher = Fold;
    fn build_hasher(&self) -> Fold {
        Fold(self.0)
    }
}

impl Hasher for Fold {
    fn write(&mut self, bytes: &[u8]) {
        // The length first: zero padding alone would make "ab" and "ab\0"
        // one key.
        self.write_u64(bytes.len() as u64);
        for chunk in bytes.chunks(8) {
            let mut word = [0; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = fold(self.0 ^ x, 0x9E37_79B9_7F4A_7C15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}
