//! A [`MountTable`] as one [`FileSystem`]: inode numbers carry the mount
//! id ([`INO_BITS`]), and each call goes to the mount that holds the inode.

use super::node::{INO_BITS, MountId, Node, join, split};
use super::state::{State, counted};
use super::table::MountTable;
use crate::resolve::Space;
use crate::{DirEntry, Error, FileSystem, FileType, Ino, Result};

impl MountTable {
    /// Closes a handle of inode `ino` of `mount`.
    fn close_in(&self, state: &State, mount: MountId, ino: Ino) {
        if let Ok(m) = state.mount(mount) {
            m.fs.close(ino);
            if m.point.is_some() {
                m.handles.close();
            }
        }
    }

    fn node_of(&self, ino: Ino) -> Result<Node> {
        self.state.load().node(split(ino))
    }

    fn writable_node(&self, ino: Ino) -> Result<Node> {
        let node = self.node_of(ino)?;
        node.writable()?;
        Ok(node)
    }

    fn same_mount(a: Ino, b: Ino) -> Result<()> {
        if split(a).0 != split(b).0 { Err(Error::CrossDevice) } else { Ok(()) }
    }
}

/// The whole namespace as one filesystem; see the [`mount`](super) module doc.
impl FileSystem for MountTable {
    fn root(&self) -> Ino {
        let root = self.root();
        u64::from(root.mount) << INO_BITS | (root.ino & ((1 << INO_BITS) - 1))
    }

    fn lookup(&self, dir: Ino, name: &str) -> Result<Ino> {
        join(self.state.load().step(split(dir), name)?.0)
    }

    fn lookup_kind(&self, dir: Ino, name: &str) -> Result<(Ino, FileType)> {
        let (at, kind) = self.state.load().step(split(dir), name)?;
        Ok((join(at)?, kind))
    }

    fn metadata(&self, ino: Ino) -> Result<crate::Metadata> {
        let node = self.node_of(ino)?;
        Ok(crate::Metadata { ino, ..node.fs.metadata(node.ino)? })
    }

    fn open(&self, dir: Ino, name: &str, opts: &crate::OpenOptions) -> Result<Ino> {
        let state = self.state.load();
        let (mount, d) = split(dir);
        if let Some(&(id, ref fs)) = state.covering(mount, d, name) {
            // The name is a mount point: opening it opens the mounted root.
            if opts.create && opts.exclusive {
                return Err(Error::Exists);
            }
            if opts.writes() {
                return Err(Error::IsDir);
            }
            let root = fs.root();
            counted(state.mount(id)?, || fs.open_ino(root))?;
            return join((id, root)).inspect_err(|_| self.close_in(&state, id, root));
        }
        let m = state.mount(mount)?;
        if (opts.writes() || opts.create) && m.read_only {
            return Err(Error::ReadOnly);
        }
        let ino = counted(m, || m.fs.open(d, name, opts))?;
        join((mount, ino)).inspect_err(|_| self.close_in(&state, mount, ino))
    }

    fn open_ino(&self, ino: Ino) -> Result<()> {
        let state = self.state.load();
        let (mount, i) = split(ino);
        let m = state.mount(mount)?;
        counted(m, || m.fs.open_ino(i))
    }

    fn close(&self, ino: Ino) {
        let (mount, i) = split(ino);
        self.close_in(&self.state.load(), mount, i);
    }

    fn read_at(&self, ino: Ino, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let node = self.node_of(ino)?;
        node.fs.read_at(node.ino, offset, buf)
    }

    fn loaded(&self, ino: Ino, offset: u64, len: u64) -> Result<()> {
        match self.node_of(ino) {
            Ok(node) => node.fs.loaded(node.ino, offset, len),
            Err(_) => Ok(()),
        }
    }

    fn may_wait(&self, ino: Ino, offset: u64, len: u64) -> bool {
        self.node_of(ino).is_ok_and(|node| node.fs.may_wait(node.ino, offset, len))
    }

    fn write_at(&self, ino: Ino, offset: u64, data: &[u8]) -> Result<usize> {
        let node = self.writable_node(ino)?;
        node.fs.write_at(node.ino, offset, data)
    }

    fn append(&self, ino: Ino, data: &[u8]) -> Result<u64> {
        let node = self.writable_node(ino)?;
        node.fs.append(node.ino, data)
    }

    fn set_len(&self, ino: Ino, len: u64) -> Result<()> {
        let node = self.writable_node(ino)?;
        node.fs.set_len(node.ino, len)
    }

    fn read_dir(&self, dir: Ino, after: Option<&str>, max: usize) -> Result<Vec<DirEntry>> {
        let node = self.node_of(dir)?;
        let entries = self.entries(&node, after, max)?;
        entries.into_iter().map(|(e, mount)| Ok(DirEntry { ino: join((mount, e.ino))?, ..e })).collect()
    }

    fn mkdir(&self, dir: Ino, name: &str, mode: u32) -> Result<Ino> {
        let node = self.writable_node(dir)?;
        self.not_mount_point(&node, name).map_err(|_| Error::Exists)?;
        join((node.mount, node.fs.mkdir(node.ino, name, mode)?))
    }

    fn rmdir(&self, dir: Ino, name: &str) -> Result<()> {
        MountTable::rmdir(self, &self.node_of(dir)?, name)
    }

    fn unlink(&self, dir: Ino, name: &str) -> Result<()> {
        MountTable::unlink(self, &self.node_of(dir)?, name)
    }

    fn rename(&self, from_dir: Ino, from: &str, to_dir: Ino, to: &str) -> Result<()> {
        MountTable::rename(self, &self.node_of(from_dir)?, from, &self.node_of(to_dir)?, to)
    }

    fn symlink(&self, dir: Ino, name: &str, target: &str) -> Result<Ino> {
        let node = self.writable_node(dir)?;
        self.not_mount_point(&node, name).map_err(|_| Error::Exists)?;
        join((node.mount, node.fs.symlink(node.ino, name, target)?))
    }

    fn readlink(&self, ino: Ino) -> Result<String> {
        let node = self.node_of(ino)?;
        node.fs.readlink(node.ino)
    }

    fn link(&self, ino: Ino, dir: Ino, name: &str) -> Result<()> {
        Self::same_mount(ino, dir)?;
        MountTable::link(self, &self.node_of(ino)?, &self.node_of(dir)?, name)
    }

    fn set_times(&self, ino: Ino, atime: crate::SetTime, mtime: crate::SetTime) -> Result<()> {
        let node = self.writable_node(ino)?;
        node.fs.set_times(node.ino, atime, mtime)
    }

    fn set_mode(&self, ino: Ino, mode: u32) -> Result<()> {
        let node = self.writable_node(ino)?;
        node.fs.set_mode(node.ino, mode)
    }

    fn sync(&self, ino: Ino) -> Result<()> {
        let node = self.node_of(ino)?;
        node.fs.sync(node.ino)
    }
}
