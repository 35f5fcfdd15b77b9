//! Fetched extents kept in the Origin Private File System, where a Worker
//! reads them synchronously: so a guest's blocking read of a lazy pack
//! finds on a later page load what an earlier one fetched.
//!
//! Two files, `packfs/cache/0.bin` and `1.bin`, are two generations. New
//! extents are appended to the newer; when it holds half the bound, the
//! older is emptied and becomes the newer, so the store never holds more
//! than its bound, and what is evicted is what was least recently kept or
//! found (an extent found in the older generation is copied forward).
//!
//! ```text
//! file    "PACKFSC2" | epoch: u64 (the newer file has the higher)
//! entry   "PFCE" | len: u32 | scope: u128 | checksum: u64
//!         | xxh3 of the 32 bytes before: u64 | the extent's len bytes
//! ```
//!
//! (`PACKFSC1` files, whose scope was a u64, are emptied when opened.)
//!
//! An entry is found by its [`Address`]: the pack's scope and the
//! extent's checksum in the pack's index, or the shared scope and the
//! first eight bytes of its digest; and its length. Opening reads every
//! entry's header and cuts each file after its last whole entry. What is
//! found is stored into the pack only if it is the extent
//! ([`Address::holds`]: by digest in the shared scope) and passes the
//! pack's own check ([`PackFs::store`]), so a damaged or planted entry is
//! forgotten and refetched, never served. Nothing is flushed: a lost entry
//! only costs a fetch.
//!
//! One worker at a time has the files open (OPFS locks them), from its
//! first pack opened by URL until the last is freed; another worker, in
//! this tab or another, takes the next of [`SLOTS`] stores (files
//! `S-0.bin`, `S-1.bin`), each with its own bound, and only when every
//! slot is held keeps its extents in the Cache API instead (which its
//! blocking reads do not see).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ops::Range;
use std::rc::{Rc, Weak};

use packfs_core::pack::{MERGE_GAP, checksum, merge_ranges};

/// The pack whose extents are kept: the one a URL opens (`fetch.rs`).
type LazyPack = packfs_core::pack::PackFs<packfs_core::pack::Partial>;
use super::address::{Address, Scope};
use crate::opfs::{OpfsError, SyncFile};

const FILE_MAGIC: [u8; 8] = *b"PACKFSC2";
const FILE_HEADER: u64 = 16;
const ENTRY_MAGIC: [u8; 4] = *b"PFCE";
const ENTRY_HEADER: u64 = 40;
/// The largest extent kept: a chunk is at most 1 MiB; a version 1 blob can
/// be any size, and one this large is better fetched than held.
const MAX_ENTRY: u64 = 16 << 20;

/// An entry's key: scope, checksum, length.
type Key = (Scope, u64, u64);

/// One generation: its file, epoch and length.
struct Generation {
    file: SyncFile,
    epoch: u64,
    len: u64,
}

/// The store: both generations and where each entry is.
pub(crate) struct Files {
    gens: [Generation; 2],
    /// The generation appended to.
    newer: usize,
    /// Bytes a generation may hold: half the bound.
    half: u64,
    /// Where each entry's bytes are: the generation, the offset.
    index: HashMap<Key, (usize, u64)>,
}

thread_local! {
    /// The store this worker has open, while a pack holds it.
    static OPEN: RefCell<Weak<RefCell<Files>>> = const { RefCell::new(Weak::new()) };
    /// A pack is opening the store: another at the same time goes without.
    static OPENING: Cell<bool> = const { Cell::new(false) };
}

/// The store, opened with `bound` if this worker does not hold it yet;
/// `None` where there is no OPFS (not a dedicated Worker), or another
/// worker holds it.
pub(crate) async fn shared(bound: u64) -> Option<Rc<RefCell<Files>>> {
    if let Some(open) = OPEN.with(|o| o.borrow().upgrade()) {
        // The bound is the latest pack's: what it holds past that goes.
        if let Ok(mut files) = open.try_borrow_mut() {
            files.bound(bound);
        }
        return Some(open);
    }
    if OPENING.replace(true) {
        return None;
    }
    let opened = Files::open(bound).await;
    OPENING.set(false);
    let files = Rc::new(RefCell::new(opened.ok()?));
    OPEN.with(|o| *o.borrow_mut() = Rc::downgrade(&files));
    Some(files)
}

/// Empties the store this worker has open, if it has one: a cache is the
/// first to give space back when the origin's quota refuses a write that
/// must land (a journal's). Whether there was anything to give.
pub(crate) fn give_back() -> bool {
    let Some(open) = OPEN.with(|o| o.borrow().upgrade()) else { return false };
    let Ok(mut files) = open.try_borrow_mut() else { return false };
    let held = files.gens.iter().any(|g| g.len > FILE_HEADER);
    files.bound(0);
    held
}

