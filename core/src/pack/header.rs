//! The header: 64 bytes at offset 0, written before any data so a pack can
//! be streamed. It names the format and its version and fixes the blob
//! alignment; where everything else lies is in the [trailer](super::trailer).
//!
//! ```text
//! offset size field            value
//!      0    8 magic            89 50 41 43 4B 46 53 0A  ("\x89PACKFS\n")
//!      8    4 version          1, or 2 (compressed chunks)
//!     12    4 incompat_flags   bit 0 (version 2): zstd chunks use the
//!                              dictionary; a reader refuses any other bit
//!     16    4 compat_flags     0; a reader ignores bits it does not know
//!     20    4 align_log2       log2 of the blob alignment, 3..=16 (version
//!                              2: of the raw-stored files' start)
//!     24    4 chunk_log2       version 2: log2 of the chunk size, 12..=20;
//!                              version 1: reserved
//!     28    4 dict_len         version 2 with the dictionary flag: its
//!                              length, 20..=1 MiB; else reserved
//!     32   24 reserved         written 0, ignored
//!     56    8 header_checksum  xxh3-64 of bytes 0..56
//! ```
//!
//! Magic and version stay at offsets 0 and 8 in every version; the rest of
//! the layout may change with the version.

use xxhash_rust::xxh3::xxh3_64;

use super::cursor::{Cursor, bad_field, width};
use super::dictionary::{DICTIONARY, MAX_DICTIONARY};
use crate::Error;
use crate::error::corrupt::{CorruptKind, CorruptPack, Structure};

/// The header's size in bytes.
pub const HEADER_LEN: u64 = 64;
/// The first eight bytes of every pack. The high first byte catches 7-bit
/// transfers, the newline catches newline translation.
pub(crate) const MAGIC: [u8; 8] = *b"\x89PACKFS\n";
/// Bytes covered by `header_checksum`.
pub(crate) const CHECKED_LEN: usize = 56;

/// Incompatible-feature flags this reader understands (none in version 1).
pub(crate) const KNOWN_INCOMPAT: u32 = DICTIONARY;
/// Smallest and largest `align_log2`: 8 bytes to 64 KiB.
pub(crate) const ALIGN_LOG2: std::ops::RangeInclusive<u32> = 3..=16;

/// A decoded header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) version: u32,
    pub(crate) incompat_flags: u32,
    pub(crate) compat_flags: u32,
    pub(crate) align_log2: u32,
    /// Version 2's chunk size, log2; 0 in version 1.
    pub(crate) chunk_log2: u32,
    /// The dictionary's length (flag `DICTIONARY`), else 0.
    pub(crate) dict_len: u32,
}

impl Header {
    /// The 64 header bytes, checksum included.
    pub(crate) fn encode(&self) -> [u8; width(HEADER_LEN)] {
        let mut out = [0u8; width(HEADER_LEN)];
        out[0..8].copy_from_slice(&MAGIC);
        out[8..12].copy_from_slice(&self.version.to_le_bytes());
        out[12..16].copy_from_slice(&self.incompat_flags.to_le_bytes());
        out[16..20].copy_from_slice(&self.compat_flags.to_le_bytes());
        out[20..24].copy_from_slice(&self.align_log2.to_le_bytes());
        out[24..28].copy_from_slice(&self.chunk_log2.to_le_bytes());
        out[28..32].copy_from_slice(&self.dict_len.to_le_bytes());
        let sum = xxh3_64(&out[..CHECKED_LEN]);
        out[CHECKED_LEN..].copy_from_slice(&sum.to_le_bytes());
        out
    }

    /// Decodes and checks the header at the start of `pack`: magic, then
    /// version and flags (an unknown one is [`Error::UnsupportedVersion`],
    /// before the checksum, whose place a later version may move), then the
    /// checksum, then the fields.
    pub(crate) fn decode(pack: &[u8]) -> Result<Header, Error> {
        let mut c = Cursor::new(pack, 0);
        let head = c.take(width(HEADER_LEN))?;
        let mut c = Cursor::new(head, 0);
        if c.array::<8>()? != MAGIC {
            return Err(CorruptPack::new(0, CorruptKind::BadMagic(Structure::Header)).into());
        }
        let version = c.u32()?;
        let incompat_flags = c.u32()?;
        // The dictionary is version 2's.
        let known = if version >= 2 { KNOWN_INCOMPAT } else { 0 };
        if !(1..=super::FORMAT_VERSION).contains(&version) || incompat_flags & !known != 0 {
            return Err(Error::UnsupportedVersion { version, incompat_flags });
        }
        let compat_flags = c.u32()?;
        let align_log2 = c.u32()?;
        let chunk_log2 = match c.u32()? {
            _ if version == 1 => 0,
            v => v,
        };
        let dict_len = match c.u32()? {
            v if incompat_flags & DICTIONARY != 0 => v,
            _ => 0,
        };
        c.skip(24)?;
        let expected = c.u64()?;
        let actual = xxh3_64(&head[..CHECKED_LEN]);
        if expected != actual {
            let kind = CorruptKind::Checksum { of: Structure::Header, expected, actual };
            return Err(CorruptPack::new(0, kind).into());
        }
        if !ALIGN_LOG2.contains(&align_log2) {
            return Err(bad_field(0, Structure::Header, "align_log2", align_log2.into()).into());
        }
        if version >= 2 && !super::chunk::CHUNK_LOG2.contains(&chunk_log2) {
            return Err(bad_field(0, Structure::Header, "chunk_log2", chunk_log2.into()).into());
        }
        if incompat_flags & DICTIONARY != 0 && !(20..=MAX_DICTIONARY).contains(&dict_len) {
            return Err(bad_field(0, Structure::Header, "dict_len", dict_len.into()).into());
        }
        Ok(Header { version, incompat_flags, compat_flags, align_log2, chunk_log2, dict_len })
    }

