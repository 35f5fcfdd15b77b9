//! [`HashIndex`]: in-memory tables built from a pack's index on its first
//! lookup, so that resolving a path and reading a file take a few loads
//! from compact tables instead of a binary search per name in tables that
//! outgrow the caches. They are not part of the format: without them (see
//! below) the reader searches the dirent runs, as it always may.
//!
//! - **Names**: an open-addressed hash table from (directory, name) to the
//!   entry's inode and kind. A lookup is one hash of the name, usually one
//!   slot, and one compare of the name's bytes in the string pool.
//! - **Files**: for each inode, where a file's content lies in the pack, so
//!   reading a file needs neither its inode record nor its blob record.
//!
//! ```text
//! slot (16 bytes)  parent: u32    check: u32                 name: u32      child: u32
//!                  inode index    hash bits 42..64 << 10     offset in the  inode index
//!                  (u32::MAX:     | kind << 8 | name length  string pool    of the entry
//!                   empty)
//! file (24 bytes)  start: u64, end: u64 — the content's byte range in the pack
//!                  (start > end for a directory or symlink); blob: u32, its blob
//! ```
//!
//! Names: linear probing, at most two thirds full. The hash (of the name and
//! the parent's index; folded multiplies, as foldhash does) is seeded per
//! table from `RandomState`, so a pack cannot be crafted to collide on
//! every machine. Even so, no entry may sit more than [`MAX_PROBE`] slots
//! past where its hash puts it: a build that would need more gives up, so
//! every lookup probes at most `MAX_PROBE` slots.
//!
//! A hit is proven by comparing the name's bytes, never by the hash. The
//! tables are built from what open checked (names unique within a
//! directory, runs inside the dirent table, names inside the pool, blobs
//! inside the data section), but every read made to build or use them is
//! still a bounds-checked `get`: on bytes that changed after open the build
//! gives up or answers wrongly, and never panics. A string pool of 4 GiB or
//! more (its offsets do not fit a slot) also means no tables. Memory: 24 to
//! 48 bytes per name and 16 per inode, sized from counts open checked
//! against the pack's length.

use std::hash::BuildHasher;

use crate::fold::fold;

use super::blob::{self, BlobRecord};
use super::cursor::{pool_get, width};
use super::dirent::{self, DirentRecord};
use super::inode;
use crate::FileType;

/// Longest probe sequence a table may need; a build needing more gives up.
pub(crate) const MAX_PROBE: usize = 512;

/// Longest name a slot describes (`path::MAX_NAME`, what open checked).
const MAX_NAME: usize = crate::path::MAX_NAME;

/// `parent` of an empty slot; never an inode index (there are fewer than
/// `u32::MAX` inodes).
const EMPTY: u32 = u32::MAX;

/// The kind bits of a slot's `check`.
const KIND_BITS: u32 = 0x300;

#[derive(Debug, Clone, Copy)]
struct Slot {
    parent: u32,
    check: u32,
    name: u32,
    child: u32,
}

const FREE: Slot = Slot { parent: EMPTY, check: 0, name: 0, child: 0 };

/// Where a file's content lies in the pack, and which blob it is; `start >
/// end` for another kind.
#[derive(Debug, Clone, Copy)]
struct Extent {
    start: u64,
    end: u64,
    blob: u32,
}

const NOT_FILE: Extent = Extent { start: 1, end: 0, blob: 0 };

/// The tables of one index, as open found them (see
/// [`Index::tables`](super::index::Index::tables)).
pub(crate) struct Tables<'p> {
    pub(crate) inodes: &'p [inode::Raw],
    pub(crate) dirents: &'p [[u8; width(dirent::RECORD_LEN)]],
    pub(crate) blobs: &'p [[u8; width(blob::RECORD_LEN)]],
    /// The string pool, and where it starts in the index region.
    pub(crate) strings: &'p [u8],
    pub(crate) strings_start: usize,
}

/// The tables; see the module doc.
pub(crate) struct HashIndex {
    slots: Box<[Slot]>,
    seed: u64,
    /// Where the string pool starts in the index region.
    pool: usize,
    files: Box<[Extent]>,
}

impl std::fmt::Debug for HashIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HashIndex").field("slots", &self.slots.len()).field("files", &self.files.len()).finish()
    }
}

