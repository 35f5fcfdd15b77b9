//! The records of a journal's body: one length-prefixed, checksummed
//! record per change (`docs/journal-format.md` §5, §6), written by
//! [`encode`] and read back, up to the first that is short, fails its
//! checksum or does not decode, by [`Records`], which then tells a torn
//! tail from damage in the middle ([`Tail`]).

use xxhash_rust::xxh3::xxh3_64;

use crate::mem::{Op, Part, Shape};
use crate::{Error, FileType, OpenOptions, Result, SetTime, Timestamp};

/// Bytes before a record's payload: its length (u32) and checksum (u64).
pub const RECORD_HEAD: usize = 12;

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
// The image of a tree (version 2, §6.1).
const INODE: u8 = 13;
const CONTENT: u8 = 14;
const ENTRY: u8 = 15;
const GONE: u8 = 16;
const END: u8 = 17;

/// What a record holds: a change, or (version 2) a piece of the image of
/// the tree the changes after it apply to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change<'a> {
    /// A change to the tree.
    Op(Op<'a>),
    /// A piece of the image.
    Image(Part<'a>),
}

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
        #[allow(clippy::cast_possible_truncation, reason = "encode refuses data of 4 GiB or more; names are short")]
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
    fn at(&mut self, t: Timestamp) {
        self.u64(t.secs);
        self.u32(t.nanos);
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
    let mut w = head(out, now);
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

/// A record's head, to be sealed, and its time.
fn head(out: &mut Vec<u8>, now: Timestamp) -> Writer<'_> {
    out.extend_from_slice(&[0; RECORD_HEAD]);
    let mut w = Writer(out);
    w.at(now);
    w
}

const KINDS: [FileType; 3] = [FileType::File, FileType::Dir, FileType::Symlink];

/// Appends the record of an image's `part`, made at `now`, to `out`
/// (content comes in pieces of at most [`crate::mem::CONTENT_PIECE`]).
pub fn encode_part(part: &Part<'_>, now: Timestamp, out: &mut Vec<u8>) {
    let start = out.len();
    let mut w = head(out, now);
    match *part {
        Part::Inode { ino, shape, mode, nlink, times, orphan } => {
            w.u8(INODE);
            w.u64(ino);
            match shape {
                Shape::File { size } => {
                    w.u8(1);
                    w.u64(size);
                }
                Shape::Lower { ino, size } => {
                    w.u8(2);
                    w.u64(ino);
                    w.u64(size);
                }
                Shape::Dir { parent, lower } => {
                    w.u8(3);
                    w.u64(parent);
                    w.u64(lower.unwrap_or(0));
                }
                Shape::Symlink(target) => {
                    w.u8(4);
                    w.bytes(target.as_bytes());
                }
            }
            w.u32(mode);
            w.u64(nlink);
            times.into_iter().for_each(|t| w.at(t));
            w.u8(orphan.into());
        }
        Part::Content { ino, offset, data } => {
            w.u8(CONTENT);
            w.u64(ino);
            w.u64(offset);
            w.bytes(data);
        }
        Part::Entry { dir, name, ino, kind } => {
            w.u8(ENTRY);
            w.u64(dir);
            w.bytes(name.as_bytes());
            w.u64(ino);
            w.u8(match kind {
                FileType::File => 1,
                FileType::Dir => 2,
                FileType::Symlink => 3,
            });
        }
        Part::Gone { lower } => {
            w.u8(GONE);
            w.u64(lower);
        }
        Part::End { next_ino } => {
            w.u8(END);
            w.u64(next_ino);
        }
    }
    seal(out, start);
}

/// Fills in the head of the record that starts at `start` and runs to the
/// end of `out`: its payload's length and checksum. (`encode` bounds the
/// length.)
fn seal(out: &mut [u8], start: usize) {
    let payload_len = out.len() - start - RECORD_HEAD;
    let sum = xxh3_64(&out[start + RECORD_HEAD..]);
    #[allow(clippy::cast_possible_truncation, reason = "encode bounds a record's payload below 4 GiB")]
    let payload_len = payload_len as u32;
    out[start..start + 4].copy_from_slice(&payload_len.to_le_bytes());
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

    fn at(&mut self) -> Option<Timestamp> {
        Some(Timestamp::new(self.u64()?, self.u32()?))
    }

    fn change(&mut self) -> Option<Change<'a>> {
        Some(Change::Op(match self.u8()? {
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
            INODE => {
                let ino = self.u64()?;
                let shape = match self.u8()? {
                    1 => Shape::File { size: self.u64()? },
                    2 => Shape::Lower { ino: self.u64()?, size: self.u64()? },
                    3 => Shape::Dir { parent: self.u64()?, lower: Some(self.u64()?).filter(|&l| l != 0) },
                    4 => Shape::Symlink(self.str()?),
                    _ => return None,
                };
                let (mode, nlink, times) = (self.u32()?, self.u64()?, [self.at()?, self.at()?, self.at()?]);
                let orphan = match self.u8()? {
                    0 => false,
                    1 => true,
                    _ => return None,
                };
                return Some(Change::Image(Part::Inode { ino, shape, mode, nlink, times, orphan }));
            }
            CONTENT => {
                let (ino, offset, data) = (self.u64()?, self.u64()?, self.bytes()?);
                return Some(Change::Image(Part::Content { ino, offset, data }));
            }
            ENTRY => {
                let (dir, name, ino) = (self.u64()?, self.str()?, self.u64()?);
                let kind = *KINDS.get(usize::from(self.u8()?).checked_sub(1)?)?;
                return Some(Change::Image(Part::Entry { dir, name, ino, kind }));
            }
            GONE => return Some(Change::Image(Part::Gone { lower: self.u64()? })),
            END => return Some(Change::Image(Part::End { next_ino: self.u64()? })),
            _ => return None,
        }))
    }
}

