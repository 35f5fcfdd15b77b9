//! `packfs pack DIR -o OUT.pack`: a host directory to a pack.
//!
//! The directory is read through [`DirFs`] (contained with `openat2`
//! `RESOLVE_BENEATH`; symlinks stored as symlinks, never followed) behind the
//! `--exclude` filter, and streamed by the pack writer into a file that is
//! published atomically: `OUT.pack` is the old pack or the new one, never
//! half of one. The same tree gives the same bytes.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use indicatif::{ProgressBar, ProgressStyle};
use packfs_core::FileType;
use packfs_core::pack::WriteError;
use packfs_os::dir::DirFs;
use packfs_os::publish::{through_symlinks, write_atomic};

use crate::common::bytes;
use crate::exclude::{Rule, Source, excludes};
use crate::packing::Packing;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The directory to pack.
    dir: PathBuf,
    /// Where to write the pack; an existing file is replaced atomically.
    #[arg(short, long, value_name = "OUT.pack")]
    output: PathBuf,
    /// Leave out entries matching GLOB (repeatable). Without `/` it matches a
    /// name at any depth (`*.o`, `target`); with `/` the path from DIR
    /// (`docs/*.tmp`, `/build`); a trailing `/` matches directories only.
    /// `*` stops at `/`, `**` crosses it. An excluded directory is left out
    /// whole.
    #[arg(long, value_name = "GLOB", value_parser = Rule::parse)]
    exclude: Vec<Rule>,
    /// Align each blob to BYTES, a power of two from 8 to 65536 (4096 lets
    /// a reader map blobs page by page).
    #[arg(long, value_name = "BYTES", default_value_t = 8, value_parser = parse_align)]
    align: u64,
    #[command(flatten)]
    packing: Packing,
}

fn parse_align(s: &str) -> std::result::Result<u64, String> {
    let n: u64 = s.parse().map_err(|e| format!("{e}"))?;
    if n.is_power_of_two() && (8..=65536).contains(&n) {
        Ok(n)
    } else {
        Err("not a power of two from 8 to 65536".into())
    }
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    let shown = args.dir.display();
    let meta = std::fs::metadata(&args.dir).with_context(|| format!("{shown}"))?;
    if !meta.is_dir() {
        bail!("{shown}: not a directory");
    }
    let mut rules = args.exclude;
    rules.extend(own_output(&args.dir, &args.output)?);
    // Strict: an entry a pack cannot hold (a fifo, a name that is not
    // UTF-8) is an error unless excluded, never a silent loss.
    let leave_out = rules.clone();
    let dir = DirFs::open(&args.dir, true)
        .with_context(|| format!("{shown}"))?
        .strict(move |path| excludes(&leave_out, path, FileType::File)); // none is a directory

    let progress = ProgressBar::new_spinner(); // on stderr, drawn only on a terminal
    progress.set_style(
        ProgressStyle::with_template("{spinner} packing: {msg} entries, {binary_bytes} read ({binary_bytes_per_sec})")
            .expect("a valid template"),
    );
    progress.set_message("0");
    progress.enable_steady_tick(Duration::from_millis(100));

    let source = Source::new(&dir, rules, progress.clone());
    let written = write_atomic(&args.output, |file| args.packing.options().align(args.align).write(&source, file));
    progress.finish_and_clear();
    let stats = written
        .map_err(|e| explain(e, &source, &args.dir))
        .with_context(|| format!("packing {shown} into {}", args.output.display()))?;

    let saved = stats.file_bytes - stats.blob_bytes;
    let percent = if stats.file_bytes == 0 { 0.0 } else { saved as f64 * 100.0 / stats.file_bytes as f64 };
    out!(
        "{}: {} entries ({} inodes, {} distinct contents)",
        args.output.display(),
        stats.dirents,
        stats.inodes,
        stats.blobs
    );
    out!("  in:    {} of file content", bytes(stats.file_bytes));
    out!("  out:   {}", bytes(stats.pack_len));
    out!("  dedup: {} saved ({percent:.1}%)", bytes(saved));
    match stats.digest {
        Some(d) => out!("  digest: {d} (pin it: {}@{d})", args.output.display()),
        None => out!("  digest: none (written without digests: it cannot be pinned)"),
    }
    Ok(ExitCode::SUCCESS)
}

/// Rules that keep the output out of its own pack when it is written inside
/// DIR: its name, and the temporary names `write_atomic` may give it before
/// publication (`.NAME.PID.N.packfs-tmp`, see `publish.rs`).
fn own_output(dir: &Path, out: &Path) -> Result<Vec<Rule>> {
    // Where the pack really goes: write_atomic writes through symlinks.
    let out = &through_symlinks(out)?;
    let (Ok(dir), Some(name)) = (dir.canonicalize(), out.file_name().and_then(|n| n.to_str())) else {
        return Ok(Vec::new());
    };
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let Ok(parent) = parent.canonicalize() else { return Ok(Vec::new()) };
    let Ok(rel) = parent.strip_prefix(&dir) else { return Ok(Vec::new()) };
    let Some(rel) = rel.to_str() else { return Ok(Vec::new()) };
    let within = |n: &str| if rel.is_empty() { n.to_owned() } else { format!("{rel}/{n}") };
    let exact = Rule::exact(&within(name)).map_err(|e| anyhow!(e))?;
    // A leading `/` (when `rel` is empty) keeps the rule rooted.
    let temp = format!("{}/.{}.*.packfs-tmp", globset::escape(rel), globset::escape(name));
    let temp = Rule::parse(&temp).map_err(|e| anyhow!(e))?;
    Ok(vec![exact, temp])
}

/// The writer's error, with the source path it concerns where known.
fn explain(e: WriteError, source: &Source<'_>, dir: &Path) -> anyhow::Error {
    let path = match &e {
        WriteError::SourceChanged { ino } | WriteError::BadSource { ino, .. } => source.path_of(*ino),
        WriteError::Source(_) => source.failed_path(),
        _ => None,
    };
    match path {
        Some(p) => anyhow!(e).context(dir.join(p).display().to_string()),
        None => anyhow!(e),
    }
}