fn entry_header(key: Key) -> [u8; ENTRY_HEADER as usize] {
    let (scope, sum, len) = key;
    let mut h = [0; ENTRY_HEADER as usize];
    h[..4].copy_from_slice(&ENTRY_MAGIC);
    h[4..8].copy_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_le_bytes());
    h[8..24].copy_from_slice(&scope.to_le_bytes());
    h[24..32].copy_from_slice(&sum.to_le_bytes());
    let check = checksum(&h[..32]);
    h[32..].copy_from_slice(&check.to_le_bytes());
    h
}

/// The key of the entry whose header is `h`, if it is one.
fn parse_header(h: &[u8; ENTRY_HEADER as usize]) -> Option<Key> {
    let word = |at: usize| u64::from_le_bytes(h[at..at + 8].try_into().unwrap_or_default());
    let len = u32::from_le_bytes(h[4..8].try_into().ok()?);
    let scope = Scope::from_le_bytes(h[8..24].try_into().ok()?);
    (h[..4] == ENTRY_MAGIC && checksum(&h[..32]) == word(32)).then(|| (scope, word(24), u64::from(len)))
}

impl Generation {
    /// Opens generation file `name`, read up to its last whole entry (each
    /// put in `index` as generation `g`); a file that is not one is emptied.
    fn load(file: SyncFile, g: usize, index: &mut HashMap<Key, (usize, u64)>) -> Result<Generation, OpfsError> {
        let size = file.size()?;
        let mut head = [0; FILE_HEADER as usize];
        let whole = size >= FILE_HEADER && file.read_at(0, &mut head)? == head.len() && head[..8] == FILE_MAGIC;
        if !whole {
            let mut empty = Generation { file, epoch: 0, len: 0 };
            empty.reset(0)?;
            return Ok(empty);
        }
        let epoch = u64::from_le_bytes(head[8..].try_into().unwrap_or_default());
        let mut at = FILE_HEADER;
        let mut h = [0; ENTRY_HEADER as usize];
        while at + ENTRY_HEADER <= size && file.read_at(at, &mut h)? == h.len() {
            let Some(key) = parse_header(&h).filter(|k| k.2 <= MAX_ENTRY && at + ENTRY_HEADER + k.2 <= size) else {
                break;
            };
            index.insert(key, (g, at + ENTRY_HEADER));
            at += ENTRY_HEADER + key.2;
        }
        if at != size {
            file.truncate(at)?;
        }
        Ok(Generation { file, epoch, len: at })
    }

    /// Empties the file, to start epoch `epoch`.
    fn reset(&mut self, epoch: u64) -> Result<(), OpfsError> {
        self.file.truncate(0)?;
        let mut head = [0; FILE_HEADER as usize];
        head[..8].copy_from_slice(&FILE_MAGIC);
        head[8..].copy_from_slice(&epoch.to_le_bytes());
        self.file.write_all_at(0, &head)?;
        (self.epoch, self.len) = (epoch, FILE_HEADER);
        Ok(())
    }
}

/// Stores a worker may take, each its own two files: a worker finding the
/// first held (by another worker, in this tab or another) takes the next,
/// so that its blocking reads too find on a later load what it fetched.
const SLOTS: usize = 4;

/// Slot `slot`'s two files: `0.bin` and `1.bin` for the first (as they
/// always were named), `S-0.bin` and `S-1.bin` for another.
fn names(slot: usize) -> [String; 2] {
    match slot {
        0 => ["0.bin".into(), "1.bin".into()],
        s => [format!("{s}-0.bin"), format!("{s}-1.bin")],
    }
}

impl Files {
    /// The first slot no other worker holds, opened with `bound`.
    async fn open(bound: u64) -> Result<Files, OpfsError> {
        for slot in 0..SLOTS {
            match Files::open_slot(slot, bound).await {
                Err(OpfsError::InUse) => continue,
                r => return r,
            }
        }
        Err(OpfsError::InUse)
    }

    async fn open_slot(slot: usize, bound: u64) -> Result<Files, OpfsError> {
        let [a, b] = names(slot);
        let a = SyncFile::open("cache", &a).await?;
        let b = SyncFile::open("cache", &b).await?;
        let (mut in_a, mut in_b) = (HashMap::new(), HashMap::new());
        let gens = [Generation::load(a, 0, &mut in_a)?, Generation::load(b, 1, &mut in_b)?];
        let newer = usize::from(gens[1].epoch > gens[0].epoch);
        // An entry in both is found in the newer.
        let (mut index, in_newer) = if newer == 0 { (in_b, in_a) } else { (in_a, in_b) };
        index.extend(in_newer);
        let mut files = Files { gens, newer, half: bound / 2, index };
        // A store made under a larger bound holds no more than this one.
        files.bound(bound);
        Ok(files)
    }

