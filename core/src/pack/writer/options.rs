//! [`PackOptions`]: how to write a pack, and the entry points that write
//! one ([`PackOptions::write`], [`write_pack`]); [`PackStats`], what a
//! written pack holds.

use std::hash::BuildHasher;
use std::io::Write;

use xxhash_rust::xxh3::Xxh3DefaultBuilder;

use super::chunker::Chunker;
use super::error::WriteError;
use super::walk::Writer;
use crate::FileSystem;
use crate::digest::DIGESTS;
use crate::pack::chunk::{Codec, Compression, DEFAULT_CHUNK_SIZE, is_chunk_size};
use crate::pack::dictionary::{DICTIONARY, Trained};
use crate::pack::header::{ALIGN_LOG2, Header};

/// What a written pack holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PackStats {
    /// Inodes (files, directories, symlinks), the root included.
    pub inodes: u64,
    /// Names (directory entries).
    pub dirents: u64,
    /// Distinct contents stored.
    pub blobs: u64,
    /// Bytes of file content, counting each inode once.
    pub file_bytes: u64,
    /// Bytes of content stored in blobs, after dedup.
    pub blob_bytes: u64,
    /// Length of the pack.
    pub pack_len: u64,
    /// The pack digest, which pins it (none when written without a digest
    /// table).
    pub digest: Option<crate::pack::Digest>,
}

/// How to write a pack; [`write`](Self::write) writes one.
///
/// `H` is the hasher that finds dedup candidates (xxh3 by default). It
/// decides only which blobs are compared byte by byte, never which are
/// shared, so a weak or even constant hasher costs time, not correctness.
///
/// ```
/// use packfs_core::pack::{PackFs, PackOptions};
/// use packfs_core::{FileSystem, MemFs, OpenOptions};
///
/// let fs = MemFs::new();
/// let f = fs.open(fs.root(), "a.txt", &OpenOptions::create())?;
/// fs.write_at(f, 0, b"hello")?;
/// fs.close(f);
///
/// // Pack a snapshot: writers may go on meanwhile.
/// let mut bytes = Vec::new();
/// let stats = PackOptions::new().align(4096).write(&fs.snapshot(), &mut bytes)?;
/// assert_eq!(stats.pack_len, bytes.len() as u64);
///
/// let pack = PackFs::open(bytes)?;
/// let ino = pack.lookup(pack.root(), "a.txt")?;
/// assert_eq!(*pack.file_bytes(ino)?, *b"hello"); // zero-copy, 4096-aligned
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct PackOptions<H = Xxh3DefaultBuilder> {
    align: u64,
    compression: Option<Compression>,
    chunk_size: u64,
    hasher: H,
    /// `hasher` is the default, xxh3: the dedup hash of a content is its
    /// checksum, computed once.
    key_is_checksum: bool,
    digests: bool,
    dictionary: bool,
}

impl Default for PackOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl PackOptions {
    /// 8-byte blob alignment, no compression, xxh3 dedup hashing, a
    /// digest table.
    pub fn new() -> Self {
        PackOptions {
            align: 8,
            compression: None,
            chunk_size: DEFAULT_CHUNK_SIZE,
            hasher: Xxh3DefaultBuilder,
            key_is_checksum: true,
            digests: true,
            dictionary: true,
        }
    }
}

impl<H: BuildHasher> PackOptions<H> {
    /// Aligns every blob to `bytes`, a power of two from 8 to 65536 (4096
    /// lets a host map blobs page by page). Checked by [`write`](Self::write).
    pub fn align(mut self, bytes: u64) -> Self {
        self.align = bytes;
        self
    }

    /// Finds dedup candidates with `hasher` instead of xxh3. It must hash a
    /// byte stream the same however it is split into `write` calls (xxh3's
    /// and SipHash's streaming hashers do), or some duplicates go unnoticed.
    pub fn dedup_hasher<H2: BuildHasher>(self, hasher: H2) -> PackOptions<H2> {
        let (align, compression, chunk_size) = (self.align, self.compression, self.chunk_size);
        let (digests, dictionary) = (self.digests, self.dictionary);
        PackOptions { align, compression, chunk_size, hasher, key_is_checksum: false, digests, dictionary }
    }

