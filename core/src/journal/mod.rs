//! The write-ahead journal's format: a header, then one length-prefixed,
//! checksummed record per acknowledged change (`docs/journal-format.md` is
//! the normative spec). The host writes the file; this module encodes,
//! decodes and replays, with no I/O of its own.
//!
//! ```text
//! header  "PACKFSJ1" (8 bytes) | generation: u64 | created secs: u64
//!         | created nanos: u32 | reserved: u32 (0)
//! record  len: u32 | xxh3-64(payload): u64 | payload (len bytes)
//! payload secs: u64 | nanos: u32 | tag: u8 | fields of the op
//! fields  integers little-endian; names and bytes as len: u32 | bytes
//! ```
//!
//! A log is read up to its first record that is short, fails its checksum
//! or does not decode. Everything before it is replayed; nothing after it
//! is ever misread as data. When nothing good follows it, it is a torn
//! tail (the crash came mid-append), which the caller cuts off before
//! appending again; otherwise — damage with good records after it, or a
//! record of a newer version — replay refuses the log, so that nothing
//! acknowledged is ever cut away.
//!
//! Here: the header, the [`Sink`] a host's log file implements, and
//! [`replay`]; `record` encodes and decodes the records
//! ([`encode`], [`Records`]).

// A record's fields are fixed-width: a silent truncation writes or reads
// the wrong bytes (and the web build's usize is 32 bits).
#![warn(clippy::cast_possible_truncation)]

mod record;

pub use crate::error::{CorruptJournal, CorruptJournalKind};
pub use record::{Change, RECORD_HEAD, Records, Tail, encode, encode_part, frame};

use crate::mem::{Log, Op, Part, Quota, Tree};
use crate::{Error, Result, Timestamp};
use record::Reader;

/// Magic number opening a journal file of version 1: changes only.
pub const MAGIC: [u8; 8] = *b"PACKFSJ1";
/// Magic number of version 2: the image of a tree, then changes.
pub const MAGIC_V2: [u8; 8] = *b"PACKFSJ2";
/// Bytes of the header.
pub const HEADER_LEN: usize = 32;

/// A journal's header: which checkpoint it continues, and when the empty
/// tree it starts from was made (the root's timestamps, when there is no
/// checkpoint pack to take them from).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The checkpoint generation this log applies to.
    pub generation: u64,
    /// When the starting tree was created.
    pub created: Timestamp,
    /// True for version 2: the log opens with the image of the tree its
    /// changes apply to, over the checkpoint.
    pub image: bool,
}

impl Header {
    /// The header's bytes.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut h = [0; HEADER_LEN];
        h[..8].copy_from_slice(if self.image { &MAGIC_V2 } else { &MAGIC });
        h[8..16].copy_from_slice(&self.generation.to_le_bytes());
        let created = Timestamp::new(self.created.secs, self.created.nanos);
        h[16..24].copy_from_slice(&created.secs.to_le_bytes());
        h[24..28].copy_from_slice(&created.nanos.to_le_bytes());
        h
    }

    /// Reads the header at the start of `log`.
    pub fn decode(log: &[u8]) -> Result<Self> {
        let corrupt = |offset, kind| Error::CorruptJournal(CorruptJournal { offset, kind });
        if let Some(found) = log.first_chunk::<8>()
            && *found != MAGIC
            && *found != MAGIC_V2
        {
            return Err(corrupt(0, CorruptJournalKind::BadMagic { found: *found }));
        }
        let (needed, available) = (HEADER_LEN as u64, log.len() as u64);
        let truncated = || corrupt(0, CorruptJournalKind::Truncated { needed, available });
        let mut r = Reader(log.get(8..HEADER_LEN).ok_or_else(truncated)?);
        let (generation, secs) = (r.u64().ok_or_else(truncated)?, r.u64().ok_or_else(truncated)?);
        let (nanos, reserved) = (r.u32().ok_or_else(truncated)?, r.u32().ok_or_else(truncated)?);
        // The reserved word is zero and nanoseconds stay below a second:
        // anything else is damage, not a time to take.
        if nanos >= 1_000_000_000 {
            return Err(corrupt(24, CorruptJournalKind::BadField { field: "created_nanos", value: nanos.into() }));
        }
        if reserved != 0 {
            return Err(corrupt(28, CorruptJournalKind::BadField { field: "reserved", value: reserved.into() }));
        }
        let image = log.first_chunk::<8>() == Some(&MAGIC_V2);
        Ok(Header { generation, created: Timestamp { secs, nanos }, image })
    }
}

