//! The write-ahead journal's format: a header, then one length-prefixed,
//! checksummed record per acknowledged change. The host writes the file;
//! this module encodes, decodes and replays, with no I/O of its own.
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
//! or does not decode: a torn tail (the crash came mid-append) or damage.
//! Everything before it is replayed; nothing after it is ever misread as
//! data. The caller cuts the file there before appending again.

use xxhash_rust::xxh3::xxh3_64;

use crate::mem::{Log, Op, Tree};
use crate::{Error, OpenOptions, Result, SetTime, Timestamp};

/// Magic number opening every journal file.
pub const MAGIC: [u8; 8] = *b"PACKFSJ1";
/// Bytes of the header.
pub const HEADER_LEN: usize = 32;
/// Bytes before a record's payload.
const RECORD_HEAD: usize = 12;

/// A journal's header: which checkpoint it continues, and when the empty
/// tree it starts from was made (the root's timestamps, when there is no
/// checkpoint pack to take them from).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The checkpoint generation this log applies to.
    pub generation: u64,
    /// When the starting tree was created.
    pub created: Timestamp,
}

impl Header {
    /// The header's bytes.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut h = [0; HEADER_LEN];
        h[..8].copy_from_slice(&MAGIC);
        h[8..16].copy_from_slice(&self.generation.to_le_bytes());
        let created = Timestamp::new(self.created.secs, self.created.nanos);
        h[16..24].copy_from_slice(&created.secs.to_le_bytes());
        h[24..28].copy_from_slice(&created.nanos.to_le_bytes());
        h
    }

    /// Reads the header at the start of `log`.
    pub fn decode(log: &[u8]) -> Result<Self> {
        let mut r = Reader(log);
        let bad = || Error::CorruptJournal("not a PackFS journal (bad header)".into());
        if r.take(8) != Some(&MAGIC[..]) {
            return Err(bad());
        }
        let generation = r.u64().ok_or_else(bad)?;
        let (secs, nanos) = (r.u64().ok_or_else(bad)?, r.u32().ok_or_else(bad)?);
        // The reserved word is zero and nanoseconds stay below a second:
        // anything else is damage, not a time to take.
        if nanos >= 1_000_000_000 || r.u32() != Some(0) {
            return Err(bad());
        }
        Ok(Header { generation, created: Timestamp { secs, nanos } })
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
}

const OPEN: u8 = 1;
const WRITE_AT: u8 = 2;
const APPEND: u8 = 3;
const SET_LEN: u8 = 4;
const MKDIR: u8 = 5;
const RMDIR: u8 = 6;
const UNLINK: u8 = 7;
const RENAME: u8 = 8;
const SYMLINK: u8 = 9;
const LINK: u8 = 10;
const SET_TIMES: u8 = 11;
const SET_MODE: u8 = 12;

struct Writer<'v>(&'v mut Vec<u8>);

impl Writer<'_> {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        // Names are short; `encode` refuses data of 4 GiB or more.
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
    fn time(&mut self, t: SetTime) {
        match t {
            SetTime::Keep => self.u8(0),
            SetTime::Now => self.u8(1),
            SetTime::At(t) => {
                self.u8(2);
                self.u64(t.secs);
                self.u32(t.nanos);
            }
        }
    }
}

