//! How `pack`, `compact` and `run --save` write a pack: `--compress`,
//! `--chunk-size`, `--no-dictionary` and `--no-digests`, one set of flags
//! for all three.

use packfs_core::pack::{Compression, DEFAULT_CHUNK_SIZE, PackOptions, is_chunk_size};

/// zstd's level unless one is asked for: close to the ratio of its top
/// levels on source trees at a fraction of their time.
const DEFAULT_LEVEL: i32 = 9;

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Packing {
    /// How to store file contents: zstd or zstd:LEVEL (levels 1 to 22, 9 by
    /// default), lz4 (faster reads, larger), or none (a version 1 pack,
    /// which older readers read too). Content that does not compress is
    /// stored raw either way.
    #[arg(long, value_name = "CODEC", default_value = "zstd", value_parser = parse_compress)]
    compress: Codec,
    /// A compressed pack's chunk size: a power of two from 4096 to 1048576.
    /// A read decodes whole chunks; larger ones compress better.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_CHUNK_SIZE, value_parser = parse_chunk_size)]
    chunk_size: u64,
    /// With zstd, train no dictionary: small files then share chunks, and
    /// a lazy read of one fetches and decodes its neighbours too. (With
    /// one, every file has chunks of its own, compressed with a dictionary
    /// trained on the pack's small files.)
    #[arg(long)]
    no_dictionary: bool,
    /// Write no digest table: the pack is as packs were before digests
    /// (a little smaller and faster to write) and cannot be pinned.
    #[arg(long)]
    no_digests: bool,
}

/// `--compress`'s value (clap takes `Option` to mean an optional flag).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Codec(Option<Compression>);

fn parse_compress(s: &str) -> Result<Codec, String> {
    Compression::parse(s, DEFAULT_LEVEL).map(Codec)
}

fn parse_chunk_size(s: &str) -> Result<u64, String> {
    let n: u64 = s.parse().map_err(|e| format!("{e}"))?;
    if is_chunk_size(n) { Ok(n) } else { Err("not a power of two from 4096 to 1048576".into()) }
}

impl Packing {
    /// The writer's options.
    pub(crate) fn options(&self) -> PackOptions {
        PackOptions::new()
            .compress(self.compress.0)
            .chunk_size(self.chunk_size)
            .dictionary(!self.no_dictionary)
            .digests(!self.no_digests)
    }
}
