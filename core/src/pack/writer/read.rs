//! Reading the source filesystem: a file's bytes in [`PIECE`]-sized
//! pieces, each read to the full. Every full read of a source file (the
//! dedup key and checksum, the copy into the pack, the byte-by-byte
//! comparison of candidates) goes through [`read_pieces`].

use super::error::WriteError;
use crate::{FileSystem, Ino};

/// Bytes read from the source at a time; files up to this size are read once.
pub(super) const PIECE: usize = 64 * 1024;

/// The length of the next piece when `left` bytes remain: [`PIECE`], or
/// what is left when that is less.
pub(super) fn piece_len(left: u64) -> usize {
    usize::try_from(left).map_or(PIECE, |n| n.min(PIECE))
}

/// Fills `buf` from `ino` at `offset`; short content means it changed.
pub(super) fn read_exact(fs: &dyn FileSystem, ino: Ino, offset: u64, buf: &mut [u8]) -> Result<(), WriteError> {
    let mut done = 0;
    while done < buf.len() {
        let n = fs.read_at(ino, offset + done as u64, &mut buf[done..])?;
        if n == 0 {
            return Err(WriteError::SourceChanged { ino });
        }
        done += n;
    }
    Ok(())
}

/// Reads the first `size` bytes of source file `ino` into `buf` (at least
/// [`PIECE`] long) a piece at a time, and hands each piece and its offset
/// to `each`. Stops at the first piece `each` turns down (`Ok(false)`);
/// returns whether none was.
pub(super) fn read_pieces(
    fs: &dyn FileSystem,
    ino: Ino,
    size: u64,
    buf: &mut [u8],
    mut each: impl FnMut(u64, &[u8]) -> Result<bool, WriteError>,
) -> Result<bool, WriteError> {
    let buf = &mut buf[..PIECE];
    let mut off = 0;
    while off < size {
        let n = piece_len(size - off);
        read_exact(fs, ino, off, &mut buf[..n])?;
        if !each(off, &buf[..n])? {
            return Ok(false);
        }
        off += n as u64;
    }
    Ok(true)
}
