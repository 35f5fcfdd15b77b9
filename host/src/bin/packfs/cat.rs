//! `packfs cat PACK PATH...`: files' contents to stdout, each checked
//! against its checksum first (straight from the mapping, no copy).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::common::{find, open_pack};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The pack (a file, or an s3://, http:// or https:// URL).
    pack: PathBuf,
    /// Files to print, from the pack's root, in order (symlinks followed).
    #[arg(required = true)]
    paths: Vec<String>,
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    let pack = open_pack(&args.pack, true)?;
    let shown = args.pack.display();
    let mut out = std::io::stdout().lock();
    for path in &args.paths {
        let ino = find(&pack, path, true).with_context(|| format!("{shown}"))?;
        let bytes = pack.file_bytes(ino).with_context(|| format!("{shown}: {path}"))?;
        out.write_all(&bytes)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
