//! The path operations behind the JavaScript API, in plain Rust over
//! [`FileSystem`] (so they are tested on the host too).
//!
//! Paths are relative to the filesystem's root; a leading `/` is accepted
//! and means the same. `..` and symlinks are resolved by
//! `packfs_core::resolve`, never above the root.

use std::sync::Arc;

use packfs_core::pack::PackOptions;
use packfs_core::resolve::{Last, resolve, resolve_last, resolve_parent};
use packfs_core::{Error, FileSystem, FileType, Ino, MemFs, Metadata, OpenOptions, Result};

/// A filesystem the API works on.
#[derive(Clone)]
pub enum Backend {
    /// A writable in-memory filesystem, or an overlay (a `MemFs` over a pack).
    Mem(Arc<MemFs>),
    /// A read-only pack.
    Pack(Arc<crate::fetch::LazyPack>),
}

impl Backend {
    /// The filesystem as the trait.
    pub fn fs(&self) -> &dyn FileSystem {
        match self {
            Backend::Mem(m) => &**m,
            Backend::Pack(p) => &**p,
        }
    }
}

/// `path` as the core's walk takes it: relative, `.` for the root.
fn rel(path: &str) -> &str {
    let p = path.trim_start_matches('/');
    if p.is_empty() { "." } else { p }
}

/// The inode `path` names, following symlinks when `follow`.
pub fn lookup(fs: &dyn FileSystem, path: &str, follow: bool) -> Result<Ino> {
    resolve(fs, fs.root(), rel(path), follow)
}

/// A file's whole content.
pub fn read_file(fs: &dyn FileSystem, path: &str) -> Result<Vec<u8>> {
    let ino = lookup(fs, path, true)?;
    let md = fs.metadata(ino)?;
    match md.kind {
        FileType::Dir => return Err(Error::IsDir),
        FileType::Symlink => return Err(Error::Loop),
        FileType::File => {}
    }
    let size = usize::try_from(md.size).map_err(|_| Error::FileTooLarge)?;
    let mut buf = Vec::new();
    buf.try_reserve_exact(size).map_err(|_| Error::NoSpace)?;
    buf.resize(size, 0);
    let mut filled = 0;
    while filled < size {
        let n = fs.read_at(ino, filled as u64, &mut buf[filled..])?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    buf.truncate(filled);
    Ok(buf)
}

/// Replaces a file's content (creating it), atomically: readers see the old
/// content or the new, and a failure (a quota) leaves the old. A symlink at
/// `path` is followed; a dangling one has its target made, as `open(2)`
/// with `O_CREAT` does.
pub fn write_file(b: &Backend, path: &str, data: &[u8]) -> Result<()> {
    let Backend::Mem(m) = b else {
        // A pack: find the error the path deserves, else read-only.
        let fs = b.fs();
        return match lookup(fs, path, true) {
            Ok(ino) if fs.metadata(ino)?.kind == FileType::Dir => Err(Error::IsDir),
            Ok(_) => Err(Error::ReadOnly),
            Err(Error::NotFound) => resolve_parent(fs, fs.root(), rel(path)).and(Err(Error::ReadOnly)),
            Err(e) => Err(e),
        };
    };
    match lookup(&**m, path, true) {
        Ok(ino) => {
            if m.metadata(ino)?.kind == FileType::Dir {
                return Err(Error::IsDir);
            }
            m.batch(|t, now| {
                t.set_len(ino, 0, now)?;
                t.write_at(ino, 0, data, now)?;
                Ok(())
            })
        }
        Err(Error::NotFound) => {
            // Through a dangling symlink, its target is made (as open(2)
            // with O_CREAT does).
            let follow = |p: &packfs_core::resolve::Parent<'_>| match m.lookup_kind(p.dir, &p.name) {
                Ok((ino, FileType::Symlink)) => Ok(Some(ino)),
                Ok(_) | Err(Error::NotFound) => Ok(None),
                Err(e) => Err(e),
            };
            let p = match resolve_last(&**m, m.root(), rel(path), follow)? {
                Last::Entry(p) => p,
                Last::Dir(_) => return Err(Error::IsDir),
            };
            if p.trailing_slash {
                return Err(Error::IsDir);
            }
            m.batch(|t, now| {
                let ino = t.open(p.dir, &p.name, &OpenOptions::create_new(), now)?;
                t.write_at(ino, 0, data, now)?;
                Ok(())
            })
        }
        Err(e) => Err(e),
    }
}

