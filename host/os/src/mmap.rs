//! Packs read in place from a memory-mapped file.
//!
//! [`MappedFile`] maps a whole file read-only and is a [`ByteSource`], so a
//! [`PackFs`] over it reads straight from the page cache:
//! [`PackFs::file_bytes`] lends a blob without a copy, and opening touches
//! only the header, the index and the trailer (see `docs/pack-format.md`,
//! "Reading a pack"), never the data. [`open_pack`] does both.
//!
//! A mapped pack assumes its file is never changed in place while it is
//! mapped — see [`MappedFile::open`]. PackFS itself never does: packs are
//! written once, to a new file, and published by an atomic rename over the
//! old name, which leaves a mapping of the old file intact.
//!
//! ```no_run
//! use packfs_core::FileSystem;
//! use packfs_os::mmap::open_pack;
//!
//! let pack = open_pack("assets.pack")?;
//! let ino = packfs_core::resolve::resolve(&pack, pack.root(), "css/site.css", true)?;
//! let css = pack.file_bytes(ino)?; // borrowed from the mapping, if stored raw
//! # let _ = css;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use packfs_core::pack::{ByteSource, PackFs, ReadOptions};

/// A whole file, mapped read-only.
pub struct MappedFile {
    map: memmap2::Mmap,
}

impl MappedFile {
    /// Maps the regular file at `path`, read-only.
    ///
    /// The file must not be truncated or written in place while the
    /// mapping lives: the bytes would change under readers that checked
    /// them, and a read of a page past a truncated end kills the process
    /// with `SIGBUS`. Replace a file by renaming a new one over it (as
    /// PackFS publishes packs) — on a local filesystem a mapping keeps the
    /// old file's pages. A read error of the storage under the mapping (a
    /// failing disk, a FUSE or network filesystem losing the file) is a
    /// `SIGBUS` too: on such storage, read the pack into memory instead
    /// (`PackFs::open` over a `Vec<u8>`).
    #[allow(unsafe_code, reason = "mapping a file: see SAFETY")]
    pub fn open(path: impl AsRef<Path>) -> io::Result<MappedFile> {
        let file = File::open(path)?;
        if !file.metadata()?.is_file() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"));
        }
        // SAFETY: `Mmap::map` is unsafe because the mapped bytes are handed
        // out as `&[u8]`, which Rust assumes cannot change, while the file
        // under them could be written or truncated by anyone holding it
        // open for writing (a truncation turns reads past the new end into
        // SIGBUS). The mapping is read-only (we opened the file read-only
        // and never write through it), so only another writer of the file
        // could break this: a shared mapping sees their writes. PackFS is not
        // one: packs are never modified in place — a new pack is written to
        // a fresh file and published by an atomic rename, which gives the
        // path a new inode and leaves this mapping's inode and pages
        // untouched. A third party writing the pack file in place is
        // outside what we can guard against (no OS offers a mapping immune
        // to truncation); `open`'s documentation states the requirement.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        Ok(MappedFile { map })
    }

    /// Length of the file, in bytes.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

impl MappedFile {
    /// The whole file.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }
}

impl ByteSource for MappedFile {
    fn size(&self) -> u64 {
        self.map.len() as u64
    }

    fn get(&self, range: std::ops::Range<u64>) -> Option<&[u8]> {
        ByteSource::get(&self.map[..], range)
    }

    /// Another process may write the file in place, and the mapping shows
    /// its writes: a pinned pack serves copies it checked.
    fn changeable(&self) -> bool {
        true
    }
}

impl std::fmt::Debug for MappedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedFile").field("len", &self.map.len()).finish()
    }
}

/// A pack mapped from a file.
pub type MappedPack = PackFs<MappedFile>;