/// Where a [`MemFs`](crate::MemFs) writes its records: the host's log file.
pub trait Sink: Send + Sync {
    /// Appends one whole record (all of it, or none of it: a failed append
    /// must leave the log as it was) and returns its sequence number. Called
    /// under the writer lock, before the change is published.
    fn append(&self, record: &[u8]) -> Result<u64>;
    /// Returns once record `seq` (and every one before it) is durable. A
    /// failure leaves the records it covered in the log, durable or not,
    /// while their changes fail: the sink must then take no more records
    /// (a later one could contradict a failed change that a replay will
    /// apply), as the host's log does.
    fn sync(&self, seq: u64) -> Result<()>;
    /// True: sync under the writer lock, so a change is durable before any
    /// reader sees it (one fsync per change). False: group commit — sync
    /// after publication and before acknowledging, so that concurrent
    /// writers share fsyncs.
    fn durable_before_visible(&self) -> bool;
    /// Told of each change as it is published, under the writer lock, with
    /// the tree it made: the host's log rewrites itself as the tree's
    /// image ([`Tree::image`], version 2) here once it has outgrown it.
    fn published(&self, _tree: &Tree) {}
}

/// Every byte sink records a `MemFs`'s changes in this format.
impl<S: Sink + ?Sized> Log for S {
    fn record(&self, op: &Op<'_>, now: Timestamp) -> Result<u64> {
        let mut record = Vec::new();
        encode(op, now, &mut record)?;
        self.append(&record)
    }

    fn durable(&self, seq: u64) -> Result<()> {
        self.sync(seq)
    }

    fn durable_before_visible(&self) -> bool {
        Sink::durable_before_visible(self)
    }

    fn published(&self, tree: &Tree) {
        Sink::published(self, tree);
    }
}

/// What [`replay`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replayed {
    /// Records applied.
    pub records: u64,
    /// Bytes of the body holding them: cut the file to `HEADER_LEN + this`.
    pub valid_len: u64,
    /// False when a torn tail was found after them (and is to be cut).
    pub clean: bool,
}

/// `op` for an error message: the bytes of a write as their count (a
/// record may carry a gigabyte).
fn shown(op: &Op<'_>) -> String {
    match *op {
        Op::WriteAt { ino, offset, data } => {
            format!("WriteAt {{ ino: {ino}, offset: {offset}, {} bytes }}", data.len())
        }
        Op::Append { ino, data } => format!("Append {{ ino: {ino}, {} bytes }}", data.len()),
        other => format!("{other:?}"),
    }
}

/// Applies the records of `body` (a log after its header) to `tree`: a
/// [`Replay`] of one slice.
pub fn replay(tree: &mut Tree, header: &Header, body: &[u8]) -> Result<Replayed> {
    let mut replay = Replay::new(tree, header);
    replay.records(body)?;
    replay.finish()
}

/// A replay in progress, fed a log body's records in pieces, so that a
/// log need not be held whole (the host reads it a record at a time).
///
/// Quotas are lifted while replaying — each change passed them when it was
/// acknowledged — and orphans (inodes whose last handle is gone with the
/// process) are reaped at the end. Only a torn tail ends the log early
/// ([`Replayed::clean`] false); a bad record with a good one after it is
/// [`CorruptJournalKind::DamagedRecord`], one whose checksum holds but
/// which does not decode [`CorruptJournalKind::UnknownRecord`], an
/// image in a version-1 log, or one that contradicts itself or does not
/// end before the first change
/// [`CorruptJournalKind::BadImage`], and a change that does not apply
/// (the log does not belong to this tree)
/// [`CorruptJournalKind::DoesNotApply`]: each at the record's offset in the
/// file (the body taken to start at [`HEADER_LEN`]).
pub struct Replay<'t> {
    tree: &'t mut Tree,
    limits: Quota,
    /// Records applied, and the body bytes that held them.
    count: u64,
    valid_len: u64,
    /// Version 2, before its image's end.
    in_image: bool,
    /// Version 1: an image record is unknown there.
    version1: bool,
    tail: Option<Tail>,
}

impl<'t> Replay<'t> {
    /// A replay of the log `header` opens onto `tree`.
    pub fn new(tree: &'t mut Tree, header: &Header) -> Self {
        let limits = tree.quota();
        tree.set_quota(Default::default());
        Replay { tree, limits, count: 0, valid_len: 0, in_image: header.image, version1: !header.image, tail: None }
    }

