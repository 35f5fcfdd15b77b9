//! [`Out`]: the pack's output, counting its position and hashing the
//! index as it passes. Both the walk's data and the version 2 chunks
//! ([`Chunker`](super::chunker::Chunker)) are written through it.

use std::io::{BufWriter, Write};

use xxhash_rust::xxh3::Xxh3Default;

/// Bytes buffered on the way out, and records staged per write.
const BUF: usize = 64 * 1024;

/// The output, counting its position and hashing the index as it passes.
pub(super) struct Out<W: Write> {
    inner: BufWriter<W>,
    pub(super) pos: u64,
    hash: Option<Xxh3Default>,
    /// The pack digest's hasher, from the index on (the header fed first).
    digest: Option<blake3::Hasher>,
}

impl<W: Write> Out<W> {
    /// An output whose first byte lands at `pos`, hashing nothing.
    pub(super) fn new(inner: W, pos: u64) -> Self {
        Out { inner: BufWriter::with_capacity(BUF, inner), pos, hash: None, digest: None }
    }

    /// The inner writer, flushed.
    pub(super) fn into_inner(self) -> std::io::Result<W> {
        self.inner.into_inner().map_err(|e| e.into_error())
    }

    /// Hashes what is written from here on (the index), instead of
    /// what was hashed so far.
    pub(super) fn start_hash(&mut self) {
        self.hash = Some(Xxh3Default::new());
    }

    /// Feeds the pack digest `header`, then everything written from here
    /// on (the index region and the trailer).
    pub(super) fn start_digest(&mut self, header: &[u8]) {
        let mut h = blake3::Hasher::new();
        h.update(header);
        self.digest = Some(h);
    }

    /// The pack digest, if [`start_digest`](Self::start_digest) was called.
    pub(super) fn take_digest(&mut self) -> Option<crate::pack::Digest> {
        self.digest.take().map(|h| crate::pack::Digest(*h.finalize().as_bytes()))
    }

    /// The hash of what was written since [`start_hash`](Self::start_hash)
    /// (0 if it was not called); stops hashing.
    pub(super) fn take_hash(&mut self) -> u64 {
        self.hash.take().map_or(0, |h| h.digest())
    }

    /// Writes what is buffered to the inner writer, and flushes it.
    pub(super) fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }

    pub(super) fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.inner.write_all(bytes)?;
        if let Some(h) = &mut self.hash {
            h.update(bytes);
        }
        if let Some(h) = &mut self.digest {
            h.update(bytes);
        }
        self.pos += bytes.len() as u64;
        Ok(())
    }

    /// Writes `records` through `stage` (an empty buffer), `BUF` bytes
    /// at a time.
    pub(super) fn write_records<const N: usize>(
        &mut self,
        stage: &mut Vec<u8>,
        records: impl Iterator<Item = [u8; N]>,
    ) -> std::io::Result<()> {
        for r in records {
            stage.extend_from_slice(&r);
            if stage.len() + N > BUF {
                self.write(stage)?;
                stage.clear();
            }
        }
        self.write(stage)?;
        stage.clear();
        Ok(())
    }

    /// Writes zeros up to the next multiple of `align` (a power of two).
    pub(super) fn pad(&mut self, align: u64) -> std::io::Result<()> {
        const ZEROS: [u8; 4096] = [0; 4096];
        let mut n = self.pos.wrapping_neg() & (align - 1);
        while n > 0 {
            let k = usize::try_from(n).map_or(ZEROS.len(), |n| n.min(ZEROS.len()));
            self.write(&ZEROS[..k])?;
            n -= k as u64;
        }
        Ok(())
    }
}
