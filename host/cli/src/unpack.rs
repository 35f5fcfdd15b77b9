//! `packfs unpack PACK DIR`: a pack's tree into a host directory — files
//! with their modes and modification times, directories, symlinks, hard
//! links — changing only what it makes, as tar does for a user:
//!
//! - a directory that exists keeps its mode and times (`--overwrite-dir`
//!   gives it the pack's), DIR included: unpacking into a home must not
//!   open up its `.ssh`;
//! - modes are masked by the umask, and set-user-ID and set-group-ID bits
//!   cleared, unless `-p` keeps the pack's modes as they are. Unlike GNU
//!   tar, this is so for root too: one rule, whoever runs it.
//!
//! Files are copied in pieces ([`Copier`]): memory does not grow with a
//! file, however much a small compressed pack declares.
//!
//! Everything is written through [`DirFs`]: one validated name at a time,
//! relative to a directory opened with `openat2` `RESOLVE_BENEATH`, never
//! following a symlink, so no name in the pack and no symlink already in DIR
//! can lead a write outside DIR. Without `--force`, nothing is written when
//! any entry already exists (a directory may already exist as a directory).
//! Each blob is checked against its checksum before it is written.
//!
//! `DirFs` refuses to make a symlink with an absolute target (it could
//! lead other tools out of the tree). Such symlinks are reported and not
//! made, unless `--absolute-symlinks` asks for them: they are then made
//! here, in a parent opened beneath DIR the same way, and never followed.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use packfs_core::{DirEntry, Error, FileSystem, FileType, Ino, Metadata, OpenOptions, SetTime};
use packfs_os::beneath;
use packfs_os::dir::DirFs;
use rustix::fs::Mode;

use crate::common::{Copier, Pack, Packs, bytes, list, open_pack, read_once, step};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The pack (a file, or an s3://, http:// or https:// URL; with
    /// @blake3:HEX, only that pack).
    pack: PathBuf,
    /// The directory to extract into; created if missing.
    dir: PathBuf,
    /// Replace files, symlinks, fifos, sockets and devices that already
    /// exist (a directory in the way of a file is still an error). Without
    /// it, nothing is written when any entry exists (directories may exist
    /// as directories).
    #[arg(short, long)]
    force: bool,
    /// Give directories that already exist, DIR included, the pack's mode
    /// and times (by default they keep their own).
    #[arg(long)]
    overwrite_dir: bool,
    /// Also make symlinks whose targets are absolute paths (by default they
    /// are reported and left out: they point outside DIR).
    #[arg(long)]
    absolute_symlinks: bool,
    /// Give what is made the pack's modes as they are. By default they are
    /// masked by the umask, and set-user-ID and set-group-ID bits are
    /// cleared (a pack from elsewhere should not make programs that run as
    /// whoever unpacks it) — for root too, unlike GNU tar.
    #[arg(short = 'p', long, visible_alias = "same-permissions")]
    preserve_permissions: bool,
}

/// How many left-out symlinks are named one by one.
const NAMED: usize = 5;

