//! The chunk table (version 2): file contents laid end to end in one
//! *content space*, cut into chunks of at most the header's chunk size,
//! each stored on its own — compressed with zstd or lz4, or raw — so a
//! read decodes only the chunks it touches.
//!
//! ```text
//! chunk record (32 bytes)
//! offset size field           meaning
//!      0    8 offset          absolute offset of the stored bytes, in the
//!                             data section
//!      8    8 content_offset  where the chunk's content starts in the
//!                             content space (the first chunk's is 0)
//!     16    8 checksum        xxh3-64 of the stored bytes
//!     24    4 stored_len      length of the stored bytes
//!     28    1 codec           0 raw, 1 zstd (one frame), 2 lz4 (one block),
//!                             3 zstd with the pack's dictionary (one frame)
//!     29    3 reserved        written 0, ignored
//!
//! chunk footer (16 bytes, the last of the index region)
//!      0    8 chunk_count
//!      8    8 content_len     length of the content space
//! ```
//!
//! A chunk's content length is the next chunk's `content_offset` minus its
//! own (the last one's: `content_len` minus it); it is 1 to the chunk size.
//! A raw chunk's stored bytes are its content. A blob's `offset` is a
//! position in the content space. Small files share chunks; a file the
//! writer finds incompressible starts a chunk and is stored raw, so a
//! mapped pack still lends it without a copy.
//!
//! Decoding is bounded: the stored bytes' checksum is checked before they
//! are decoded, a decoder writes into a buffer of exactly the declared
//! length and must fill it, and the declared length is at most the chunk
//! size (1 MiB at most). A declared content space is therefore at most
//! 32,768 times the chunk table that describes it: no small pack can claim
//! more than a proportionate size.

use super::cursor::{bad_field, le_u32, le_u64, range, width};
use super::dictionary::Dictionary;
use crate::error::corrupt::{CorruptKind, CorruptPack, Structure};

/// One record's size in bytes.
pub(crate) const RECORD_LEN: u64 = 32;
/// The footer's size in bytes.
pub(crate) const FOOTER_LEN: u64 = 16;
/// Smallest and largest `chunk_log2`: 4 KiB to 1 MiB.
pub(crate) const CHUNK_LOG2: std::ops::RangeInclusive<u32> = 12..=20;
/// A compressed pack's chunk size unless asked otherwise: squashfs's
/// default block size.
pub const DEFAULT_CHUNK_SIZE: u64 = 128 * 1024;

/// Whether `bytes` is a chunk size a pack may have: a power of two from
/// 4 KiB to 1 MiB.
pub fn is_chunk_size(bytes: u64) -> bool {
    bytes.is_power_of_two() && CHUNK_LOG2.contains(&bytes.trailing_zeros())
}

/// The codec byte of a zstd chunk decoded with the pack's dictionary
/// (format §19), valid only in a pack that has one. The chunks of files
/// of a chunk or more are plain zstd (`1`): the same in every pack that
/// holds the file, whatever its dictionary.
pub(crate) const ZSTD_DICT: u8 = 3;

/// How a chunk's bytes are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Codec {
    /// As they are.
    Raw,
    /// One zstd frame.
    Zstd,
    /// One lz4 block.
    Lz4,
}

impl Codec {
    pub(crate) fn code(self) -> u8 {
        match self {
            Codec::Raw => 0,
            Codec::Zstd => 1,
            Codec::Lz4 => 2,
        }
    }

    pub(crate) fn from_code(code: u8) -> Option<Codec> {
        match code {
            0 => Some(Codec::Raw),
            1 | ZSTD_DICT => Some(Codec::Zstd),
            2 => Some(Codec::Lz4),
            _ => None,
        }
    }

    /// The name `packfs info` and `--compress` use.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Raw => "raw",
            Codec::Zstd => "zstd",
            Codec::Lz4 => "lz4",
        }
    }
}

/// A decoded chunk record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChunkRecord {
    pub(crate) offset: u64,
    pub(crate) content_offset: u64,
    pub(crate) checksum: u64,
    pub(crate) stored_len: u32,
    /// The codec byte as stored; open checked it names a [`Codec`].
    pub(crate) codec: u8,
}

impl ChunkRecord {
    pub(crate) fn encode(&self) -> [u8; width(RECORD_LEN)] {
        let mut out = [0u8; width(RECORD_LEN)];
        out[0..8].copy_from_slice(&self.offset.to_le_bytes());
        out[8..16].copy_from_slice(&self.content_offset.to_le_bytes());
        out[16..24].copy_from_slice(&self.checksum.to_le_bytes());
        out[24..28].copy_from_slice(&self.stored_len.to_le_bytes());
        out[28] = self.codec;
        out
    }

