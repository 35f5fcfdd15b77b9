//! The writer's side of version 2: [`Chunker`] lays file contents end to
//! end in the content space and writes them out chunk by chunk, each
//! compressed, or raw where compression saves too little. A file of a
//! chunk or more starts and ends its own chunks (`cut`); one the writer
//! finds incompressible is also written raw, aligned, so that a mapped pack
//! lends it without a copy. With a trained dictionary, every chunk is
//! compressed with it, and chunks of smaller files are small: a file never
//! straddles two, and one is closed after a file once it holds 1 KiB.

use std::io::Write;

use xxhash_rust::xxh3::xxh3_64;

use super::out::Out;
use crate::pack::chunk::{ChunkRecord, Codec, Compression, FOOTER_LEN, ZSTD_DICT};
use crate::pack::cursor::width;
use crate::pack::dictionary::Trained;

/// A chunk is stored compressed only if that saves at least 1/32 of it:
/// less is not worth decoding.
fn worth_it(stored: usize, content: usize) -> bool {
    stored < content - content / 32
}

pub(super) struct Chunker {
    comp: Compression,
    pub(super) chunk_size: usize,
    /// The open chunk's content.
    open: Vec<u8>,
    /// What the open chunk holds.
    holds: Holds,
    /// Full chunks not written yet, and what they hold. They are compressed a
    /// batch at a time, on every core there is, and written in order, so
    /// the bytes are the same whatever the number of cores.
    sealed: Vec<(Vec<u8>, Holds)>,
    /// Their content's bytes.
    sealed_len: usize,
    /// Cores to compress on (1 where there are no threads: wasm32).
    threads: usize,
    /// The content space's length so far, the open chunk included.
    pub(super) content_len: u64,
    /// Where the next chunk to be written starts in the content space.
    written_to: u64,
    records: Vec<ChunkRecord>,
    /// Each chunk's BLAKE3 digest, when the pack has a digest table.
    pub(super) digests: Option<Vec<[u8; 32]>>,
    /// The zstd dictionary every chunk is compressed with, if trained.
    pub(super) dict: Option<Trained>,
    scratch: Vec<u8>,
}

/// What a chunk holds, which says how it is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Holds {
    /// Smaller files: compressed with the dictionary, if there is one.
    Small,
    /// Part of a file of a chunk or more: compressed without it.
    Own,
    /// Part of a file found incompressible: stored raw.
    Raw,
}

/// A chunk compressed: its stored bytes and codec byte (none: stored
/// raw), and the digest of what is stored.
type Written = (Option<(Vec<u8>, u8)>, [u8; 32]);

/// Full chunks' worth of content compressed per core in one batch: enough
/// to keep the cores busy, few enough that a batch holds a few MiB at most.
const PER_THREAD: usize = 4;
/// With a dictionary, small files share a chunk until it holds this much:
/// only files under 1 KiB share one, so that a lazy read fetches its file
/// and almost nothing else (with 8 KiB, reading 5% of a tree of headers
/// fetched 0.71x what an uncompressed pack's read fetches, with 1 KiB
/// 0.45x, for a pack 4% larger), while the tiniest files still share a
/// chunk's costs (its record, digest and frame header, 70 bytes or so).
const SMALL_CHUNK: usize = 1 << 10;
/// Chunks in one batch at most, however small (files of their own).
const MAX_BATCH: usize = 1024;

