//! Storing a file's content as a blob, once: [`Writer::add_blob`].
//!
//! Duplicate contents are stored once. A blob's dedup key is (hash, length)
//! with the [`PackOptions::dedup_hasher`]; a key match is only a candidate
//! ([`Candidates`]): the writer re-reads the candidate's bytes from the
//! source (the data already written cannot be read back from a `Write`) and
//! shares the blob only if every byte is equal
//! ([`same_content`](Writer::same_content)).
//!
//! [`PackOptions::dedup_hasher`]: super::options::PackOptions::dedup_hasher
//! [`Candidates`]: super::candidates::Candidates

use std::hash::{BuildHasher, Hasher};
use std::io::Write;

use xxhash_rust::xxh3::{Xxh3Default, xxh3_64};

use super::candidates::NO_BLOB;
use super::chunker::Chunker;
use super::error::WriteError;
use super::out::Out;
use super::read::{PIECE, piece_len, read_exact, read_pieces};
use super::walk::Writer;
use crate::Ino;
use crate::pack::blob::BlobRecord;
use crate::pack::trailer::MAX_COUNT;

/// Where a version 2 blob's content goes.
#[derive(Clone, Copy)]
enum Placing {
    /// Into the chunk being filled, with other small files.
    Small,
    /// Chunks of its own, compressed.
    Own,
    /// Chunks of its own, stored raw.
    Raw,
}

