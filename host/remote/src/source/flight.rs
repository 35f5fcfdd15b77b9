//! [`Flight`]: which extents are being fetched, and where reads were
//! going: what a miss fetches (its window, and when the next one goes out)
//! and as which requests. Pure bookkeeping: the source fetches.

use std::collections::HashSet;
use std::ops::Range;
use std::time::Instant;

use super::table::Table;
use crate::limits::{FIRST_WINDOW, MAX_WINDOW, REQUEST_MAX, STREAM_START};

/// Sequential windows after which the next is fetched as soon as the
/// last is entered, and windows grow fourfold: more than a pair of chosen
/// files lying side by side makes (three windows), so that a reader of
/// scattered files fetches no further ahead of them. (Reading a whole pack
/// at 20 ms a round trip, this took it from 1.18x a download to 0.91x:
/// bench/remote-results.md.)
const STREAK: u32 = 4;

/// Which extents are being fetched, and where reads were going.
#[derive(Default)]
pub(super) struct Flight {
    pub(super) under_way: HashSet<u64>,
    /// The extent after the last window a miss fetched.
    pub(super) next: u64,
    /// That window's size in bytes.
    ahead: u64,
    /// Where the file it was in ends (the extent after its last).
    file_end: u64,
    /// Whether reads have been streaming across files.
    across: bool,
    /// Windows planned one after another since the last miss elsewhere.
    streak: u32,
    pub(super) failed: Option<(Instant, String)>,
}

impl Flight {
    /// The extents a miss at `k` fetches (see the module doc), as runs,
    /// now marked under way, and the extent whose read fetches the next
    /// window (`u64::MAX`: none).
    pub(super) fn plan(&mut self, t: &Table, k: u64, demand: bool) -> (Vec<Range<u64>>, u64) {
        let n = t.extents.len() as u64;
        let sequential = k == self.next && k > 0;
        // Reads streaming across files: a read went on from where the last
        // window ended into the next file. Until one does, a window stops
        // at its file's end, however sequential the reads within it.
        self.across = sequential && (self.across || (demand && k >= self.file_end));
        self.streak = if sequential { self.streak.saturating_add(1) } else { 0 };
        // A miss elsewhere takes the rest of its file, up to FIRST_WINDOW;
        // a sequential one doubles the last window, from a chunk's worth,
        // so that two files that merely lie side by side cost little, and
        // past STREAK windows in a row quadruples it.
        let grow = if self.streak > STREAK { 4 } else { 2 };
        let limit = if sequential { (self.ahead * grow).clamp(STREAM_START, MAX_WINDOW) } else { FIRST_WINDOW };
        let file_end = t.span_end[k as usize];
        let start = t.extents[k as usize].start;
        let mut j = k + 1;
        while j < n && t.extents[j as usize].end - start <= limit && (self.across || j < file_end) {
            j += 1;
        }
        (self.next, self.file_end) = (j, file_end.max(j));
        self.ahead = t.extents[j as usize - 1].end - start;
        // Read ahead, halfway through this window, if there is more to read
        // (and not on the strength of an older window). Once the reads have
        // gone through STREAK windows in a row, as soon as this one is
        // entered: the next is then in flight while this one is read, and
        // the reader does not wait a round trip at each window's end.
        let more = (self.across || j < file_end) && j < n;
        let trigger = match more {
            false => u64::MAX,
            true if self.across && self.streak >= STREAK => k,
            true => k + (j - k).div_ceil(2),
        };
        (self.runs(t, k..j), trigger)
    }

    /// `ks` less the extents here or under way, as runs of adjacent
    /// extents of at most [`REQUEST_MAX`] bytes, marked under way.
    pub(super) fn runs(&mut self, t: &Table, ks: impl IntoIterator<Item = u64>) -> Vec<Range<u64>> {
        let mut runs: Vec<Range<u64>> = Vec::new();
        for k in ks {
            if k >= t.extents.len() as u64 || t.here(k) || !self.under_way.insert(k) {
                continue;
            }
            match runs.last_mut() {
                Some(r)
                    if r.end == k && t.extents[k as usize].end - t.extents[r.start as usize].start <= REQUEST_MAX =>
                {
                    r.end = k + 1
                }
                _ => runs.push(k..k + 1),
            }
        }
        runs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader of whole files, in pack order, over 200 files of 1 MiB
    /// (`pick`: which): each extent fetched is here at once. Returns the
    /// misses (a round trip each, at least), and the bytes fetched and
    /// read.
    fn reader(pick: impl Fn(usize) -> bool) -> (usize, u64, u64) {
        let sizes = [1 << 20; 200];
        let t = Table::of_files(&sizes);
        let mut f = Flight::default();
        let (mut misses, mut fetched, mut read, mut trigger) = (0, 0, 0, u64::MAX);
        let mut fetch = |f: &mut Flight, runs: Vec<Range<u64>>| {
            for k in runs.into_iter().flatten() {
                f.under_way.remove(&k);
                t.slots[k as usize].set(bytes::Bytes::new()).unwrap();
                fetched += t.extents[k as usize].end - t.extents[k as usize].start;
            }
        };
        let mut first = Vec::new();
        let mut at = 0u64;
        for s in sizes {
            first.push(at);
            at += s.div_ceil(128 << 10);
        }
        first.push(at);
        for file in (0..sizes.len()).filter(|&i| pick(i)) {
            for k in first[file]..first[file + 1] {
                read += t.extents[k as usize].end - t.extents[k as usize].start;
                if k >= trigger && k < f.next {
                    let runs;
                    (runs, trigger) = f.plan(&t, f.next, false);
                    fetch(&mut f, runs);
                }
                if !t.here(k) {
                    misses += 1;
                    let runs;
                    (runs, trigger) = f.plan(&t, k, true);
                    fetch(&mut f, runs);
                }
            }
        }
        (misses, fetched, read)
    }

    /// Once a read goes on from one file into the next, windows run on
    /// in pack order, doubling, past the files the reader skips: a few
    /// misses for all of it.
    #[test]
    fn reads_streaming_across_files_fetch_ahead_in_pack_order() {
        let (misses, fetched, read) = reader(|_| true);
        assert_eq!((misses, fetched), (2, read));
        // Nine files in ten: the skipped ones are fetched too.
        let (misses, fetched, read) = reader(|i| i % 10 != 3);
        assert_eq!(misses, 2);
        assert!(fetched * 4 <= read * 5, "{fetched} fetched for {read} read");
    }

    /// Reads that never go on into the next file fetch their files alone,
    /// a miss (a round trip) each, nothing of the files between.
    #[test]
    fn sparse_reads_fetch_their_files_alone() {
        for every in [10, 2] {
            let (misses, fetched, read) = reader(|i| i % every == 1);
            assert_eq!((misses, fetched), (200 / every, read), "one file in {every}");
        }
    }
}