/// The little-endian word of the first (`last == false`) or last 8 bytes
/// of `b`, which has at least 8.
fn word(b: &[u8], last: bool) -> u64 {
    let w = if last { b.last_chunk::<8>() } else { b.first_chunk::<8>() };
    w.map_or(0, |w| u64::from_le_bytes(*w))
}

/// The slot index to start at (low bits) and the check word (22 high bits
/// and the length; the kind bits left zero) of `name` in directory `parent`: a seeded hash of folded
/// multiplies over 16-byte pieces (the last one overlapping), after
/// foldhash's. Names are short (most under 16 bytes: one multiply).
fn hash(seed: u64, parent: u32, name: &[u8]) -> (usize, u32) {
    const K: [u64; 4] = [0x243f_6a88_85a3_08d3, 0x1319_8a2e_0370_7344, 0xa409_3822_299f_31d0, 0x082e_fa98_ec4e_6c89];
    let len = name.len();
    let mut s0 = seed ^ u64::from(parent).wrapping_mul(K[0]);
    let mut s1 = K[1] ^ len as u64;
    let (a, b) = if len >= 16 {
        let mut rest = name;
        while let Some((piece, tail)) = rest.split_first_chunk::<16>().filter(|(_, t)| !t.is_empty()) {
            s0 = fold(s0 ^ word(piece, false), s1 ^ word(piece, true));
            s1 = s1.wrapping_add(K[2]);
            rest = tail;
        }
        let piece = name.last_chunk::<16>().map_or(&[0; 16][..], |p| &p[..]);
        (word(piece, false), word(piece, true))
    } else if len >= 8 {
        (word(name, false), word(name, true))
    } else if len >= 4 {
        let half = |b: Option<&[u8; 4]>| b.map_or(0, |b| u64::from(u32::from_le_bytes(*b)));
        (half(name.first_chunk()), half(name.last_chunk()))
    } else {
        let at = |i: usize| name.get(i).map_or(0, |&b| u64::from(b));
        (at(0), at(len / 2) << 8 | at(len.wrapping_sub(1)) << 16)
    };
    let h = fold(fold(s0 ^ a, s1 ^ b) ^ K[3], seed | 1);
    // The home slot is `h` masked by the table's size, so a 32-bit usize
    // losing the high half is meant; `h >> 42` has 22 bits; callers checked
    // `name.len() <= MAX_NAME`, so it fits the low byte.
    #[allow(clippy::cast_possible_truncation, reason = "see the comment above: each loses nothing or means to")]
    let out = (h as usize, ((h >> 42) as u32) << 10 | len as u32);
    out
}

/// `a == b`, for two names of equal length: two words for most names
/// rather than a call to `memcmp`.
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let n = a.len();
    match n {
        8..=16 => word(a, false) == word(b, false) && word(a, true) == word(b, true),
        4..8 => {
            let half = |s: &[u8], last| {
                let w = if last { s.last_chunk::<4>() } else { s.first_chunk::<4>() };
                w.map(|w| u32::from_le_bytes(*w))
            };
            half(a, false) == half(b, false) && half(a, true) == half(b, true)
        }
        // The first, middle and last bytes are all of them.
        1..4 => [0, n / 2, n - 1].iter().all(|&i| a.get(i) == b.get(i)),
        _ => a == b,
    }
}

/// The kind a record's `kind` byte names (1 to 3, as open checked).
fn kind_of(code: u32) -> Option<FileType> {
    match code {
        1 => Some(FileType::File),
        2 => Some(FileType::Dir),
        3 => Some(FileType::Symlink),
        _ => None,
    }
}

impl HashIndex {
    /// Builds the tables; `None` when it cannot (see the module doc).
    pub(crate) fn build(t: &Tables<'_>) -> Option<HashIndex> {
        let seed = std::collections::hash_map::RandomState::new().hash_one(0x7061_636b_6e61_6d65_u64);
        Self::build_with(seed, MAX_PROBE, t)
    }