    /// Holds at most `bound` bytes from now on: a generation past half of
    /// it is emptied (the older first).
    fn bound(&mut self, bound: u64) {
        self.half = bound / 2;
        for g in [1 - self.newer, self.newer] {
            if self.gens[g].len > self.half.max(FILE_HEADER) {
                self.index.retain(|_, (at, _)| *at != g);
                let epoch = self.gens[g].epoch;
                let _ = self.gens[g].reset(epoch);
            }
        }
    }

    /// Stores into `pack` what the store holds of `wants` under `scope`;
    /// returns what is left to fetch, as ranges.
    pub(crate) fn restore(&mut self, scope: Scope, pack: &LazyPack, wants: Vec<Range<u64>>) -> Vec<Range<u64>> {
        let mut left = Vec::new();
        for w in wants {
            for k in pack.extents_within(w) {
                let Some((r, a)) = Address::of(pack, k, scope) else { continue };
                if !r.is_empty() && !self.found(a, pack, r.start) {
                    left.push(r);
                }
            }
        }
        merge_ranges(left, MERGE_GAP, u64::MAX).into_iter().map(|m| m.range).collect()
    }

    /// Whether entry `key` held the right bytes of the extent at `start`,
    /// now stored into `pack`. A wrong one is forgotten; one found in the
    /// older generation is copied into the newer.
    fn found(&mut self, a: Address, pack: &LazyPack, start: u64) -> bool {
        let key = (a.scope, a.sum, a.len);
        let Some(&(g, at)) = self.index.get(&key) else { return false };
        let mut bytes = vec![0; usize::try_from(key.2).unwrap_or(0)];
        let read = self.gens[g].file.read_at(at, &mut bytes).is_ok_and(|n| n == bytes.len());
        if !read || !a.holds(pack, &bytes) || pack.store(start, &bytes).is_err() {
            self.index.remove(&key);
            return false;
        }
        if g != self.newer {
            self.index.remove(&key);
            self.keep_extent(key, &bytes);
        }
        true
    }

    /// Keeps, under `scope`, the extents lying in `bytes`, fetched from
    /// `offset` (and stored into `pack`, so checked).
    pub(crate) fn keep(&mut self, scope: Scope, pack: &LazyPack, offset: u64, bytes: &[u8]) {
        let end = offset + bytes.len() as u64;
        for k in pack.extents_within(offset..end) {
            let Some((r, a)) = Address::of(pack, k, scope) else { continue };
            let part = &bytes[(r.start - offset) as usize..(r.end - offset) as usize];
            // Bytes of an extent already here were not checked by `store`.
            if !part.is_empty() && a.holds(pack, part) {
                self.keep_extent((a.scope, a.sum, a.len), part);
            }
        }
    }

    fn keep_extent(&mut self, key: Key, bytes: &[u8]) {
        let need = ENTRY_HEADER + key.2;
        if key.2 > MAX_ENTRY || FILE_HEADER + need > self.half || self.index.contains_key(&key) {
            return;
        }
        if self.gens[self.newer].len + need > self.half {
            // The older generation goes; the newer becomes the older.
            let older = 1 - self.newer;
            self.index.retain(|_, (g, _)| *g != older);
            let epoch = self.gens[self.newer].epoch + 1;
            if self.gens[older].reset(epoch).is_err() {
                return;
            }
            self.newer = older;
        }
        let g = &mut self.gens[self.newer];
        let mut entry = Vec::with_capacity(bytes.len() + ENTRY_HEADER as usize);
        entry.extend_from_slice(&entry_header(key));
        entry.extend_from_slice(bytes);
        if g.file.write_all_at(g.len, &entry).is_ok() {
            self.index.insert(key, (self.newer, g.len + ENTRY_HEADER));
            g.len += need;
        } else {
            // The quota, most likely: what did not fit costs only a fetch.
            let _ = g.file.truncate(g.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_headers() {
        let key = (7 << 64 | 9, 0xdead_beef, 65536);
        let h = entry_header(key);
        assert_eq!(parse_header(&h), Some(key));
        for i in 0..h.len() {
            let mut bad = h;
            bad[i] ^= 1;
            assert_eq!(parse_header(&bad), None, "byte {i}");
        }
    }
}