pub(crate) fn run(args: Args, packs: &Packs) -> Result<ExitCode> {
    // Before anything starts a thread: reading the umask sets it.
    let clear = if args.preserve_permissions { 0 } else { umask() | 0o6000 };
    let pack = open_pack(packs, &args.pack, read_once(true))?;
    // Check every blob before writing anything: a damaged pack leaves DIR
    // untouched. Blobs that pass are remembered, so none is hashed twice.
    let report = pack.verify().with_context(|| format!("{}", args.pack.display()))?;
    if let Some(bad) = report.bad.first() {
        bail!(
            "{}: {}: {} (damaged entries: {}; nothing extracted)",
            args.pack.display(),
            bad.path,
            bad.error,
            report.bad_count()
        );
    }
    let shown = args.dir.display();
    // DIR itself may be a symlink to a directory (DirFs opens it so).
    let created = match std::fs::metadata(&args.dir) {
        Ok(m) if m.is_dir() => false,
        Ok(_) => bail!("{shown}: not a directory"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(&args.dir).with_context(|| format!("creating {shown}"))?;
            true
        }
        Err(e) => return Err(e).with_context(|| format!("{shown}")),
    };
    let dest = DirFs::open(&args.dir, false).with_context(|| format!("{shown}"))?;
    let absolute = if args.absolute_symlinks {
        Some(beneath::open_root(&args.dir).with_context(|| format!("{shown}"))?)
    } else {
        None
    };
    let mut u = Unpack {
        pack: &pack,
        dest: &dest,
        dir: &args.dir,
        force: args.force,
        overwrite_dir: args.overwrite_dir,
        absolute,
        clear,
        copier: Copier::new(),
        counts: Counts::default(),
    };
    if !args.force {
        u.refuse_overwrites()?;
    }

    let progress = ProgressBar::new_spinner(); // on stderr, drawn only on a terminal
    progress.set_style(
        ProgressStyle::with_template("{spinner} unpacking: {binary_bytes} written ({binary_bytes_per_sec})")
            .expect("a valid template"),
    );
    progress.enable_steady_tick(Duration::from_millis(100));
    let done = u.extract(&progress, created);
    progress.finish_and_clear();
    let skipped = done.with_context(|| format!("unpacking {} into {shown}", args.pack.display()))?;

    let c = &u.counts;
    out!(
        "{shown}: {} files, {} directories, {} symlinks, {} hard links; {}",
        c.files,
        c.dirs,
        c.symlinks,
        c.links,
        bytes(c.bytes)
    );
    if !skipped.is_empty() {
        for (path, target) in skipped.iter().take(NAMED) {
            eprintln!("packfs: {}: symlink to absolute path {target:?} left out", args.dir.join(path).display());
        }
        bail!(
            "{shown}: {} symlinks with absolute targets left out{} (--absolute-symlinks makes them)",
            skipped.len(),
            if skipped.len() > NAMED { format!(", {} not named above", skipped.len() - NAMED) } else { String::new() }
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The process's umask. Reading it sets it, so it is set straight back.
fn umask() -> u32 {
    let mask = rustix::process::umask(Mode::empty());
    rustix::process::umask(mask);
    mask.bits()
}

#[derive(Debug, Default)]
struct Counts {
    files: u64,
    dirs: u64,
    symlinks: u64,
    links: u64,
    bytes: u64,
}

struct Unpack<'a> {
    pack: &'a Pack,
    dest: &'a DirFs,
    dir: &'a Path,
    force: bool,
    overwrite_dir: bool,
    /// DIR, when symlinks with absolute targets are to be made.
    absolute: Option<OwnedFd>,
    /// Mode bits cleared from every mode set here: the umask's and the
    /// set-ID bits, unless `-p`.
    clear: u32,
    copier: Copier,
    counts: Counts,
}

/// A directory being extracted: its remaining entries, where it goes, its path.
struct Frame {
    entries: std::vec::IntoIter<DirEntry>,
    /// The destination directory, if it exists.
    dest: Option<Ino>,
    /// How much of the walk's path is this directory's ([`step`]).
    base: usize,
}

impl Unpack<'_> {
    /// The mode an entry gets here.
    fn mode(&self, meta: &Metadata) -> u32 {
        meta.mode & !self.clear
    }

    fn shown(&self, path: &str) -> String {
        self.dir.join(path).display().to_string()
    }

    /// What `name` in destination directory `dir` is now, if anything.
    fn existing(&self, dir: Ino, name: &str) -> Result<Option<(Ino, FileType)>> {
        match self.dest.lookup(dir, name) {
            Ok(ino) => match self.dest.metadata(ino) {
                Ok(m) => Ok(Some((ino, m.kind))),
                // A fifo, socket or device: not a directory, in the way as
                // a file is (and replaced as one with --force).
                Err(Error::Unsupported) => Ok(Some((ino, FileType::File))),
                Err(e) => Err(e.into()),
            },
            Err(Error::NotFound) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Fails, before anything is written, if an entry of the pack already
    /// exists in the destination (other than a directory as a directory).
    fn refuse_overwrites(&self) -> Result<()> {
        let (mut first, mut more) = (None, 0u64);
        let root =
            Frame { entries: list(self.pack, self.pack.root())?.into_iter(), dest: Some(self.dest.root()), base: 0 };
        let mut stack = vec![root];
        let mut path = String::new();
        while let Some(f) = stack.last_mut() {
            let Some(e) = f.entries.next() else {
                stack.pop();
                continue;
            };
            step(&mut path, f.base, &e.name);
            let found = match f.dest {
                Some(dir) => self.existing(dir, &e.name).with_context(|| self.shown(&path))?,
                None => None,
            };
            let dest = match found {
                Some((ino, FileType::Dir)) if e.kind == FileType::Dir => Some(ino),
                Some(_) => {
                    if first.is_none() {
                        first = Some(path.clone());
                    } else {
                        more += 1;
                    }
                    None
                }
                None => None,
            };
            if e.kind == FileType::Dir {
                stack.push(Frame { entries: list(self.pack, e.ino)?.into_iter(), dest, base: path.len() });
            }
        }
        match first {
            None => Ok(()),
            Some(p) if more == 0 => bail!("{} already exists (--force replaces it)", self.shown(&p)),
            Some(p) => bail!("{} and {more} more already exist (--force replaces them)", self.shown(&p)),
        }
    }

    /// Extracts everything; returns the symlinks not made because their
    /// targets are absolute (`DirFs` refuses them), as (path, target).
    fn extract(&mut self, progress: &ProgressBar, created: bool) -> Result<Vec<(String, String)>> {
        let mut skipped = Vec::new();
        // Directories made here (and with --overwrite-dir, those that
        // existed) get their modes and times last, deepest first: adding
        // entries changes a directory's mtime, and a read-only mode would
        // stop us adding them.
        let mut dirs: Vec<(Ino, Metadata)> = Vec::new();
        // Pack inode -> destination inode, for names of hard-linked inodes.
        let mut linked: HashMap<Ino, Ino> = HashMap::new();
        let root = self.pack.root();
        let mut stack =
            vec![Frame { entries: list(self.pack, root)?.into_iter(), dest: Some(self.dest.root()), base: 0 }];
        let mut path = String::new();
        while let Some(f) = stack.last_mut() {
            let Some(e) = f.entries.next() else {
                stack.pop();
                continue;
            };
            let parent = f.dest.unwrap_or(self.dest.root()); // always Some here
            path.truncate(f.base);
            let meta = self.pack.metadata(e.ino)?;
            let made = self.entry((parent, &path), &e, &meta, &mut linked, progress);
            step(&mut path, f.base, &e.name);
            let made = made.with_context(|| self.shown(&path))?;
            match made {
                Made::Dir { ino, existed } => {
                    if !existed || self.overwrite_dir {
                        dirs.push((ino, meta));
                    }
                    stack.push(Frame {
                        entries: list(self.pack, e.ino)?.into_iter(),
                        dest: Some(ino),
                        base: path.len(),
                    });
                }
                Made::Other => {}
                Made::Skipped(target) => skipped.push((path.clone(), target)),
            }
        }
        if created || self.overwrite_dir {
            dirs.insert(0, (self.dest.root(), self.pack.metadata(root)?));
        }
        for (ino, meta) in dirs.iter().rev() {
            self.dest.set_mode(*ino, self.mode(meta))?;
            self.dest.set_times(*ino, SetTime::At(meta.mtime), SetTime::At(meta.mtime))?;
        }
        Ok(skipped)
    }

    /// Makes the entry `e` (metadata `meta`) in destination directory
    /// `parent` (at `parent_path` from DIR).
    fn entry(
        &mut self,
        (parent, parent_path): (Ino, &str),
        e: &DirEntry,
        meta: &Metadata,
        linked: &mut HashMap<Ino, Ino>,
        progress: &ProgressBar,
    ) -> Result<Made> {
        let name = &*e.name;
        let existing = self.existing(parent, name)?;
        match (existing, meta.kind) {
            (Some((ino, FileType::Dir)), FileType::Dir) => {
                self.counts.dirs += 1;
                return Ok(Made::Dir { ino, existed: true });
            }
            (Some((_, FileType::Dir)), _) => bail!("a directory is in the way"),
            (Some(_), _) if !self.force => bail!("already exists (--force replaces it)"),
            (Some(_), _) => self.dest.unlink(parent, name)?,
            (None, _) => {}
        }
        if meta.kind == FileType::Dir {
            self.counts.dirs += 1;
            return Ok(Made::Dir { ino: self.dest.mkdir(parent, name, 0o700)?, existed: false });
        }
        if let Some(&first) = linked.get(&e.ino) {
            self.dest.link(first, parent, name)?;
            self.counts.links += 1;
            return Ok(Made::Other);
        }
        let ino = if meta.kind == FileType::Symlink {
            let target = self.pack.readlink(e.ino)?;
            let ino = match &self.absolute {
                Some(dir) if target.starts_with('/') => {
                    let parent_fd = beneath::open_dir(dir, Path::new(parent_path))?;
                    rustix::fs::symlinkat(&*target, &parent_fd, name)?;
                    self.dest.lookup(parent, name)?
                }
                None if target.starts_with('/') => return Ok(Made::Skipped(target)),
                _ => self.dest.symlink(parent, name, &target)?,
            };
            self.counts.symlinks += 1;
            ino
        } else {
            let create = OpenOptions { read: false, mode: 0o600, ..OpenOptions::create_new() };
            let ino = self.dest.open(parent, name, &create)?;
            let (dest, mode) = (self.dest, self.mode(meta));
            let written = self
                .copier
                .copy(self.pack, e.ino, |at, piece| {
                    dest.write_at(ino, at, piece)?;
                    progress.inc(piece.len() as u64);
                    Ok(())
                })
                .and_then(|n| {
                    dest.set_mode(ino, mode)?;
                    Ok(n)
                });
            self.dest.close(ino);
            self.counts.bytes += written?;
            self.counts.files += 1;
            ino
        };
        // A symlink's own mtime (utimensat without following).
        self.dest.set_times(ino, SetTime::At(meta.mtime), SetTime::At(meta.mtime))?;
        if meta.nlink > 1 {
            linked.insert(e.ino, ino);
        }
        Ok(Made::Other)
    }
}

/// What [`Unpack::entry`] did.
enum Made {
    /// Made this directory, or found it there.
    Dir { ino: Ino, existed: bool },
    /// Made a file, a symlink or a link.
    Other,
    /// Did not make a symlink to this absolute target.
    Skipped(String),
}