    pub(crate) fn from_record(rec: &[u8; width(RECORD_LEN)]) -> ChunkRecord {
        ChunkRecord {
            offset: le_u64::<0, 32>(rec),
            content_offset: le_u64::<8, 32>(rec),
            checksum: le_u64::<16, 32>(rec),
            stored_len: le_u32::<24, 32>(rec),
            codec: rec[28],
        }
    }

    pub(crate) fn codec(&self) -> Codec {
        Codec::from_code(self.codec).unwrap_or(Codec::Raw)
    }

    /// `dict` where this chunk is decoded with the pack's dictionary.
    pub(crate) fn dictionary<'d>(&self, dict: Option<&'d Dictionary>) -> Option<&'d Dictionary> {
        dict.filter(|_| self.codec == ZSTD_DICT)
    }

    /// Checks the stored bytes against the chunk's checksum.
    pub(crate) fn check(&self, stored: &[u8]) -> Result<(), CorruptPack> {
        let actual = super::blob::checksum(stored);
        if actual != self.checksum {
            let kind = CorruptKind::Checksum { of: Structure::Chunk, expected: self.checksum, actual };
            return Err(CorruptPack::new(self.offset, kind));
        }
        Ok(())
    }

    /// Where the stored bytes lie in the pack.
    pub(crate) fn extent(&self) -> std::ops::Range<u64> {
        // Open checked that this sum lies inside the data section.
        self.offset..self.offset.saturating_add(self.stored_len.into())
    }
}

/// Decodes chunk `k`, whose stored bytes are `stored` (their checksum
/// already checked), into exactly `len` bytes; anything else is
/// [`CorruptKind::Decode`]. A zstd chunk is decoded with `dict` if given
/// ([`ChunkRecord::dictionary`]).
pub(crate) fn decode(
    k: u64,
    codec: Codec,
    stored: &[u8],
    len: usize,
    dict: Option<&Dictionary>,
) -> Result<Vec<u8>, CorruptPack> {
    let mut out = vec![0u8; len];
    decode_into(k, codec, stored, &mut out, dict)?;
    Ok(out)
}

/// [`decode`] into `out`, whose length is the chunk's declared length.
pub(crate) fn decode_into(
    k: u64,
    codec: Codec,
    stored: &[u8],
    out: &mut [u8],
    dict: Option<&Dictionary>,
) -> Result<(), CorruptPack> {
    let bad = || CorruptPack::new(k, CorruptKind::Decode { chunk: k });
    let len = out.len();
    let n = match codec {
        Codec::Raw => {
            out.copy_from_slice(stored.get(..len).filter(|_| stored.len() == len).ok_or_else(bad)?);
            len
        }
        Codec::Zstd => match dict {
            Some(d) => d.decode(stored, out),
            None => super::frame::decode(stored, out).map(|()| len),
        }
        .ok_or_else(bad)?,
        Codec::Lz4 => lz4_flex::block::decompress_into(stored, out).map_err(|_| bad())?,
    };
    if n != len {
        return Err(bad());
    }
    Ok(())
}

/// How the writer compresses: a codec and, for zstd, a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compression {
    pub(crate) codec: Codec,
    pub(crate) level: i32,
}

impl Compression {
    /// zstd at `level` (1..=22; 3 is zstd's own default). Without the
    /// `zstd-c` feature (the browser build) the pure-Rust encoder writes
    /// its one level, about zstd's 1, whatever is asked.
    pub fn zstd(level: i32) -> Self {
        Compression { codec: Codec::Zstd, level: level.clamp(1, 22) }
    }

    /// lz4: faster to decode, larger.
    pub fn lz4() -> Self {
        Compression { codec: Codec::Lz4, level: 0 }
    }

    /// `none` (no compression: `None`), `lz4`, `zstd` (at `zstd_level`) or
    /// `zstd:LEVEL` (1 to 22), as the command line and the browser API
    /// spell them.
    pub fn parse(spec: &str, zstd_level: i32) -> Result<Option<Compression>, String> {
        match spec.split_once(':') {
            None if spec == "none" => Ok(None),
            None if spec == "lz4" => Ok(Some(Compression::lz4())),
            None if spec == "zstd" => Ok(Some(Compression::zstd(zstd_level))),
            Some(("zstd", level)) => match level.parse::<i32>() {
                Ok(n) if (1..=22).contains(&n) => Ok(Some(Compression::zstd(n))),
                _ => Err(format!("zstd level {level:?}: not from 1 to 22")),
            },
            _ => Err(format!("{spec:?}: expected zstd, zstd:LEVEL, lz4 or none")),
        }
    }

    /// The codec.
    pub fn codec(&self) -> Codec {
        self.codec
    }

