//! The lazy-open plan (`LazyOpen`) driven directly, as a browser or an
//! object store would, against a server that answers right, and one that
//! answers short, long, elsewhere, twice, out of order or with a pack
//! that lies about itself: each ends in the opened pack or a typed error,
//! never a panic, and a pack claiming a huge index is refused before
//! anything but the tail is fetched.
#![allow(clippy::single_range_in_vec_init, reason = "lists of one range to fetch, as the plan gives them")]

use std::ops::Range;
use std::sync::OnceLock;

use packfs_core::pack::layout::{HEADER_LEN, MAX_FETCHED_INDEX, TRAILER_LEN};
use packfs_core::pack::{
    CorruptKind, CorruptPack, Layout, LazyOpen, Limit, MERGE_GAP, OpenStep, PackFs, Partial, ReadOptions, TAIL_LEN,
    merge_ranges,
};
use packfs_core::{Error, FileSystem, MemFs};
use proptest::prelude::*;

use crate::common::{assert_same_tree, pack_bytes, write_file};

/// A tree of `files` files of `len` bytes each, with long names: an index
/// region that grows with `files`.
fn tree(files: usize, len: usize) -> MemFs {
    let fs = MemFs::new();
    for i in 0..files {
        let body: Vec<u8> = (0..len).map(|j| (i * 7 + j) as u8).collect();
        write_file(&fs, fs.root(), &format!("a-file-with-a-long-name-{i:05}"), &body);
    }
    fs
}

/// Three packs: smaller than the tail; larger, with its index inside the
/// tail; larger, with an index larger than the tail.
fn packs() -> &'static [(MemFs, Vec<u8>); 3] {
    static PACKS: OnceLock<[(MemFs, Vec<u8>); 3]> = OnceLock::new();
    PACKS.get_or_init(|| {
        [tree(5, 100), tree(40, 8000), tree(1500, 40)].map(|fs| {
            let bytes = pack_bytes(&fs);
            (fs, bytes)
        })
    })
}

fn layout(bytes: &[u8]) -> Layout {
    Layout::from_trailer(&bytes[bytes.len() - TRAILER_LEN as usize..]).unwrap()
}

/// The bytes `r` of `pack`.
fn slice(pack: &[u8], r: &Range<u64>) -> Vec<u8> {
    pack[r.start as usize..r.end as usize].to_vec()
}

/// The reply to a suffix request of `len` bytes: where it starts, its bytes.
fn tail(pack: &[u8], len: u64) -> (u64, Vec<u8>) {
    let size = pack.len() as u64;
    let start = size - len.min(size);
    (start, slice(pack, &(start..size)))
}

/// Drives `plan` with right answers; returns the ranges asked for in the
/// second round trip, if there was one.
fn drive(plan: &mut LazyOpen, pack: &[u8]) -> packfs_core::Result<Vec<Range<u64>>> {
    let mut second = Vec::new();
    loop {
        match plan.next() {
            OpenStep::Tail(len) => {
                let (start, bytes) = tail(pack, len);
                plan.accept_tail(start, bytes, pack.len() as u64)?;
            }
            OpenStep::Fetch(ranges) => {
                for r in &ranges {
                    plan.accept(r.start, slice(pack, r))?;
                }
                if plan.size().is_some_and(|s| ranges.iter().all(|r| r.end < s)) {
                    second = ranges;
                }
            }
            OpenStep::Open => return Ok(second),
        }
    }
}

/// `pack` with every extent not here stored from `bytes`.
fn load(pack: &PackFs<Partial>, bytes: &[u8]) {
    for r in pack.missing() {
        pack.store(r.start, &slice(bytes, &r)).unwrap();
    }
}

fn corrupt(e: Error) -> CorruptPack {
    match e {
        Error::Corrupt(c) => c,
        e => panic!("not Corrupt: {e}"),
    }
}

