//! What several subcommands share: opening a pack, finding a path in it,
//! walking it, and printing modes, times and sizes.

use std::path::Path;

use anyhow::{Context, Result, anyhow};
use packfs_core::pack::ReadOptions;
use packfs_core::{DirEntry, FileSystem, FileType, Ino, Metadata, Timestamp, resolve};
use packfs_os::mmap::{MappedPack, OpenPackError, open_pack_with};

/// Entries asked for per `read_dir` call.
const DIR_PAGE: usize = 4096;

/// Maps and opens the pack at `path`. With `verify_reads`, every blob is
/// checked against its checksum on its first read, so damaged content is an
/// error rather than output.
pub(crate) fn open_pack(path: &Path, verify_reads: bool) -> Result<MappedPack> {
    open_pack_with(path, ReadOptions::new().verify_on_read(verify_reads)).map_err(open_error)
}

/// `PATH: cause`, without the library's "mapping" prefix.
pub(crate) fn open_error(e: OpenPackError) -> anyhow::Error {
    match e {
        OpenPackError::Io { path, source } => anyhow!(source).context(path.display().to_string()),
        OpenPackError::Pack { path, source } => anyhow!(source).context(path.display().to_string()),
        e => anyhow!(e),
    }
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

/// Calls `visit(path, entry, metadata)` for everything below directory
/// `dir`, depth first, each directory's entries in name order, a directory
/// before its contents. Paths start with `prefix`. No recursion: depth is
/// bounded only by the tree.
pub(crate) fn walk(
    fs: &dyn FileSystem,
    dir: Ino,
    prefix: &str,
    mut visit: impl FnMut(&str, &DirEntry, &Metadata) -> Result<()>,
) -> Result<()> {
    let mut stack = vec![(prefix.to_owned(), list(fs, dir)?.into_iter())];
    while let Some((base, entries)) = stack.last_mut() {
        let Some(e) = entries.next() else {
            stack.pop();
            continue;
        };
        let path = join(base, &e.name);
        let meta = fs.metadata(e.ino).with_context(|| path.clone())?;
        visit(&path, &e, &meta)?;
        if meta.kind == FileType::Dir {
            let entries = list(fs, e.ino).with_context(|| path.clone())?;
            stack.push((path, entries.into_iter()));
        }
    }
    Ok(())
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
