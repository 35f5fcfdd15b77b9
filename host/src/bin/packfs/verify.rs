//! `packfs verify PACK`: every check a pack has — header, trailer, index
//! and each blob's checksum. Exit 0 when whole; 1, with the list of bad
//! entries (the first 1,000, then a count), when not.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use packfs_os::mmap::{OpenPackError, open_pack};

use crate::common::{bytes, open_error};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The pack.
    pack: PathBuf,
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    let shown = args.pack.display();
    let pack = match open_pack(&args.pack) {
        Ok(p) => p,
        // A damaged header or index is a "no", like a damaged blob.
        Err(OpenPackError::Pack { source, .. }) => {
            eprintln!("packfs: {shown}: {source}");
            return Ok(ExitCode::FAILURE);
        }
        Err(e) => return Err(open_error(e)),
    };
    let report = match pack.verify() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("packfs: {shown}: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    if report.is_ok() {
        out!("{shown}: ok, {} blobs, {} checked", report.blobs, bytes(report.bytes));
        return Ok(ExitCode::SUCCESS);
    }
    // A reader that stops early (`| head`) cuts the list short, never the
    // verdict: the summary and the exit status stand.
    let list = || -> std::io::Result<()> {
        for bad in &report.bad {
            let path = if bad.path.is_empty() { "(a blob no entry names)" } else { &bad.path };
            out!("{path}: {}", bad.error);
        }
        if report.unlisted > 0 {
            out!("... and {} more", report.unlisted);
        }
        Ok(())
    };
    let _ = list();
    eprintln!("packfs: {shown}: damaged entries: {} ({} blobs checked)", report.bad_count(), report.blobs);
    Ok(ExitCode::FAILURE)
}
