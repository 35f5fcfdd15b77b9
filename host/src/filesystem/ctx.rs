//! The preopen table ([`PackFsCtx`]): what a guest's components of every
//! version see, and where.

use std::sync::Arc;

use packfs_core::FileSystem;
use wasmtime::error::Context as _;

use super::dir_stream::StreamCount;
use super::recent::Recent;
use packfs_core::wasi::{Access, Descriptor, device_number};

/// One guest-visible directory.
#[derive(Clone)]
struct Preopen {
    guest_path: String,
    fs: Arc<dyn FileSystem>,
    access: Access,
}

/// The PackFS side of a guest's WASI state: which filesystems the guest
/// sees, where, and with what [`Access`].
///
/// Any [`FileSystem`] serves: a [`MemFs`](packfs_core::MemFs), a read-only
/// [`Snapshot`](packfs_core::Snapshot), a pack, an overlay, a mount table.
/// Preopening one filesystem at two paths shows the same tree twice.
///
/// A clone has the same preopens and nothing else of the guest's: its own
/// recent name, count of listings and turns at waiting, so that guests
/// given clones of one table do not share those bounds.
#[derive(Default)]
pub struct PackFsCtx {
    preopens: Vec<Preopen>,
    /// The last name resolved (see `recent.rs`), in 0.2 and 0.3 alike.
    pub(crate) recent: Recent,
    /// The directory streams the guest holds.
    pub(crate) streams: StreamCount,
    /// Its 0.3 streams' turns at work that waits on the network.
    #[cfg(feature = "p3")]
    pub(crate) waits: super::waits::Waits,
}

impl Clone for PackFsCtx {
    fn clone(&self) -> Self {
        PackFsCtx { preopens: self.preopens.clone(), ..PackFsCtx::default() }
    }
}

impl PackFsCtx {
    /// Starts an empty preopen table.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use packfs_core::{FileSystem, MemFs};
    /// use packfs_host::Access;
    /// use packfs_host::filesystem::PackFsCtx;
    ///
    /// let work = Arc::new(MemFs::new());
    /// let assets = Arc::new(work.snapshot());
    /// let ctx = PackFsCtx::builder()
    ///     .preopen("/work", work.clone(), Access::ReadWrite)
    ///     .preopen("/assets", assets, Access::ReadOnly)
    ///     .build();
    /// assert_eq!(ctx.guest_paths().collect::<Vec<_>>(), ["/work", "/assets"]);
    /// ```
    pub fn builder() -> PackFsCtxBuilder {
        PackFsCtxBuilder::default()
    }

    /// The guest paths of the preopens, in the order the guest sees them.
    pub fn guest_paths(&self) -> impl Iterator<Item = &str> {
        self.preopens.iter().map(|p| p.guest_path.as_str())
    }
}

/// Builds a [`PackFsCtx`].
#[derive(Default)]
pub struct PackFsCtxBuilder {
    preopens: Vec<Preopen>,
}

impl PackFsCtxBuilder {
    /// Shows the root of `fs` to the guest at `guest_path`. Read-write, as
    /// far as `fs` itself allows (a snapshot still answers `read-only`);
    /// read-only, every change through it is refused with
    /// `not-permitted`, as wasmtime-wasi does for a read-only preopen.
    pub fn preopen(&mut self, guest_path: impl Into<String>, fs: Arc<dyn FileSystem>, access: Access) -> &mut Self {
        self.preopens.push(Preopen { guest_path: guest_path.into(), fs, access });
        self
    }

    /// The finished table.
    pub fn build(&mut self) -> PackFsCtx {
        PackFsCtx { preopens: std::mem::take(&mut self.preopens), ..PackFsCtx::default() }
    }
}

impl PackFsCtx {
    /// A descriptor for each preopen's root, with its guest path: what
    /// `get-directories` gives, in 0.2 and 0.3 alike.
    pub(super) fn open_preopens(&self) -> wasmtime::Result<Vec<(Descriptor, String)>> {
        let mut out = Vec::with_capacity(self.preopens.len());
        for p in &self.preopens {
            // Pinning a root fails only if the backend itself is broken:
            // nothing the guest could handle, so it traps.
            let device = device_number(self.preopens.iter().map(|q| &q.fs), &p.fs);
            let d = Descriptor::preopen(&p.fs, p.access, device)
                .map_err(wasmtime::Error::new)
                .with_context(|| format!("opening preopen {}", p.guest_path))?;
            out.push((d, p.guest_path.clone()));
        }
        Ok(out)
    }
}