impl Chunker {
    pub(super) fn new(comp: Compression, chunk_size: usize) -> Self {
        let threads = if cfg!(target_family = "wasm") {
            1
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get().min(16))
        };
        Chunker {
            comp,
            chunk_size,
            open: Vec::with_capacity(chunk_size),
            holds: Holds::Small,
            sealed: Vec::new(),
            sealed_len: 0,
            threads,
            content_len: 0,
            written_to: 0,
            records: Vec::new(),
            digests: None,
            dict: None,
            scratch: Vec::new(),
        }
    }

    /// The codec chunks are compressed with.
    pub(super) fn codec(&self) -> Codec {
        self.comp.codec
    }

    /// Its level.
    pub(super) fn level(&self) -> i32 {
        self.comp.level
    }

    /// Before a smaller file of `size` bytes: with a dictionary, one that
    /// would not fit in the open chunk starts the next.
    pub(super) fn before_small<W: Write>(&mut self, out: &mut Out<W>, size: u64) -> std::io::Result<()> {
        if self.dict.is_some() && self.open.len() as u64 + size > self.chunk_size as u64 {
            self.cut(out)?;
        }
        Ok(())
    }

    /// After a smaller file: with a dictionary, the open chunk is closed
    /// once it holds `SMALL_CHUNK` bytes.
    pub(super) fn after_small<W: Write>(&mut self, out: &mut Out<W>) -> std::io::Result<()> {
        if self.dict.is_some() && self.open.len() >= SMALL_CHUNK {
            self.cut(out)?;
        }
        Ok(())
    }

    /// Whether a file starting with `head` is worth compressing.
    pub(super) fn compresses(&mut self, head: &[u8]) -> bool {
        self.comp.compress(head, &mut self.scratch);
        worth_it(self.scratch.len(), head.len())
    }

    /// Appends `bytes` to the content space, sealing each chunk it fills.
    pub(super) fn push<W: Write>(&mut self, out: &mut Out<W>, mut bytes: &[u8]) -> std::io::Result<()> {
        while !bytes.is_empty() {
            let n = (self.chunk_size - self.open.len()).min(bytes.len());
            self.open.extend_from_slice(&bytes[..n]);
            self.content_len += n as u64;
            bytes = &bytes[n..];
            if self.open.len() == self.chunk_size {
                self.seal(out)?;
            }
        }
        Ok(())
    }

    /// Starts a file of a chunk or more: see [`cut`](Self::cut). Its
    /// chunks are compressed without the dictionary, so that they are the
    /// same in every pack, whatever dictionary it trained.
    pub(super) fn start_own<W: Write>(&mut self, out: &mut Out<W>) -> std::io::Result<()> {
        self.cut(out)?;
        self.holds = Holds::Own;
        Ok(())
    }

    /// Ends a file of a chunk or more.
    pub(super) fn end_own<W: Write>(&mut self, out: &mut Out<W>) -> std::io::Result<()> {
        self.cut(out)?;
        self.holds = Holds::Small;
        Ok(())
    }

    /// Closes the open chunk, if it holds anything. A file of a chunk or
    /// more is cut off so on both sides (as squashfs starts each file on a
    /// block): its chunks then hold its bytes alone, and are the same in
    /// every pack that holds the file, where a cache addressed by content
    /// shares them. Only smaller files share chunks.
    fn cut<W: Write>(&mut self, out: &mut Out<W>) -> std::io::Result<()> {
        if self.open.is_empty() { Ok(()) } else { self.seal(out) }
    }

    /// Starts a file stored raw: writes what is pending and aligns.
    pub(super) fn start_raw<W: Write>(&mut self, out: &mut Out<W>, align: u64) -> std::io::Result<()> {
        self.flush(out)?;
        out.pad(align)?;
        self.holds = Holds::Raw;
        Ok(())
    }

    /// Ends a file stored raw.
    pub(super) fn end_raw<W: Write>(&mut self, out: &mut Out<W>) -> std::io::Result<()> {
        self.flush(out)?;
        self.holds = Holds::Small;
        Ok(())
    }

    /// Closes the open chunk (if it holds anything) and writes every chunk
    /// not written yet.
    pub(super) fn flush<W: Write>(&mut self, out: &mut Out<W>) -> std::io::Result<()> {
        if !self.open.is_empty() {
            let full = std::mem::replace(&mut self.open, Vec::with_capacity(self.chunk_size));
            self.sealed_len += full.len();
            self.sealed.push((full, self.holds));
        }
        self.write_sealed(out)
    }

    /// Closes the open chunk; writes the sealed ones once a batch is full.
    fn seal<W: Write>(&mut self, out: &mut Out<W>) -> std::io::Result<()> {
        let full = std::mem::replace(&mut self.open, Vec::with_capacity(self.chunk_size));
        self.sealed_len += full.len();
        self.sealed.push((full, self.holds));
        if self.sealed_len >= self.threads * PER_THREAD * self.chunk_size || self.sealed.len() >= MAX_BATCH {
            self.write_sealed(out)?;
        }
        Ok(())
    }

    /// Compresses the sealed chunks (in parallel where there are cores)
    /// and writes them in order, each compressed where that pays and raw
    /// otherwise.
    fn write_sealed<W: Write>(&mut self, out: &mut Out<W>) -> std::io::Result<()> {
        let sealed = std::mem::take(&mut self.sealed);
        self.sealed_len = 0;
        let (comp, dict) = (self.comp, self.dict.as_ref());
        let digests = self.digests.is_some();
        // Each chunk's stored bytes and codec, if compressed, and their
        // digest; a part's chunks of small files share one compressor of
        // the dictionary.
        let compress = |part: &[(Vec<u8>, Holds)]| -> Vec<Written> {
            // (`Some(None)`: the library could not allocate a compressor;
            // those chunks are stored raw, never compressed without it.)
            let mut with_dict = dict.map(Trained::compressor);
            let each = |(content, holds): &(Vec<u8>, Holds)| {
                let mut stored = Vec::new();
                let code = match (holds, &mut with_dict) {
                    (Holds::Raw, _) | (Holds::Small, Some(None)) => Codec::Raw.code(),
                    (Holds::Small, Some(Some(c))) => {
                        // It fails only on allocation: stored raw.
                        if !c.compress(content, &mut stored) {
                            stored.clear();
                        }
                        ZSTD_DICT
                    }
                    (Holds::Own, _) | (Holds::Small, None) => {
                        comp.compress(content, &mut stored);
                        comp.codec.code()
                    }
                };
                let stored = (!stored.is_empty() && worth_it(stored.len(), content.len())).then_some((stored, code));
                let bytes = stored.as_ref().map_or(&content[..], |(s, _)| &s[..]);
                let digest = if digests { *blake3::hash(bytes).as_bytes() } else { [0; 32] };
                (stored, digest)
            };
            part.iter().map(each).collect()
        };
        let compressed: Vec<Written> = if self.threads > 1 && sealed.len() > 1 {
            let per = sealed.len().div_ceil(self.threads);
            std::thread::scope(|s| {
                let parts: Vec<_> = sealed.chunks(per).map(|part| s.spawn(move || compress(part))).collect();
                // A compressor that panicked is a bug in it: pass it on.
                parts.into_iter().flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
            })
        } else {
            compress(&sealed)
        };
        for ((content, _), (stored, digest)) in sealed.iter().zip(compressed) {
            let (codec, bytes) = match &stored {
                Some((s, code)) => (*code, s),
                None => (Codec::Raw.code(), content),
            };
            #[allow(clippy::cast_possible_truncation, reason = "at most the chunk size (1 MiB, as options checked)")]
            let stored_len = bytes.len() as u32;
            self.records.push(ChunkRecord {
                offset: out.pos,
                content_offset: self.written_to,
                checksum: xxh3_64(bytes),
                stored_len,
                codec,
            });
            if let Some(d) = &mut self.digests {
                d.push(digest);
            }
            out.write(bytes)?;
            self.written_to += content.len() as u64;
        }
        Ok(())
    }

    /// The dictionary, if any, then the chunk table and its footer, ending
    /// the index region. The output is at a multiple of 8: the dictionary
    /// is padded before so that it ends where the table starts, at one.
    pub(super) fn finish<W: Write>(self, out: &mut Out<W>, stage: &mut Vec<u8>) -> std::io::Result<()> {
        if let Some(d) = &self.dict {
            out.write(&[0; 8][..d.bytes().len().wrapping_neg() % 8])?;
            out.write(d.bytes())?;
        }
        out.write_records(stage, self.records.iter().map(ChunkRecord::encode))?;
        let mut footer = [0u8; width(FOOTER_LEN)];
        footer[..8].copy_from_slice(&(self.records.len() as u64).to_le_bytes());
        footer[8..].copy_from_slice(&self.content_len.to_le_bytes());
        out.write(&footer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes and the chunk table do not depend on how many cores
    /// compressed them.
    #[test]
    fn cores_do_not_change_the_bytes() {
        let text: Vec<u8> = (0..300_000u32).flat_map(|i| format!("{} ", i % 977).into_bytes()).collect();
        #[allow(
            clippy::cast_possible_truncation,
            reason = "noise: one byte of a multiplicative hash, the rest dropped"
        )]
        let noise: Vec<u8> = (0..100_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect();
        let write = |threads: usize| {
            let mut c = Chunker::new(Compression::zstd(3), 4096);
            c.threads = threads;
            let mut out = Out::new(Vec::new(), 0);
            c.push(&mut out, &text[..100_000]).unwrap();
            c.start_raw(&mut out, 64).unwrap();
            c.push(&mut out, &noise).unwrap();
            c.end_raw(&mut out).unwrap();
            c.push(&mut out, &text[100_000..]).unwrap();
            c.flush(&mut out).unwrap();
            let (records, len) = (c.records.clone(), c.content_len);
            let mut stage = Vec::new();
            c.finish(&mut out, &mut stage).unwrap();
            (out.into_inner().unwrap(), records, len)
        };
        let (one, records, len) = write(1);
        assert_eq!(write(3).0, one);
        assert_eq!(write(16).0, one);
        // The chunks tile the content space, each 1 to 4096 bytes, raw where
        // the noise is.
        assert_eq!(len, (text.len() + noise.len()) as u64);
        let ends = records.iter().skip(1).map(|r| r.content_offset).chain([len]);
        for (r, end) in records.iter().zip(ends) {
            assert!(end > r.content_offset && end - r.content_offset <= 4096, "{r:?} to {end}");
        }
        assert_eq!(records[0].content_offset, 0);
        assert!(records.iter().any(|r| r.codec == Codec::Raw.code()));
        assert!(records.iter().any(|r| r.codec == Codec::Zstd.code()));
    }
}