impl<H: BuildHasher, W: Write> Writer<'_, H, W> {
    /// Writes a blob's next `bytes`: into the data section (version 1) or
    /// the content space (version 2).
    fn put(out: &mut Out<W>, chunker: &mut Option<Chunker>, bytes: &[u8]) -> std::io::Result<()> {
        match chunker {
            Some(c) => c.push(out, bytes),
            None => out.write(bytes),
        }
    }

    /// Stores the content of source file `src` (`size` bytes) as a blob, or
    /// finds a byte-identical one; returns the blob index and the size.
    pub(super) fn add_blob(&mut self, src: Ino, size: u64) -> Result<(u32, u64), WriteError> {
        let (checksum, hash) = self.fingerprint(src, size)?;
        let tag = (self.tables.hash_one((hash, size)) >> 32) as u32;
        let (keys, blobs) = (&self.keys, &self.blobs);
        let same_key = |b: u32| keys[b as usize] == hash && blobs[b as usize].len == size;
        let head = self.candidates.find(tag, same_key).unwrap_or(NO_BLOB);
        let mut c = head;
        while c != NO_BLOB {
            if self.same_content(c, src, size)? {
                return Ok((c, size));
            }
            c = self.next_candidate[c as usize];
        }
        let k = u32::try_from(self.blobs.len()).ok().filter(|&k| u64::from(k) < MAX_COUNT);
        let k = k.ok_or(WriteError::TooMany("blobs"))?;
        let offset = self.write_blob(src, size, checksum)?;
        // A new key points at its first blob; a later blob of the key goes
        // second in its chain (chained blobs all differ, so order is free).
        if head == NO_BLOB {
            self.candidates.insert(tag, k);
            self.next_candidate.push(NO_BLOB);
        } else {
            self.next_candidate.push(self.next_candidate[head as usize]);
            self.next_candidate[head as usize] = k;
        }
        self.blobs.push(BlobRecord { offset, len: size, checksum });
        self.keys.push(hash);
        self.blob_source.push(src);
        self.blob_bytes += size;
        Ok((k, size))
    }

    /// The first read of `src`: its checksum and its dedup key. A file of
    /// one piece stays in `own` and is hashed in one call; with the default
    /// hasher the key is the checksum, not a second pass.
    fn fingerprint(&mut self, src: Ino, size: u64) -> Result<(u64, u64), WriteError> {
        let mut key = (!self.key_is_checksum).then(|| self.hasher.build_hasher());
        let checksum = if size <= PIECE as u64 {
            let bytes = &mut self.own[..piece_len(size)];
            read_exact(self.fs, src, 0, bytes)?;
            if let Some(key) = &mut key {
                key.write(bytes);
            }
            xxh3_64(bytes)
        } else {
            let mut sum = Xxh3Default::new();
            read_pieces(self.fs, src, size, &mut self.own, |_, piece| {
                if let Some(key) = &mut key {
                    key.write(piece);
                }
                sum.update(piece);
                Ok(true)
            })?;
            sum.digest()
        };
        Ok((checksum, key.map_or(checksum, |key| key.finish())))
    }

    /// Writes `src` as a new blob, checking that it still has `checksum`;
    /// returns where it starts (in the data section, or the content space).
    fn write_blob(&mut self, src: Ino, size: u64, checksum: u64) -> Result<u64, WriteError> {
        let placing = self.placing(src, size)?;
        let offset = match (&mut self.chunker, placing) {
            (Some(c), Placing::Raw) => c.start_raw(&mut self.out, self.align).map(|()| c.content_len)?,
            (Some(c), Placing::Own) => c.start_own(&mut self.out).map(|()| c.content_len)?,
            (Some(c), _) => c.before_small(&mut self.out, size).map(|()| c.content_len)?,
            (None, _) => {
                self.out.pad(self.align)?;
                self.out.pos
            }
        };
        // Version 1 with digests: the blob's, of the bytes as written.
        let mut digest = self.digests.is_some().then(blake3::Hasher::new);
        if size <= PIECE as u64 {
            let bytes = &self.own[..piece_len(size)];
            if let Some(d) = &mut digest {
                d.update(bytes);
            }
            Self::put(&mut self.out, &mut self.chunker, bytes)?;
        } else {
            // Second read, for writing: it must match the first.
            let mut again = Xxh3Default::new();
            let (out, chunker) = (&mut self.out, &mut self.chunker);
            read_pieces(self.fs, src, size, &mut self.own, |_, piece| {
                again.update(piece);
                if let Some(d) = &mut digest {
                    d.update(piece);
                }
                Self::put(out, chunker, piece)?;
                Ok(true)
            })?;
            if again.digest() != checksum {
                return Err(WriteError::SourceChanged { ino: src });
            }
        }
        if let (Some(all), Some(d)) = (&mut self.digests, digest) {
            all.push(*d.finalize().as_bytes());
        }
        match (&mut self.chunker, placing) {
            (Some(c), Placing::Raw) => c.end_raw(&mut self.out)?,
            (Some(c), Placing::Own) => c.end_own(&mut self.out)?,
            (Some(c), _) => c.after_small(&mut self.out)?,
            (None, _) => {}
        }
        Ok(offset)
    }

    /// Version 2: where a new blob's content goes. A file of a chunk or
    /// more has chunks of its own (`Chunker::cut`), stored raw if the codec
    /// cannot shrink it, judged by its first piece. (`own` holds the last
    /// piece read, or a dedup candidate's: the first is read again.)
    fn placing(&mut self, src: Ino, size: u64) -> Result<Placing, WriteError> {
        let Some(c) = &mut self.chunker else { return Ok(Placing::Small) };
        if size < c.chunk_size as u64 {
            return Ok(Placing::Small);
        }
        let head = &mut self.own[..piece_len(size)];
        read_exact(self.fs, src, 0, head)?;
        Ok(if c.compresses(head) { Placing::Own } else { Placing::Raw })
    }

    /// True when blob `c` holds exactly the `size` bytes of source file
    /// `src`, compared byte by byte: the blob's source is re-read, and
    /// re-checked against the blob's checksum so that a source changed
    /// since the blob was written cannot pass for it.
    fn same_content(&mut self, c: u32, src: Ino, size: u64) -> Result<bool, WriteError> {
        let blob = self.blobs[c as usize];
        let other = self.blob_source[c as usize];
        if size <= PIECE as u64 {
            let n = piece_len(size);
            read_exact(self.fs, other, 0, &mut self.other[..n])?;
            if self.own[..n] != self.other[..n] {
                return Ok(false);
            }
            if xxh3_64(&self.other[..n]) != blob.checksum {
                return Err(WriteError::SourceChanged { ino: other });
            }
            return Ok(true);
        }
        let mut sum = Xxh3Default::new();
        let (fs, theirs) = (self.fs, &mut self.other);
        let same = read_pieces(fs, src, size, &mut self.own, |off, ours| {
            let theirs = &mut theirs[..ours.len()];
            read_exact(fs, other, off, theirs)?;
            sum.update(theirs);
            Ok(ours == &*theirs)
        })?;
        if !same {
            return Ok(false);
        }
        if sum.digest() != blob.checksum {
            return Err(WriteError::SourceChanged { ino: other });
        }
        Ok(true)
    }
}
