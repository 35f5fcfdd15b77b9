//! The records of a journal's body: one length-prefixed, checksummed
//! record per change (`docs/journal-format.md` §5, §6), written by
//! [`encode`] and read back, up to the first that is short, fails its
//! checksum or does not decode, by [`Records`].

use xxhash_rust::xxh3::xxh3_64;

use crate::mem::Op;
use crate::{Error, OpenOptions, Result, SetTime, Timestamp};

/// Bytes before a record's payload: its length (u32) and checksum (u64).
pub(super) const RECORD_HEAD: usize = 12;

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
    pub(super) fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(super) fn u64(&mut self, v: u64) {
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
pub(super) struct Reader<'a>(pub(super) &'a [u8]);

impl<'a> Reader<'a> {
    pub(super) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    pub(super) fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    pub(super) fn u64(&mut self) -> Option<u64> {
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

/// A log body of `ops`, the `i`th done at `i` s + 7 ns, and where each
/// record ends.
#[cfg(test)]
pub(super) fn log_of(ops: &[Op<'_>]) -> (Vec<u8>, Vec<usize>) {
    let (mut log, mut ends) = (Vec::new(), Vec::new());
    for (i, op) in ops.iter().enumerate() {
        encode(op, Timestamp::new(i as u64, 7), &mut log).unwrap();
        ends.push(log.len());
    }
    (log, ends)
}

#[cfg(test)]
mod tests {
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

    /// An open flag this version does not know is not taken.
    #[test]
    fn unknown_open_flags_do_not_decode() {
        // The op after the record's head and time: tag, dir, name, flags, mode.
        let (log, _) = log_of(&[Op::Open { dir: 1, name: "f", opts: OpenOptions::create() }]);
        let mut body = log[RECORD_HEAD + 12..].to_vec();
        assert!(Reader(&body).op().is_some());
        let flags_at = body.iter().rposition(|&b| b == b'f').unwrap() + 1;
        body[flags_at] |= 0x80;
        assert_eq!(Reader(&body).op(), None, "not taken");
    }
}