/// Appends the record of `op`, done at `now`, to `out`. A payload of 4 GiB
/// or more cannot be framed: `FileTooLarge`.
pub fn encode(op: &Op<'_>, now: Timestamp, out: &mut Vec<u8>) -> Result<()> {
    // Lengths are framed as u32: refuse data that could not be, before writing anything.
    if let Op::WriteAt { data, .. } | Op::Append { data, .. } = op
        && data.len() > u32::MAX as usize - 64
    {
        return Err(Error::FileTooLarge);
    }
    let start = out.len();
    out.extend_from_slice(&[0; RECORD_HEAD]);
    let mut w = Writer(out);
    w.u64(now.secs);
    w.u32(now.nanos);
    match *op {
        Op::Open { dir, name, opts } => {
            w.u8(OPEN);
            w.u64(dir);
            w.bytes(name.as_bytes());
            let flags =
                [opts.read, opts.write, opts.append, opts.create, opts.exclusive, opts.truncate, opts.directory];
            w.u8(flags.iter().enumerate().fold(0, |acc, (i, &on)| acc | (u8::from(on) << i)));
            w.u32(opts.mode);
        }
        Op::WriteAt { ino, offset, data } => {
            w.u8(WRITE_AT);
            w.u64(ino);
            w.u64(offset);
            w.bytes(data);
        }
        Op::Append { ino, data } => {
            w.u8(APPEND);
            w.u64(ino);
            w.bytes(data);
        }
        Op::SetLen { ino, len } => {
            w.u8(SET_LEN);
            w.u64(ino);
            w.u64(len);
        }
        Op::Mkdir { dir, name, mode } => {
            w.u8(MKDIR);
            w.u64(dir);
            w.bytes(name.as_bytes());
            w.u32(mode);
        }
        Op::Rmdir { dir, name } | Op::Unlink { dir, name } => {
            w.u8(if matches!(op, Op::Rmdir { .. }) { RMDIR } else { UNLINK });
            w.u64(dir);
            w.bytes(name.as_bytes());
        }
        Op::Rename { from_dir, from, to_dir, to } => {
            w.u8(RENAME);
            w.u64(from_dir);
            w.bytes(from.as_bytes());
            w.u64(to_dir);
            w.bytes(to.as_bytes());
        }
        Op::Symlink { dir, name, target } => {
            w.u8(SYMLINK);
            w.u64(dir);
            w.bytes(name.as_bytes());
            w.bytes(target.as_bytes());
        }
        Op::Link { ino, dir, name } => {
            w.u8(LINK);
            w.u64(ino);
            w.u64(dir);
            w.bytes(name.as_bytes());
        }
        Op::SetTimes { ino, atime, mtime } => {
            w.u8(SET_TIMES);
            w.u64(ino);
            w.time(atime);
            w.time(mtime);
        }
        Op::SetMode { ino, mode } => {
            w.u8(SET_MODE);
            w.u64(ino);
            w.u32(mode);
        }
    }
    seal(out, start);
    Ok(())
}

/// Fills in the head of the record that starts at `start` and runs to the
/// end of `out`: its payload's length and checksum. (`encode` bounds the
/// length.)
fn seal(out: &mut [u8], start: usize) {
    let payload_len = out.len() - start - RECORD_HEAD;
    let sum = xxh3_64(&out[start + RECORD_HEAD..]);
    out[start..start + 4].copy_from_slice(&(payload_len as u32).to_le_bytes());
    out[start + 4..start + RECORD_HEAD].copy_from_slice(&sum.to_le_bytes());
}

/// Frames `payload` (a record's time and op, as [`encode`] writes them) as a
/// record with its length and checksum: for the `fuzz/` target, so that
/// arbitrary payloads reach the decoder behind the checksum. Not part of
/// the stable API.
#[doc(hidden)]
pub fn frame(payload: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[0; RECORD_HEAD]);
    out.extend_from_slice(payload);
    seal(out, start);
}