#[test]
fn a_pack_opens_in_two_round_trips_at_most_and_reads_as_the_tree() {
    for (i, (fs, bytes)) in packs().iter().enumerate() {
        let mut plan = LazyOpen::new();
        let second = drive(&mut plan, bytes).unwrap();
        let size = bytes.len() as u64;
        let index = layout(bytes).index_offset;
        match i {
            0 => assert!(size <= TAIL_LEN && second.is_empty(), "a small pack comes whole in the tail"),
            1 => {
                assert!(size > TAIL_LEN && index >= size - TAIL_LEN);
                assert_eq!(second, [0..HEADER_LEN], "the index came with the tail");
            }
            _ => {
                assert!(index < size - TAIL_LEN);
                assert_eq!(second, [0..HEADER_LEN, index..size - TAIL_LEN], "the header and the rest of the index");
            }
        }
        let pack = plan.open(ReadOptions::new()).unwrap();
        load(&pack, bytes);
        assert_same_tree(&pack, fs);
    }
}

#[test]
fn a_known_size_asks_for_the_tail_as_a_range() {
    let (fs, bytes) = &packs()[2];
    let size = bytes.len() as u64;
    let mut plan = LazyOpen::with_size(size).unwrap();
    assert_eq!(plan.next(), OpenStep::Fetch(vec![size - TAIL_LEN..size]));
    drive(&mut plan, bytes).unwrap();
    let pack = plan.open(ReadOptions::new()).unwrap();
    load(&pack, bytes);
    assert_same_tree(&pack, fs);
}

#[test]
fn the_data_that_comes_with_the_tail_is_kept_once_checked() {
    let (_, bytes) = &packs()[1];
    let mut plan = LazyOpen::new();
    drive(&mut plan, bytes).unwrap();
    let pack = plan.open(ReadOptions::new()).unwrap();
    let tail_start = bytes.len() as u64 - TAIL_LEN;
    let missing: Vec<u64> = pack.missing().iter().flat_map(|r| pack.extents_within(r.clone())).collect();
    let inside: Vec<u64> = (0..pack.extent_count()).filter(|&k| pack.extent(k).unwrap().0 >= tail_start).collect();
    assert!(!inside.is_empty());
    assert!(inside.iter().all(|k| !missing.contains(k)), "the tail's extents are here");
    assert_eq!(missing.len() + inside.len(), pack.extent_count() as usize, "and only they");
    // A flipped byte in one of them: that one is fetched again, not served.
    let mut plan = LazyOpen::new();
    let OpenStep::Tail(len) = plan.next() else { panic!() };
    let (start, mut tail_bytes) = tail(bytes, len);
    let k = (0..pack.extent_count()).rev().find(|&k| pack.extent(k).is_some_and(|(a, e)| a >= start && e > a)).unwrap();
    let (a, _) = pack.extent(k).unwrap();
    tail_bytes[(a - start) as usize] ^= 1;
    plan.accept_tail(start, tail_bytes, bytes.len() as u64).unwrap();
    drive(&mut plan, bytes).unwrap();
    let damaged = plan.open(ReadOptions::new()).unwrap();
    assert!(damaged.missing().iter().any(|r| r.start <= a && a < r.end));
}

#[test]
fn a_server_that_ignores_ranges_gives_the_whole_pack() {
    for (fs, bytes) in packs() {
        let mut plan = LazyOpen::new();
        plan.accept_tail(0, bytes.clone(), bytes.len() as u64).unwrap();
        assert_eq!(plan.next(), OpenStep::Open);
        let pack = plan.open(ReadOptions::new()).unwrap();
        assert!(pack.is_complete());
        assert_same_tree(&pack, fs);
    }
}

#[test]
fn a_tail_reply_that_is_not_the_tail_is_corrupt() {
    let (_, bytes) = &packs()[2];
    let size = bytes.len() as u64;
    let (start, good) = tail(bytes, TAIL_LEN);
    let short = good[10..].to_vec();
    let cases: Vec<(u64, Vec<u8>, u64, CorruptKind)> = vec![
        // Short: ten bytes missing from its start.
        (start + 10, short.clone(), size, CorruptKind::Truncated { needed: TAIL_LEN, available: TAIL_LEN - 10 }),
        // Short at the start asked, so not reaching the end.
        (start, short, size, CorruptKind::Truncated { needed: TAIL_LEN, available: TAIL_LEN - 10 }),
        // Longer than asked, and not the whole pack.
        (start - 8, slice(bytes, &(start - 8..size)), size, CorruptKind::Unasked { len: TAIL_LEN + 8 }),
        // Past the end the reply itself claims.
        (start, good.clone(), size - 8, CorruptKind::Unasked { len: TAIL_LEN }),
        // Bytes from elsewhere.
        (start - 64, good.clone(), size, CorruptKind::Unasked { len: TAIL_LEN }),
    ];
    for (at, reply, claimed, kind) in cases {
        let mut plan = LazyOpen::new();
        let e = corrupt(plan.accept_tail(at, reply, claimed).unwrap_err());
        assert_eq!(e.kind, kind, "{e}");
    }
    // A tail bigger than the pack it claims to end.
    let mut plan = LazyOpen::new();
    let e = corrupt(plan.accept_tail(0, bytes.clone(), size - 1).unwrap_err());
    assert!(matches!(e.kind, CorruptKind::Unasked { .. }), "{e}");
}

