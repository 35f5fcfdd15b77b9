//! PackFS as the filesystem *inside* a component (`packfs virt`), so that
//! any component host (the `wasmtime` command, wasmtime-py, jco's stock
//! shim) gives the guest packs, overlays and quotas without knowing
//! PackFS exists.
//!
//! [`Virt::build`] composes a guest with the virtual filesystem, a
//! component built from `virt/` (PackFS's core and its descriptor model,
//! for `wasm32-unknown-unknown`), into one component:
//!
//! ```text
//!   guest (0.3 or 0.2 component, or a preview1 module adapted first)
//!     │ wasi:filesystem · wasi:io · wasi:cli/std{in,out,err} · monotonic-clock · wasi:sockets · wasi:http
//!   virtual filesystem: PackFS over the image (mounts, embedded packs)
//!     │ the host's wasi:io, stdio, clocks       │ everything else the guest imports
//!   host ◀─────────────────────────────────────┘
//! ```
//!
//! The guest's own bytes and the virtual filesystem's memory are apart:
//! the guest reaches the tree only through WASI calls. The virtual
//! filesystem serves `wasi:io` too (a file's streams are its own), and
//! wraps the host's stdio and clock pollables so they are the same
//! resources.
//!
//! ```no_run
//! use packfs_host::virt::{Source, Virt};
//! use packfs_core::mem::Quota;
//!
//! let guest = std::fs::read("tool.wasm")?;
//! let pack = std::fs::read("app.pack")?;
//! let out = Virt::new()
//!     .mount("/", Source::Pack { bytes: pack, overlay: Some(Quota::default()) })
//!     .mount("/tmp", Source::Mem(Quota { max_bytes: Some(64 << 20), max_inodes: None }))
//!     .build(&guest)?;
//! std::fs::write("tool.virt.wasm", out)?;
//! # Ok::<(), anyhow::Error>(())
//! ```

mod compose;
mod place;
mod uses;

pub use compose::component_of;

use anyhow::{Context, Result, bail};
use packfs_core::mem::Quota;
use packfs_core::pack::{PackFs, ReadOptions};
use std::sync::Arc;

use packfs_core::pack::Digest;
use packfs_core::virt::{Config, Image, Mount, PackAt, Source as ImageSource, check_host_path, check_path};
use packfs_core::{FileSystem, system_clock};

/// The virtual filesystem's module (with its component type), as
/// `virt/build.sh` builds it from `virt/`; the test command checks it is
/// that build's.
const ADAPTER: &[u8] = include_bytes!("adapter.wasm");

/// The same, serving `wasi:sockets` too (its `adapter-sockets` world): for
/// a guest that imports it, whose sockets hand out `wasi:io` resources.
/// A guest without sockets gets the other, so that its component imports
/// none from the host.
const ADAPTER_SOCKETS: &[u8] = include_bytes!("adapter-sockets.wasm");

/// The same, serving `wasi:http` too (its `adapter-http` world): for a
/// guest that imports it, whose requests, responses and bodies hand out
/// `wasi:io` resources.
const ADAPTER_HTTP: &[u8] = include_bytes!("adapter-http.wasm");

/// The same, serving `wasi:filesystem@0.3.0` too (its `adapter-p3`
/// world), over the same namespace: for a WASI 0.3 guest.
const ADAPTER_P3: &[u8] = include_bytes!("adapter-p3.wasm");

/// Where a pack starts in the image: a page of the guest's memory, so a
/// pack aligned within itself stays aligned in memory.
const PACK_ALIGN: u64 = 4096;

/// What a mount holds.
#[derive(Debug, Clone)]
pub enum Source {
    /// An empty in-memory tree, within its limits (`EDQUOT` past them).
    Mem(Quota),
    /// A pack embedded in the component, pinned to its digest (so it must
    /// have a digest table); with `Some(limits)`, under an in-memory
    /// overlay that takes the guest's changes.
    Pack {
        /// The pack's bytes.
        bytes: Vec<u8>,
        /// The overlay's limits, if it has one.
        overlay: Option<Quota>,
    },
    /// A pack in a file of the host's, read through the host's
    /// `wasi:filesystem` as reads need it (its index when the guest first
    /// calls, then each extent on its first read, checked against the
    /// pack's digest table), pinned to `digest`: a file that differs is
    /// refused. `host_path` is under one of the preopens the host gives
    /// the component (`/packs/app.pack` under `--dir packs::/packs`).
    HostPack {
        /// Where the host has it.
        host_path: String,
        /// The pack's digest: nothing else opens.
        digest: Digest,
        /// The overlay's limits, if it has one.
        overlay: Option<Quota>,
    },
    /// A directory of the host's, under one of the preopens the host gives
    /// the component, passed through as the host serves it: only with
    /// [`Virt::preopen`] (it is not PackFS's, so it cannot be mounted in
    /// the namespace). `read_only`: every change is refused
    /// (`not-permitted`, as wasmtime's read-only preopen).
    HostDir {
        /// Where the host has it.
        host_path: String,
        /// Every change refused.
        read_only: bool,
    },
}

