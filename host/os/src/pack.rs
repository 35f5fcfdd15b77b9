//! A host directory to a pack, as `packfs pack` makes one: read through
//! [`DirFs`] (contained beneath the directory; symlinks kept as symlinks,
//! never followed), strictly (an entry a pack cannot hold is an error,
//! never a silent loss), and published atomically.

use std::io;
use std::path::Path;

use packfs_core::pack::{PackOptions, PackStats, WriteError};

use crate::dir::DirFs;
use crate::publish::{through_symlinks, write_atomic};

/// Why [`pack_dir`] made no pack; `out` is as it was.
#[derive(Debug, thiserror::Error)]
pub enum PackDirError {
    /// The directory could not be opened.
    #[error("opening the directory: {0}")]
    Open(io::Error),
    /// The pack would be written inside the directory it packs, where the
    /// walk would find it (`packfs pack` leaves it out by name instead).
    #[error("the pack would be written inside the directory it packs")]
    InsideSource,
    /// Reading the tree or writing the pack failed: a fifo, socket, device
    /// or name that is not UTF-8 among its entries, for one.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// Publishing the pack failed.
    #[error("publishing the pack: {0}")]
    Publish(#[from] io::Error),
}

/// Packs host directory `dir` into the file `out` with `options`, and
/// publishes it atomically: `out` is the old file or the new pack, never
/// half of one. The same tree gives the same bytes.
///
/// ```
/// use packfs_core::pack::PackOptions;
/// use packfs_core::read_file;
///
/// let (src, dst) = (tempfile::tempdir()?, tempfile::tempdir()?);
/// std::fs::write(src.path().join("a.txt"), "hi")?;
/// let out = dst.path().join("src.pack");
/// let stats = packfs_os::pack::pack_dir(src.path(), &out, &PackOptions::new())?;
/// assert_eq!(stats.file_bytes, 2);
/// assert_eq!(read_file(&packfs_os::mmap::open_pack(&out)?, "a.txt")?, b"hi");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn pack_dir(dir: &Path, out: &Path, options: &PackOptions) -> Result<PackStats, PackDirError> {
    let source = DirFs::open(dir, true).map_err(PackDirError::Open)?.strict(|_| false);
    let root = dir.canonicalize().map_err(PackDirError::Open)?;
    // Where the pack really goes: `write_atomic` writes through symlinks.
    let target = through_symlinks(out)?;
    let parent = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.canonicalize()?,
        _ => std::env::current_dir()?,
    };
    if parent.starts_with(&root) {
        return Err(PackDirError::InsideSource);
    }
    write_atomic(out, |file| options.write(&source, file).map_err(PackDirError::Write))
}