/// A bounded reader over one checksummed payload; `None` = does not decode.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    fn str(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.bytes()?).ok()
    }
    fn time(&mut self) -> Option<SetTime> {
        Some(match self.u8()? {
            0 => SetTime::Keep,
            1 => SetTime::Now,
            // Taken as written: `Tree::set_times` normalizes it, live or replayed.
            2 => SetTime::At(Timestamp { secs: self.u64()?, nanos: self.u32()? }),
            _ => return None,
        })
    }

    fn op(&mut self) -> Option<Op<'a>> {
        Some(match self.u8()? {
            OPEN => {
                let (dir, name, flags, mode) = (self.u64()?, self.str()?, self.u8()?, self.u32()?);
                if flags & 0x80 != 0 {
                    return None; // a flag this version does not know
                }
                let on = |i: u8| flags & (1 << i) != 0;
                let opts = OpenOptions {
                    read: on(0),
                    write: on(1),
                    append: on(2),
                    create: on(3),
                    exclusive: on(4),
                    truncate: on(5),
                    directory: on(6),
                    mode,
                };
                Op::Open { dir, name, opts }
            }
            WRITE_AT => Op::WriteAt { ino: self.u64()?, offset: self.u64()?, data: self.bytes()? },
            APPEND => Op::Append { ino: self.u64()?, data: self.bytes()? },
            SET_LEN => Op::SetLen { ino: self.u64()?, len: self.u64()? },
            MKDIR => Op::Mkdir { dir: self.u64()?, name: self.str()?, mode: self.u32()? },
            RMDIR => Op::Rmdir { dir: self.u64()?, name: self.str()? },
            UNLINK => Op::Unlink { dir: self.u64()?, name: self.str()? },
            RENAME => Op::Rename { from_dir: self.u64()?, from: self.str()?, to_dir: self.u64()?, to: self.str()? },
            SYMLINK => Op::Symlink { dir: self.u64()?, name: self.str()?, target: self.str()? },
            LINK => Op::Link { ino: self.u64()?, dir: self.u64()?, name: self.str()? },
            SET_TIMES => Op::SetTimes { ino: self.u64()?, atime: self.time()?, mtime: self.time()? },
            SET_MODE => Op::SetMode { ino: self.u64()?, mode: self.u32()? },
            _ => return None,
        })
    }
}

/// The records of a log body (after the header), in order, up to the first
/// bad one. [`Records::valid_len`] then tells where the good part ends.
pub struct Records<'a> {
    log: &'a [u8],
    pos: usize,
}

impl<'a> Records<'a> {
    /// Records of `body`, the bytes after the header.
    pub fn new(body: &'a [u8]) -> Self {
        Records { log: body, pos: 0 }
    }

    /// Bytes of the body read as whole, good records so far.
    pub fn valid_len(&self) -> usize {
        self.pos
    }