/// What the virtual filesystem mounts; [`build`](Self::build) makes the
/// component. Mounts nest as `packfs run`'s do: shallowest first; without
/// a `/` mount the root is an empty `mem`; missing directories above a
/// mount point are made in the mount holding them.
#[derive(Debug, Clone, Default)]
pub struct Virt {
    /// Each mount's guest path, what it holds, and whether it is a preopen
    /// of its own rather than a mount in the namespace.
    mounts: Vec<(String, Source, bool)>,
    save: Option<String>,
}

impl Virt {
    /// Nothing mounted: the guest has no preopens.
    pub fn new() -> Self {
        Self::default()
    }

    /// Mounts `source` at the absolute guest `path` of the namespace,
    /// which is preopened at `/`.
    pub fn mount(mut self, path: &str, source: Source) -> Self {
        self.mounts.push((path.to_string(), source, false));
        self
    }

    /// Preopens `source` at `path` on its own, beside the namespace, as
    /// `wasmtime run --dir` would a directory: read-only if it is a pack
    /// without an overlay (a change is then `not-permitted`, where a
    /// read-only mount's is `read-only`).
    pub fn preopen(mut self, path: &str, source: Source) -> Self {
        self.mounts.push((path.to_string(), source, true));
        self
    }

    /// After the guest's run returns, writes the namespace as a pack to
    /// `host_path`, a file under one of the preopens the host gives the
    /// component (`wasmtime run --dir OUT::/out` for `/out/after.pack`),
    /// which the guest never sees. The guest must be a command.
    pub fn save(mut self, host_path: &str) -> Self {
        self.save = Some(host_path.to_string());
        self
    }

    /// The guest, a 0.3 or 0.2 component or a preview1 module, composed
    /// with the virtual filesystem: one component that runs on any host
    /// giving the rest of its WASI version.
    pub fn build(&self, guest: &[u8]) -> Result<Vec<u8>> {
        let image = self.image()?;
        let guest = compose::component_of(guest)?;
        let imports = compose::imports_of(&guest)?;
        let imports = |prefix: &str| imports.iter().any(|i| i.starts_with(prefix));
        let p3 = imports("wasi:filesystem/types@0.3") || imports("wasi:filesystem/preopens@0.3");
        let adapter = match (p3, imports("wasi:sockets/"), imports("wasi:http/")) {
            (false, false, false) => ADAPTER,
            (false, true, false) => ADAPTER_SOCKETS,
            (false, false, true) => ADAPTER_HTTP,
            (true, false, false) => ADAPTER_P3,
            (true, ..) => {
                bail!("a WASI 0.3 guest importing wasi:sockets or wasi:http: packfs virt does not serve both yet")
            }
            (false, true, true) => {
                bail!("a guest importing wasi:sockets and wasi:http: packfs virt does not serve both yet")
            }
        };
        if p3 && self.save.is_some() {
            bail!("--save wraps a WASI 0.2 command's run: not a WASI 0.3 guest's yet");
        }
        if p3 && self.mounts.iter().any(|(_, s, _)| matches!(s, Source::HostDir { .. })) {
            bail!("a host directory is passed through to WASI 0.2 calls only, not a WASI 0.3 guest's");
        }
        let module = place::place(adapter, &image).context("placing the image")?;
        let virt = wit_component::ComponentEncoder::default()
            .module(&module)
            .and_then(|e| e.validate(true).encode())
            .context("making the virtual filesystem a component")?;
        compose::compose(&virt, &guest, self.save.is_some())
    }