#[test]
fn a_pack_shorter_than_a_header_and_a_trailer_is_refused_unfetched() {
    for size in [0, 1, HEADER_LEN, HEADER_LEN + TRAILER_LEN - 1] {
        let e = corrupt(LazyOpen::with_size(size).unwrap_err());
        assert_eq!(e.kind, CorruptKind::Truncated { needed: HEADER_LEN + TRAILER_LEN, available: size });
        let e = corrupt(LazyOpen::new().accept_tail(0, vec![0; size as usize], size).unwrap_err());
        assert_eq!(e.kind, CorruptKind::Truncated { needed: HEADER_LEN + TRAILER_LEN, available: size });
    }
}

/// A pack's tail whose trailer claims what `edit` sets, resealed; the pack
/// is `size` bytes long (its bytes before the tail are never read).
fn forged_tail(edit: impl Fn(&mut [u8]), size: u64) -> (u64, Vec<u8>) {
    let (_, bytes) = &packs()[2];
    let mut t = bytes[bytes.len() - TAIL_LEN as usize..].to_vec();
    let at = t.len() - TRAILER_LEN as usize;
    edit(&mut t[at..]);
    t[at + 16..at + 24].copy_from_slice(&size.to_le_bytes());
    let sum = packfs_core::pack::checksum(&t[at..at + 120]);
    t[at + 120..].copy_from_slice(&sum.to_le_bytes());
    (size - TAIL_LEN, t)
}

fn index_offset(v: u64) -> impl Fn(&mut [u8]) {
    move |t: &mut [u8]| t[40..48].copy_from_slice(&v.to_le_bytes())
}

#[test]
fn a_trailer_that_lies_is_refused_before_the_rest_is_fetched() {
    // An index region of more than a lazy reader fetches: refused on the
    // trailer alone, with the figures.
    let size = 8 << 30;
    let (at, t) = forged_tail(index_offset(HEADER_LEN), size);
    let mut plan = LazyOpen::new();
    let e = corrupt(plan.accept_tail(at, t, size).unwrap_err());
    let kind = CorruptKind::TooLarge { what: Limit::FetchedIndex, value: size - HEADER_LEN, limit: MAX_FETCHED_INDEX };
    assert_eq!((e.offset, e.kind), (HEADER_LEN, kind));
    assert!(e.to_string().contains("more than a lazily opened pack may have"), "{e}");
    // An index region past the end.
    let size = 1 << 20;
    let (at, t) = forged_tail(index_offset(size + 8), size);
    let e = corrupt(LazyOpen::new().accept_tail(at, t, size).unwrap_err());
    assert!(matches!(e.kind, CorruptKind::OutOfBounds { field: "index_offset", .. }), "{e}");
    // A trailer naming another length than the pack's.
    let (at, t) = forged_tail(|_| {}, size + 8);
    let e = corrupt(LazyOpen::new().accept_tail(at - 8, t, size).unwrap_err());
    assert_eq!(e.kind, CorruptKind::LengthMismatch { expected: size + 8, actual: size });
    let (at, mut t) = forged_tail(|_| {}, size);
    let n = t.len();
    t[n - 1] ^= 1;
    let e = corrupt(LazyOpen::new().accept_tail(at, t, size).unwrap_err());
    assert!(matches!(e.kind, CorruptKind::Checksum { .. }), "{e}");
    assert_eq!(e.offset, size - TRAILER_LEN, "where the trailer lies");
}

