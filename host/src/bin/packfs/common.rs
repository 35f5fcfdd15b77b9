//! What several subcommands share: opening a pack, finding a path in it,
//! walking it, copying a file out of it, and printing modes, times and
//! sizes.

use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::{Context, Result, anyhow};
use packfs_core::pack::{ByteSource, PackFs, ReadOptions};
use packfs_core::{DirEntry, FileSystem, FileType, Ino, Metadata, Timestamp, resolve};
use packfs_os::mmap::MappedFile;
use packfs_remote::trace::Trace;
use packfs_remote::{Location, RemoteError, RemoteOptions, RemoteSource};

/// Entries asked for per `read_dir` call.
const DIR_PAGE: usize = 4096;

/// Decoded chunks kept by a command that reads each file once, front to
/// back (all but `run`, whose guest reads at random): enough for the
/// chunks (1 MiB at most) that neighbouring small files share. A big
/// file's chunks are not read again: keeping more would only hold memory.
const ONCE_CACHE: u64 = 8 << 20;

/// Bytes a file is copied out in: what a whole-file command holds of it,
/// however large it is (a compressed pack may declare 32,768 times its own
/// size).
pub(crate) const PIECE: usize = 1 << 20;

/// A pack's bytes: a mapped file, or an object in a store read lazily.
pub(crate) enum PackSource {
    Local(MappedFile),
    Remote(RemoteSource),
}

impl ByteSource for PackSource {
    fn size(&self) -> u64 {
        match self {
            PackSource::Local(f) => f.size(),
            PackSource::Remote(r) => r.size(),
        }
    }

    fn get(&self, range: Range<u64>) -> Option<&[u8]> {
        match self {
            PackSource::Local(f) => f.get(range),
            PackSource::Remote(r) => r.get(range),
        }
    }

    fn extent(&self, k: u64, range: Range<u64>) -> Option<&[u8]> {
        match self {
            PackSource::Local(f) => f.extent(k, range),
            PackSource::Remote(r) => r.extent(k, range),
        }
    }
}

/// An open pack, wherever it is.
pub(crate) type Pack = PackFs<PackSource>;

/// How remote packs are read ([`set_remote`]), and those opened so far.
struct Remote {
    options: RemoteOptions,
    opened: Mutex<Vec<RemoteSource>>,
    /// The trace every remote pack opened from now on prefetches.
    prefetch: OnceLock<Arc<Trace>>,
}

/// Makes the options, on the first use of a remote pack: a command given
/// none does not touch the cache directory.
type MakeOptions = Box<dyn FnOnce() -> RemoteOptions + Send>;

static MAKE: Mutex<Option<MakeOptions>> = Mutex::new(None);
static REMOTE: OnceLock<Remote> = OnceLock::new();

/// Sets how this process reads remote packs: `make` gives the options when
/// the first is opened.
pub(crate) fn set_remote(make: impl FnOnce() -> RemoteOptions + Send + 'static) {
    *MAKE.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(make));
}

fn remote() -> &'static Remote {
    REMOTE.get_or_init(|| {
        let make = MAKE.lock().unwrap_or_else(|e| e.into_inner()).take();
        Remote {
            options: make.map_or_else(RemoteOptions::default, |make| make()),
            opened: Mutex::new(Vec::new()),
            prefetch: OnceLock::new(),
        }
    })
}

/// Makes every remote pack opened from now on prefetch `trace` (each
/// takes the entries that are its own).
pub(crate) fn set_prefetch(trace: Trace) {
    let _ = remote().prefetch.set(Arc::new(trace));
}

/// Every remote pack opened so far.
pub(crate) fn remote_packs() -> Vec<RemoteSource> {
    REMOTE.get().map_or_else(Vec::new, |r| r.opened.lock().unwrap_or_else(|e| e.into_inner()).clone())
}

/// The remote options in use (their cache, their time bounds).
pub(crate) fn remote_options() -> &'static RemoteOptions {
    &remote().options
}

/// The cache remote packs used, if any was.
pub(crate) fn remote_cache() -> Option<&'static packfs_remote::Cache> {
    REMOTE.get()?.options.cache.as_deref()
}

/// Why a pack did not open.
pub(crate) enum OpenError {
    /// It is damaged, or no pack.
    Damaged(anyhow::Error),
    /// It could not be read.
    Failed(anyhow::Error),
}

