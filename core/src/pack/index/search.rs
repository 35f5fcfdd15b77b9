//! [`Index::search`]: the binary search for a name in a directory's run
//! of entries, the lookup's hot loop where no hash index is built. Names
//! compare as bytes, eight at a time as one word.

use super::{Index, at, table};
use crate::error::corrupt::{CorruptKind, CorruptPack, Structure};
use crate::pack::cursor::{le_u16, le_u64, pool_get, width};
use crate::pack::dirent::{self, DirentRecord};

/// The first 8 bytes of `name` as a big-endian word, zero-padded.
fn prefix(name: &[u8]) -> u64 {
    match name.first_chunk::<8>() {
        Some(head) => u64::from_be_bytes(*head),
        None => name.iter().enumerate().fold(0, |w, (i, &b)| w | u64::from(b) << (56 - 8 * i)),
    }
}

/// Exactly `probe.cmp(name)`, faster, where `key` is `prefix(name)`: most
/// names in a run differ in their first 8 bytes, compared as one word. Where
/// the words differ, a shorter name's zero padding is below the nonzero byte
/// the other has there, so the words order as the bytes do; where they are
/// equal, the bytes decide.
fn cmp_names(probe: &[u8], name: &[u8], key: u64) -> std::cmp::Ordering {
    match prefix(probe).cmp(&key) {
        std::cmp::Ordering::Equal => probe.cmp(name),
        order => order,
    }
}

impl Index {
    /// Binary search for `name` in the run `first..first + count`: the
    /// position of the first name not below `name`, and the dirent there if
    /// its name is `name`.
    ///
    /// This is the lookup's hot loop. It relies on what open checked (the
    /// run's names are valid UTF-8 and strictly increasing), so it compares
    /// raw bytes and decodes nothing but the probed records; every offset it
    /// uses is still bounds-checked. On bytes that changed after open the
    /// answer may be wrong, never a panic.
    pub(crate) fn search(
        &self,
        region: &[u8],
        first: u64,
        count: u64,
        name: &[u8],
    ) -> Result<(u64, Option<DirentRecord>), CorruptPack> {
        let records = table::<{ width(dirent::RECORD_LEN) }>(region, &self.spans.dirents, Structure::Dirent)?;
        let bad_run = || CorruptPack::new(first, CorruptKind::Unsorted);
        let start = usize::try_from(first).map_err(|_| bad_run())?;
        let end = usize::try_from(count).ok().and_then(|n| start.checked_add(n)).ok_or_else(bad_run)?;
        let run = records.get(start..end).ok_or_else(|| {
            let kind = CorruptKind::OutOfBounds {
                of: Structure::Inode,
                field: "data",
                start: first,
                len: count,
                limit: self.trailer.dirents.count,
            };
            CorruptPack::new(first, kind)
        })?;
        let strings = self.strings(region)?;
        let key = prefix(name);
        let (mut lo, mut hi) = (0, run.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let j = first + mid as u64;
            let Some(rec) = run.get(mid) else { return Err(self.bad_probe(j, None)) };
            let (offset, len) = (le_u64::<0, 16>(rec), le_u16::<8, 16>(rec));
            let Some(probe) = pool_get(strings, offset, len) else {
                return Err(self.bad_probe(j, Some((offset, len))));
            };
            match cmp_names(probe, name, key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Equal => return Ok((j, Some(DirentRecord::from_record(rec)))),
                std::cmp::Ordering::Greater => hi = mid,
            }
        }
        Ok((first + lo as u64, None))
    }

    /// The error for dirent `j` met by [`search`](Self::search): its name
    /// `(offset, len)` outside the string pool, or (never, as `search` only
    /// probes inside its run) the record itself missing.
    #[cold]
    fn bad_probe(&self, j: u64, name: Option<(u64, u16)>) -> CorruptPack {
        let at = at(self.trailer.dirents, dirent::RECORD_LEN, j);
        let kind = match name {
            Some((start, len)) => CorruptKind::OutOfBounds {
                of: Structure::Dirent,
                field: "string",
                start,
                len: len.into(),
                limit: self.trailer.strings_len,
            },
            None => CorruptKind::Unsorted,
        };
        CorruptPack::new(at, kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_compare_as_bytes() {
        let names: [&[u8]; 14] = [
            b"a",
            b"ab",
            b"abcdefg",
            b"abcdefgh",
            b"abcdefgh\0",
            b"abcdefgha",
            b"abcdefgi",
            b"abcdefh",
            b"b",
            b"\xc3\xa9",
            b"\xff",
            b"a\0",
            b"f000123.dat",
            b"f000124.dat",
        ];
        for a in names {
            for b in names {
                assert_eq!(cmp_names(a, b, prefix(b)), a.cmp(b), "{a:?} {b:?}");
            }
        }
    }
}
