//! What the image describes, opened on the guest's first call
//! (`packfs_core::virt`): the namespace preopened at `/` and each preopen
//! of its own. An image that does not open leaves the error, which every
//! call then returns (`io`): the guest sees it, nothing traps.

use std::cell::OnceCell;
use std::sync::Arc;

use packfs_core::pack::{CorruptKind, CorruptPack, Digest, PackFs, ReadOptions};
use packfs_core::virt::{Image, Opened, PackAt};
use packfs_core::wasi::descriptor::{Descriptor, device_number};
use packfs_core::{Clock, Error, FileSystem, Result, Timestamp};

use crate::held::Held;

use crate::bindings::wasi::clocks::wall_clock;

/// What the guest's calls work on.
pub(crate) struct Namespace {
    pub(crate) opened: Opened,
    /// The host file to save the namespace to after the run.
    pub(crate) save: Option<String>,
}

/// An image that did not open: the error, and the preopens' paths (if the
/// image said them), each of which answers with it.
pub(crate) struct Failed {
    pub(crate) error: Error,
    pub(crate) paths: Vec<String>,
    /// Whether the image said to save the namespace.
    pub(crate) save: bool,
}

thread_local! {
    static NAMESPACE: OnceCell<std::result::Result<Namespace, Failed>> = const { OnceCell::new() };
}

/// Runs `f` on the namespace, opened on first use.
pub(crate) fn with<T>(f: impl FnOnce(std::result::Result<&Namespace, &Failed>) -> T) -> T {
    NAMESPACE.with(|cell| f(cell.get_or_init(|| open(crate::image::image())).as_ref()))
}

fn clock() -> Clock {
    Arc::new(|| {
        let now = wall_clock::now();
        Timestamp::new(now.seconds, now.nanoseconds)
    })
}

/// The pack at `offset..offset + len` of the image. It is this component's
/// own bytes: it must be the one pinned (its digest, over its header,
/// index and trailer, commits to every extent), and each extent is checked
/// against its checksum on its first read, a damaged byte being `EIO`.
/// (Hashing each extent again, as a pack from elsewhere is, would guard
/// against nothing that could not as well change the component's code.)
fn pack(image: &Image<'static>, offset: u64, len: u64, digest: &Digest) -> Result<Arc<dyn FileSystem>> {
    let pack = PackFs::open_with(image.pack(offset, len)?, ReadOptions::new().verify_on_read(true))?;
    let corrupt = |kind| Error::Corrupt(CorruptPack { offset: 0, kind });
    let actual = pack.digest().ok_or(corrupt(CorruptKind::NoDigests))?;
    if actual != *digest {
        return Err(corrupt(CorruptKind::Pinned { expected: *digest, actual }));
    }
    Ok(Arc::new(pack))
}

fn open(bytes: &'static [u8]) -> std::result::Result<Namespace, Failed> {
    let image = Image::decode(bytes).map_err(|error| Failed { error, paths: vec!["/".into()], save: false })?;
    let config = &image.config;
    let open_pack = |at: &PackAt, digest: &Digest| match at {
        PackAt::Image { offset, len } => pack(&image, *offset, *len, digest),
        PackAt::Host(path) => crate::host_pack::open(path, digest),
    };
    match config.open(&clock(), &open_pack) {
        Ok(opened) => Ok(Namespace { opened, save: config.save.clone() }),
        Err(error) => Err(Failed { error, paths: config.preopen_paths(), save: config.save.is_some() }),
    }
}

/// PackFS's preopens, for either version's `get-directories`: each path
/// with its descriptor, or the error its preopen (or the whole namespace)
/// failed to open with, and its place among what the guest holds. Past
/// the limit of that, no more.
pub(crate) fn preopens() -> Vec<(String, Result<Descriptor>, Held)> {
    with(|ns| {
        let mut out = Vec::new();
        match ns {
            Ok(ns) => {
                let preopens = &ns.opened.preopens;
                let all = || preopens.iter().map(|(_, fs, _)| fs);
                for (path, fs, access) in preopens {
                    let Some(held) = Held::open() else { break };
                    out.push((path.clone(), Descriptor::preopen(fs, *access, device_number(all(), fs)), held));
                }
            }
            Err(failed) => {
                for path in &failed.paths {
                    let Some(held) = Held::open() else { break };
                    out.push((path.clone(), Err(failed.error.clone()), held));
                }
            }
        }
        out
    })
}
