//! `packfs compact JOURNAL_DIR -o OUT.pack`: the tree a journal directory
//! holds (its checkpoint with its log replayed, a torn tail ignored) as a
//! pack, published atomically. The journal is read, never changed: this is
//! safe to run on a copy, or on a journal no process has open.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use packfs_os::journal::Journal;
use packfs_os::publish::write_atomic;

use crate::common::bytes;
use crate::packing::Packing;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The journal directory (`packfs run --mount P=journal:DIR` writes one).
    journal: PathBuf,
    /// Where to write the pack; an existing file is replaced atomically.
    #[arg(short, long, value_name = "OUT.pack")]
    output: PathBuf,
    #[command(flatten)]
    packing: Packing,
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    let shown = args.journal.display();
    // `Journal::read` would take any directory for an empty journal.
    let meta = std::fs::metadata(&args.journal).with_context(|| format!("{shown}"))?;
    if !meta.is_dir() {
        bail!("{shown}: not a directory");
    }
    let tree = Journal::read(&args.journal).with_context(|| format!("{shown}"))?;
    let stats = write_atomic(&args.output, |file| args.packing.options().write(&tree, file))
        .with_context(|| format!("compacting {shown} into {}", args.output.display()))?;
    out!("{}: {} entries ({} inodes)", args.output.display(), stats.dirents, stats.inodes);
    out!("  content: {}", bytes(stats.file_bytes));
    out!("  pack:    {}", bytes(stats.pack_len));
    Ok(ExitCode::SUCCESS)
}
