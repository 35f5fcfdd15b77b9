//! Whole files by path, as `std::fs::read` and `std::fs::write` take them:
//! what an embedder seeds a guest's tree with, or reads back from it.

use crate::resolve::{Last, resolve, resolve_last};
use crate::{Error, FileSystem, FileType, Ino, OpenOptions, Result};

/// The piece each read asks for: memory stays bounded by the file, not by
/// what its metadata claims.
const PIECE: usize = 1 << 16;

/// The contents of the file at `path`, from `fs`'s root (a leading `/`
/// or none), symlinks followed.
///
/// ```
/// use packfs_core::{MemFs, read_file, write_file};
///
/// let fs = MemFs::new();
/// write_file(&fs, "notes.txt", b"hi")?;
/// assert_eq!(read_file(&fs, "/notes.txt")?, b"hi");
/// # Ok::<(), packfs_core::Error>(())
/// ```
pub fn read_file(fs: &dyn FileSystem, path: &str) -> Result<Vec<u8>> {
    let ino = resolve(fs, fs.root(), from_root(path), true)?;
    if fs.metadata(ino)?.kind == FileType::Dir {
        return Err(Error::IsDir);
    }
    fs.open_ino(ino)?;
    let read = read_all(fs, ino);
    fs.close(ino);
    read
}

/// Reads straight into the result, a piece of room at a time.
fn read_all(fs: &dyn FileSystem, ino: Ino) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let at = out.len();
        out.resize(at + PIECE, 0);
        let n = fs.read_at(ino, at as u64, &mut out[at..])?;
        out.truncate(at + n);
        if n == 0 {
            return Ok(out);
        }
    }
}

/// `path` from the root: the walk takes no absolute path, which would
/// leave it.
fn from_root(path: &str) -> &str {
    path.trim_start_matches('/')
}

/// Makes `data` the whole content of the file at `path`, from `fs`'s root:
/// created (mode 0644) or truncated, through a symlink at its end as
/// `std::fs::write` goes. Its directory must exist.
pub fn write_file(fs: &dyn FileSystem, path: &str, data: &[u8]) -> Result<()> {
    let follow = |p: &crate::resolve::Parent<'_>| {
        // As open(2) with O_CREAT: a last name ending in `/` is refused
        // before it is looked up.
        if p.trailing_slash {
            return Err(Error::IsDir);
        }
        match fs.lookup_kind(p.dir, &p.name) {
            Ok((ino, FileType::Symlink)) => Ok(Some(ino)),
            Ok(_) | Err(Error::NotFound) => Ok(None),
            Err(e) => Err(e),
        }
    };
    let parent = match resolve_last(fs, fs.root(), from_root(path), follow)? {
        Last::Dir(_) => return Err(Error::IsDir),
        Last::Entry(p) => p,
    };
    let ino = fs.open(parent.dir, &parent.name, &OpenOptions::create())?;
    let written = write_all(fs, ino, data);
    fs.close(ino);
    written
}

fn write_all(fs: &dyn FileSystem, ino: Ino, data: &[u8]) -> Result<()> {
    let mut at = 0;
    while at < data.len() {
        match fs.write_at(ino, at as u64, &data[at..])? {
            0 => return Err(Error::NoSpace),
            n => at += n,
        }
    }
    Ok(())
}
