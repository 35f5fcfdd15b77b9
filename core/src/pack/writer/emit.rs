//! Emission: after the data, the index (inode, dirent, blob and string
//! tables; version 2's chunk table, and the whole region stored as one zstd
//! frame where that pays) and the trailer: [`Writer::finish`].

use std::io::Write;

use super::chunker::Chunker;
use super::error::WriteError;
use super::options::PackStats;
use super::out::Out;
use super::walk::Writer;
use crate::FileType;
use crate::pack::blob::BlobRecord;
use crate::pack::chunk::{Codec, Compression};
use crate::pack::dirent::DirentRecord;
use crate::pack::header::HEADER_LEN;
use crate::pack::inode::{Body, InodeRecord};
use crate::pack::trailer::{MAX_INDEX_RATIO, TRAILER_LEN, Table, Trailer};

/// The least zstd level a version 2 index is compressed at: it is small,
/// read once per open, and its size is paid on every remote open.
const INDEX_LEVEL: i32 = 19;

/// Where the index's tables and string pool were written.
struct Placed {
    inodes: Table,
    dirents: Table,
    blobs: Table,
    strings_offset: u64,
}

/// The index's tables, to be written after the data.
struct IndexParts<'a> {
    inodes: &'a [InodeRecord],
    dirents: &'a [DirentRecord],
    blobs: &'a [BlobRecord],
    strings: &'a [u8],
    /// The digest table's records (none without one).
    digests: &'a [[u8; 32]],
}

impl IndexParts<'_> {
    /// Writes the tables, the string pool and (version 2) the chunk table
    /// to `out`; returns where the tables and the pool start.
    fn write<W: Write>(
        &self,
        out: &mut Out<W>,
        stage: &mut Vec<u8>,
        chunker: Option<Chunker>,
    ) -> std::io::Result<Placed> {
        let table = |offset: u64, count: usize| Table { offset, count: count as u64 };
        let inodes = table(out.pos, self.inodes.len());
        out.write_records(stage, self.inodes.iter().map(InodeRecord::encode))?;
        let dirents = table(out.pos, self.dirents.len());
        out.write_records(stage, self.dirents.iter().map(DirentRecord::encode))?;
        let blobs = table(out.pos, self.blobs.len());
        out.write_records(stage, self.blobs.iter().map(BlobRecord::encode))?;
        let strings_offset = out.pos;
        out.write(self.strings)?;
        // What follows (the digest table, version 2's chunk table, the
        // trailer) starts at a multiple of 8.
        out.pad(8)?;
        out.write_records(stage, self.digests.iter().copied())?;
        if let Some(c) = chunker {
            c.finish(out, stage)?;
        }
        Ok(Placed { inodes, dirents, blobs, strings_offset })
    }
}

impl<H, W: Write> Writer<'_, H, W> {
    /// Link counts, then the index and the trailer.
    pub(super) fn finish(mut self) -> Result<PackStats, WriteError> {
        if let Some(c) = &mut self.chunker {
            c.flush(&mut self.out)?;
        }
        let data_len = self.out.pos - HEADER_LEN;
        self.count_links()?;
        self.out.pad(8)?;
        let index_offset = self.out.pos;
        let version = self.version();
        let (Placed { inodes, dirents, blobs, strings_offset }, index_len) = self.write_index(index_offset)?;
        let index_checksum = self.out.take_hash();
        let trailer = Trailer {
            version,
            index_len,
            pack_len: self.out.pos + TRAILER_LEN,
            data_offset: HEADER_LEN,
            data_len,
            index_offset,
            index_checksum,
            inodes,
            dirents,
            blobs,
            strings_offset,
            strings_len: self.strings.len() as u64,
        };
        self.out.write(&trailer.encode())?;
        let digest = self.out.take_digest();
        self.out.flush()?;
        Ok(PackStats {
            inodes: inodes.count,
            dirents: dirents.count,
            blobs: blobs.count,
            file_bytes: self.file_bytes,
            blob_bytes: self.blob_bytes,
            pack_len: self.out.pos,
            digest,
        })
    }

    /// Sets each inode's link count: a directory's, 2 and its
    /// subdirectories; any other's, the names it has.
    fn count_links(&mut self) -> Result<(), WriteError> {
        let mut names = vec![0u32; self.inodes.len()];
        for d in &self.dirents {
            names[d.inode as usize] += 1;
        }
        let kinds: Vec<FileType> = self.inodes.iter().map(InodeRecord::kind).collect();
        for (i, inode) in self.inodes.iter_mut().enumerate() {
            let nlink = match inode.body {
                Body::Dir { first, count, .. } => {
                    #[allow(
                        clippy::cast_possible_truncation,
                        reason = "set from `dirents.len()`: a position in memory"
                    )]
                    let first = first as usize;
                    let run = &self.dirents[first..first + count as usize];
                    run.iter().filter(|d| kinds[d.inode as usize] == FileType::Dir).count() + 2
                }
                _ => names[i] as usize,
            };
            let too_many = || WriteError::BadSource { ino: self.inode_source[i], what: "too many links" };
            inode.nlink = u32::try_from(nlink).map_err(|_| too_many())?;
        }
        Ok(())
    }

    /// Writes the index at `index_offset`, hashed (and, with digests, the
    /// pack digested from the header on); returns its tables and its
    /// stored length (0: not compressed).
    fn write_index(&mut self, index_offset: u64) -> Result<(Placed, u32), WriteError> {
        // Records are encoded into `stage` and written (and hashed) 64 KiB
        // at a time: a hasher update per 16-byte record cost more than the
        // encoding.
        let mut stage = std::mem::take(&mut self.own);
        stage.clear();
        let digests = match &mut self.chunker {
            Some(c) => c.digests.take(),
            None => self.digests.take(),
        };
        if digests.is_some() {
            self.out.start_digest(&self.header);
        }
        let parts = IndexParts {
            inodes: &self.inodes,
            dirents: &self.dirents,
            blobs: &self.blobs,
            strings: &self.strings,
            digests: digests.as_deref().unwrap_or_default(),
        };
        let Some(chunker) = self.chunker.take() else {
            self.out.start_hash();
            return Ok((parts.write(&mut self.out, &mut stage, None)?, 0));
        };
        // Version 2: the index is laid out in memory at the offsets it
        // would have, then stored as one zstd frame if that pays.
        let level = INDEX_LEVEL.max(if chunker.codec() == Codec::Zstd { chunker.level() } else { 0 });
        let mut plain = Out::new(Vec::new(), index_offset);
        let tables = parts.write(&mut plain, &mut stage, Some(chunker))?;
        let plain = plain.into_inner()?;
        let mut packed = Vec::new();
        Compression::zstd(level).compress(&plain, &mut packed);
        self.out.start_hash();
        let fits = u32::try_from(plain.len())
            .ok()
            .filter(|&n| packed.len() < plain.len() && u64::from(n) <= packed.len() as u64 * MAX_INDEX_RATIO);
        match fits {
            Some(n) => {
                self.out.write(&packed)?;
                self.out.pad(8)?;
                Ok((tables, n))
            }
            None => {
                self.out.write(&plain)?;
                Ok((tables, 0))
            }
        }
    }
}