    /// Applies the good records at the start of `body`, the log's bytes
    /// from the end of the records applied so far; returns the bytes they
    /// took. [`Tail::Clean`]: all of `body` was whole records; anything
    /// else ends the replay (call [`Replay::finish`]), and is only sure
    /// when `body` runs to the end of the file: a record cut short by the
    /// end of a piece is to be given again, whole, with what follows.
    pub fn records(&mut self, body: &[u8]) -> Result<Tail> {
        let at = self.valid_len;
        let file_offset = |pos: usize| HEADER_LEN as u64 + at + pos as u64;
        let corrupt = |pos, kind| Error::CorruptJournal(CorruptJournal { offset: file_offset(pos), kind });
        let mut records = Records::new(body);
        loop {
            let pos = records.valid_len();
            let Some((now, change)) = records.next() else { break };
            let record = self.count;
            match change {
                Change::Image(_) if self.version1 => {
                    let why = "an image in a version-1 log";
                    return Err(corrupt(pos, CorruptJournalKind::BadImage { record, why }));
                }
                Change::Image(part) if self.in_image => {
                    self.tree
                        .restore(part)
                        .map_err(|why| corrupt(pos, CorruptJournalKind::BadImage { record, why }))?;
                    self.in_image = !matches!(part, Part::End { .. });
                }
                Change::Image(_) => {
                    return Err(corrupt(pos, CorruptJournalKind::BadImage { record, why: "a piece after its end" }));
                }
                Change::Op(_) if self.in_image => {
                    let why = "a change before its end";
                    return Err(corrupt(pos, CorruptJournalKind::BadImage { record, why }));
                }
                Change::Op(op) => {
                    op.apply(self.tree, now).map_err(|e| {
                        corrupt(pos, CorruptJournalKind::DoesNotApply { record, op: shown(&op), error: Box::new(e) })
                    })?;
                }
            }
            self.count += 1;
            self.valid_len = at + records.valid_len() as u64;
        }
        let pos = records.valid_len();
        let record = self.count;
        let tail = records.tail().unwrap_or(Tail::Clean);
        match tail {
            Tail::Damaged { next } => {
                let next = file_offset(next);
                Err(corrupt(pos, CorruptJournalKind::DamagedRecord { record, next }))
            }
            Tail::Unknown { tag } => Err(corrupt(pos, CorruptJournalKind::UnknownRecord { record, tag })),
            Tail::Clean | Tail::Torn => {
                self.tail = Some(tail);
                Ok(tail)
            }
        }
    }

    /// Ends the replay: refuses an image that never reached its end, puts
    /// the limits back and reaps the orphans.
    pub fn finish(self) -> Result<Replayed> {
        if self.in_image {
            let offset = HEADER_LEN as u64 + self.valid_len;
            let kind = CorruptJournalKind::BadImage { record: self.count, why: "the log ends before its image does" };
            return Err(Error::CorruptJournal(CorruptJournal { offset, kind }));
        }
        self.tree.reap_all();
        let clean = self.tail != Some(Tail::Torn);
        Ok(Replayed { records: self.count, valid_len: self.valid_len, clean })
    }
}

impl Drop for Replay<'_> {
    fn drop(&mut self) {
        self.tree.set_quota(self.limits);
    }
}

#[cfg(test)]
mod tests {
    use super::record::log_of;
    use super::*;
    use crate::SetTime;

    const V1: Header = Header { generation: 0, created: Timestamp { secs: 0, nanos: 0 }, image: false };

    #[test]
    fn headers() {
        let h = Header { generation: 42, created: Timestamp::new(7, 8), image: false };
        assert_eq!(Header::decode(&h.encode()), Ok(h));
        let v2 = Header { image: true, ..h };
        assert_eq!((&v2.encode()[..8], Header::decode(&v2.encode())), (&b"PACKFSJ2"[..], Ok(v2)));
        let corrupt = |offset, kind| Err(Error::CorruptJournal(CorruptJournal { offset, kind }));
        let mut bad = h.encode();
        bad[7] = b'3';
        assert_eq!(Header::decode(&bad), corrupt(0, CorruptJournalKind::BadMagic { found: *b"PACKFSJ3" }));
        assert_eq!(Header::decode(&bad[..3]), corrupt(0, CorruptJournalKind::Truncated { needed: 32, available: 3 }));
        let short = CorruptJournalKind::Truncated { needed: 32, available: 31 };
        assert_eq!(Header::decode(&h.encode()[..HEADER_LEN - 1]), corrupt(0, short));
        // Damage in the time or the reserved word is damage.
        let nanos = CorruptJournalKind::BadField { field: "created_nanos", value: 0xff00_0008 };
        let reserved = CorruptJournalKind::BadField { field: "reserved", value: 0x100 };
        for (at, byte, want) in [(27, 0xff, corrupt(24, nanos)), (29, 1, corrupt(28, reserved))] {
            let mut bad = h.encode();
            bad[at] = byte;
            assert_eq!(Header::decode(&bad), want, "byte {at}");
        }
        // An unnormalized time is written normalized.
        let carried = Header { generation: 1, created: Timestamp { secs: 5, nanos: 1_500_000_000 }, image: false };
        assert_eq!(Header::decode(&carried.encode()).unwrap().created, Timestamp::new(6, 500_000_000));
    }