/// Why a mapped pack could not be opened.
///
/// The message says what was being done; the cause is `source()`, not
/// also in the message, which an error report (anyhow's `{:#}`) would
/// print twice (as [`JournalError`](crate::journal::JournalError)'s).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenPackError {
    /// The file could not be opened or mapped.
    #[error("mapping {}", path.display())]
    Io {
        /// The pack's path.
        path: PathBuf,
        /// What the OS said.
        source: io::Error,
    },
    /// The file is not a pack this reader can read: corrupt, truncated or
    /// of an unsupported version ([`packfs_core::Error::Corrupt`] or
    /// [`packfs_core::Error::UnsupportedVersion`]).
    #[error("reading the pack {}", path.display())]
    Pack {
        /// The pack's path.
        path: PathBuf,
        /// The reader's error.
        source: packfs_core::Error,
    },
}

/// Maps the pack at `path` and opens it, checking its header, trailer and
/// index (time proportional to its entries, not its data). The file must
/// not be changed in place while the pack is open ([`MappedFile::open`]).
pub fn open_pack(path: impl AsRef<Path>) -> Result<MappedPack, OpenPackError> {
    open_pack_with(path, ReadOptions::new())
}

/// [`open_pack`] with [`ReadOptions`] (e.g. checking each blob on its first
/// read).
pub fn open_pack_with(path: impl AsRef<Path>, options: ReadOptions) -> Result<MappedPack, OpenPackError> {
    let path = path.as_ref();
    let file = MappedFile::open(path).map_err(|source| OpenPackError::Io { path: path.to_owned(), source })?;
    PackFs::open_with(file, options).map_err(|source| OpenPackError::Pack { path: path.to_owned(), source })
}

#[cfg(test)]
mod tests {
    use super::*;
    use packfs_core::pack::PackOptions;
    use packfs_core::{Error, FileSystem, MemFs, OpenOptions, resolve};

    /// A pack of `docs/a.txt`, `docs/b.txt` (same bytes: one blob) and
    /// `big.bin`, written to a file in `dir`.
    fn write_pack_file(dir: &Path) -> PathBuf {
        let fs = MemFs::new();
        let docs = fs.mkdir(fs.root(), "docs", 0o755).unwrap();
        for (d, name, data) in
            [(docs, "a.txt", &b"hello"[..]), (docs, "b.txt", b"hello"), (fs.root(), "big.bin", &[7u8; 100_000])]
        {
            let f = fs.open(d, name, &OpenOptions::create()).unwrap();
            fs.write_at(f, 0, data).unwrap();
            fs.close(f);
        }
        let path = dir.join("t.pack");
        let file = File::create(&path).unwrap();
        PackOptions::new().align(4096).write(&fs.snapshot(), file).unwrap();
        path
    }

    #[test]
    fn reads_a_mapped_pack_without_copying() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_pack_file(dir.path());
        let pack = open_pack(&path).unwrap();
        assert_eq!(pack.source().len() as u64, std::fs::metadata(&path).unwrap().len());
        assert_eq!(pack.info().blobs, 2);

        let a = resolve::resolve(&pack, pack.root(), "docs/a.txt", true).unwrap();
        let bytes = pack.file_bytes(a).unwrap();
        assert!(matches!(bytes, std::borrow::Cow::Borrowed(_)));
        assert_eq!(*bytes, *b"hello");
        // Zero-copy: the slice lies inside the mapping, on a 4096 boundary.
        let map = pack.source().bytes().as_ptr_range();
        assert!(map.contains(&bytes.as_ptr()));
        assert_eq!(bytes.as_ptr() as usize % 4096, 0);

