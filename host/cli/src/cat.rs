//! `packfs cat PACK PATH...`: files' contents to stdout, read in pieces
//! (memory does not grow with a file), each piece checked as it is read:
//! a version 1 blob whole on its first read, a version 2 chunk before any
//! of it is written. A damaged chunk past the start of a file therefore
//! ends the output there, with an error.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::common::{Copier, Packs, find, open_pack, read_once};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The pack (a file, or an s3://, http:// or https:// URL; with
    /// @blake3:HEX, only that pack).
    pack: PathBuf,
    /// Files to print, from the pack's root, in order (symlinks followed).
    #[arg(required = true)]
    paths: Vec<String>,
}

pub(crate) fn run(args: Args, packs: &Packs) -> Result<ExitCode> {
    let pack = open_pack(packs, &args.pack, read_once(true))?;
    let shown = args.pack.display();
    let mut out = std::io::stdout().lock();
    let mut copier = Copier::new();
    for path in &args.paths {
        let ino = find(&pack, path, true).with_context(|| format!("{shown}"))?;
        copier
            .copy(&pack, ino, |_, piece| out.write_all(piece).context("writing to stdout"))
            .with_context(|| format!("{shown}: {path}"))?;
    }
    out.flush().context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}
