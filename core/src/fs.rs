//! The backend trait.

use crate::{DirEntry, Error, FileType, Ino, Metadata, OpenOptions, Result, SetTime};

/// A filesystem backend: mem, pack, overlay and dir all implement it.
///
/// It speaks inodes and single names, never paths: `dir` is an inode, `name`
/// one validated component ([`validate_name`](crate::path::validate_name)).
/// `..`, symlinks and mount points are resolved above it
/// (as [`read_file`](crate::read_file) does). Every method is atomic: it either happens
/// whole or fails and changes nothing.
///
/// Inode numbers stay valid until the inode is gone. An inode pinned by
/// [`open`](Self::open) stays readable and writable after its last name is
/// removed, until the matching [`close`](Self::close).
///
/// Every method that changes the tree defaults to `Err(ReadOnly)`: a
/// read-only backend (a pack, a snapshot) implements only the reads.
pub trait FileSystem: Send + Sync {
    /// The root directory.
    fn root(&self) -> Ino;

    /// The inode named `name` in directory `dir`.
    fn lookup(&self, dir: Ino, name: &str) -> Result<Ino>;

    /// The inode named `name` in `dir`, and its type: what a path walk needs
    /// at each step. Backends that know the type from the entry itself
    /// override this to save the second search.
    fn lookup_kind(&self, dir: Ino, name: &str) -> Result<(Ino, FileType)> {
        let ino = self.lookup(dir, name)?;
        Ok((ino, self.metadata(ino)?.kind))
    }

    /// An inode's metadata.
    fn metadata(&self, ino: Ino) -> Result<Metadata>;

    /// The directory holding directory `dir` (the root is its own). Paths
    /// never need it (`..` is resolved above the backend); an overlay asks
    /// its lower, to place a lower directory it changes whose parent it has
    /// not looked into.
    fn parent(&self, _dir: Ino) -> Result<Ino> {
        Err(Error::Unsupported)
    }

    /// How many inodes the tree holds, if the backend knows without a walk.
    /// Only a hint (a compaction sizes its tables by it once instead of
    /// regrowing them), so it may be somewhat off, never wildly high.
    fn inode_count_hint(&self) -> Option<u64> {
        None
    }

    /// Opens `name` in `dir` as `opts` says — creating or truncating it —
    /// and pins it until [`close`](Self::close). A symlink is never followed
    /// here: opening one is `Loop`, as with `O_NOFOLLOW`.
    fn open(&self, dir: Ino, name: &str, opts: &OpenOptions) -> Result<Ino>;

    /// Pins an inode already known (a directory handle re-opened by number).
    fn open_ino(&self, ino: Ino) -> Result<()>;

    /// Releases one pin taken by `open` or `open_ino`.
    fn close(&self, ino: Ino);

    /// Reads from `offset` into `buf`; returns the count, 0 at or past the end.
    fn read_at(&self, ino: Ino, offset: u64, buf: &mut [u8]) -> Result<usize>;

    /// Checks that a read of up to `len` bytes of file `ino` from `offset`
    /// finds all of them here: `NotLoaded` when a lazy source lacks some
    /// ([`Partial`](crate::pack::Partial)), having recorded every missing
    /// extent as wanted, so that one round of fetching brings them all.
    /// A call that must not fail part-way (preview1's reads, which write
    /// the guest's memory as they go) asks first. Any other answer is
    /// `Ok`: the read itself reports what is wrong.
    fn loaded(&self, _ino: Ino, _offset: u64, _len: u64) -> Result<()> {
        Ok(())
    }

    /// Whether a read of up to `len` bytes of file `ino` from `offset` may
    /// wait on something slower than memory: a remote pack fetching what it
    /// has not got. An async caller then reads off its executor's thread,
    /// so that other tasks go on meanwhile. A hint, without side effects;
    /// `false` unless a backend knows better.
    fn may_wait(&self, _ino: Ino, _offset: u64, _len: u64) -> bool {
        false
    }

    /// Writes `data` at `offset`, extending the file (a gap reads as zeros).
    fn write_at(&self, _ino: Ino, _offset: u64, _data: &[u8]) -> Result<usize> {
        Err(Error::ReadOnly)
    }

    /// Writes `data` at the end of the file, atomically with finding the
    /// end; returns the offset it was written at.
    fn append(&self, _ino: Ino, _data: &[u8]) -> Result<u64> {
        Err(Error::ReadOnly)
    }

    /// Truncates or extends (with zeros) to `len` bytes.
    fn set_len(&self, _ino: Ino, _len: u64) -> Result<()> {
        Err(Error::ReadOnly)
    }

    /// Up to `max` entries of `dir` in its stable order (byte order of
    /// names), starting after the entry named `after`. The last name returned
    /// is the cookie for the next call; entries added or removed between
    /// calls neither repeat nor shift the others.
    fn read_dir(&self, dir: Ino, after: Option<&str>, max: usize) -> Result<Vec<DirEntry>>;

    /// Creates directory `name` in `dir`.
    fn mkdir(&self, _dir: Ino, _name: &str, _mode: u32) -> Result<Ino> {
        Err(Error::ReadOnly)
    }

    /// Removes the empty directory `name` from `dir`.
    fn rmdir(&self, _dir: Ino, _name: &str) -> Result<()> {
        Err(Error::ReadOnly)
    }

    /// Removes the non-directory `name` from `dir`.
    fn unlink(&self, _dir: Ino, _name: &str) -> Result<()> {
        Err(Error::ReadOnly)
    }

    /// Moves `from` in `from_dir` to `to` in `to_dir`, replacing a file or an
    /// empty directory there, as POSIX `rename(2)`.
    fn rename(&self, _from_dir: Ino, _from: &str, _to_dir: Ino, _to: &str) -> Result<()> {
        Err(Error::ReadOnly)
    }

    /// Creates symlink `name` in `dir` pointing at `target` (stored verbatim).
    fn symlink(&self, _dir: Ino, _name: &str, _target: &str) -> Result<Ino> {
        Err(Error::ReadOnly)
    }

    /// A symlink's target.
    fn readlink(&self, ino: Ino) -> Result<String>;

    /// Adds the name `name` in `dir` for the existing non-directory `ino`.
    fn link(&self, _ino: Ino, _dir: Ino, _name: &str) -> Result<()> {
        Err(Error::ReadOnly)
    }

    /// Sets access and modification times.
    fn set_times(&self, _ino: Ino, _atime: SetTime, _mtime: SetTime) -> Result<()> {
        Err(Error::ReadOnly)
    }

    /// Sets permission bits.
    fn set_mode(&self, _ino: Ino, _mode: u32) -> Result<()> {
        Err(Error::ReadOnly)
    }

    /// Makes an inode's data durable; a no-op where there is nothing under it.
    fn sync(&self, _ino: Ino) -> Result<()> {
        Ok(())
    }
}
