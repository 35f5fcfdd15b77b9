//! The `*-at` operations of a [`Descriptor`]: on paths under a directory,
//! each walked from it and never out of it (`..` above it, an absolute
//! path or symlink target is `NotPermitted`), with the preopen's
//! [`Access`] checked before any change.

use std::sync::Arc;

use super::identity::metadata_hash;
use super::{Access, At, Descriptor, Flags, Node, OpenFlags};
use crate::resolve::{Last, resolve_last};
use crate::{Error, FileType, Ino, Metadata, OpenOptions, Result, SetTime};

impl Descriptor {
    /// The directory `*-at` paths start from.
    pub fn at(&self) -> At {
        self.node.at()
    }

    /// `stat-at`; also the inode found. `known`: the inode `path` was just
    /// found to lead to, if it was.
    pub fn stat_at(&self, follow: bool, path: &str, known: Option<Ino>) -> Result<(Ino, Metadata)> {
        let ino = match known {
            Some(ino) => self.dir().map(|_| ino)?,
            None => self.resolve(path, follow)?,
        };
        Ok((ino, self.fs().metadata(ino)?))
    }

    /// `metadata-hash-at`; `known` as for [`stat_at`](Self::stat_at). Also
    /// the inode found and, for the host's cache of recent lookups, whether
    /// following a symlink at the end of `path` matters: `None` if it is no
    /// symlink, else `Some(follow)`.
    pub fn metadata_hash_at(
        &self,
        follow: bool,
        path: &str,
        known: Option<Ino>,
    ) -> Result<((u64, u64), Ino, Option<bool>)> {
        let (ino, follows) = match known {
            Some(ino) => (self.dir().map(|_| ino)?, Some(follow)),
            None => self.resolve_noting(path, follow)?,
        };
        Ok((metadata_hash(self.device, ino), ino, follows))
    }

    /// As [`resolve`](Self::resolve), also saying whether following a
    /// symlink at the end of `path` matters, where the walk learns it.
    fn resolve_noting(&self, path: &str, follow: bool) -> Result<(Ino, Option<bool>)> {
        if !follow {
            // What `resolve(path, false)` does — the same walk, whose last
            // step tells the type too.
            match self.locate(path)? {
                Last::Dir(ino) => return Ok((ino, None)),
                Last::Entry(p) if !p.trailing_slash => {
                    let (ino, kind) = self.fs().lookup_kind(p.dir, &p.name)?;
                    return Ok((ino, (kind == FileType::Symlink).then_some(false)));
                }
                Last::Entry(_) => {}
            }
        }
        Ok((self.resolve(path, follow)?, Some(follow)))
    }

    /// `utimensat`.
    pub fn set_times_at(&self, follow: bool, path: &str, atime: SetTime, mtime: SetTime) -> Result<()> {
        self.dir()?;
        self.may_change()?;
        // Both times kept: Linux's utimensat returns before looking at
        // the last name (the walk to it still counts, as in cap-std). But
        // a path that, followed, leaves the preopen is refused as leaving
        // it, as wasmtime-wasi does: a last symlink followed here, or
        // named with a `/` (which `locate` refuses).
        if (atime, mtime) == (SetTime::Keep, SetTime::Keep) {
            self.locate(path)?;
            return match follow.then(|| self.resolve(path, true)) {
                Some(Err(Error::NotPermitted)) => Err(Error::NotPermitted),
                _ => Ok(()),
            };
        }
        let ino = self.resolve(path, follow)?;
        self.fs().set_times(ino, atime, mtime)
    }

    /// `mkdirat`.
    pub fn create_directory_at(&self, path: &str) -> Result<()> {
        self.dir()?;
        self.may_change()?;
        match self.locate(path)? {
            Last::Dir(_) => Err(Error::Exists),
            Last::Entry(p) => self.fs().mkdir(p.dir, &p.name, 0o755).map(|_| ()),
        }
    }

    /// `unlinkat(AT_REMOVEDIR)`.
    pub fn remove_directory_at(&self, path: &str) -> Result<()> {
        self.dir()?;
        self.may_change()?;
        match self.locate(path)? {
            // rmdir(".") is EINVAL on Linux.
            Last::Dir(_) => Err(Error::Invalid),
            Last::Entry(p) => self.fs().rmdir(p.dir, &p.name),
        }
    }

    /// `unlinkat`.
    pub fn unlink_file_at(&self, path: &str) -> Result<()> {
        self.dir()?;
        self.may_change()?;
        match self.locate(path)? {
            Last::Dir(_) => Err(Error::IsDir),
            // `x/`: refused for what the name itself is, as unlink(2)
            // does, a symlink not followed: EISDIR for a directory, else
            // ENOTDIR, or ENOENT.
            Last::Entry(p) if p.trailing_slash => match self.kind_at(p.dir, &p.name)? {
                Some((_, FileType::Dir)) => Err(Error::IsDir),
                Some(_) => Err(Error::NotDir),
                None => Err(Error::NotFound),
            },
            Last::Entry(p) => self.fs().unlink(p.dir, &p.name),
        }
    }

    /// `symlinkat`: an absolute target is `NotPermitted`, as cap-std.
    pub fn symlink_at(&self, target: &str, path: &str) -> Result<()> {
        self.dir()?;
        self.may_change()?;
        // An absolute target could never be followed inside the sandbox:
        // cap-std refuses it before anything else. Then the walk's errors,
        // an empty target's ENOENT (Linux), and the new name's own.
        if target.starts_with('/') {
            return Err(Error::NotPermitted);
        }
        let last = self.locate(path)?;
        if target.is_empty() {
            return Err(Error::NotFound);
        }
        let p = self.new_entry_at(last)?;
        self.fs().symlink(p.dir, &p.name, target).map(|_| ())
    }

