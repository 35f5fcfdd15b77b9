//! What several subcommands share: opening a pack, finding a path in it,
//! walking it, copying a file out of it, and printing modes, times and
//! sizes.

use std::path::Path;

use anyhow::{Context, Result};
use packfs_core::pack::ReadOptions;
use packfs_core::{DirEntry, FileSystem, FileType, Ino, Metadata, Timestamp, resolve};
pub(crate) use packfs_remote::packs::{Pack, Packs};

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

/// How a command that reads each file at most once, front to back, opens
/// packs: with few decoded chunks kept, and each read checked against its
/// checksum if `verify_reads`.
pub(crate) fn read_once(verify_reads: bool) -> ReadOptions {
    ReadOptions::new().verify_on_read(verify_reads).cache_bytes(ONCE_CACHE)
}

/// Opens the pack at `path` with `packs`, to be read as `read` says
/// ([`read_once`], or the core's defaults for a guest).
pub(crate) fn open_pack(packs: &Packs, path: &Path, read: ReadOptions) -> Result<Pack> {
    Ok(packs.open(path, read)?)
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