    /// The live tree and its replay agree on a time given with nanoseconds
    /// past a second; a record of error names a write's size, not its bytes.
    #[test]
    fn replay_agrees_on_odd_input() {
        let odd = Timestamp { secs: 5, nanos: 1_500_000_000 };
        let ops = [Op::SetTimes { ino: 1, atime: SetTime::At(odd), mtime: SetTime::Keep }];
        let (log, _) = log_of(&ops);
        let mut tree = Tree::new(Timestamp::new(0, 0), Default::default());
        replay(&mut tree, &V1, &log).unwrap();
        let mut live = Tree::new(Timestamp::new(0, 0), Default::default());
        ops[0].apply(&mut live, Timestamp::new(0, 7)).unwrap();
        assert_eq!(tree.metadata(1).unwrap().atime, Timestamp::new(6, 500_000_000));
        assert_eq!(tree.metadata(1).unwrap().atime, live.metadata(1).unwrap().atime);

        let big = vec![7; 1 << 20];
        let (log, _) = log_of(&[Op::WriteAt { ino: 99, offset: 0, data: &big }]);
        let e = replay(&mut Tree::new(Timestamp::new(0, 0), Default::default()), &V1, &log).unwrap_err();
        assert!(e.to_string().len() < 200, "{e}");
    }

    /// A record that does not apply is named by its number and its offset
    /// in the file, with the error it met.
    #[test]
    fn a_record_that_does_not_apply_says_where() {
        let ops = [Op::Mkdir { dir: 1, name: "d", mode: 0o755 }, Op::Mkdir { dir: 1, name: "d", mode: 0o700 }];
        let (log, ends) = log_of(&ops);
        let e = replay(&mut Tree::new(Timestamp::new(0, 0), Default::default()), &V1, &log).unwrap_err();
        assert_eq!(e.code(), crate::Code::Io, "EIO, as before");
        let Error::CorruptJournal(CorruptJournal { offset, kind }) = e else { panic!("{e}") };
        assert_eq!(offset, (HEADER_LEN + ends[0]) as u64);
        let CorruptJournalKind::DoesNotApply { record: 1, error, .. } = kind else { panic!("{kind}") };
        assert_eq!(*error, Error::Exists);
    }

    /// Replay refuses damage with good records after it, and a record of a
    /// newer version, each at its offset; it stops before a torn tail.
    #[test]
    fn replay_refuses_what_is_not_a_torn_tail() {
        let ops = [Op::Mkdir { dir: 1, name: "a", mode: 0o755 }, Op::Mkdir { dir: 1, name: "b", mode: 0o755 }];
        let (log, ends) = log_of(&ops);
        let replayed = |body: &[u8]| replay(&mut Tree::new(Timestamp::new(0, 0), Default::default()), &V1, body);
        let mut bad = log.clone();
        bad[5] ^= 1;
        let at = |offset: usize, kind| {
            Err(Error::CorruptJournal(CorruptJournal { offset: (HEADER_LEN + offset) as u64, kind }))
        };
        let damaged = CorruptJournalKind::DamagedRecord { record: 0, next: (HEADER_LEN + ends[0]) as u64 };
        assert_eq!(replayed(&bad), at(0, damaged));
        let e = replayed(&bad).unwrap_err();
        assert_eq!(e.code(), crate::Code::Io);
        assert_eq!(
            e.to_string(),
            "corrupt journal at byte 32: record 0 is damaged (short or failing its checksum), \
             and a good record follows at byte 74"
        );
        let mut unknown = log[..ends[0]].to_vec();
        frame(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 200], &mut unknown);
        let kind = CorruptJournalKind::UnknownRecord { record: 1, tag: Some(200) };
        assert_eq!(replayed(&unknown), at(ends[0], kind));
        assert!(
            replayed(&unknown).unwrap_err().to_string().ends_with("tag 200, a record type this version does not know")
        );
        // The second record damaged: a torn tail, stopped before.
        let mut torn = log.clone();
        torn[ends[0] + 20] ^= 1;
        let r = replayed(&torn).unwrap();
        assert_eq!((r.records, r.valid_len, r.clean), (1, ends[0] as u64, false));
    }
}