impl From<OpenError> for anyhow::Error {
    fn from(e: OpenError) -> Self {
        match e {
            OpenError::Damaged(e) | OpenError::Failed(e) => e,
        }
    }
}

/// Opens the pack at `path`, to be read as `read` says ([`read_once`], or the
/// core's defaults for a guest): a file, mapped; or a URL (`s3://`,
/// `http://`, `https://`), read lazily through the host-wide cache.
pub(crate) fn try_open(path: &Path, read: ReadOptions) -> Result<Pack, OpenError> {
    let shown = path.display().to_string();
    if let Some(location) = path.to_str().and_then(Location::parse) {
        let location = location.map_err(|e| OpenError::Failed(e.into()))?;
        let remote = remote();
        let options = RemoteOptions { read, prefetch: remote.prefetch.get().cloned(), ..remote.options.clone() };
        let pack = packfs_remote::open_as(&location, &options, |source| {
            remote.opened.lock().unwrap_or_else(|e| e.into_inner()).push(source.clone());
            PackSource::Remote(source)
        });
        return pack.map_err(|e| match e {
            RemoteError::Pack { .. } => OpenError::Damaged(e.into()),
            e => OpenError::Failed(e.into()),
        });
    }
    let file = MappedFile::open(path).map_err(|e| OpenError::Failed(anyhow!(e).context(shown.clone())))?;
    PackFs::open_with(PackSource::Local(file), read).map_err(|e| OpenError::Damaged(anyhow!(e).context(shown)))
}

/// How a command that reads each file at most once, front to back, opens
/// packs: with few decoded chunks kept, and each read checked against its
/// checksum if `verify_reads`.
pub(crate) fn read_once(verify_reads: bool) -> ReadOptions {
    ReadOptions::new().verify_on_read(verify_reads).cache_bytes(ONCE_CACHE)
}

/// [`try_open`], either failure an error.
pub(crate) fn open_pack(path: &Path, read: ReadOptions) -> Result<Pack> {
    Ok(try_open(path, read)?)
}

/// The inode `path` names in `fs`, from its root. A leading `/` is allowed
/// (the root is the pack's), `..` never leaves the root, and a symlink in the
/// last component is followed when `follow` is set.
pub(crate) fn find(fs: &dyn FileSystem, path: &str, follow: bool) -> Result<Ino> {
    let rel = path.trim_start_matches('/');
    if rel.is_empty() {
        return Ok(fs.root());
    }
    resolve::resolve(fs, fs.root(), rel, follow).with_context(|| path.to_owned())
}

/// Every entry of directory `dir`, in the backend's order (byte order of
/// names).
pub(crate) fn list(fs: &dyn FileSystem, dir: Ino) -> Result<Vec<DirEntry>> {
    let mut all: Vec<DirEntry> = Vec::new();
    loop {
        let after = all.last().map(|e| e.name.clone());
        let page = fs.read_dir(dir, after.as_deref(), DIR_PAGE)?;
        if page.is_empty() {
            return Ok(all);
        }
        all.extend(page);
    }
}

/// `base/name`, or `name` when `base` is empty.
pub(crate) fn join(base: &str, name: &str) -> String {
    if base.is_empty() { name.to_owned() } else { format!("{base}/{name}") }
}

/// Sets `path` to the entry `name` in the directory whose path is
/// `path[..base]`. A walk keeps one path and cuts it back as it climbs,
/// so a deep tree costs its depth once, not its depth at every level (a
/// chain of 100,000 directories would hold 10 GB of paths).
pub(crate) fn step(path: &mut String, base: usize, name: &str) {
    path.truncate(base);
    if base > 0 {
        path.push('/');
    }
    path.push_str(name);
}

/// Calls `visit(path, entry, metadata)` for everything below directory
/// `dir`, depth first, each directory's entries in name order, a directory
/// before its contents. Paths start with `prefix`. No recursion, and one
/// path buffer ([`step`]): memory is bounded by the widest directory and
/// the deepest path, not by depth times width.
pub(crate) fn walk(
    fs: &dyn FileSystem,
    dir: Ino,
    prefix: &str,
    mut visit: impl FnMut(&str, &DirEntry, &Metadata) -> Result<()>,
) -> Result<()> {
    let mut path = prefix.to_owned();
    let mut stack = vec![(path.len(), list(fs, dir)?.into_iter())];
    while let Some((base, entries)) = stack.last_mut() {
        let Some(e) = entries.next() else {
            stack.pop();
            continue;
        };
        step(&mut path, *base, &e.name);
        let meta = fs.metadata(e.ino).with_context(|| path.clone())?;
        visit(&path, &e, &meta)?;
        if meta.kind == FileType::Dir {
            let entries = list(fs, e.ino).with_context(|| path.clone())?;
            stack.push((path.len(), entries.into_iter()));
        }
    }
    Ok(())
}

