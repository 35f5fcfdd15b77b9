//! `packfs info PACK`: header, format version, counts, sizes, dedup ratio,
//! compression per codec. Reads the index only, never the data.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use packfs_core::{FileSystem, FileType};

use crate::common::{Packs, bytes, open_pack, read_once, walk};

/// Header and trailer, in bytes (docs/pack-format.md §3, §10).
const FIXED: u64 = 64 + 128;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The pack (a file, or an s3://, http:// or https:// URL; with
    /// @blake3:HEX, only that pack).
    pack: PathBuf,
}

pub(crate) fn run(args: Args, packs: &Packs) -> Result<ExitCode> {
    let pack = open_pack(packs, &args.pack, read_once(false))?;
    let info = pack.info();
    let (mut files, mut dirs, mut symlinks, mut file_bytes) = (0u64, 1u64, 0u64, 0u64);
    let mut seen_inodes = HashSet::new();
    walk(&pack, pack.root(), "", |_, e, meta| {
        if !seen_inodes.insert(e.ino) {
            return Ok(()); // another name of a hard-linked inode
        }
        match meta.kind {
            FileType::Dir => dirs += 1,
            FileType::Symlink => symlinks += 1,
            FileType::File => {
                files += 1;
                file_bytes += meta.size;
            }
        }
        Ok(())
    })
    .with_context(|| format!("{}", args.pack.display()))?;
    let content = pack.content_stats().with_context(|| format!("{}", args.pack.display()))?;
    let stored = content.blob_bytes;

    let saved = file_bytes - stored;
    let ratio = if stored == 0 { 1.0 } else { file_bytes as f64 / stored as f64 };
    out!("pack:     {}", args.pack.display());
    out!("format:   version {}, blobs aligned to {} bytes", info.version, info.align);
    match pack.digest() {
        Some(d) => out!("digest:   {d}"),
        None => out!("digest:   none (written without digests: it cannot be pinned)"),
    }
    out!("size:     {}", bytes(info.pack_len));
    out!("  data:   {}", bytes(info.data_len));
    out!("  index:  {}", bytes(info.pack_len.saturating_sub(info.data_len + FIXED)));
    out!("entries:  {} names, {} inodes", info.dirents, info.inodes);
    out!("  files:  {files}");
    out!("  dirs:   {dirs}");
    out!("  links:  {symlinks} symlinks, {} extra hard-link names", (info.dirents + 1).saturating_sub(info.inodes));
    out!("content:  {} in files, {} stored in {} blobs", bytes(file_bytes), bytes(stored), info.blobs);
    out!("dedup:    ratio {ratio:.2}, {} saved", bytes(saved));
    if !content.codecs.is_empty() {
        let total: u64 = content.codecs.iter().map(|c| c.stored).sum();
        let ratio = if total == 0 { 1.0 } else { stored as f64 / total as f64 };
        out!(
            "chunks:   {} in {} chunks of up to {}, ratio {ratio:.2}",
            bytes(total),
            content.codecs.iter().map(|c| c.chunks).sum::<u64>(),
            bytes(info.chunk_size)
        );
        if info.dictionary > 0 {
            out!("  zstd with a dictionary of {}, trained on the small files", bytes(info.dictionary));
        }
        for c in &content.codecs {
            let r = if c.stored == 0 { 1.0 } else { c.content as f64 / c.stored as f64 };
            out!(
                "  {:<6}{} chunks, {} stored as {}, ratio {r:.2}",
                c.codec.name(),
                c.chunks,
                bytes(c.content),
                bytes(c.stored)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
