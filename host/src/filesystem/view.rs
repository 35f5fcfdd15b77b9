//! What the filesystem host functions of every version borrow from the
//! store ([`PackFsCtxView`]), and the calls 0.2 and 0.3 share beyond the
//! model's: the preopens' descriptors, and `stat-at`/`metadata-hash-at`
//! through the [recent](super::recent) name.

use packfs_core::{Code, FileType, Metadata};
use wasmtime::component::{HasData, Resource, ResourceTable, ResourceTableError};

use super::PackFsCtx;
use super::error::TrappableError;
use packfs_core::wasi::Descriptor;

/// What the filesystem host functions borrow from the store: the preopen
/// table and the resource table shared with wasmtime-wasi.
pub struct PackFsCtxView<'a> {
    /// The preopens.
    pub ctx: &'a mut PackFsCtx,
    /// The table holding descriptors, streams and every other WASI resource.
    pub table: &'a mut ResourceTable,
}

/// A store's data that can lend a [`PackFsCtxView`].
///
/// Implement it next to [`wasmtime_wasi::WasiView`], returning the *same*
/// `ResourceTable` from both.
pub trait PackFsView: Send {
    /// Borrows the PackFS context and the resource table.
    fn packfs(&mut self) -> PackFsCtxView<'_>;
}

/// The [`HasData`] marker for PackFS's filesystem host functions (as wasmtime-wasi's
/// `WasiFilesystem` is for its own).
pub struct PackFsFilesystem;

impl HasData for PackFsFilesystem {
    type Data<'a> = PackFsCtxView<'a>;
}

impl PackFsCtxView<'_> {
    /// The descriptor `fd` names; a missing one traps.
    pub(crate) fn get(&self, fd: &Resource<Descriptor>) -> Result<&Descriptor, ResourceTableError> {
        self.table.get(fd)
    }

    /// `get-directories`: each preopen's root, pushed to the table.
    pub(crate) fn get_directories(&mut self) -> wasmtime::Result<Vec<(Resource<Descriptor>, String)>> {
        let opened = self.ctx.open_preopens()?;
        opened.into_iter().map(|(d, path)| Ok((self.table.push(d)?, path))).collect()
    }

    /// The guest may be about to change where a name leads: the
    /// [recent](super::recent) name is forgotten.
    pub(crate) fn changing(&mut self) -> &mut Self {
        self.ctx.recent.changed();
        self
    }

    /// `stat-at`, answered from the recent name when it is the same one,
    /// and remembered for the `metadata-hash-at` that usually follows.
    pub(crate) fn stat_at<C: From<Code>>(
        &mut self,
        fd: &Resource<Descriptor>,
        follow: bool,
        path: String,
    ) -> Result<Metadata, TrappableError<C>> {
        let d = self.table.get(fd)?;
        let known = self.ctx.recent.take(d.at(), follow, &path);
        let (ino, meta) = d.stat_at(follow, &path, known)?;
        if known.is_none() {
            // Not following a name that is no symlink: following finds the same.
            let follows = (follow || meta.kind == FileType::Symlink).then_some(follow);
            self.ctx.recent.resolved(d.at(), path, follows, ino);
        }
        Ok(meta)
    }

    /// `metadata-hash-at`, as [`stat_at`](Self::stat_at): its `(lower, upper)`.
    pub(crate) fn metadata_hash_at<C: From<Code>>(
        &mut self,
        fd: &Resource<Descriptor>,
        follow: bool,
        path: String,
    ) -> Result<(u64, u64), TrappableError<C>> {
        let d = self.table.get(fd)?;
        let known = self.ctx.recent.take(d.at(), follow, &path);
        let (hash, ino, follows) = d.metadata_hash_at(follow, &path, known)?;
        if known.is_none() {
            self.ctx.recent.resolved(d.at(), path, follows, ino);
        }
        Ok(hash)
    }
}