    /// [`build`](Self::build) with a given seed and probe limit (tests use
    /// them to force collisions and a give-up).
    pub(crate) fn build_with(seed: u64, max_probe: usize, t: &Tables<'_>) -> Option<HashIndex> {
        u32::try_from(t.strings.len()).ok()?;
        let files = t
            .inodes
            .iter()
            .map(|rec| {
                if rec[0] != 1 {
                    return Some(NOT_FILE);
                }
                let blob = u32::try_from(inode::data(rec)).ok()?;
                let b = BlobRecord::from_record(t.blobs.get(usize::try_from(blob).ok()?)?);
                Some(Extent { start: b.offset, end: b.offset.checked_add(b.len)?, blob })
            })
            .collect::<Option<Box<[Extent]>>>()?;
        // At most two thirds full; `dirents` lies in memory, so this does
        // not overflow before `checked_next_power_of_two` says so.
        let n = t.dirents.len();
        let cap = n.checked_add(n / 2)?.max(8).checked_next_power_of_two()?;
        let mut slots = vec![FREE; cap].into_boxed_slice();
        let mask = cap - 1;
        for (dir, rec) in t.inodes.iter().enumerate() {
            if rec[0] != 2 {
                continue;
            }
            let parent = u32::try_from(dir).ok().filter(|&p| p != EMPTY)?;
            let first = usize::try_from(inode::data(rec)).ok()?;
            let count = usize::try_from(inode::count(rec)).ok()?;
            for d in t.dirents.get(first..first.checked_add(count)?)? {
                let DirentRecord { name_offset: offset, name_len, inode: child } = DirentRecord::from_record(d);
                let name = pool_get(t.strings, offset, name_len)?;
                let code = u32::from(t.inodes.get(usize::try_from(child).ok()?)?[0]);
                kind_of(code)?;
                if name.len() > MAX_NAME {
                    return None;
                }
                let (home, check) = hash(seed, parent, name);
                // `offset` is within the pool, which is below 4 GiB.
                let slot = Slot { parent, check: check | code << 8, name: u32::try_from(offset).ok()?, child };
                let free = (0..max_probe).map(|k| home.wrapping_add(k) & mask).find(|&i| slots[i].parent == EMPTY)?;
                slots[free] = slot;
            }
        }
        Some(HashIndex { slots, seed, pool: t.strings_start, files })
    }

    /// The inode index and kind of the entry `name` in directory `parent`
    /// (an inode index), if there is one; `region` is the index region.
    pub(crate) fn find(&self, region: &[u8], parent: u64, name: &[u8]) -> Option<(u32, FileType)> {
        let parent = u32::try_from(parent).ok().filter(|&p| p != EMPTY)?;
        if name.len() > MAX_NAME {
            return None;
        }
        let (home, check) = hash(self.seed, parent, name);
        let mask = self.slots.len() - 1;
        for k in 0..MAX_PROBE {
            let s = self.slots.get(home.wrapping_add(k) & mask)?;
            if s.parent == EMPTY {
                return None;
            }
            if s.parent == parent && s.check & !KIND_BITS == check {
                let start = self.pool.checked_add(s.name as usize)?;
                let stored = region.get(start..start.checked_add(name.len())?)?;
                if same(stored, name) {
                    return Some((s.child, kind_of((s.check & KIND_BITS) >> 8)?));
                }
            }
        }
        None
    }

    /// The blob holding inode index `i`'s content and where it lies in
    /// the pack, if `i` is a file.
    pub(crate) fn file(&self, i: u64) -> Option<(u64, std::ops::Range<u64>)> {
        let e = self.files.get(usize::try_from(i).ok()?)?;
        (e.start <= e.end).then(|| (u64::from(e.blob), e.start..e.end))
    }

