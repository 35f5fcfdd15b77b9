//! `packfs virt GUEST --mount GUEST_PATH=SOURCE... -o OUT`: the guest
//! composed with PackFS as its filesystem, into one component that runs
//! on any host of its WASI version (`wasmtime run OUT`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use packfs_core::pack::{Digest, PackFs, ReadOptions, split_pin};
use packfs_host::virt::{Source as VirtSource, Virt};
use packfs_os::publish::write_atomic;

use crate::common::bytes;
use crate::spec::{MountSpec, Source};

#[derive(Debug, clap::Args)]
#[command(after_help = "SOURCE is one of:\n  \
    PACK          a pack file, embedded, read-only\n  \
    PACK+mem      an in-memory overlay over an embedded pack: the guest's changes stay in the component's memory\n  \
    mem           an empty in-memory tree\n  \
    mem:LIMITS, PACK+mem:LIMITS   as above, with LIMITS: max-bytes=N,max-inodes=N; past one the guest gets EDQUOT\n  \
    PACK@blake3:HEX   only the pack with that digest\n  \
    host:PACK, host:PACK+mem[:LIMITS]   a pack in a file of the host's, read through the host's filesystem \
    as reads need it (its digest that of the file at PACK here, or named: host:PACK@blake3:HEX)\n  \
    dir:PATH, dir-ro:PATH   (--preopen only) a directory of the host's passed through; dir-ro: refuses \
    every change\n\n\
    A host path (host:, dir:, --save) is under a directory the host preopens for the component \
    (`wasmtime run --dir packs::/packs` for host:/packs/app.pack). Every pack is pinned to its digest in the \
    component. Without a mount at /, the namespace's root is an empty in-memory tree; without any --mount \
    there is no namespace, only the --preopens. Nothing else of the host's filesystem is reachable from \
    the guest.\n\n\
    The guest may be a WASI 0.3 or 0.2 component or a preview1 module (adapted with wasmtime's standard \
    adapter first). Run the result with any component host, e.g. `wasmtime run OUT.wasm` \
    (`wasmtime run -Wcomponent-model-async -Sp3 OUT.wasm` for a 0.3 guest).")]
pub(crate) struct Args {
    /// The guest: a WASI 0.3 or 0.2 component, or a preview1 module.
    guest: PathBuf,
    /// Mount SOURCE at GUEST_PATH of the namespace, which is preopened at /
    /// (repeatable; mounts may nest).
    #[arg(long = "mount", value_name = "GUEST_PATH=SOURCE")]
    mounts: Vec<MountSpec>,
    /// Preopen SOURCE at GUEST_PATH on its own, beside the namespace, as
    /// `wasmtime run --dir` does a directory (repeatable): read-only if it
    /// is a pack without +mem.
    #[arg(long = "preopen", value_name = "GUEST_PATH=SOURCE")]
    preopens: Vec<MountSpec>,
    /// After the guest's run returns, write the namespace as a pack to
    /// HOST_PATH, a file under a directory the host preopens for the
    /// component (`wasmtime run --dir OUT::/out` for `/out/after.pack`),
    /// which the guest does not see.
    #[arg(long, value_name = "HOST_PATH")]
    save: Option<String>,
    /// Where to write the component; an existing file is replaced atomically.
    #[arg(short, long, value_name = "OUT.wasm")]
    output: PathBuf,
}

/// The bytes of the pack at `path` (`PACK@blake3:HEX` must be that pack).
fn pack_bytes(path: &Path) -> Result<Vec<u8>> {
    let text = path.to_str().with_context(|| format!("{}: not UTF-8", path.display()))?;
    let (name, pin) = split_pin(text).with_context(|| text.to_string())?;
    if name.contains("://") {
        bail!("{name}: packfs virt embeds pack files; fetch it first");
    }
    let bytes = std::fs::read(name).with_context(|| name.to_string())?;
    if pin.is_some() {
        PackFs::open_with(bytes.as_slice(), ReadOptions::new().pin(pin)).with_context(|| name.to_string())?;
    }
    Ok(bytes)
}

/// A `host:` pack's host path and digest: the one pinned (`@blake3:HEX`),
/// else that of the file at the same path here.
fn host_pack(path: &Path) -> Result<(String, Digest)> {
    let text = path.to_str().with_context(|| format!("{}: not UTF-8", path.display()))?;
    let (name, pin) = split_pin(text).with_context(|| text.to_string())?;
    if let Some(digest) = pin {
        return Ok((name.to_string(), digest));
    }
    let pack = packfs_os::mmap::open_pack(name)
        .with_context(|| format!("{name}: not here to pin; name its digest instead (host:{name}@blake3:HEX)"))?;
    let digest =
        pack.digest().with_context(|| format!("{name}: the pack has no digest table, so it cannot be pinned"))?;
    Ok((name.to_string(), digest))
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    let guest = std::fs::read(&args.guest).with_context(|| format!("{}", args.guest.display()))?;
    let mut virt = Virt::new();
    let all = args.mounts.iter().map(|m| (m, false)).chain(args.preopens.iter().map(|m| (m, true)));
    for (MountSpec { guest_path, source }, preopen) in all {
        let flag = if preopen { "--preopen" } else { "--mount" };
        let context = || format!("{flag} {guest_path}={source}");
        let source = match source {
            Source::Mem(q) => VirtSource::Mem(*q),
            Source::Pack(p) => VirtSource::Pack { bytes: pack_bytes(p).with_context(context)?, overlay: None },
            Source::PackOverlay(p, q) => {
                VirtSource::Pack { bytes: pack_bytes(p).with_context(context)?, overlay: Some(*q) }
            }
            Source::Host(p, overlay) => {
                let (host_path, digest) = host_pack(p).with_context(context)?;
                VirtSource::HostPack { host_path, digest, overlay: *overlay }
            }
            Source::Dir { path, read_only } if preopen => {
                let host_path = path.to_str().with_context(|| format!("{}: not UTF-8", context()))?;
                VirtSource::HostDir { host_path: host_path.into(), read_only: *read_only }
            }
            Source::Dir { .. } => bail!("{}: a host directory is passed through as a --preopen of its own", context()),
            Source::Journal(..) => bail!("{}: packfs virt mounts packs, mem and host: packs", context()),
        };
        virt = if preopen { virt.preopen(guest_path, source) } else { virt.mount(guest_path, source) };
    }
    if let Some(to) = &args.save {
        virt = virt.save(to);
    }
    let out = virt.build(&guest).with_context(|| format!("{}", args.guest.display()))?;
    write_atomic(&args.output, |file| file.write_all(&out)).with_context(|| format!("{}", args.output.display()))?;
    out!("{}: {} ({} of it the guest)", args.output.display(), bytes(out.len() as u64), bytes(guest.len() as u64));
    Ok(ExitCode::SUCCESS)
}