    /// Writes a digest table, the BLAKE3 of every extent, so that the pack
    /// can be pinned by its [digest](super::super::PackFs::digest) (on by
    /// default). Off, the pack is as packs were before digests: it still
    /// reads everywhere, and cannot be pinned.
    pub fn digests(mut self, on: bool) -> Self {
        self.digests = on;
        self
    }

    /// With zstd, trains a dictionary on the files smaller than a chunk and
    /// compresses every chunk with it, each small file in chunks of its own
    /// (files under 1 KiB share one; on by default; `docs/pack-format.md`
    /// §19): a reader then fetches and decodes the files it reads and
    /// almost nothing else, and the pack is a few percent larger than with
    /// 128 KiB chunks shared by small files.
    /// Only the C library's encoder (feature `zstd-c`) trains one; packs
    /// whose small files hold under 256 KiB get none. Off, small files
    /// share full chunks.
    pub fn dictionary(mut self, on: bool) -> Self {
        self.dictionary = on;
        self
    }

    /// Compresses contents (a version 2 pack), or not (`None`: version 1,
    /// which every reader of this format reads).
    pub fn compress(mut self, compression: Option<Compression>) -> Self {
        self.compression = compression;
        self
    }

    /// The chunk size of a compressed pack: a power of two from 4 KiB to
    /// 1 MiB (128 KiB by default). A read decodes whole chunks; larger ones
    /// compress better.
    pub fn chunk_size(mut self, bytes: u64) -> Self {
        self.chunk_size = bytes;
        self
    }

    /// Writes `fs`, from its root, as a pack to `out`. The same tree always
    /// gives the same bytes. Pass a snapshot, not a filesystem that is being
    /// written to.
    pub fn write<W: Write>(&self, fs: &dyn FileSystem, out: W) -> Result<PackStats, WriteError> {
        if !self.align.is_power_of_two() || !ALIGN_LOG2.contains(&self.align.trailing_zeros()) {
            return Err(WriteError::BadAlignment(self.align));
        }
        if !is_chunk_size(self.chunk_size) {
            return Err(WriteError::BadChunkSize(self.chunk_size));
        }
        let chunk_log2 = self.chunk_size.trailing_zeros();
        // At most 1 MiB, as just checked.
        let chunk_size = usize::try_from(self.chunk_size).map_err(|_| WriteError::BadChunkSize(self.chunk_size))?;
        let mut w = Writer::new(fs, &self.hasher, self.key_is_checksum, out, self.align);
        w.chunker = self.compression.map(|c| Chunker::new(c, chunk_size));
        let dict = match self.compression {
            Some(c) if self.dictionary && c.codec() == Codec::Zstd => w.train(self.chunk_size, c.level)?,
            _ => None,
        };
        let dict_len = dict.as_ref().map_or(0, Trained::len);
        if let Some(c) = &mut w.chunker {
            c.dict = dict;
        }
        if self.digests {
            match &mut w.chunker {
                Some(c) => c.digests = Some(Vec::new()),
                None => w.digests = Some(Vec::new()),
            }
        }
        w.header = Header::encode(&Header {
            version: w.version(),
            incompat_flags: if dict_len > 0 { DICTIONARY } else { 0 },
            compat_flags: if self.digests { DIGESTS } else { 0 },
            align_log2: self.align.trailing_zeros(),
            chunk_log2: if w.chunker.is_some() { chunk_log2 } else { 0 },
            dict_len,
        });
        w.out.write(&w.header)?;
        w.walk()?;
        w.finish()
    }
}

/// Writes `fs` as a pack with the default [`PackOptions`].
pub fn write_pack<W: Write>(fs: &dyn FileSystem, out: W) -> Result<PackStats, WriteError> {
    PackOptions::new().write(fs, out)
}
