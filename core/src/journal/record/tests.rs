//! The record codec's tests: every op round-trips, torn and damaged
//! tails, flags this version does not know.

use proptest::prelude::*;
use proptest::sample::Index;

use super::*;

fn every_op() -> Vec<Op<'static>> {
    vec![
        Op::Open { dir: 1, name: "f", opts: OpenOptions { mode: 0o600, ..OpenOptions::create_new() } },
        Op::WriteAt { ino: 2, offset: 9, data: b"bytes" },
        Op::Append { ino: 2, data: b"" },
        Op::SetLen { ino: 2, len: u64::MAX },
        Op::Mkdir { dir: 1, name: "d", mode: 0o755 },
        Op::Rmdir { dir: 1, name: "d" },
        Op::Unlink { dir: 1, name: "f" },
        Op::Rename { from_dir: 1, from: "a", to_dir: 3, to: "b" },
        Op::Symlink { dir: 1, name: "l", target: "../x" },
        Op::Link { ino: 2, dir: 1, name: "g" },
        Op::SetTimes { ino: 2, atime: SetTime::Now, mtime: SetTime::At(Timestamp::new(5, 6)) },
        Op::SetTimes { ino: 2, atime: SetTime::Keep, mtime: SetTime::Keep },
        Op::SetMode { ino: 2, mode: 0o4755 },
    ]
}

#[test]
fn every_op_round_trips() {
    let ops = every_op();
    let (log, _) = log_of(&ops);
    let mut records = Records::new(&log);
    let decoded: Vec<_> = records.by_ref().collect();
    assert!(records.is_clean());
    assert_eq!(decoded.len(), ops.len());
    for (i, ((now, op), want)) in decoded.iter().zip(&ops).enumerate() {
        assert_eq!(*op, Change::Op(*want));
        assert_eq!(*now, Timestamp::new(i as u64, 7));
    }
}

/// Where `records` stopped, having read them all: the good records'
/// count, the valid length, and what follows.
fn read(body: &[u8]) -> (usize, usize, Tail) {
    let mut records = Records::new(body);
    let good = records.by_ref().count();
    (good, records.valid_len(), records.tail().unwrap())
}

/// One damaged byte anywhere: in the last record it is a torn tail,
/// cut; in any other the good record after it says it is damage, and
/// where that record begins.
#[test]
fn a_damaged_record_is_torn_only_when_nothing_good_follows() {
    let (log, ends) = log_of(&every_op());
    let last = ends.len() - 1;
    for flip in 0..log.len() {
        let mut bad = log.clone();
        bad[flip] ^= 0x40;
        let k = ends.iter().position(|&e| e > flip).unwrap();
        let start = if k == 0 { 0 } else { ends[k - 1] };
        let want = if k == last { Tail::Torn } else { Tail::Damaged { next: ends[k] } };
        assert_eq!(read(&bad), (k, start, want), "flip at {flip}, in record {k}");
    }
    // A torn tail: every cut inside the last record drops just it.
    for cut in ends[last - 1] + 1..log.len() {
        assert_eq!(read(&log[..cut]), (last, ends[last - 1], Tail::Torn), "cut at {cut}");
    }
    assert_eq!(read(&log), (ends.len(), log.len(), Tail::Clean));
    // A length that runs past the end is not an allocation; with good
    // records after it, it is damage.
    let mut huge = log.clone();
    huge[..4].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(read(&huge), (0, 0, Tail::Damaged { next: ends[0] }));
    assert_eq!(read(&huge[..ends[0]]), (0, 0, Tail::Torn));
}

/// Zeros after the last good record (a file grown but not written
/// before a crash) are torn; zeros with a good record after them are
/// damage.
#[test]
fn zeros_are_torn_only_at_the_end() {
    let (log, ends) = log_of(&every_op());
    let n = ends.len();
    let mut zeros = log.clone();
    zeros.resize(log.len() + 5000, 0);
    assert_eq!(read(&zeros), (n, log.len(), Tail::Torn));
    let mut last_zeroed = log.clone();
    last_zeroed[ends[n - 2]..].fill(0);
    last_zeroed.resize(log.len() + 100, 0);
    assert_eq!(read(&last_zeroed), (n - 1, ends[n - 2], Tail::Torn));
    let mut hole = log.clone();
    hole[ends[2]..ends[4]].fill(0);
    assert_eq!(read(&hole), (3, ends[2], Tail::Damaged { next: ends[4] }));
}

