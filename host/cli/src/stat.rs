//! `packfs stat PACK PATH`: one entry's metadata.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use packfs_core::{FileSystem, FileType};

use crate::common::{Packs, find, format_time, kind_name, mode_string, open_pack, read_once};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The pack (a file, or an s3://, http:// or https:// URL; with
    /// @blake3:HEX, only that pack).
    pack: PathBuf,
    /// The entry, from the pack's root.
    path: String,
    /// Follow a symlink in the last component (report its target's metadata).
    #[arg(short = 'L', long)]
    dereference: bool,
}

pub(crate) fn run(args: Args, packs: &Packs) -> Result<ExitCode> {
    let pack = open_pack(packs, &args.pack, read_once(false))?;
    let ino = find(&pack, &args.path, args.dereference).with_context(|| format!("{}", args.pack.display()))?;
    let m = pack.metadata(ino)?;
    out!("  path: {}", args.path);
    out!("  type: {}", kind_name(m.kind));
    out!("  size: {}", m.size);
    out!("  mode: {:04o} ({})", m.mode, mode_string(m.kind, m.mode));
    out!(" links: {}", m.nlink);
    out!(" inode: {}", m.ino);
    out!(" mtime: {}.{:09} UTC ({} s)", format_time(m.mtime), m.mtime.nanos, m.mtime.secs);
    if m.kind == FileType::Symlink {
        out!("target: {}", pack.readlink(ino)?);
    }
    Ok(ExitCode::SUCCESS)
}