    /// `readlinkat`.
    pub fn readlink_at(&self, path: &str) -> Result<String> {
        let ino = self.resolve(path, false)?;
        let target = self.fs().readlink(ino)?;
        // A backend may hold one (a pack built from a host tree); reading it
        // is refused as cap-std does, since no walk could follow it.
        if target.starts_with('/') {
            return Err(Error::NotPermitted);
        }
        Ok(target)
    }

    /// Both directories may change, and share one filesystem (link and
    /// rename never cross filesystems).
    fn changes_with(&self, new_dir: &Descriptor) -> Result<()> {
        self.dir()?;
        new_dir.dir()?;
        self.may_change()?;
        new_dir.may_change()?;
        if !self.same_fs(new_dir) {
            return Err(Error::CrossDevice);
        }
        Ok(())
    }

    /// `link-at`. Unlike wasmtime-wasi (which returns `invalid`), following
    /// a symlink in `old-path` is supported, as `linkat(AT_SYMLINK_FOLLOW)`.
    pub fn link_at(&self, follow: bool, old: &str, new_dir: &Descriptor, new: &str) -> Result<()> {
        self.changes_with(new_dir)?;
        let ino = self.resolve(old, follow)?;
        let p = new_dir.new_entry(new)?;
        // A taken name is EEXIST before a directory is EPERM, as Linux
        // looks the new name up first.
        if self.kind_at(p.dir, &p.name)?.is_some() {
            return Err(Error::Exists);
        }
        self.fs().link(ino, p.dir, &p.name)
    }

    /// `renameat`.
    pub fn rename_at(&self, old: &str, new_dir: &Descriptor, new: &str) -> Result<()> {
        self.changes_with(new_dir)?;
        // Renaming `.` or `a/..`, or onto one, is EBUSY on Linux (a last
        // component that is no name), and in wasmtime.
        let (Last::Entry(from), Last::Entry(to)) = (self.locate(old)?, new_dir.locate(new)?) else {
            return Err(Error::Busy);
        };
        if from.trailing_slash || to.trailing_slash {
            let (_, kind) = self.kind_at(from.dir, &from.name)?.ok_or(Error::NotFound)?;
            if kind != FileType::Dir {
                return Err(Error::NotDir);
            }
        }
        self.fs().rename(from.dir, &from.name, to.dir, &to.name)
    }

    /// `open-at`, with open(2)'s rules as wasmtime-wasi applies them:
    /// `create` and `truncate` imply write access; asking for neither read
    /// nor write opens for reading; `directory` excludes `create`,
    /// `exclusive` and `truncate`.
    pub fn open_at(&self, follow: bool, path: &str, open: OpenFlags, flags: Flags) -> Result<Descriptor> {
        self.dir()?;
        let write = open.create || open.truncate || flags.write;
        let read = flags.read || !flags.write;
        if open.directory && (open.create || open.exclusive || open.truncate) {
            return Err(Error::Invalid);
        }
        if write {
            self.may_change()?;
        }
        let opts = OpenOptions {
            read,
            write,
            append: false,
            create: open.create,
            exclusive: open.exclusive,
            truncate: open.truncate,
            directory: open.directory,
            mode: 0o644,
        };
        let (node, kind) = self.open_node(path, follow, &opts)?;
        let is_dir = match kind {
            Some(kind) => kind == FileType::Dir,
            None => self.fs().metadata(node.ino)?.kind == FileType::Dir,
        };
        let flags = Flags {
            read,
            write,
            mutate_directory: is_dir && flags.mutate_directory && self.access == Access::ReadWrite,
            ..flags
        };
        Ok(Descriptor { node, device: self.device, is_dir, access: self.access, flags })
    }

    /// Opens what `path` names, following a symlink in the last component
    /// when `follow` says so (or the path ends in `/`): the walk goes on
    /// through its target from where the symlink is, as Linux does, within
    /// one budget of hops. Returns the node and, when the walk learnt it,
    /// its type.
    fn open_node(&self, path: &str, follow: bool, opts: &OpenOptions) -> Result<(Arc<Node>, Option<FileType>)> {
        let fs = &self.node.fs;
        let mut found = None;
        let last = resolve_last(self.fs(), self.dir()?, path, |p| {
            found = None;
            // open(2) with O_CREAT refuses a last name ending in `/` before
            // looking it up: whatever it names, or nothing, or a symlink.
            if p.trailing_slash && opts.create {
                return Err(Error::IsDir);
            }
            if !(follow || p.trailing_slash) {
                return Ok(None);
            }
            found = self.kind_at(p.dir, &p.name)?;
            match found {
                Some(_) if opts.create && opts.exclusive => Err(Error::Exists),
                Some((ino, FileType::Symlink)) => Ok(Some(ino)),
                _ => Ok(None),
            }
        })?;
        let p = match last {
            // `.`: open(2) refuses O_CREAT|O_EXCL of what exists, then
            // O_CREAT or writing on a directory.
            Last::Dir(_) if opts.create && opts.exclusive => return Err(Error::Exists),
            Last::Dir(_) if opts.create || opts.writes() => return Err(Error::IsDir),
            Last::Dir(ino) => return Ok((Node::pin(fs, ino)?, Some(FileType::Dir))),
            Last::Entry(p) => p,
        };
        if let Some((_, FileType::File)) = found
            && p.trailing_slash
        {
            return Err(Error::NotDir);
        }
        let node = Node::open(fs, p.dir, &p.name, opts)?;
        // An inode's type never changes: if the name still leads where
        // the look found, its type is known.
        let kind = found.filter(|&(ino, _)| ino == node.ino).map(|(_, kind)| kind);
        Ok((node, kind))
    }
}