    /// The longest probe sequence any entry needs (for tests).
    #[cfg(test)]
    pub(crate) fn longest_probe(&self, region: &[u8]) -> usize {
        let mask = self.slots.len() - 1;
        let mut worst = 0;
        for (i, s) in self.slots.iter().enumerate() {
            if s.parent == EMPTY {
                continue;
            }
            let start = self.pool + s.name as usize;
            let name = &region[start..start + (s.check & 0xff) as usize];
            let (home, _) = hash(self.seed, s.parent, name);
            worst = worst.max(i.wrapping_sub(home) & mask);
        }
        worst + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::index::Index;
    use crate::pack::{PackFs, write_pack};
    use crate::{FileSystem, Ino, MemFs, OpenOptions};

    /// Names of every length class the hash and the compare treat apart,
    /// sharing prefixes and suffixes, in nested directories; a symlink.
    fn names() -> Vec<String> {
        let mut names: Vec<String> = ["a", "b", "ab", "ba", "abc", "abd", "abcd", "abce", "abcdefg", "abcdefgh"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        for n in [9, 15, 16, 17, 31, 32, 33, 100, 255] {
            names.push("x".repeat(n));
            names.push(format!("{}y", "x".repeat(n - 1)));
            names.push(format!("y{}", "x".repeat(n - 1)));
        }
        names.push("é".repeat(50));
        names
    }

    fn sample() -> Vec<u8> {
        let fs = MemFs::new();
        let mut dir = fs.root();
        for depth in 0..3 {
            for (i, name) in names().iter().enumerate() {
                if i % 3 == depth {
                    fs.symlink(dir, name, "a").unwrap();
                } else {
                    let f = fs.open(dir, name, &OpenOptions::create()).unwrap();
                    fs.write_at(f, 0, format!("{depth}/{name}").as_bytes()).unwrap();
                }
            }
            dir = fs.mkdir(dir, "sub", 0o755).unwrap();
        }
        let mut out = Vec::new();
        write_pack(&fs.snapshot(), &mut out).unwrap();
        out
    }

    #[test]
    fn hash_index_answers_as_the_search_does() {
        let bytes = sample();
        let hashed = PackFs::open(&bytes[..]).unwrap();
        let searching = PackFs::open(&bytes[..]).unwrap();
        searching.hashed.set(None).unwrap();
        let mut asks: Vec<String> = names();
        asks.extend(["sub", "nope", "", ".", "..", "a/b", "a\0", "abcdefgi", "abcdefghi"].map(String::from));
        asks.push("x".repeat(256));
        asks.push("é".repeat(49));
        let inodes = hashed.info().inodes;
        for dir in (0..=inodes + 1).chain([u64::MAX, 1 << 32, (1 << 32) + 1]) {
            for name in &asks {
                let (a, b) = (hashed.lookup_kind(dir, name), searching.lookup_kind(dir, name));
                assert_eq!(a, b, "{dir} {name:?}");
                assert_eq!(hashed.lookup(dir, name), searching.lookup(dir, name));
            }
        }
        assert!(matches!(hashed.hashed.get(), Some(Some(_))));
        for ino in 0..=inodes + 1 {
            assert_eq!(hashed.file_bytes(ino), searching.file_bytes(ino), "{ino}");
        }
        let found = hashed.lookup(hashed.root(), &"x".repeat(255)).unwrap();
        assert_eq!(hashed.file_bytes(found).unwrap(), format!("0/{}", "x".repeat(255)).as_bytes());
    }

    /// The index of `bytes`, its region and its tables.
    fn index_of(bytes: &[u8]) -> (&[u8], Tables<'_>) {
        let (index, _) = Index::open(bytes, false, None).unwrap();
        let region = crate::pack::pieces::cut(bytes, 0, index.region()).unwrap();
        (region, index.tables(region).unwrap())
    }

    #[test]
    fn hash_index_gives_up_past_its_probe_limit() {
        let fs = MemFs::new();
        for i in 0..2000 {
            fs.open(fs.root(), &format!("f{i}"), &OpenOptions::create()).unwrap();
        }
        let mut bytes = Vec::new();
        write_pack(&fs.snapshot(), &mut bytes).unwrap();
        let (region, t) = index_of(&bytes);
        // 2,000 names in 4,096 slots collide somewhere for any seed.
        assert!(HashIndex::build_with(7, 1, &t).is_none());
        let h = HashIndex::build_with(7, MAX_PROBE, &t).unwrap();
        assert!(h.longest_probe(region) < 64, "{}", h.longest_probe(region));
        let pack = PackFs::open(&bytes[..]).unwrap();
        pack.hashed.set(HashIndex::build_with(7, 1, &t)).unwrap();
        let f: Ino = pack.lookup(pack.root(), "f1999").unwrap();
        assert_eq!(*pack.file_bytes(f).unwrap(), *b"");
    }

    #[test]
    fn names_compare_by_words_as_bytes_do() {
        let base: Vec<u8> = (0..40u8).map(|i| b'a' + i % 26).collect();
        for len in 1..=40 {
            let a = &base[..len];
            assert!(same(a, a));
            for at in 0..len {
                let mut b = a.to_vec();
                b[at] ^= 0x20;
                assert!(!same(a, &b), "{len} {at}");
            }
            assert!(!same(a, &base[..len - 1]));
        }
    }
}