    /// Compresses `input` into `out` (cleared first), as the writer stores a
    /// chunk.
    pub fn compress(&self, input: &[u8], out: &mut Vec<u8>) {
        out.clear();
        match self.codec {
            Codec::Raw => out.extend_from_slice(input),
            Codec::Lz4 => {
                out.resize(lz4_flex::block::get_maximum_output_size(input.len()), 0);
                // The buffer has the maximum output size: this cannot fail.
                let n = lz4_flex::block::compress_into(input, out).unwrap_or(0);
                out.truncate(n);
            }
            Codec::Zstd => zstd_compress(self.level, input, out),
        }
    }
}

#[cfg(feature = "zstd-c")]
fn zstd_compress(level: i32, input: &[u8], out: &mut Vec<u8>) {
    // Into memory, from memory: the C library fails only on allocation.
    *out = zstd::bulk::compress(input, level)
        .unwrap_or_else(|_| ruzstd::encoding::compress_to_vec(input, ruzstd::encoding::CompressionLevel::Fastest));
}

#[cfg(not(feature = "zstd-c"))]
fn zstd_compress(_level: i32, input: &[u8], out: &mut Vec<u8>) {
    *out = ruzstd::encoding::compress_to_vec(input, ruzstd::encoding::CompressionLevel::Fastest);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codecs_round_trip_and_refuse_wrong_lengths() {
        #[allow(clippy::cast_possible_truncation, reason = "`i % 251` and `i / 1000` (below 100) fit a byte")]
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8 ^ (i / 1000) as u8).collect();
        for c in [Compression::zstd(3), Compression::lz4(), Compression { codec: Codec::Raw, level: 0 }] {
            let mut stored = Vec::new();
            c.compress(&data, &mut stored);
            assert_eq!(decode(0, c.codec, &stored, data.len(), None).unwrap(), data, "{c:?}");
            assert!(decode(0, c.codec, &stored, data.len() - 1, None).is_err(), "{c:?} too long for its buffer");
            assert!(decode(0, c.codec, &stored, data.len() + 1, None).is_err(), "{c:?} short of its length");
            if c.codec != Codec::Raw {
                assert!(stored.len() < data.len() / 2, "{c:?}: {}", stored.len());
                assert!(decode(0, c.codec, &stored[..stored.len() / 2], data.len(), None).is_err(), "{c:?} truncated");
            }
        }
        assert!(decode(0, Codec::Zstd, b"garbage, not a frame", 10, None).is_err());
        assert!(decode(0, Codec::Lz4, &[0xff; 16], 10, None).is_err());
    }

    #[test]
    fn chunk_records_round_trip() {
        let r = ChunkRecord { offset: 64, content_offset: 1 << 33, checksum: 7, stored_len: 99, codec: 2 };
        assert_eq!(ChunkRecord::from_record(&r.encode()), r);
        assert_eq!(r.codec(), Codec::Lz4);
    }
}

/// Where version 2's chunk table lies in the index region, from its
/// footer; its records are checked by [`ChunkTable::check`].
#[derive(Debug, Clone)]
pub(crate) struct ChunkTable {
    /// The records, within the index region.
    span: std::ops::Range<usize>,
    /// Absolute offset of the first record, for error reports.
    at: u64,
    pub(crate) count: u64,
    pub(crate) content_len: u64,
    pub(crate) chunk_size: u64,
}

impl ChunkTable {
    /// The table of a version 2 pack whose index region (starting at
    /// `base`) is `region`; `tables_end` is where the string pool ends, in
    /// the region.
    pub(crate) fn read(region: &[u8], base: u64, tables_end: u64, chunk_size: u64) -> Result<ChunkTable, CorruptPack> {
        let len = region.len() as u64;
        let footer_at = len.checked_sub(FOOTER_LEN).filter(|&f| f >= tables_end).ok_or_else(|| {
            let kind = CorruptKind::Truncated { needed: tables_end + FOOTER_LEN, available: len };
            CorruptPack::new(base, kind)
        })?;
        // `footer_at < region.len()`, so it fits a usize.
        let footer_pos = usize::try_from(footer_at).map_err(|_| bad_table(base, 0, len))?;
        let footer: &[u8; width(FOOTER_LEN)] =
            region.get(footer_pos..).and_then(|f| f.try_into().ok()).ok_or_else(|| bad_table(base, 0, len))?;
        let (count, content_len) = (le_u64::<0, 16>(footer), le_u64::<8, 16>(footer));
        let start = count
            .checked_mul(RECORD_LEN)
            .and_then(|n| footer_at.checked_sub(n))
            .filter(|&s| s >= tables_end && (base + s).is_multiple_of(8))
            .ok_or_else(|| bad_table(base + footer_at, count, footer_at))?;
        let start_pos = usize::try_from(start).map_err(|_| bad_table(base + footer_at, count, footer_at))?;
        Ok(ChunkTable { span: start_pos..footer_pos, at: base + start, count, content_len, chunk_size })
    }

