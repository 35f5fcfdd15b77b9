//! The one way untrusted pack bytes are read: a bounded [`Cursor`] that
//! knows its absolute offset in the pack, and [`range`], the checked
//! geometry every (offset, length) pair from a pack goes through before it
//! is used.
//!
//! Nothing here indexes a slice with a value it has not checked, and every
//! sum of two values from a pack is a `checked_add`: a failure is a
//! [`CorruptPack`], never a panic.
//!
//! A fixed-size record, once cut out of a table as a `&[u8; LEN]`, is read
//! with [`le_u16`], [`le_u32`] and [`le_u64`] at constant offsets: the
//! bounds are checked when the crate compiles, so these cannot fail.

use crate::error::corrupt::{CorruptKind, CorruptPack, Structure};

/// Reads little-endian fields from the front of a byte slice.
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    /// Absolute pack offset of `bytes[0]`, for error reports.
    base: u64,
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor over `bytes`, which start at absolute offset `base`.
    pub(crate) fn new(bytes: &'a [u8], base: u64) -> Self {
        Cursor { bytes, base, pos: 0 }
    }

    /// The next `n` bytes.
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], CorruptPack> {
        let rest = &self.bytes[self.pos..];
        if rest.len() < n {
            let kind = CorruptKind::Truncated { needed: n as u64, available: rest.len() as u64 };
            return Err(CorruptPack::new(self.base.saturating_add(self.pos as u64), kind));
        }
        self.pos += n;
        Ok(&rest[..n])
    }

    /// The next `N` bytes as an array.
    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N], CorruptPack> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    /// Skips `n` reserved bytes (readers ignore their value).
    pub(crate) fn skip(&mut self, n: usize) -> Result<(), CorruptPack> {
        self.take(n).map(|_| ())
    }

    pub(crate) fn u32(&mut self) -> Result<u32, CorruptPack> {
        self.array().map(u32::from_le_bytes)
    }

    pub(crate) fn u64(&mut self) -> Result<u64, CorruptPack> {
        self.array().map(u64::from_le_bytes)
    }
}

/// A fixed length of the format (a record, header, trailer or footer, kept
/// as a `u64` like every offset it is added to) as a `usize`, for array
/// types and slice bounds. Const: in an array length a length that did not
/// fit even a 16-bit `usize` fails the build.
#[allow(clippy::cast_possible_truncation, reason = "asserted on the line above to fit any usize")]
pub(crate) const fn width(len: u64) -> usize {
    assert!(len <= u16::MAX as u64, "a fixed length of the format fits any usize");
    len as usize
}

/// The `N` bytes at constant offset `AT` of a fixed-size record; `AT + N <=
/// L` is checked at compile time.
fn field<const AT: usize, const N: usize, const L: usize>(rec: &[u8; L]) -> [u8; N] {
    const { assert!(AT + N <= L) }
    let mut out = [0; N];
    out.copy_from_slice(&rec[AT..AT + N]);
    out
}

/// The little-endian `u16` at constant offset `AT` of a record.
pub(crate) fn le_u16<const AT: usize, const L: usize>(rec: &[u8; L]) -> u16 {
    u16::from_le_bytes(field::<AT, 2, L>(rec))
}

/// The little-endian `u32` at constant offset `AT` of a record.
pub(crate) fn le_u32<const AT: usize, const L: usize>(rec: &[u8; L]) -> u32 {
    u32::from_le_bytes(field::<AT, 4, L>(rec))
}

/// The little-endian `u64` at constant offset `AT` of a record.
pub(crate) fn le_u64<const AT: usize, const L: usize>(rec: &[u8; L]) -> u64 {
    u64::from_le_bytes(field::<AT, 8, L>(rec))
}

/// Checks that `start..start + len` lies within `lo..hi` (absolute offsets)
/// without overflowing; returns its end.
pub(crate) fn range(
    of: Structure,
    field: &'static str,
    start: u64,
    len: u64,
    lo: u64,
    hi: u64,
    at: u64,
) -> Result<u64, CorruptPack> {
    let bad = || CorruptPack::new(at, CorruptKind::OutOfBounds { of, field, start, len, limit: hi });
    let end = start.checked_add(len).ok_or_else(bad)?;
    if start < lo || end > hi {
        return Err(bad());
    }
    Ok(end)
}

/// The bytes `start..start + len` of `pack`, after the same checks as
/// [`range`] against the whole pack.
pub(crate) fn slice<'a>(
    pack: &'a [u8],
    of: Structure,
    field: &'static str,
    start: u64,
    len: u64,
    at: u64,
) -> Result<&'a [u8], CorruptPack> {
    let limit = pack.len() as u64;
    let end = range(of, field, start, len, 0, limit, at)?;
    // `end <= pack.len()`, so both convert; `get` keeps even that unpanicky.
    let bad = || CorruptPack::new(at, CorruptKind::OutOfBounds { of, field, start, len, limit });
    let (s, e) = (usize::try_from(start).map_err(|_| bad())?, usize::try_from(end).map_err(|_| bad())?);
    pack.get(s..e).ok_or_else(bad)
}

/// A field error at `at`.
pub(crate) fn bad_field(at: u64, of: Structure, field: &'static str, value: u64) -> CorruptPack {
    CorruptPack::new(at, CorruptKind::BadField { of, field, value })
}

/// `len` bytes at `offset` in the string pool `strings`, if they lie in it.
pub(super) fn pool_get(strings: &[u8], offset: u64, len: u16) -> Option<&[u8]> {
    strings.get(usize::try_from(offset).ok()?..)?.get(..usize::from(len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_reads_little_endian_and_stops_at_the_end() {
        let bytes = [1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 9];
        let mut c = Cursor::new(&bytes, 100);
        assert_eq!(c.u32(), Ok(1));
        assert_eq!(c.u64(), Ok(2));
        let err = c.u32().unwrap_err();
        assert_eq!(err.offset, 112);
        assert_eq!(err.kind, CorruptKind::Truncated { needed: 4, available: 1 });
        assert_eq!(c.array(), Ok([9]));
    }

    #[test]
    fn ranges_never_overflow() {
        let s = Structure::Index;
        assert_eq!(range(s, "f", 8, 8, 0, 16, 0), Ok(16));
        assert!(range(s, "f", 8, 9, 0, 16, 0).is_err());
        assert!(range(s, "f", u64::MAX, 2, 0, u64::MAX, 0).is_err());
        assert!(range(s, "f", 4, 4, 5, 16, 0).is_err());
        let pack = [0u8; 16];
        assert_eq!(slice(&pack, s, "f", 4, 4, 0).map(<[u8]>::len), Ok(4));
        assert!(slice(&pack, s, "f", u64::MAX - 1, 4, 0).is_err());
    }

    #[test]
    fn record_fields_are_little_endian() {
        let rec: [u8; 16] = std::array::from_fn(|i| u8::try_from(i).unwrap());
        assert_eq!(le_u16::<14, 16>(&rec), 0x0f0e);
        assert_eq!(le_u32::<0, 16>(&rec), 0x0302_0100);
        assert_eq!(le_u64::<8, 16>(&rec), 0x0f0e_0d0c_0b0a_0908);
    }
}
