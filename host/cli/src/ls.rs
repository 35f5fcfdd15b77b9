//! `packfs ls PACK [PATH]`: a directory's entries, or one entry; `-l` in
//! long format, `-R` with everything below, as paths.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use packfs_core::{FileSystem, FileType, Metadata};

use crate::common::{Pack, Packs, find, format_time, list, mode_string, open_pack, read_once, walk};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The pack (a file, or an s3://, http:// or https:// URL; with
    /// @blake3:HEX, only that pack).
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
/// How wide `-l`'s link count and size columns are.
#[derive(Default, Clone, Copy)]
struct Widths {
    links: usize,
    size: usize,
}

impl Widths {
    fn fit(&mut self, m: &Metadata) {
        self.links = self.links.max(m.nlink.to_string().len());
        self.size = self.size.max(m.size.to_string().len());
    }
}

/// One line of the listing.
fn line(out: &mut impl Write, pack: &Pack, name: &str, m: &Metadata, long: Option<Widths>) -> Result<()> {
    let Some(w) = long else {
        writeln!(out, "{name}")?;
        return Ok(());
    };
    let (links, size) = (w.links, w.size);
    let time = format_time(m.mtime);
    write!(out, "{} {:>links$} {:>size$} {time} {name}", mode_string(m.kind, m.mode), m.nlink, m.size)?;
    match m.kind {
        FileType::Symlink => writeln!(out, " -> {}", pack.readlink(m.ino)?)?,
        _ => writeln!(out)?,
    }
    Ok(())
}

pub(crate) fn run(args: Args, packs: &Packs) -> Result<ExitCode> {
    let pack = open_pack(packs, &args.pack, read_once(false))?;
    let shown = args.pack.display();
    // Like ls: `ls link` lists the directory a symlink leads to, `ls -l link`
    // shows the link (a trailing `/` always follows).
    let ino = find(&pack, &args.path, !args.long).with_context(|| format!("{shown}"))?;
    let meta = pack.metadata(ino)?;
    // Lines are written as they are found (`-l` first measures its columns
    // in a pass of its own): a listing holds no more than one directory's
    // entries and one path, however many lines it prints.
    let each = |f: &mut dyn FnMut(&str, &Metadata) -> Result<()>| -> Result<()> {
        if meta.kind != FileType::Dir {
            f(&args.path, &meta)
        } else if args.recursive {
            walk(&pack, ino, "", |path, _, m| f(path, m)).with_context(|| format!("{shown}"))
        } else {
            for e in list(&pack, ino).with_context(|| format!("{shown}"))? {
                f(&e.name, &pack.metadata(e.ino)?)?;
            }
            Ok(())
        }
    };
    let long = if args.long {
        let mut w = Widths::default();
        each(&mut |_, m| {
            w.fit(m);
            Ok(())
        })?;
        Some(w)
    } else {
        None
    };
    let mut out = BufWriter::new(std::io::stdout().lock());
    each(&mut |name, m| line(&mut out, &pack, name, m, long))?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