    /// The image: the mount table, then each pack, checked and pinned.
    fn image(&self) -> Result<Vec<u8>> {
        let has_namespace = self.mounts.iter().any(|(_, _, preopen)| !preopen);
        let mut seen = std::collections::BTreeSet::new();
        for (path, _, preopen) in &self.mounts {
            if !seen.insert((*preopen, path.as_str())) {
                bail!("{path}: mounted twice");
            }
        }
        if has_namespace && seen.contains(&(true, "/")) {
            bail!("/: preopened twice (the namespace is preopened at /)");
        }
        if self.save.is_some() && !has_namespace {
            bail!("--save saves the namespace: it needs a mount");
        }
        let mut config = Config { save: self.save.clone(), ..Config::default() };
        let mut packs: Vec<&[u8]> = Vec::new();
        for (path, source, preopen) in &self.mounts {
            check_path(path).map_err(|_| anyhow::anyhow!("{path:?}: not an absolute path of plain names"))?;
            let source = match source {
                Source::Mem(q) => ImageSource::Mem(*q),
                Source::Pack { bytes, overlay } => {
                    let pack = PackFs::open_with(bytes.as_slice(), ReadOptions::new())
                        .with_context(|| format!("{path}: the pack"))?;
                    let digest = pack.digest().with_context(|| {
                        format!("{path}: the pack has no digest table, so it cannot be pinned (pack it without --no-digests)")
                    })?;
                    // Every extent must be what the digest commits to: the
                    // component checks only checksums as it reads.
                    let pinned = PackFs::open_with(bytes.as_slice(), ReadOptions::new().pin(Some(digest)))?;
                    let report = pinned.verify().with_context(|| format!("{path}: verifying the pack"))?;
                    if !report.is_ok() {
                        bail!("{path}: {} extent(s) of the pack do not match its digest table", report.bad.len());
                    }
                    packs.push(bytes);
                    let at = PackAt::Image { offset: 0, len: bytes.len() as u64 };
                    ImageSource::Pack { at, digest, overlay: *overlay }
                }
                Source::HostPack { host_path, digest, overlay } => {
                    check_host_path(host_path).map_err(|_| anyhow::anyhow!("{host_path:?}: not a host path"))?;
                    ImageSource::Pack { at: PackAt::Host(host_path.clone()), digest: *digest, overlay: *overlay }
                }
                Source::HostDir { host_path, read_only } => {
                    check_host_path(host_path).map_err(|_| anyhow::anyhow!("{host_path:?}: not a host path"))?;
                    if !preopen {
                        bail!("{path}: a host directory is preopened on its own, not mounted in the namespace");
                    }
                    ImageSource::HostDir { host_path: host_path.clone(), read_only: *read_only }
                }
            };
            config.mounts.push(Mount { path: path.clone(), source, preopen: *preopen });
        }
        // The offsets are fixed-width, so the header's length is known now.
        let header = config.header_len()?;
        let mut data = Vec::new();
        // The packs, in the order of their mounts.
        let offsets = config.mounts.iter_mut().filter_map(|m| match &mut m.source {
            ImageSource::Pack { at: PackAt::Image { offset, .. }, .. } => Some(offset),
            _ => None,
        });
        for (offset, bytes) in offsets.zip(packs) {
            let start = (header + data.len() as u64).next_multiple_of(PACK_ALIGN);
            data.resize((start - header) as usize, 0);
            data.extend_from_slice(bytes);
            *offset = start;
        }
        let image = config.encode(&data)?;
        opens(&image)?;
        Ok(image)
    }
}

/// Opens what `image` configures as the component will, so that a layout
/// that cannot open (a mount under a file, or beneath a read-only pack
/// where a directory is missing) is refused now, as `packfs run` refuses
/// it, not at the guest's first call. A host's pack is not here: an empty
/// tree stands in for it (mounts beneath it are checked when it opens).
fn opens(image: &[u8]) -> Result<()> {
    let image = Image::decode(image)?;
    let pack = |at: &PackAt, _: &Digest| -> packfs_core::Result<Arc<dyn FileSystem>> {
        Ok(match *at {
            PackAt::Image { offset, len } => Arc::new(PackFs::open(image.pack(offset, len)?.to_vec())?),
            PackAt::Host(_) => Arc::new(packfs_core::MemFs::new()),
        })
    };
    image.config.open(&system_clock(), &pack).context("the mounts")?;
    Ok(())
}