/// The records of a log body (after the header), in order, up to the first
/// bad one. [`Records::valid_len`] then tells where the good part ends, and
/// [`Records::tail`] what the bad part is (`docs/journal-format.md` §8).
pub struct Records<'a> {
    log: &'a [u8],
    pos: usize,
    /// Set once the iterator has returned `None`.
    tail: Option<Tail>,
}

/// What follows the good records of a log body: what [`Records`] found
/// where it stopped (`docs/journal-format.md` §8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tail {
    /// Nothing: every byte was a good record.
    Clean,
    /// A torn tail: a record short of the end of the body or failing its
    /// checksum, with no good record after it. Nothing acknowledged
    /// follows it; cut it off before appending.
    Torn,
    /// A record short or failing its checksum, with a good record after
    /// it, at body offset `next`: damage in the middle of the log. Cutting
    /// would lose the records from `next` on.
    Damaged {
        /// Body offset of the first good record after the bad one.
        next: usize,
    },
    /// A record whose checksum holds but whose payload does not decode: a
    /// tag, flag or value this version does not know (a newer writer), or
    /// damage the checksum missed. `tag` is its tag byte, if it has one.
    Unknown {
        /// The payload's tag byte; `None` if it is too short to hold one.
        tag: Option<u8>,
    },
}

impl<'a> Records<'a> {
    /// Records of `body`, the bytes after the header.
    pub fn new(body: &'a [u8]) -> Self {
        Records { log: body, pos: 0, tail: None }
    }

    /// Bytes of the body read as whole, good records so far.
    pub fn valid_len(&self) -> usize {
        self.pos
    }

    /// What follows the good records, once the iterator has returned
    /// `None`; `None` before.
    pub fn tail(&self) -> Option<Tail> {
        self.tail
    }

    /// True once every byte of the body was read as a good record.
    pub fn is_clean(&self) -> bool {
        self.tail == Some(Tail::Clean)
    }

    /// What the body from the bad record at `self.pos` on is: torn, unless
    /// a good record begins somewhere after that record's first byte.
    fn after_bad(&self) -> Tail {
        let rest = &self.log[self.pos..];
        // A write's data may hold anything, records included (a journal
        // kept in a journal): when the head agrees with its fields, look
        // for records only after its data.
        let from = data_record_len(rest).unwrap_or(1).min(rest.len());
        match (from..rest.len()).find(|&at| good(&rest[at..]).is_some()) {
            Some(at) => Tail::Damaged { next: self.pos + at },
            None => Tail::Torn,
        }
    }
}

/// The checksum and payload of the record `rest` opens with, if all of it
/// is in `rest`.
fn framed(rest: &[u8]) -> Option<(u64, &[u8])> {
    let len = u32::from_le_bytes(*rest.first_chunk::<4>()?) as usize;
    let sum = u64::from_le_bytes(rest.get(4..RECORD_HEAD)?.try_into().ok()?);
    Some((sum, rest.get(RECORD_HEAD..RECORD_HEAD.checked_add(len)?)?))
}

/// `payload` decoded, with nothing short or left over.
fn decode(payload: &[u8]) -> Option<(Timestamp, Change<'_>)> {
    let mut r = Reader(payload);
    let now = r.at()?;
    let change = r.change()?;
    r.0.is_empty().then_some((now, change))
}

/// The record `rest` opens with, if it is good: whole, decoding, and its
/// checksum holding. (Decoded before it is hashed: the scan for a good
/// record after a bad one tries every offset.)
fn good(rest: &[u8]) -> Option<(Timestamp, Change<'_>)> {
    let (sum, payload) = framed(rest)?;
    let decoded = decode(payload)?;
    (xxh3_64(payload) == sum).then_some(decoded)
}

/// The length, head included, of the `WRITE_AT` or `APPEND` record `rest`
/// opens with, if its `len` agrees with its data's count (which a torn
/// append leaves whole, and one damaged byte does not).
fn data_record_len(rest: &[u8]) -> Option<usize> {
    let len = u64::from(u32::from_le_bytes(*rest.first_chunk::<4>()?));
    // The payload: time (12), tag, then ino (and offset) before the count.
    let fixed = match *rest.get(RECORD_HEAD + 12)? {
        WRITE_AT => 16,
        APPEND => 8,
        _ => return None,
    };
    let at = RECORD_HEAD + 13 + fixed;
    let count = u64::from(u32::from_le_bytes(rest.get(at..at + 4)?.try_into().ok()?));
    let whole = RECORD_HEAD.saturating_add(usize::try_from(len).ok()?);
    (len == 13 + fixed as u64 + 4 + count).then_some(whole)
}

impl<'a> Iterator for Records<'a> {
    type Item = (Timestamp, Change<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.tail.is_some() {
            return None;
        }
        let rest = &self.log[self.pos..];
        let tail = match framed(rest) {
            _ if rest.is_empty() => Tail::Clean,
            Some((sum, payload)) if xxh3_64(payload) == sum => match decode(payload) {
                Some(record) => {
                    self.pos += RECORD_HEAD + payload.len();
                    return Some(record);
                }
                None => Tail::Unknown { tag: payload.get(12).copied() },
            },
            _ => self.after_bad(),
        };
        self.tail = Some(tail);
        None
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
mod tests;
