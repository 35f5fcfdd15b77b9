//! What the image describes, built on the guest's first call: the
//! namespace (every `mount` in one mount table, preopened at `/`) and
//! each `preopen` of its own. An image that does not open leaves the
//! error, which every call then returns (`io`): the guest sees it,
//! nothing traps.

use std::cell::OnceCell;
use std::sync::Arc;

use packfs_core::mem::Quota;
use packfs_core::mount::MountTable;
use packfs_core::pack::{CorruptKind, CorruptPack, PackFs, ReadOptions};
use packfs_core::virt::{Image, Mount, Source};
use packfs_core::wasi::descriptor::Access;
use packfs_core::{Clock, Error, FileSystem, MemFs, Result, Timestamp};

use crate::bindings::wasi::clocks::wall_clock;

/// A preopen: its path, its filesystem and what it may do.
pub(crate) type Preopen = (String, Arc<dyn FileSystem>, Access);

/// What the guest's calls work on.
pub(crate) struct Namespace {
    /// The mount table preopened at `/`, if anything is mounted.
    pub(crate) table: Option<Arc<MountTable>>,
    /// Every preopen, the namespace's first.
    pub(crate) preopens: Vec<Preopen>,
    /// The host file to save the namespace to after the run.
    pub(crate) save: Option<String>,
}

/// An image that did not open: the error, and the preopens' paths (if the
/// image said them), each of which answers with it.
pub(crate) struct Failed {
    pub(crate) error: Error,
    pub(crate) paths: Vec<String>,
}

thread_local! {
    static NAMESPACE: OnceCell<std::result::Result<Namespace, Failed>> = const { OnceCell::new() };
}

/// Runs `f` on the namespace, built on first use.
pub(crate) fn with<T>(f: impl FnOnce(std::result::Result<&Namespace, &Failed>) -> T) -> T {
    NAMESPACE.with(|cell| f(cell.get_or_init(|| build(crate::image::image())).as_ref()))
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

/// A mount's filesystem, and whether it is read-only.
fn open(image: &Image<'static>, source: &Source) -> Result<(Arc<dyn FileSystem>, bool)> {
    Ok(match source {
        Source::Mem(quota) => (mem(*quota), false),
        Source::Pack { offset, len, digest, overlay } => {
            let bytes = image.pack(*offset, *len)?;
            // The pack is this component's own bytes: it must be the one
            // pinned (its digest, over its header, index and trailer, which
            // commit to every extent), and each extent is checked against
            // its checksum on its first read, a damaged byte being `EIO`.
            // (Hashing each extent again, as a pack from elsewhere is, would
            // guard against nothing that could not as well change the
            // component's code.)
            let pack = PackFs::open_with(bytes, ReadOptions::new().verify_on_read(true))?;
            let actual =
                pack.digest().ok_or(Error::Corrupt(CorruptPack { offset: 0, kind: CorruptKind::NoDigests }))?;
            if actual != *digest {
                let kind = CorruptKind::Pinned { expected: *digest, actual };
                return Err(Error::Corrupt(CorruptPack { offset: 0, kind }));
            }
            let pack: Arc<dyn FileSystem> = Arc::new(pack);
            match overlay {
                None => (pack, true),
                Some(quota) => (Arc::new(MemFs::overlay_with_options(pack, *quota, clock())?), false),
            }
        }
    })
}

fn depth(m: &Mount) -> usize {
    m.path.split('/').filter(|c| !c.is_empty()).count()
}

fn build(bytes: &'static [u8]) -> std::result::Result<Namespace, Failed> {
    let image = Image::decode(bytes).map_err(|error| Failed { error, paths: vec!["/".into()] })?;
    let (mut mounts, preopens): (Vec<&Mount>, Vec<&Mount>) = image.config.mounts.iter().partition(|m| !m.preopen);
    let mut paths: Vec<String> = preopens.iter().map(|m| m.path.clone()).collect();
    if !mounts.is_empty() {
        paths.insert(0, "/".into());
    }
    let failed = |error| Failed { error, paths: paths.clone() };
    let mut sorted = paths.clone();
    sorted.sort();
    if sorted.windows(2).any(|w| w[0] == w[1]) || (image.config.save.is_some() && mounts.is_empty()) {
        return Err(failed(Error::Invalid));
    }
    let mut out = Namespace { table: None, preopens: Vec::new(), save: image.config.save.clone() };
    if !mounts.is_empty() {
        // Shallowest first, so that a mount's parent is in place before it.
        mounts.sort_by(|a, b| (depth(a), &a.path).cmp(&(depth(b), &b.path)));
        if mounts.windows(2).any(|w| w[0].path == w[1].path) {
            return Err(failed(Error::Invalid));
        }
        let (root, rest) = match mounts.split_first() {
            Some((first, rest)) if first.path == "/" => (open(&image, &first.source).map_err(failed)?, rest),
            _ => ((mem(Quota::default()), false), &mounts[..]),
        };
        let table = Arc::new(MountTable::new(root.0, root.1));
        for m in rest {
            let (fs, read_only) = open(&image, &m.source).map_err(failed)?;
            table.make_parents(&m.path).map_err(failed)?;
            table.mount(&m.path, fs, read_only).map_err(failed)?;
        }
        out.preopens.push(("/".into(), table.clone(), Access::ReadWrite));
        out.table = Some(table);
    }
    for m in preopens {
        let (fs, read_only) = open(&image, &m.source).map_err(failed)?;
        out.preopens.push((m.path.clone(), fs, if read_only { Access::ReadOnly } else { Access::ReadWrite }));
    }
    Ok(out)
}
