//! The writer's side of version 2: [`Chunker`] lays file contents end to
//! end in the content space and writes them out chunk by chunk, each
//! compressed, or raw where compression saves too little. A file the
//! writer finds incompressible starts a chunk of its own and is written
//! raw, aligned, so that a mapped pack lends it without a copy.

use std::io::Write;

use xxhash_rust::xxh3::xxh3_64;

use super::chunk::{ChunkRecord, Codec, Compression, FOOTER_LEN};
use super::writer::Out;

/// A chunk is stored compressed only if that saves at least 1/32 of it:
/// less is not worth decoding.
fn worth_it(stored: usize, content: usize) -> bool {
    stored < content - content / 32
}

pub(crate) struct Chunker {
    comp: Compression,
    pub(crate) chunk_size: usize,
    /// The open chunk's content.
    open: Vec<u8>,
    /// The open chunk is part of a file stored raw.
    raw: bool,
    /// The content space's length so far, the open chunk included.
    pub(crate) content_len: u64,
    records: Vec<ChunkRecord>,
    scratch: Vec<u8>,
}

impl Chunker {
    pub(crate) fn new(comp: Compression, chunk_size: usize) -> Self {
        Chunker {
            comp,
            chunk_size,
            open: Vec::with_capacity(chunk_size),
            raw: false,
            content_len: 0,
            records: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// The codec chunks are compressed with.
    pub(crate) fn codec(&self) -> Codec {
        self.comp.codec
    }

    /// Its level.
    pub(crate) fn level(&self) -> i32 {
        self.comp.level
    }

    /// Whether a file starting with `head` is worth compressing.
    pub(crate) fn compresses(&mut self, head: &[u8]) -> bool {
        self.comp.compress(head, &mut self.scratch);
        worth_it(self.scratch.len(), head.len())
    }

    /// Appends `bytes` to the content space, writing each chunk it fills.
    pub(crate) fn push<W: Write>(&mut self, out: &mut Out<W>, mut bytes: &[u8]) -> std::io::Result<()> {
        while !bytes.is_empty() {
            let n = (self.chunk_size - self.open.len()).min(bytes.len());
            self.open.extend_from_slice(&bytes[..n]);
            self.content_len += n as u64;
            bytes = &bytes[n..];
            if self.open.len() == self.chunk_size {
                self.flush(out)?;
            }
        }
        Ok(())
    }

    /// Starts a file stored raw: closes the open chunk and aligns.
    pub(crate) fn start_raw<W: Write>(&mut self, out: &mut Out<W>, align: u64) -> std::io::Result<()> {
        self.flush(out)?;
        out.pad(align)?;
        self.raw = true;
        Ok(())
    }

    /// Ends a file stored raw.
    pub(crate) fn end_raw<W: Write>(&mut self, out: &mut Out<W>) -> std::io::Result<()> {
        self.flush(out)?;
        self.raw = false;
        Ok(())
    }

    /// Writes the open chunk, if it holds anything.
    pub(crate) fn flush<W: Write>(&mut self, out: &mut Out<W>) -> std::io::Result<()> {
        if self.open.is_empty() {
            return Ok(());
        }
        let content_offset = self.content_len - self.open.len() as u64;
        let compressed = !self.raw && {
            self.comp.compress(&self.open, &mut self.scratch);
            worth_it(self.scratch.len(), self.open.len())
        };
        let (codec, stored) = if compressed { (self.comp.codec, &self.scratch) } else { (Codec::Raw, &self.open) };
        let record = ChunkRecord {
            offset: out.pos,
            content_offset,
            checksum: xxh3_64(stored),
            // At most the chunk size (1 MiB) or its compressed size, smaller.
            stored_len: stored.len() as u32,
            codec: codec.code(),
        };
        out.write(stored)?;
        self.records.push(record);
        self.open.clear();
        Ok(())
    }

    /// The chunk table and its footer, ending the index region.
    pub(crate) fn finish<W: Write>(self, out: &mut Out<W>, stage: &mut Vec<u8>) -> std::io::Result<()> {
        out.write_records(stage, self.records.iter().map(ChunkRecord::encode))?;
        let mut footer = [0u8; FOOTER_LEN as usize];
        footer[..8].copy_from_slice(&(self.records.len() as u64).to_le_bytes());
        footer[8..].copy_from_slice(&self.content_len.to_le_bytes());
        out.write(&footer)
    }
}
