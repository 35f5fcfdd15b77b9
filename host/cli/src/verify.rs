//! `packfs verify PACK`: every check a pack has — header, trailer, index
//! and each extent's digest (each blob's checksum in a pack without
//! digests). Exit 0 when whole; 1, with the list of bad
//! entries (the first 1,000, then a count), when not.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::common::{Packs, bytes, read_once};
use anyhow::Result;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The pack (a file, or an s3://, http:// or https:// URL; with
    /// @blake3:HEX, only that pack).
    pack: PathBuf,
}

pub(crate) fn run(args: Args, packs: &Packs) -> Result<ExitCode> {
    let shown = args.pack.display();
    let pack = match packs.open(&args.pack, read_once(false)) {
        Ok(p) => p,
        // A damaged header or index is a "no", like a damaged blob.
        Err(e) if e.is_damaged() => {
            eprintln!("packfs: {:#}", anyhow::Error::from(e));
            return Ok(ExitCode::FAILURE);
        }
        Err(e) => return Err(e.into()),
    };
    let report = match pack.verify() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("packfs: {shown}: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    if report.is_ok() {
        let by = if pack.digest().is_some() { "by BLAKE3 digest" } else { "by checksum" };
        out!("{shown}: ok, {} blobs, {} checked {by}", report.blobs, bytes(report.bytes));
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