/// Copies files out in pieces of [`PIECE`] bytes through one buffer, kept
/// from file to file.
pub(crate) struct Copier {
    buf: Box<[u8]>,
}

impl Copier {
    pub(crate) fn new() -> Self {
        Copier { buf: vec![0; PIECE].into_boxed_slice() }
    }

    /// Hands file `ino` of `fs`, front to back, to `sink(offset, piece)`;
    /// returns its length. A read short of the buffer is not the end: only
    /// a read of nothing is.
    pub(crate) fn copy(
        &mut self,
        fs: &dyn FileSystem,
        ino: Ino,
        mut sink: impl FnMut(u64, &[u8]) -> Result<()>,
    ) -> Result<u64> {
        let mut offset = 0;
        loop {
            let n = fs.read_at(ino, offset, &mut self.buf)?;
            if n == 0 {
                return Ok(offset);
            }
            sink(offset, &self.buf[..n])?;
            offset += n as u64;
        }
    }
}

/// `ls -l` style type and permission bits: `drwxr-xr-x`, `-rwsr-x--T`.
pub(crate) fn mode_string(kind: FileType, mode: u32) -> String {
    let mut s = String::with_capacity(10);
    s.push(match kind {
        FileType::File => '-',
        FileType::Dir => 'd',
        FileType::Symlink => 'l',
    });
    // (shift of the rwx triple, special bit, its letter)
    for (shift, special, letter) in [(6, 0o4000, 's'), (3, 0o2000, 's'), (0, 0o1000, 't')] {
        let bits = (mode >> shift) & 7;
        s.push(if bits & 4 != 0 { 'r' } else { '-' });
        s.push(if bits & 2 != 0 { 'w' } else { '-' });
        s.push(match (bits & 1 != 0, mode & special != 0) {
            (true, true) => letter,
            (false, true) => letter.to_ascii_uppercase(),
            (true, false) => 'x',
            (false, false) => '-',
        });
    }
    s
}

/// `file`, `directory` or `symlink`.
pub(crate) fn kind_name(kind: FileType) -> &'static str {
    match kind {
        FileType::File => "file",
        FileType::Dir => "directory",
        FileType::Symlink => "symlink",
    }
}

/// A UTC time as `YYYY-MM-DD HH:MM:SS`.
pub(crate) fn format_time(t: Timestamp) -> String {
    let days = (t.secs / 86_400) as i64; // at most 2^64 / 86400: fits
    let rem = t.secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}", rem / 3600, rem / 60 % 60, rem % 60)
}

/// The proleptic Gregorian date `days` after 1970-01-01 (H. Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `1.5 MiB (1572864 bytes)`.
pub(crate) fn bytes(n: u64) -> String {
    if n < 1024 { format!("{n} bytes") } else { format!("{} ({n} bytes)", indicatif::BinaryBytes(n)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes() {
        assert_eq!(mode_string(FileType::Dir, 0o755), "drwxr-xr-x");
        assert_eq!(mode_string(FileType::File, 0o644), "-rw-r--r--");
        assert_eq!(mode_string(FileType::File, 0o4750), "-rwsr-x---");
        assert_eq!(mode_string(FileType::Dir, 0o1776), "drwxrwxrwT");
        assert_eq!(mode_string(FileType::Symlink, 0o777), "lrwxrwxrwx");
    }

    #[test]
    fn times() {
        assert_eq!(format_time(Timestamp::new(0, 0)), "1970-01-01 00:00:00");
        assert_eq!(format_time(Timestamp::new(951_782_400, 0)), "2000-02-29 00:00:00");
        assert_eq!(format_time(Timestamp::new(1_700_000_000, 5)), "2023-11-14 22:13:20");
        let _ = format_time(Timestamp::new(u64::MAX, 0)); // no overflow
    }
}
