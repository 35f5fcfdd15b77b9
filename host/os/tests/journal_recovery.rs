//! Opening a journal cuts a torn tail, and nothing else.
//!
//! The story: recovery used to treat every bad record as a torn tail, and
//! opening for writing cut the log at the first one. A flipped byte in
//! record 5 of 1,000 silently destroyed the 995 acknowledged changes
//! after it, and a record of a newer version (an unknown tag or flag,
//! checksum intact) was destroyed the same way. Now a bad record is torn
//! only when no good record follows it (`docs/journal-format.md` §8);
//! anything else refuses to open, and the log is left byte for byte as it
//! was.

use std::error::Error as _;
use std::sync::OnceLock;

use packfs_core::Error;
use packfs_core::journal::{CorruptJournal, CorruptJournalKind, HEADER_LEN, Records, frame};
use packfs_core::mem::Quota;
use packfs_core::{FileSystem, Snapshot};
use packfs_os::journal::{Journal, JournalError, SyncPolicy};
use proptest::prelude::*;
use proptest::sample::Index;

/// Records in the log `base` writes.
const N: usize = 8;

/// A log of `N` records (`mkdir d0` to `d7`), and the file offset where
/// each record ends.
fn base() -> &'static (Vec<u8>, Vec<usize>) {
    static BASE: OnceLock<(Vec<u8>, Vec<usize>)> = OnceLock::new();
    BASE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path(), SyncPolicy::EveryOp, Quota::default()).unwrap();
        let fs = j.fs();
        for i in 0..N {
            fs.mkdir(fs.root(), &format!("d{i}"), 0o755).unwrap();
        }
        drop(j);
        let log = std::fs::read(dir.path().join("journal-0.log")).unwrap();
        let mut records = Records::new(&log[HEADER_LEN..]);
        let mut ends = Vec::new();
        while records.next().is_some() {
            ends.push(HEADER_LEN + records.valid_len());
        }
        assert!(records.is_clean() && ends.len() == N);
        (log, ends)
    })
}

/// Where record `k` of `base` begins.
fn start(k: usize) -> usize {
    if k == 0 { HEADER_LEN } else { base().1[k - 1] }
}

/// Opens a journal directory whose log is `log`; returns the result and
/// the log's bytes after.
fn open(log: &[u8]) -> (Result<Vec<String>, JournalError>, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal-0.log");
    std::fs::write(&path, log).unwrap();
    let names = |fs: &dyn FileSystem| {
        let mut names: Vec<_> =
            fs.read_dir(fs.root(), None, 100).unwrap().into_iter().map(|e| e.name.to_string()).collect();
        names.sort();
        names
    };
    let read = Journal::read(dir.path()).map(|t: Snapshot| names(&t));
    let opened = Journal::open(dir.path(), SyncPolicy::EveryOp, Quota::default()).map(|j| names(&**j.fs()));
    // The read-only path follows the same rule.
    assert_eq!(read.as_ref().ok(), opened.as_ref().ok(), "Journal::read and Journal::open agree");
    assert_eq!(read.is_err(), opened.is_err());
    (opened, std::fs::read(&path).unwrap())
}

/// The first `n` directories `base` makes.
fn first(n: usize) -> Vec<String> {
    let mut names: Vec<_> = (0..n).map(|i| format!("d{i}")).collect();
    names.sort();
    names
}

/// The refusal's offset and kind, checking that its message (as the CLI
/// prints it: each cause after a colon) names the log and the offset.
fn refusal(e: JournalError) -> (u64, CorruptJournalKind) {
    let mut message = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        message += &format!(": {c}");
        cause = c.source();
    }
    let JournalError::Corrupt { path, source: Error::CorruptJournal(CorruptJournal { offset, kind }) } = e else {
        panic!("not a corrupt journal: {message}")
    };
    assert!(path.ends_with("journal-0.log"), "{message}");
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains(&format!("corrupt journal at byte {offset}: ")), "{message}");
    (offset, kind)
}

/// Every byte of every record flipped in turn: in the last record it is
/// a torn tail, cut, leaving the first `N - 1` changes; in any other the
/// journal refuses to open, and the log is unchanged.
#[test]
fn a_damaged_byte_is_cut_only_in_the_last_record() {
    let (log, ends) = base();
    for k in 0..N {
        for at in start(k)..ends[k] {
            let mut bad = log.clone();
            bad[at] ^= 0x10;
            let (opened, after) = open(&bad);
            if k == N - 1 {
                assert_eq!(opened.unwrap(), first(N - 1), "byte {at}");
                assert_eq!(after, log[..start(k)], "byte {at}: the torn tail is cut");
            } else {
                let (offset, kind) = refusal(opened.unwrap_err());
                let next = ends[k] as u64;
                assert_eq!(offset, start(k) as u64, "byte {at}");
                assert_eq!(kind, CorruptJournalKind::DamagedRecord { record: k as u64, next }, "byte {at}");
                assert!(after == bad, "byte {at}: the log is left as it was");
            }
        }
    }
}