#[test]
fn replies_may_come_in_any_order_but_each_once_and_as_asked() {
    let (fs, bytes) = &packs()[2];
    let size = bytes.len() as u64;
    let start_plan = || {
        let mut plan = LazyOpen::new();
        let (start, t) = tail(bytes, TAIL_LEN);
        plan.accept_tail(start, t, size).unwrap();
        let OpenStep::Fetch(ranges) = plan.next() else { panic!("two ranges to fetch") };
        assert_eq!(ranges.len(), 2);
        (plan, ranges)
    };
    // Out of order.
    let (mut plan, ranges) = start_plan();
    for r in ranges.iter().rev() {
        plan.accept(r.start, slice(bytes, r)).unwrap();
    }
    let pack = plan.open(ReadOptions::new()).unwrap();
    load(&pack, bytes);
    assert_same_tree(&pack, fs);
    // Twice.
    let (mut plan, ranges) = start_plan();
    plan.accept(ranges[0].start, slice(bytes, &ranges[0])).unwrap();
    assert_eq!(plan.next(), OpenStep::Fetch(vec![ranges[1].clone()]));
    let e = corrupt(plan.accept(ranges[0].start, slice(bytes, &ranges[0])).unwrap_err());
    assert!(matches!(e.kind, CorruptKind::Unasked { .. }), "{e}");
    // Short, long, elsewhere, past the end.
    let r = &ranges[1];
    let cases = [
        (
            r.start,
            slice(bytes, &(r.start..r.end - 1)),
            CorruptKind::Truncated { needed: r.end - r.start, available: r.end - r.start - 1 },
        ),
        (r.start, slice(bytes, &(r.start..r.end + 1)), CorruptKind::Unasked { len: r.end - r.start + 1 }),
        (r.start + 8, slice(bytes, &(r.start + 8..r.end)), CorruptKind::Unasked { len: r.end - r.start - 8 }),
        (size - 4, vec![0; 8], CorruptKind::Unasked { len: 8 }),
        (u64::MAX, vec![0; 8], CorruptKind::Unasked { len: 8 }),
    ];
    for (at, reply, kind) in cases {
        let (mut plan, _) = start_plan();
        assert_eq!(corrupt(plan.accept(at, reply).unwrap_err()).kind, kind);
    }
    // Opening before all is here is the caller's mistake.
    let (plan, _) = start_plan();
    assert_eq!(plan.open(ReadOptions::new()).unwrap_err(), Error::Invalid);
    assert_eq!(LazyOpen::new().accept(0, vec![1]).unwrap_err(), Error::Invalid);
}

#[test]
fn ranges_merge_within_a_gap_and_a_length() {
    let m = |rs: &[Range<u64>], gap, len| -> Vec<(Range<u64>, Range<usize>)> {
        merge_ranges(rs.iter().cloned(), gap, len).into_iter().map(|m| (m.range, m.members)).collect()
    };
    let rs = [0..10, 10..20, 20 + MERGE_GAP - 1..30 + MERGE_GAP, 40 + 2 * MERGE_GAP..50 + 2 * MERGE_GAP];
    assert_eq!(
        m(&rs, MERGE_GAP, u64::MAX),
        [(0..30 + MERGE_GAP, 0..3), (40 + 2 * MERGE_GAP..50 + 2 * MERGE_GAP, 3..4)]
    );
    assert_eq!(m(&rs[..2], MERGE_GAP, 15), [(0..10, 0..1), (10..20, 1..2)], "at most 15 bytes a range");
    assert_eq!(m(&[0..100], 0, 10), [(0..100, 0..1)], "a range longer alone stays one");
    assert_eq!(m(&[50..60, 0..10], MERGE_GAP, u64::MAX), [(50..60, 0..1), (0..10, 1..2)], "out of order");
    assert_eq!(m(&[0..10, 5..8], MERGE_GAP, u64::MAX), [(0..10, 0..2)], "overlapping");
    assert!(m(&[], MERGE_GAP, 1).is_empty());
}

/// What a faulty server may do to one reply.
#[derive(Debug, Clone)]
enum Fault {
    None,
    /// Cut this many bytes off its end.
    Short(usize),
    /// This many more bytes, from the pack past the range, else zeros.
    Long(usize),
    /// Starting this much later (or earlier, negative) than asked.
    Shift(i64),
    /// Flip a byte at this fraction of the reply.
    Flip(u16),
    /// Send it twice.
    Twice,
    /// Claim a size this much off (a tail reply only).
    Size(i64),
}

