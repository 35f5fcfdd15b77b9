//! The namespace the image describes, built on the guest's first call:
//! each mount's filesystem in one mount table, preopened at `/`. An image
//! that does not open leaves the error, which every call then returns
//! (`io`): the guest sees it, nothing traps.

use std::cell::OnceCell;
use std::sync::Arc;

use packfs_core::mem::Quota;
use packfs_core::mount::MountTable;
use packfs_core::pack::{PackFs, ReadOptions};
use packfs_core::virt::{Image, Source};
use packfs_core::{Clock, Error, FileSystem, MemFs, Result, Timestamp};

use crate::bindings::wasi::clocks::wall_clock;

/// What the guest's calls work on.
pub(crate) struct Namespace {
    /// Every mount, preopened at `/`.
    pub(crate) table: Arc<MountTable>,
    /// The host file to save the namespace to after the run.
    pub(crate) save: Option<String>,
}

thread_local! {
    static NAMESPACE: OnceCell<Result<Namespace>> = const { OnceCell::new() };
}

/// Runs `f` on the namespace, built on first use.
pub(crate) fn with<T>(f: impl FnOnce(&Namespace) -> T) -> Result<T> {
    NAMESPACE.with(|cell| match cell.get_or_init(|| build(crate::image::image())) {
        Ok(ns) => Ok(f(ns)),
        Err(e) => Err(e.clone()),
    })
}

fn clock() -> Clock {
    Arc::new(|| {
        let now = wall_clock::now();
        Timestamp::new(now.seconds, now.nanoseconds)
    })
}

fn mem(quota: Quota) -> Arc<dyn FileSystem> {
    Arc::new(MemFs::with_options(quota, clock()))
}

fn open(image: &Image<'static>, source: &Source) -> Result<(Arc<dyn FileSystem>, bool)> {
    Ok(match source {
        Source::Mem(quota) => (mem(*quota), false),
        Source::Pack { offset, len, digest, overlay } => {
            let bytes = image.pack(*offset, *len)?;
            let pack: Arc<dyn FileSystem> = Arc::new(PackFs::open_with(bytes, ReadOptions::new().pin(Some(*digest)))?);
            match overlay {
                None => (pack, true),
                Some(quota) => (Arc::new(MemFs::overlay_with_options(pack, *quota, clock())?), false),
            }
        }
    })
}

fn build(bytes: &'static [u8]) -> Result<Namespace> {
    let image = Image::decode(bytes)?;
    let mut mounts: Vec<_> = image.config.mounts.iter().collect();
    // Shallowest first, so that a mount's parent is in place before it.
    mounts.sort_by_key(|m| (m.path.split('/').filter(|c| !c.is_empty()).count(), m.path.clone()));
    if mounts.windows(2).any(|w| w[0].path == w[1].path) {
        return Err(Error::Invalid);
    }
    let (root, rest) = match mounts.split_first() {
        Some((first, rest)) if first.path == "/" => (open(&image, &first.source)?, rest),
        _ => ((mem(Quota::default()), false), &mounts[..]),
    };
    let table = Arc::new(MountTable::new(root.0, root.1));
    for m in rest {
        let (fs, read_only) = open(&image, &m.source)?;
        table.make_parents(&m.path)?;
        table.mount(&m.path, fs, read_only)?;
    }
    Ok(Namespace { table, save: image.config.save.clone() })
}