        let b = resolve::resolve(&pack, pack.root(), "docs/b.txt", true).unwrap();
        assert_eq!(pack.file_bytes(b).unwrap().as_ptr(), bytes.as_ptr(), "dedup: one blob");
        let big = pack.lookup(pack.root(), "big.bin").unwrap();
        assert_eq!(*pack.file_bytes(big).unwrap(), [7u8; 100_000][..]);
        assert_eq!(pack.mkdir(pack.root(), "x", 0o755), Err(Error::ReadOnly));
        assert!(pack.verify().unwrap().is_ok());
    }

    #[test]
    fn verify_on_read_catches_a_bad_blob() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_pack_file(dir.path());
        // Flip a byte of docs/a.txt's blob: the index is intact, so the
        // pack opens, and the blob fails its checksum.
        let at = {
            let pack = open_pack(&path).unwrap();
            let a = resolve::resolve(&pack, pack.root(), "docs/a.txt", true).unwrap();
            pack.file_bytes(a).unwrap().as_ptr() as usize - pack.source().bytes().as_ptr() as usize
        };
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[at] ^= 1;
        std::fs::write(&path, &bytes).unwrap();

        let pack = open_pack(&path).unwrap();
        assert!(!pack.verify().unwrap().is_ok());
        let pack = open_pack_with(&path, ReadOptions::new().verify_on_read(true)).unwrap();
        let a = resolve::resolve(&pack, pack.root(), "docs/a.txt", true).unwrap();
        assert!(matches!(pack.file_bytes(a), Err(Error::Corrupt(_))));
    }

    /// A pinned pack whose file another process changes in place after it
    /// was opened: no read returns a changed byte, in any layout (version 1
    /// blobs; version 2 raw and compressed chunks), nor does a lookup see a
    /// changed name, nor is the digest taken of the changed bytes; whether
    /// the pack holds the mapped file or an `Arc`, a `Box` or a `&` of it.
    /// Reads are served from the copies checked (the cache), or, when the
    /// cache kept none, from a new copy that fails its digest (`Corrupt`).
    /// On 65991d3 the second read returned the patched bytes: raw bytes were
    /// checked once, then lent from the live mapping; on a3db56c, so it did
    /// through an `Arc`, a `Box` or a `&`, which did not say that what they
    /// point at may change.
    #[test]
    fn a_pinned_pack_never_serves_bytes_changed_after_it_was_opened() {
        use packfs_core::pack::{ByteSource, Compression, PackFs};
        use std::sync::Arc;
        let data: Vec<u8> = (0..300_000u32).map(|i| i.wrapping_mul(2_654_435_761).to_le_bytes()[3]).collect();
        let text = b"HELLO-PINNED-OK ".repeat(20_000);
        let fs = MemFs::new();
        for (name, bytes) in [("noise", &data[..]), ("text", &text[..])] {
            let f = fs.open(fs.root(), name, &OpenOptions::create()).unwrap();
            fs.write_at(f, 0, bytes).unwrap();
            fs.close(f);
        }
        let want = [("noise", &data), ("text", &text)];
        let dir = tempfile::tempdir().unwrap();
        for (layout, compress) in [("v1", None), ("v2", Some(Compression::zstd(3)))] {
            let path = dir.path().join(format!("{layout}.pack"));
            let options = PackOptions::new().compress(compress).chunk_size(65_536);
            options.write(&fs.snapshot(), File::create(&path).unwrap()).unwrap();
            let digest = open_pack(&path).unwrap().digest().unwrap();
            for cache in [128 << 20, 0] {
                let opts = ReadOptions::new().pin(Some(digest)).cache_bytes(cache);
                let what = format!("{layout}, cache {cache}");
                let map = || MappedFile::open(&path).unwrap();
                let shared = map();
                changed_in_place(&PackFs::open_with(map(), opts).unwrap(), &path, &want, &what);
                changed_in_place(
                    &PackFs::open_with(Arc::new(map()), opts).unwrap(),
                    &path,
                    &want,
                    &(what.clone() + ", Arc"),
                );
                changed_in_place(
                    &PackFs::open_with(Box::new(map()), opts).unwrap(),
                    &path,
                    &want,
                    &(what.clone() + ", Box"),
                );
                changed_in_place(&PackFs::open_with(&shared, opts).unwrap(), &path, &want, &(what.clone() + ", &"));
                let dynamic: Arc<dyn ByteSource> = Arc::new(map());
                changed_in_place(&PackFs::open_with(dynamic, opts).unwrap(), &path, &want, &(what + ", Arc<dyn>"));
            }
        }
    }

    /// Reads the pinned `pack` (of `path`, holding the files `want`),
    /// changes every stored byte of its file in place, and checks that
    /// nothing changed is served; puts the file back.
    fn changed_in_place<S: packfs_core::pack::ByteSource>(
        pack: &packfs_core::pack::PackFs<S>,
        path: &Path,
        want: &[(&str, &Vec<u8>)],
        what: &str,
    ) {
        let digest = pack.pinned().unwrap();
        let read = |name: &str| {
            let ino = pack.lookup(pack.root(), name)?;
            let mut buf = vec![0u8; 400_000];
            let n = pack.read_at(ino, 0, &mut buf)?;
            buf.truncate(n);
            Ok::<_, Error>(buf)
        };
        for &(name, bytes) in want {
            assert_eq!(read(name).unwrap(), *bytes, "{what}");
        }
        let first = pack.lookup(pack.root(), want[0].0).unwrap();
        assert_eq!(*pack.file_bytes(first).unwrap(), want[0].1[..], "{what}");
        // Patch every stored byte of the files, and the names, in place:
        // the mapping shows it.
        let mut bytes = std::fs::read(path).unwrap();
        let original = bytes.clone();
        for (i, b) in bytes.iter_mut().enumerate().skip(64).take(original.len() - 64 - 128) {
            *b ^= (i as u8) | 1;
        }
        let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&file, &bytes, 0).unwrap();
        assert_eq!(pack.source().get(0..bytes.len() as u64), Some(&bytes[..]), "the mapping shows the change");
        let mut refused = 0;
        for &(name, bytes) in want {
            match read(name) {
                Ok(got) => assert!(got == *bytes, "{what}: {name} read changed bytes"),
                Err(e) => {
                    assert!(matches!(e, Error::Corrupt(_)), "{what}: {e}");
                    refused += 1;
                }
            }
            let ino = pack.lookup(pack.root(), name).unwrap();
            if let Ok(got) = pack.file_bytes(ino) {
                assert!(*got == bytes[..], "{what}: {name} lent changed bytes");
            }
        }
        assert_eq!(pack.digest(), Some(digest), "{what}: the digest of what it serves");
        // The cache keeps only the last extent read: another one is copied
        // again, and its changed bytes fail.
        if what.contains("cache 0") {
            assert!(refused > 0, "{what}: nothing refused with nothing kept");
        }
        std::os::unix::fs::FileExt::write_all_at(&file, &original, 0).unwrap();
    }

    #[test]
    fn bad_files_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pack");
        match open_pack(&missing) {
            Err(OpenPackError::Io { path, source }) => {
                assert_eq!(path, missing);
                assert_eq!(source.kind(), io::ErrorKind::NotFound);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(open_pack(dir.path()), Err(OpenPackError::Io { .. })), "a directory");

        for bytes in [&b""[..], b"not a pack at all", &[0u8; 4096]] {
            let path = dir.path().join("bad.pack");
            std::fs::write(&path, bytes).unwrap();
            match open_pack(&path) {
                Err(OpenPackError::Pack { source: Error::Corrupt(_), .. }) => {}
                other => panic!("{} bytes: {other:?}", bytes.len()),
            }
        }

        // A truncated pack: the trailer is gone.
        let path = write_pack_file(dir.path());
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        let err = open_pack(&path).unwrap_err();
        assert!(matches!(err, OpenPackError::Pack { source: Error::Corrupt(_), .. }));
        assert!(err.to_string().contains("t.pack"), "{err}");
    }

    /// An error report (the message, then each `source()`'s) says each
    /// cause once: `packfs` printed `x.pack: No such file or directory (os
    /// error 2): No such file or directory (os error 2)`.
    #[test]
    fn an_open_error_says_its_cause_once() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pack");
        let err = open_pack(&missing).unwrap_err();
        assert_eq!(report(&err), format!("mapping {}: {}", missing.display(), io::Error::from_raw_os_error(2)));
        let bad = dir.path().join("bad.pack");
        std::fs::write(&bad, [0u8; 4096]).unwrap();
        let err = open_pack(&bad).unwrap_err();
        let OpenPackError::Pack { source, .. } = &err else { panic!("{err:?}") };
        assert_eq!(report(&err), format!("reading the pack {}: {source}", bad.display()));
    }

    /// `e` and its sources, joined by `: ` (anyhow's `{:#}`).
    fn report(e: &dyn std::error::Error) -> String {
        let mut text = e.to_string();
        let mut next = e.source();
        while let Some(cause) = next {
            text = format!("{text}: {cause}");
            next = cause.source();
        }
        text
    }
}
