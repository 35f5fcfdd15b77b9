//! `packfs ls PACK [PATH]`: a directory's entries, or one entry; `-l` in
//! long format, `-R` with everything below, as paths.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use packfs_core::{FileSystem, FileType, Metadata};

use crate::common::{find, format_time, list, mode_string, open_pack, read_once, walk};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The pack (a file, or an s3://, http:// or https:// URL).
    pack: PathBuf,
    /// The directory (or entry) to list, from the pack's root.
    #[arg(default_value = "/")]
    path: String,
    /// Long format: mode, links, size, modification time (UTC), name, and
    /// `-> target` for symlinks.
    #[arg(short)]
    long: bool,
    /// Everything below PATH, depth first, as paths relative to it.
    #[arg(short = 'R')]
    recursive: bool,
}

/// One line to print.
struct Row {
    name: String,
    meta: Metadata,
    target: Option<String>,
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    let pack = open_pack(&args.pack, read_once(false))?;
    let shown = args.pack.display();
    // Like ls: `ls link` lists the directory a symlink leads to, `ls -l link`
    // shows the link (a trailing `/` always follows).
    let ino = find(&pack, &args.path, !args.long).with_context(|| format!("{shown}"))?;
    let meta = pack.metadata(ino)?;
    let mut rows = Vec::new();
    let mut row = |name: &str, meta: &Metadata| -> Result<()> {
        let target = if meta.kind == FileType::Symlink { Some(pack.readlink(meta.ino)?) } else { None };
        rows.push(Row { name: name.to_owned(), meta: meta.clone(), target });
        Ok(())
    };
    if meta.kind != FileType::Dir {
        row(&args.path, &meta)?;
    } else if args.recursive {
        walk(&pack, ino, "", |path, _, meta| row(path, meta)).with_context(|| format!("{shown}"))?;
    } else {
        for e in list(&pack, ino).with_context(|| format!("{shown}"))? {
            row(&e.name, &pack.metadata(e.ino)?)?;
        }
    }

    let mut out = BufWriter::new(std::io::stdout().lock());
    if !args.long {
        for r in &rows {
            writeln!(out, "{}", r.name)?;
        }
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let width = |f: fn(&Metadata) -> u64| rows.iter().map(|r| f(&r.meta).to_string().len()).max().unwrap_or(1);
    let (links, size) = (width(|m| m.nlink), width(|m| m.size));
    for r in &rows {
        let m = &r.meta;
        write!(
            out,
            "{} {:>links$} {:>size$} {} {}",
            mode_string(m.kind, m.mode),
            m.nlink,
            m.size,
            format_time(m.mtime),
            r.name
        )?;
        match &r.target {
            Some(t) => writeln!(out, " -> {t}")?,
            None => writeln!(out)?,
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