    /// Where the records start in the region.
    pub(crate) fn table_start(&self) -> usize {
        self.span.start
    }

    /// Absolute offset of the footer (the records end there), for error
    /// reports.
    pub(crate) fn footer_at(&self) -> u64 {
        self.at.saturating_add(self.count.saturating_mul(RECORD_LEN))
    }

    fn records<'r>(&self, region: &'r [u8]) -> Result<&'r [[u8; width(RECORD_LEN)]], CorruptPack> {
        let bytes = region.get(self.span.clone()).ok_or_else(|| bad_table(self.at, self.count, 0))?;
        Ok(bytes.as_chunks().0)
    }

    /// Record `k`.
    pub(crate) fn get(&self, region: &[u8], k: u64) -> Result<ChunkRecord, CorruptPack> {
        let records = self.records(region)?;
        match usize::try_from(k).ok().and_then(|k| records.get(k)) {
            Some(r) => Ok(ChunkRecord::from_record(r)),
            None => Err(CorruptPack::new(
                self.at,
                CorruptKind::OutOfBounds {
                    of: Structure::ChunkRecord,
                    field: "index",
                    start: k,
                    len: 1,
                    limit: self.count,
                },
            )),
        }
    }

    /// Where chunk `k`'s content lies in the content space.
    pub(crate) fn content(&self, region: &[u8], k: u64) -> Result<std::ops::Range<u64>, CorruptPack> {
        Ok(self.entry(region, k)?.1)
    }

    /// Record `k` and where its content lies in the content space (its
    /// start to the next record's).
    pub(crate) fn entry(&self, region: &[u8], k: u64) -> Result<(ChunkRecord, std::ops::Range<u64>), CorruptPack> {
        let r = self.get(region, k)?;
        let end = if k + 1 < self.count { self.get(region, k + 1)?.content_offset } else { self.content_len };
        Ok((r, r.content_offset..end.max(r.content_offset)))
    }

    /// The chunk holding content position `pos` (open checked that the
    /// chunks tile the content space in order).
    pub(crate) fn at(&self, region: &[u8], pos: u64) -> Result<u64, CorruptPack> {
        let records = self.records(region)?;
        let after = records.partition_point(|r| le_u64::<8, 32>(r) <= pos);
        Ok((after as u64).saturating_sub(1))
    }

    /// The first chunk whose stored bytes start at or after `offset`.
    pub(crate) fn first_from(&self, region: &[u8], offset: u64) -> Result<u64, CorruptPack> {
        Ok(self.records(region)?.partition_point(|r| le_u64::<0, 32>(r) < offset) as u64)
    }

    /// Checks every record against the data section `data` (absolute
    /// range): codecs known (the dictionary's only if the pack has one,
    /// `dictionary`), stored bytes inside it in order without overlap,
    /// contents tiling the content space in order, each 1 to the chunk
    /// size long, a raw chunk's stored bytes as long as its content.
    pub(crate) fn check(&self, region: &[u8], data: std::ops::Range<u64>, dictionary: bool) -> Result<(), CorruptPack> {
        let s = Structure::ChunkRecord;
        let mut prev_end = data.start;
        for k in 0..self.count {
            let at = self.at.saturating_add(k.saturating_mul(RECORD_LEN));
            let (r, content) = self.entry(region, k)?;
            let codec = Codec::from_code(r.codec)
                .filter(|_| dictionary || r.codec != ZSTD_DICT)
                .ok_or_else(|| bad_field(at, s, "codec", r.codec.into()))?;
            if r.stored_len == 0 {
                return Err(bad_field(at, s, "stored_len", 0));
            }
            prev_end = range(s, "offset", r.offset, r.stored_len.into(), prev_end, data.end, at)?;
            // `entry` gives an empty range for contents out of order, and
            // for a last chunk starting at or past `content_len`.
            let len = content.end - content.start;
            if (k == 0 && r.content_offset != 0) || len == 0 || len > self.chunk_size {
                return Err(bad_field(at, s, "content_offset", r.content_offset));
            }
            if codec == Codec::Raw && u64::from(r.stored_len) != len {
                return Err(bad_field(at, s, "stored_len", r.stored_len.into()));
            }
        }
        if self.count == 0 && self.content_len != 0 {
            return Err(bad_field(self.at, s, "content_len", self.content_len));
        }
        Ok(())
    }
}

/// The error for a chunk table that does not fit where its footer puts it.
fn bad_table(at: u64, count: u64, limit: u64) -> CorruptPack {
    let kind =
        CorruptKind::OutOfBounds { of: Structure::ChunkRecord, field: "chunk_count", start: 0, len: count, limit };
    CorruptPack::new(at, kind)
}
