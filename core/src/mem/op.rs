//! A change to a [`Tree`] as a value: what [`MemFs`](crate::MemFs) applies,
//! journals, and replays. Applying the same ops with the same timestamps to
//! the same tree gives the same tree, inode numbers included.

use super::Tree;
use crate::{Ino, OpenOptions, Result, SetTime, Timestamp};

/// One mutating operation, borrowing its names and bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)] // the fields are those of the `FileSystem` method of the same name
pub enum Op<'a> {
    /// An `open` that creates or truncates.
    Open {
        dir: Ino,
        name: &'a str,
        opts: OpenOptions,
    },
    WriteAt {
        ino: Ino,
        offset: u64,
        data: &'a [u8],
    },
    Append {
        ino: Ino,
        data: &'a [u8],
    },
    SetLen {
        ino: Ino,
        len: u64,
    },
    Mkdir {
        dir: Ino,
        name: &'a str,
        mode: u32,
    },
    Rmdir {
        dir: Ino,
        name: &'a str,
    },
    Unlink {
        dir: Ino,
        name: &'a str,
    },
    Rename {
        from_dir: Ino,
        from: &'a str,
        to_dir: Ino,
        to: &'a str,
    },
    Symlink {
        dir: Ino,
        name: &'a str,
        target: &'a str,
    },
    Link {
        ino: Ino,
        dir: Ino,
        name: &'a str,
    },
    SetTimes {
        ino: Ino,
        atime: SetTime,
        mtime: SetTime,
    },
    SetMode {
        ino: Ino,
        mode: u32,
    },
}

impl Op<'_> {
    /// Applies the op at time `now`. Returns what the `FileSystem` method
    /// returns: the inode for `Open`/`Mkdir`/`Symlink`, the offset for
    /// `Append`, the count for `WriteAt`, else 0.
    pub fn apply(&self, t: &mut Tree, now: Timestamp) -> Result<u64> {
        let before = t.usage();
        let out = match *self {
            Op::Open { dir, name, ref opts } => t.open(dir, name, opts, now),
            Op::WriteAt { ino, offset, data } => t.write_at(ino, offset, data, now).map(|n| n as u64),
            Op::Append { ino, data } => t.append(ino, data, now),
            Op::SetLen { ino, len } => t.set_len(ino, len, now).map(|_| 0),
            Op::Mkdir { dir, name, mode } => t.mkdir(dir, name, mode, now),
            Op::Rmdir { dir, name } => t.rmdir(dir, name, now).map(|_| 0),
            Op::Unlink { dir, name } => t.unlink(dir, name, now).map(|_| 0),
            Op::Rename { from_dir, from, to_dir, to } => t.rename(from_dir, from, to_dir, to, now).map(|_| 0),
            Op::Symlink { dir, name, target } => t.symlink(dir, name, target, now),
            Op::Link { ino, dir, name } => t.link(ino, dir, name, now).map(|_| 0),
            Op::SetTimes { ino, atime, mtime } => t.set_times(ino, atime, mtime, now).map(|_| 0),
            Op::SetMode { ino, mode } => t.set_mode(ino, mode, now).map(|_| 0),
        }?;
        t.check_growth(before)?;
        Ok(out)
    }
}