fn fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        4 => Just(Fault::None),
        1 => (1usize..200).prop_map(Fault::Short),
        1 => (1usize..200).prop_map(Fault::Long),
        1 => (-200i64..200).prop_map(Fault::Shift),
        2 => any::<u16>().prop_map(Fault::Flip),
        1 => Just(Fault::Twice),
        1 => (-200i64..200).prop_map(Fault::Size),
    ]
}

/// The reply a faulty server gives to `r` of `pack`: replies `(start, bytes)`
/// and the size it claims.
fn reply(pack: &[u8], r: &Range<u64>, f: &Fault) -> (Vec<(u64, Vec<u8>)>, u64) {
    let size = pack.len() as u64;
    let (mut start, mut bytes) = (r.start, slice(pack, r));
    let mut claimed = size;
    let mut times = 1;
    match *f {
        Fault::None => {}
        Fault::Short(n) => bytes.truncate(bytes.len().saturating_sub(n)),
        Fault::Long(n) => {
            let end = (r.end as usize + n).min(pack.len());
            bytes.extend_from_slice(&pack[r.end as usize..end]);
            bytes.resize(bytes.len() + n - (end - r.end as usize), 0);
        }
        Fault::Shift(d) => {
            start = start.saturating_add_signed(d).min(size);
            bytes = slice(pack, &(start..(start + bytes.len() as u64).min(size)));
        }
        Fault::Flip(at) => {
            if !bytes.is_empty() {
                let i = at as usize * bytes.len() / 65536;
                bytes[i] ^= 0x40;
            }
        }
        Fault::Twice => times = 2,
        Fault::Size(d) => claimed = size.saturating_add_signed(d),
    }
    (vec![(start, bytes); times], claimed)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever a server answers, the plan ends in the pack (which then
    /// reads as the tree) or a typed error, never a panic nor a wrong
    /// pack; replies come in any order.
    #[test]
    fn any_replies_end_in_the_pack_or_a_typed_error(
        which in 0usize..3,
        known_size in any::<bool>(),
        faults in proptest::collection::vec(fault(), 4),
        reverse in any::<bool>(),
    ) {
        let (fs, bytes) = &packs()[which];
        let size = bytes.len() as u64;
        let mut faults = faults.into_iter();
        let result = (|| {
            let mut plan = if known_size { LazyOpen::with_size(size)? } else { LazyOpen::new() };
            for _ in 0..4 {
                match plan.next() {
                    OpenStep::Tail(len) => {
                        let (start, _) = tail(bytes, len);
                        let (replies, claimed) = reply(bytes, &(start..size), &faults.next().unwrap_or(Fault::None));
                        for (at, b) in replies {
                            plan.accept_tail(at, b, claimed)?;
                        }
                    }
                    OpenStep::Fetch(mut ranges) => {
                        if reverse {
                            ranges.reverse();
                        }
                        for r in &ranges {
                            for (at, b) in reply(bytes, r, &faults.next().unwrap_or(Fault::None)).0 {
                                plan.accept(at, b)?;
                            }
                        }
                    }
                    OpenStep::Open => return plan.open(ReadOptions::new()),
                }
            }
            Err(Error::Invalid)
        })();
        match result {
            Ok(pack) => {
                load(&pack, bytes);
                assert_same_tree(&pack, fs);
            }
            // A flipped version byte: a version this reader does not know.
            Err(Error::Corrupt(_) | Error::UnsupportedVersion { .. }) => {}
            // A second tail reply.
            Err(Error::Invalid) => {}
            Err(e) => prop_assert!(false, "an untyped error: {e}"),
        }
    }

    /// Random bytes as a tail: a typed error or a plan, never a panic.
    #[test]
    fn any_tail_is_read_or_refused(
        which in 0usize..3,
        start in 0u64..(1 << 20),
        cut in 0usize..(TAIL_LEN as usize),
        flips in proptest::collection::vec((any::<u16>(), any::<u8>()), 0..4),
    ) {
        let (_, bytes) = &packs()[which];
        let mut t = bytes[bytes.len().saturating_sub(TAIL_LEN as usize)..].to_vec();
        t.truncate(t.len() - cut.min(t.len()));
        for (at, x) in flips {
            if !t.is_empty() {
                let i = at as usize * t.len() / 65536;
                t[i] ^= x;
            }
        }
        let n = t.len() as u64;
        let mut plan = LazyOpen::new();
        if plan.accept_tail(start, t, start + n).is_ok() {
            let _ = plan.next();
        }
    }
}