    /// The blob alignment in bytes.
    pub(crate) fn align(&self) -> u64 {
        1 << self.align_log2
    }

    /// Version 2's chunk size in bytes (0 in version 1).
    pub(crate) fn chunk_size(&self) -> u64 {
        if self.version >= 2 { 1 << self.chunk_log2 } else { 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header { version: 1, incompat_flags: 0, compat_flags: 0, align_log2: 3, chunk_log2: 0, dict_len: 0 }
    }

    #[test]
    fn header_round_trips() {
        let h = header();
        assert_eq!(Header::decode(&h.encode()), Ok(h));
        // Unknown compat flags are ignored.
        let h = Header { compat_flags: 0x8000_0001, ..header() };
        assert_eq!(Header::decode(&h.encode()), Ok(h));
    }

    #[test]
    fn header_refuses_what_it_does_not_know() {
        let h = Header { version: 3, ..header() };
        assert_eq!(Header::decode(&h.encode()), Err(Error::UnsupportedVersion { version: 3, incompat_flags: 0 }));
        let h = Header { version: 2, chunk_log2: 17, ..header() };
        assert_eq!(Header::decode(&h.encode()), Ok(h));
        let h = Header { version: 2, chunk_log2: 21, ..header() };
        assert!(matches!(Header::decode(&h.encode()), Err(Error::Corrupt(_))));
        let h = Header { incompat_flags: 4, ..header() };
        assert_eq!(Header::decode(&h.encode()), Err(Error::UnsupportedVersion { version: 1, incompat_flags: 4 }));
        let h = Header { align_log2: 2, ..header() };
        assert!(matches!(Header::decode(&h.encode()), Err(Error::Corrupt(_))));
        // The dictionary: version 2's, with a length in bounds; without
        // the flag the field is reserved.
        let v2 = Header { version: 2, chunk_log2: 17, ..header() };
        let h = Header { incompat_flags: DICTIONARY, dict_len: 65536, ..v2 };
        assert_eq!(Header::decode(&h.encode()), Ok(h));
        let h = Header { incompat_flags: DICTIONARY, dict_len: 65536, ..header() };
        assert_eq!(Header::decode(&h.encode()), Err(Error::UnsupportedVersion { version: 1, incompat_flags: 2 }));
        // Bit 0 was §19's draft (every zstd chunk with the dictionary).
        let h = Header { incompat_flags: 1, dict_len: 65536, ..v2 };
        assert_eq!(Header::decode(&h.encode()), Err(Error::UnsupportedVersion { version: 2, incompat_flags: 1 }));
        for dict_len in [0, 19, MAX_DICTIONARY + 1] {
            let h = Header { incompat_flags: DICTIONARY, dict_len, ..v2 };
            assert!(matches!(Header::decode(&h.encode()), Err(Error::Corrupt(_))), "{dict_len}");
        }
        let h = Header { dict_len: 7, ..v2 };
        assert_eq!(Header::decode(&h.encode()), Ok(Header { dict_len: 0, ..h }));
        let mut bytes = header().encode();
        bytes[30] ^= 1;
        assert!(matches!(
            Header::decode(&bytes),
            Err(Error::Corrupt(CorruptPack { kind: CorruptKind::Checksum { .. }, .. }))
        ));
        bytes[0] = b'P';
        assert!(matches!(
            Header::decode(&bytes),
            Err(Error::Corrupt(CorruptPack { kind: CorruptKind::BadMagic(Structure::Header), .. }))
        ));
        assert!(matches!(
            Header::decode(&bytes[..10]),
            Err(Error::Corrupt(CorruptPack { kind: CorruptKind::Truncated { .. }, .. }))
        ));
    }
}
