//! `packfs diff A.pack B.pack`: the paths added (`+`), removed (`-`) and
//! changed (`~`, with what changed: kind, content, mode, target) from A to
//! B, in path order; directories end in `/`. Exit 0 when there are none, 1
//! when there are (as diff(1)). Modification times and hard-link structure
//! are not compared.

use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use packfs_core::path::MAX_PATH;
use packfs_core::{FileSystem, FileType, Ino};

use crate::common::{self, Pack, Packs, open_pack, read_once, walk};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The old pack.
    a: PathBuf,
    /// The new pack.
    b: PathBuf,
}

/// What is compared of one entry.
struct Node {
    ino: Ino,
    kind: FileType,
    mode: u32,
    size: u64,
}

/// Every path of `pack`, sorted. Held all at once, so no longer than a
/// path may be ([`MAX_PATH`]: no guest reaches one longer): a deep chain
/// of directories would otherwise hold its depth squared in paths.
fn entries(pack: &Pack, shown: &str) -> Result<BTreeMap<String, Node>> {
    let mut all = BTreeMap::new();
    walk(pack, pack.root(), "", |path, e, m| {
        if path.len() > MAX_PATH {
            bail!("{}...: a path longer than {MAX_PATH} bytes", &path[..path.floor_char_boundary(64)]);
        }
        all.insert(path.to_owned(), Node { ino: e.ino, kind: m.kind, mode: m.mode, size: m.size });
        Ok(())
    })
    .with_context(|| shown.to_owned())?;
    Ok(all)
}

fn display(path: &str, kind: FileType) -> String {
    if kind == FileType::Dir { format!("{path}/") } else { path.to_owned() }
}

/// What differs between `x` (in `a`) and `y` (in `b`), if anything.
fn changes(a: &Pack, x: &Node, b: &Pack, y: &Node) -> Result<Vec<&'static str>> {
    let mut what = Vec::new();
    if x.kind != y.kind {
        what.push("kind");
    } else if x.kind == FileType::File && (x.size != y.size || !same_content(a, x.ino, b, y.ino)?) {
        what.push("content");
    } else if x.kind == FileType::Symlink && a.readlink(x.ino)? != b.readlink(y.ino)? {
        what.push("target");
    }
    if x.mode != y.mode {
        what.push("mode");
    }
    Ok(what)
}

/// Whether files `x` of `a` and `y` of `b` hold the same bytes, read a
/// piece at a time: a file is never decoded whole (a compression bomb
/// would take its whole size).
fn same_content(a: &Pack, x: Ino, b: &Pack, y: Ino) -> Result<bool> {
    let (mut p, mut q) = (vec![0; common::PIECE], vec![0; common::PIECE]);
    let mut offset = 0;
    loop {
        let (n, m) = (fill(a, x, offset, &mut p)?, fill(b, y, offset, &mut q)?);
        if p[..n] != q[..m] {
            return Ok(false);
        }
        if n < p.len() {
            return Ok(true);
        }
        offset += n as u64;
    }
}

/// Fills `buf` from `offset` of file `ino`, short only at the end.
fn fill(fs: &Pack, ino: Ino, offset: u64, buf: &mut [u8]) -> Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match fs.read_at(ino, offset + n as u64, &mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

pub(crate) fn run(args: Args, packs: &Packs) -> Result<ExitCode> {
    let (shown_a, shown_b) = (args.a.display().to_string(), args.b.display().to_string());
    let a = open_pack(packs, &args.a, read_once(true))?;
    let b = open_pack(packs, &args.b, read_once(true))?;
    let (old, new) = (entries(&a, &shown_a)?, entries(&b, &shown_b)?);
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut differ = false;
    let (mut i, mut j) = (old.iter().peekable(), new.iter().peekable());
    loop {
        let line = match (i.peek(), j.peek()) {
            (None, None) => break,
            (Some((p, x)), Some((q, _))) if p < q => {
                let line = format!("- {}", display(p, x.kind));
                i.next();
                line
            }
            (Some((p, x)), None) => {
                let line = format!("- {}", display(p, x.kind));
                i.next();
                line
            }
            (Some((p, _)), Some((q, y))) if q < p => {
                let line = format!("+ {}", display(q, y.kind));
                j.next();
                line
            }
            (None, Some((q, y))) => {
                let line = format!("+ {}", display(q, y.kind));
                j.next();
                line
            }
            (Some(&(p, x)), Some(&(_, y))) => {
                i.next();
                j.next();
                let what = changes(&a, x, &b, y).with_context(|| format!("comparing {p}"))?;
                if what.is_empty() {
                    continue;
                }
                format!("~ {}: {}", display(p, y.kind), what.join(", "))
            }
        };
        differ = true;
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(if differ { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}