/// A record whose checksum holds but whose tag or flag this version
/// does not know is refused where it stands, last or not.
#[test]
fn an_unknown_record_is_not_a_torn_tail() {
    let (log, ends) = log_of(&every_op());
    let mut payload = Vec::new();
    payload.extend_from_slice(&[0; 12]);
    payload.extend_from_slice(&[13, 1, 2, 3]);
    let mut unknown = Vec::new();
    frame(&payload, &mut unknown);
    for at in [0, ends[3], log.len()] {
        let body = [&log[..at], &unknown, &log[at..]].concat();
        let k = ends.iter().filter(|&&e| e <= at).count();
        assert_eq!(read(&body), (k, at, Tail::Unknown { tag: Some(13) }), "at {at}");
    }
    // An unknown open flag, last.
    let (open, _) = log_of(&[Op::Open { dir: 1, name: "f", opts: OpenOptions::create() }]);
    let mut flagged = open[RECORD_HEAD..].to_vec();
    let flags_at = flagged.iter().rposition(|&b| b == b'f').unwrap() + 1;
    flagged[flags_at] |= 0x80;
    let mut body = log.clone();
    frame(&flagged, &mut body);
    assert_eq!(read(&body), (ends.len(), log.len(), Tail::Unknown { tag: Some(OPEN) }));
    let mut short = log.clone();
    frame(&[0; 5], &mut short);
    assert_eq!(read(&short), (ends.len(), log.len(), Tail::Unknown { tag: None }));
}

/// A torn write whose data hold records (a journal kept in a journal)
/// is still a torn tail: its data are not searched for records.
#[test]
fn records_inside_a_torn_write_are_data() {
    let (inner, _) = log_of(&every_op());
    let (log, ends) = log_of(&[
        Op::Mkdir { dir: 1, name: "d", mode: 0o755 },
        Op::WriteAt { ino: 2, offset: 0, data: &inner },
        Op::Append { ino: 2, data: &inner },
    ]);
    for cut in [ends[1] + 200, ends[1] + 100 + inner.len() / 2, log.len() - 1] {
        assert_eq!(read(&log[..cut]), (2, ends[1], Tail::Torn), "cut at {cut}");
    }
    // Its data damaged, with a good record after it: damage, found
    // after its data.
    let mut bad = log.clone();
    bad[ends[0] + 100] ^= 1;
    assert_eq!(read(&bad), (1, ends[0], Tail::Damaged { next: ends[1] }));
}

proptest! {
    /// Random logs, one random damaged byte and a random cut: the
    /// reader stops at the first bad record, and calls it torn exactly
    /// when no whole record follows it.
    #[test]
    fn random_damage(
        names in proptest::collection::vec("[a-z]{1,20}", 1..12),
        data in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 12),
        flip in any::<Index>(),
        xor in 1..=255u8,
        cut in any::<Index>(),
        whole in any::<bool>(),
    ) {
        let ops: Vec<_> = names
            .iter()
            .zip(&data)
            .enumerate()
            .map(|(i, (name, data))| match i % 2 {
                0 => Op::Mkdir { dir: 1, name, mode: 0o755 },
                _ => Op::WriteAt { ino: 2, offset: i as u64, data },
            })
            .collect();
        let (mut log, ends) = log_of(&ops);
        let x = flip.index(log.len());
        log[x] ^= xor;
        let c = if whole { log.len() } else { cut.index(log.len() + 1) };
        let whole_before = |at: usize| ends.iter().filter(|&&e| e <= at).count();
        let start = |k: usize| if k == 0 { 0 } else { ends[k - 1] };
        let want = if x < c {
            let k = whole_before(x);
            let tail = if ends.get(k + 1).is_some_and(|&e| e <= c) { Tail::Damaged { next: ends[k] } } else { Tail::Torn };
            (k, start(k), tail)
        } else {
            let k = whole_before(c);
            (k, start(k), if start(k) == c { Tail::Clean } else { Tail::Torn })
        };
        prop_assert_eq!(read(&log[..c]), want);
    }
}

/// An open flag this version does not know is not taken.
#[test]
fn unknown_open_flags_do_not_decode() {
    // The op after the record's head and time: tag, dir, name, flags, mode.
    let (log, _) = log_of(&[Op::Open { dir: 1, name: "f", opts: OpenOptions::create() }]);
    let mut body = log[RECORD_HEAD + 12..].to_vec();
    assert!(Reader(&body).change().is_some());
    let flags_at = body.iter().rposition(|&b| b == b'f').unwrap() + 1;
    body[flags_at] |= 0x80;
    assert_eq!(Reader(&body).change(), None, "not taken");
}