    /// True when every byte of the body was a good record.
    pub fn is_clean(&self) -> bool {
        self.pos == self.log.len()
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = (Timestamp, Op<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let rest = &self.log[self.pos..];
        let len = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
        let sum = u64::from_le_bytes(rest.get(4..RECORD_HEAD)?.try_into().ok()?);
        let payload = rest.get(RECORD_HEAD..RECORD_HEAD.checked_add(len)?)?;
        if xxh3_64(payload) != sum {
            return None;
        }
        let mut r = Reader(payload);
        let now = Timestamp::new(r.u64()?, r.u32()?);
        let op = r.op()?;
        if !r.0.is_empty() {
            return None;
        }
        self.pos += RECORD_HEAD + len;
        Some((now, op))
    }
}

/// What [`replay`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replayed {
    /// Records applied.
    pub records: u64,
    /// Bytes of the body holding them: cut the file to `HEADER_LEN + this`.
    pub valid_len: u64,
    /// False when a torn or damaged tail was found after them.
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

/// Applies the records of `body` (a log after its header) to `tree`.
/// Limits are lifted while replaying — each op passed them when it was
/// acknowledged — and orphans (inodes whose last handle is gone with the
/// process) are reaped at the end. A record that decodes but does not apply
/// means the log does not belong to this tree: `Io`.
pub fn replay(tree: &mut Tree, body: &[u8]) -> Result<Replayed> {
    let limits = tree.limits();
    tree.set_limits(Default::default());
    let mut records = Records::new(body);
    let mut count = 0;
    let result = (|| -> Result<()> {
        for (now, op) in records.by_ref() {
            op.apply(tree, now)
                .map_err(|e| Error::CorruptJournal(format!("record {count} ({}) failed: {e}", shown(&op))))?;
            count += 1;
        }
        Ok(())
    })();
    tree.set_limits(limits);
    result?;
    tree.reap_unless(|_| false);
    Ok(Replayed { records: count, valid_len: records.valid_len() as u64, clean: records.is_clean() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_of(ops: &[Op<'_>]) -> (Vec<u8>, Vec<usize>) {
        let (mut log, mut ends) = (Vec::new(), Vec::new());
        for (i, op) in ops.iter().enumerate() {
            encode(op, Timestamp::new(i as u64, 7), &mut log).unwrap();
            ends.push(log.len());
        }
        (log, ends)
    }

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
            assert_eq!(op, want);
            assert_eq!(*now, Timestamp::new(i as u64, 7));
        }
    }

    #[test]
    fn a_damaged_record_ends_the_log_there() {
        let (log, ends) = log_of(&every_op());
        for flip in [ends[3] + 2, ends[3] + 20, ends[5] - 1] {
            let mut bad = log.clone();
            bad[flip] ^= 0x40;
            let mut records = Records::new(&bad);
            let good = records.by_ref().count();
            let first_bad = ends.iter().position(|&e| e > flip).unwrap();
            assert_eq!(good, first_bad, "flip at {flip}");
            assert_eq!(records.valid_len(), if first_bad == 0 { 0 } else { ends[first_bad - 1] });
            assert!(!records.is_clean());
        }
        // A torn tail: every cut inside the last record drops just it.
        for cut in ends[ends.len() - 2]..log.len() {
            assert_eq!(Records::new(&log[..cut]).count(), ends.len() - 1);
        }
        // A length that runs past the end is torn, not an allocation.
        let mut huge = log.clone();
        huge[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(Records::new(&huge).count(), 0);
    }

    #[test]
    fn headers() {
        let h = Header { generation: 42, created: Timestamp::new(7, 8) };
        assert_eq!(Header::decode(&h.encode()), Ok(h));
        let mut bad = h.encode();
        bad[7] = b'2';
        assert!(Header::decode(&bad).is_err());
        assert!(Header::decode(&h.encode()[..HEADER_LEN - 1]).is_err());
        // Damage in the time or the reserved word is damage.
        for (at, byte) in [(27, 0xff), (29, 1)] {
            let mut bad = h.encode();
            bad[at] = byte;
            assert!(Header::decode(&bad).is_err(), "byte {at}");
        }
        // An unnormalized time is written normalized.
        let carried = Header { generation: 1, created: Timestamp { secs: 5, nanos: 1_500_000_000 } };
        assert_eq!(Header::decode(&carried.encode()).unwrap().created, Timestamp::new(6, 500_000_000));
    }

    /// The live tree and its replay agree on a time given with nanoseconds
    /// past a second; a record of error names a write's size, not its bytes;
    /// an open flag this version does not know is not taken.
    #[test]
    fn replay_agrees_on_odd_input() {
        let odd = Timestamp { secs: 5, nanos: 1_500_000_000 };
        let ops = [Op::SetTimes { ino: 1, atime: SetTime::At(odd), mtime: SetTime::Keep }];
        let (log, _) = log_of(&ops);
        let mut tree = Tree::new(Timestamp::new(0, 0), Default::default());
        replay(&mut tree, &log).unwrap();
        let mut live = Tree::new(Timestamp::new(0, 0), Default::default());
        ops[0].apply(&mut live, Timestamp::new(0, 7)).unwrap();
        assert_eq!(tree.metadata(1).unwrap().atime, Timestamp::new(6, 500_000_000));
        assert_eq!(tree.metadata(1).unwrap().atime, live.metadata(1).unwrap().atime);

        let big = vec![7; 1 << 20];
        let (log, _) = log_of(&[Op::WriteAt { ino: 99, offset: 0, data: &big }]);
        let e = replay(&mut Tree::new(Timestamp::new(0, 0), Default::default()), &log).unwrap_err();
        assert!(e.to_string().len() < 200, "{e}");

        // The op after the record's head and time: tag, dir, name, flags, mode.
        let (log, _) = log_of(&[Op::Open { dir: 1, name: "f", opts: OpenOptions::create() }]);
        let mut body = log[RECORD_HEAD + 12..].to_vec();
        assert!(Reader(&body).op().is_some());
        let flags_at = body.iter().rposition(|&b| b == b'f').unwrap() + 1;
        body[flags_at] |= 0x80;
        assert_eq!(Reader(&body).op(), None, "not taken");
    }
}