/// The last record cut at every byte: it opens to the first `N - 1`
/// changes, and the log is cut back to them.
#[test]
fn a_torn_tail_is_cut_at_every_byte() {
    let (log, ends) = base();
    for cut in start(N - 1)..ends[N - 1] {
        let (opened, after) = open(&log[..cut]);
        assert_eq!(opened.unwrap(), first(N - 1), "cut at {cut}");
        assert_eq!(after, log[..start(N - 1)], "cut at {cut}");
    }
}

/// A record whose checksum holds but whose tag, or open flag, this
/// version does not know (a newer writer's) is refused where it stands,
/// in the middle or last, and the log is unchanged.
#[test]
fn an_unknown_record_is_refused_mid_log_and_last() {
    let (log, _) = base();
    let mut payload = vec![0; 12];
    payload.extend_from_slice(&[13, 1, 2, 3, 4]);
    let mut unknown = Vec::new();
    frame(&payload, &mut unknown);
    for k in [0, 3, N] {
        let bad = [&log[..start(k)], &unknown, &log[start(k)..]].concat();
        let (opened, after) = open(&bad);
        let (offset, kind) = refusal(opened.unwrap_err());
        assert_eq!(
            (offset, kind),
            (start(k) as u64, CorruptJournalKind::UnknownRecord { record: k as u64, tag: Some(13) })
        );
        assert!(after == bad, "before record {k}: the log is left as it was");
    }
    // An unknown open flag (bit 7), with a valid checksum, last.
    let mut open_payload = vec![0; 12];
    open_payload.push(1); // OPEN: dir, name, flags, mode
    open_payload.extend_from_slice(&1u64.to_le_bytes());
    open_payload.extend_from_slice(&1u32.to_le_bytes());
    open_payload.extend_from_slice(&[b'f', 0x88]);
    open_payload.extend_from_slice(&0o644u32.to_le_bytes());
    let mut bad = log.clone();
    frame(&open_payload, &mut bad);
    let (opened, after) = open(&bad);
    let kind = CorruptJournalKind::UnknownRecord { record: N as u64, tag: Some(1) };
    assert_eq!(refusal(opened.unwrap_err()), (log.len() as u64, kind));
    assert!(after == bad);
}

/// Zeros after the last record (a file grown but not written when the
/// machine stopped; this writer never preallocates) are a torn tail.
#[test]
fn trailing_zeros_are_a_torn_tail() {
    let (log, _) = base();
    let mut zeros = log.clone();
    zeros.resize(log.len() + 4096, 0);
    let (opened, after) = open(&zeros);
    assert_eq!(opened.unwrap(), first(N));
    assert_eq!(after, *log);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// A log of the first `n` records, one random byte damaged, perhaps
    /// cut short: it opens, cut before the first bad record, exactly when
    /// no whole record follows that one; otherwise it is refused and left
    /// as it was.
    #[test]
    fn random_damage_is_cut_or_refused(
        n in 1..=N,
        flip in any::<Index>(),
        xor in 1..=255u8,
        cut in any::<Index>(),
        short in any::<bool>(),
    ) {
        let (log, ends) = base();
        let len = ends[n - 1];
        let x = HEADER_LEN + flip.index(len - HEADER_LEN);
        let c = if short { HEADER_LEN + cut.index(len - HEADER_LEN + 1) } else { len };
        let mut bad = log[..len].to_vec();
        bad[x] ^= xor;
        bad.truncate(c);
        let whole_before = |at: usize| ends.iter().filter(|&&e| e <= at).count();
        let (opened, after) = open(&bad);
        if x < c && ends.get(whole_before(x) + 1).is_some_and(|&e| e <= c) {
            let k = whole_before(x);
            let kind = CorruptJournalKind::DamagedRecord { record: k as u64, next: ends[k] as u64 };
            prop_assert_eq!(refusal(opened.unwrap_err()), (start(k) as u64, kind));
            prop_assert!(after == bad);
        } else {
            let k = whole_before(x.min(c));
            prop_assert_eq!(opened.unwrap(), first(k));
            prop_assert_eq!(after, log[..start(k)].to_vec());
        }
    }
}