/// Cuts a file to `len` bytes or extends it with zeros (a hole: an
/// in-memory file does not store them). A symlink is followed.
pub fn truncate(fs: &dyn FileSystem, path: &str, len: u64) -> Result<()> {
    let ino = lookup(fs, path, true)?;
    match fs.metadata(ino)?.kind {
        FileType::Dir => Err(Error::IsDir),
        _ => fs.set_len(ino, len),
    }
}

/// Creates a directory; with `recursive`, its missing parents too, and an
/// existing directory is no error.
pub fn mkdir(fs: &dyn FileSystem, path: &str, recursive: bool) -> Result<()> {
    if !recursive {
        let p = resolve_parent(fs, fs.root(), rel(path))?;
        return fs.mkdir(p.dir, &p.name, 0o755).map(|_| ());
    }
    // All or nothing: what a failure leaves made is removed again (nothing
    // else runs meanwhile on this one JavaScript thread).
    let mut made = Vec::new();
    let result = mkdir_all(fs, path, &mut made);
    if result.is_err() {
        for (dir, name) in made.iter().rev() {
            let _ = fs.rmdir(*dir, name);
        }
    }
    result
}

/// The steps of a recursive [`mkdir`]; each directory made goes in `made`.
fn mkdir_all(fs: &dyn FileSystem, path: &str, made: &mut Vec<(Ino, String)>) -> Result<()> {
    let mut prefix = String::new();
    for part in rel(path).split('/').filter(|s| !s.is_empty() && *s != ".") {
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(part);
        if part == ".." {
            lookup(fs, &prefix, true)?;
            continue;
        }
        match lookup(fs, &prefix, true) {
            Ok(ino) if fs.metadata(ino)?.kind == FileType::Dir => {}
            Ok(_) => return Err(Error::NotDir),
            Err(Error::NotFound) => {
                let p = resolve_parent(fs, fs.root(), &prefix)?;
                fs.mkdir(p.dir, &p.name, 0o755)?;
                made.push((p.dir, p.name.into_owned()));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One entry of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its name.
    pub name: String,
    /// File, directory or symlink.
    pub kind: FileType,
    /// Bytes: content, symlink target; 0 for a directory.
    pub size: u64,
}

/// A directory's entries, in name order.
pub fn readdir(fs: &dyn FileSystem, path: &str) -> Result<Vec<Entry>> {
    let dir = lookup(fs, path, true)?;
    let mut out = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = fs.read_dir(dir, after.as_deref(), 1024)?;
        let Some(last) = page.last() else { break };
        after = Some(last.name.to_string());
        for e in page {
            let size = fs.metadata(e.ino)?.size;
            out.push(Entry { name: e.name.to_string(), kind: e.kind, size });
        }
    }
    Ok(out)
}

/// Metadata of what `path` names (of a symlink itself unless `follow`).
pub fn stat(fs: &dyn FileSystem, path: &str, follow: bool) -> Result<Metadata> {
    fs.metadata(lookup(fs, path, follow)?)
}

/// Removes a non-directory. A path ending in `/` is refused, as
/// unlink(2) does, for what its last name is itself (a symlink not
/// followed): `IsDir` for a directory, else `NotDir`.
pub fn unlink(fs: &dyn FileSystem, path: &str) -> Result<()> {
    let p = resolve_parent(fs, fs.root(), rel(path))?;
    if p.trailing_slash {
        return match fs.lookup_kind(p.dir, &p.name)? {
            (_, FileType::Dir) => Err(Error::IsDir),
            _ => Err(Error::NotDir),
        };
    }
    fs.unlink(p.dir, &p.name)
}

/// Removes an empty directory.
pub fn rmdir(fs: &dyn FileSystem, path: &str) -> Result<()> {
    let p = resolve_parent(fs, fs.root(), rel(path))?;
    fs.rmdir(p.dir, &p.name)
}

/// Moves `from` to `to`, replacing a file or an empty directory there.
/// A path ending in `/` must name a directory (as rename(2)).
pub fn rename(fs: &dyn FileSystem, from: &str, to: &str) -> Result<()> {
    let f = resolve_parent(fs, fs.root(), rel(from))?;
    let t = resolve_parent(fs, fs.root(), rel(to))?;
    if (f.trailing_slash || t.trailing_slash) && fs.lookup_kind(f.dir, &f.name)?.1 != FileType::Dir {
        return Err(Error::NotDir);
    }
    fs.rename(f.dir, &f.name, t.dir, &t.name)
}

/// Creates a symlink at `path` pointing at `target` (stored verbatim). An
/// absolute target is refused (`NotPermitted`): no path here can follow
/// one, as no path can leave the root.
pub fn symlink(fs: &dyn FileSystem, target: &str, path: &str) -> Result<()> {
    if target.starts_with('/') {
        return Err(Error::NotPermitted);
    }
    let p = resolve_parent(fs, fs.root(), rel(path))?;
    if p.trailing_slash {
        // A new symlink is no directory (symlink(2)).
        return Err(fs.lookup(p.dir, &p.name).map_or_else(|e| e, |_| Error::Exists));
    }
    fs.symlink(p.dir, &p.name, target).map(|_| ())
}

/// A symlink's target.
pub fn readlink(fs: &dyn FileSystem, path: &str) -> Result<String> {
    fs.readlink(lookup(fs, path, false)?)
}

/// The whole tree as pack bytes (of a snapshot, for an in-memory one).
pub fn compact(b: &Backend, options: &PackOptions) -> Result<Vec<u8>> {
    let mut out = Growing(Vec::new());
    match b {
        Backend::Mem(m) => options.write(&m.snapshot(), &mut out)?,
        Backend::Pack(p) => options.write(&**p, &mut out)?,
    };
    Ok(out.0)
}

/// A growing buffer that fails a write it has no memory for
/// (`OutOfMemory`, which the writer reports as `NoSpace`) instead of
/// aborting: a tree too big for this memory (holes are written out in
/// full) is an error, not a crash.
struct Growing(Vec<u8>);

impl std::io::Write for Growing {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.0.try_reserve(data.len()).map_err(|_| std::io::Error::from(std::io::ErrorKind::OutOfMemory))?;
        self.0.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use packfs_core::mem::Quota;
    use packfs_core::pack::ReadOptions;

    fn mem() -> Backend {
        Backend::Mem(Arc::new(MemFs::new()))
    }

    #[test]
    fn files_directories_and_links() {
        let b = mem();
        let fs = b.fs();
        mkdir(fs, "/docs/a/b", true).unwrap();
        mkdir(fs, "docs/a/b", true).unwrap();
        assert_eq!(mkdir(fs, "docs/a", false), Err(Error::Exists));
        assert_eq!(mkdir(fs, "x/y", false), Err(Error::NotFound));
        write_file(&b, "/docs/readme.txt", b"hello").unwrap();
        write_file(&b, "docs/readme.txt", b"hi").unwrap();
        assert_eq!(read_file(fs, "docs/readme.txt").unwrap(), b"hi");
        assert_eq!(read_file(fs, "docs"), Err(Error::IsDir));
        assert_eq!(write_file(&b, "docs", b""), Err(Error::IsDir));
        assert_eq!(write_file(&b, "nope/x", b""), Err(Error::NotFound));
        assert_eq!(mkdir(fs, "docs/readme.txt/z", true), Err(Error::NotDir));
        symlink(fs, "docs/readme.txt", "link").unwrap();
        assert_eq!(readlink(fs, "link").unwrap(), "docs/readme.txt");
        write_file(&b, "link", b"through").unwrap();
        assert_eq!(read_file(fs, "docs/readme.txt").unwrap(), b"through");
        assert_eq!(stat(fs, "link", false).unwrap().kind, FileType::Symlink);
        assert_eq!(stat(fs, "link", true).unwrap().size, 7);
        let names: Vec<_> = readdir(fs, "/").unwrap().into_iter().map(|e| (e.name, e.kind, e.size)).collect();
        assert_eq!(names, [("docs".into(), FileType::Dir, 0), ("link".into(), FileType::Symlink, 15)]);
        rename(fs, "docs/readme.txt", "docs/a/moved").unwrap();
        assert_eq!(read_file(fs, "link"), Err(Error::NotFound));
        assert_eq!(rmdir(fs, "docs/a"), Err(Error::NotEmpty));
        unlink(fs, "docs/a/moved").unwrap();
        rmdir(fs, "docs/a/b").unwrap();
        rmdir(fs, "docs/a").unwrap();
        assert_eq!(read_file(fs, "../etc/passwd"), Err(Error::NotPermitted));
        assert_eq!(readdir(fs, "docs").unwrap(), []);
        write_file(&b, "t", b"abcdef").unwrap();
        truncate(fs, "t", 2).unwrap();
        assert_eq!(read_file(fs, "t").unwrap(), b"ab");
        truncate(fs, "t", 4).unwrap();
        assert_eq!(read_file(fs, "t").unwrap(), b"ab\0\0");
        assert_eq!(truncate(fs, "docs", 0), Err(Error::IsDir));

        // A path ending in `/` names a directory.
        assert_eq!(unlink(fs, "t/"), Err(Error::NotDir));
        assert_eq!(unlink(fs, "docs/"), Err(Error::IsDir));
        assert_eq!(rename(fs, "t/", "u"), Err(Error::NotDir));
        assert_eq!(rename(fs, "t", "u/"), Err(Error::NotDir));
        assert_eq!(symlink(fs, "t", "new/"), Err(Error::NotFound));
        assert_eq!(read_file(fs, "t").unwrap(), b"ab\0\0", "nothing changed");
        // No symlink can lead out of the root, so none may point there.
        assert_eq!(symlink(fs, "/t", "abs"), Err(Error::NotPermitted));
        // Writing through a dangling symlink makes its target.
        symlink(fs, "docs/made", "dangling").unwrap();
        write_file(&b, "dangling", b"made").unwrap();
        assert_eq!(read_file(fs, "docs/made").unwrap(), b"made");
    }

    #[test]
    fn quota_errors_change_nothing() {
        use packfs_core::mem::{ENTRY_BYTES, INODE_BYTES};
        // Room for the root, `a` and 10 bytes of content.
        let room = 2 * INODE_BYTES + ENTRY_BYTES + 1 + 10;
        let m = MemFs::builder().quota(Quota { max_bytes: Some(room), max_inodes: None }).build();
        let b = Backend::Mem(Arc::new(m));
        write_file(&b, "a", b"12345").unwrap();
        assert_eq!(write_file(&b, "a", b"12345678901"), Err(Error::Quota));
        assert_eq!(read_file(b.fs(), "a").unwrap(), b"12345");
        // Inodes: the root and two more.
        let m = MemFs::builder().quota(Quota { max_bytes: None, max_inodes: Some(3) }).build();
        let b = Backend::Mem(Arc::new(m));
        write_file(&b, "a", b"12345").unwrap();
        write_file(&b, "b", b"").unwrap();
        assert_eq!(write_file(&b, "c", b""), Err(Error::Quota));
        assert_eq!(read_file(b.fs(), "c"), Err(Error::NotFound));
        // A recursive mkdir that runs out of inodes midway leaves nothing.
        unlink(b.fs(), "b").unwrap();
        assert_eq!(mkdir(b.fs(), "x/y/z", true), Err(Error::Quota));
        assert_eq!(stat(b.fs(), "x", false), Err(Error::NotFound));
    }

    #[test]
    fn compact_round_trips_and_packs_are_read_only() {
        let b = mem();
        mkdir(b.fs(), "d", false).unwrap();
        write_file(&b, "d/f", b"data").unwrap();
        symlink(b.fs(), "d/f", "l").unwrap();
        let plain = PackOptions::new();
        let bytes = compact(&b, &plain).unwrap();
        let p = Backend::Pack(Arc::new(crate::fetch::complete(bytes.clone(), ReadOptions::new()).unwrap()));
        assert_eq!(read_file(p.fs(), "l").unwrap(), b"data");
        assert_eq!(write_file(&p, "d/f", b"x"), Err(Error::ReadOnly));
        assert_eq!(write_file(&p, "d/new", b"x"), Err(Error::ReadOnly));
        assert_eq!(write_file(&p, "nope/new", b"x"), Err(Error::NotFound));
        assert_eq!(mkdir(p.fs(), "e", false), Err(Error::ReadOnly));
        assert_eq!(compact(&p, &plain).unwrap(), bytes);
        // Compressed, and back: the same tree.
        let lz4 = PackOptions::new().compress(Some(packfs_core::pack::Compression::lz4())).chunk_size(4096);
        let v2 = compact(&p, &lz4).unwrap();
        let q = Backend::Pack(Arc::new(crate::fetch::complete(v2, ReadOptions::new()).unwrap()));
        assert_eq!(read_file(q.fs(), "d/f").unwrap(), b"data");
        assert_eq!(compact(&q, &plain).unwrap(), bytes);
    }
}
