//! Loading guests: components as they are, WASI p1 core modules (the
//! `wasm32-wasip1` target, wasi-libc C, most real-world WASI binaries)
//! wrapped into components with the preview1 adapter of this wasmtime
//! release — so one filesystem implementation, p2's, serves both.
//!
//! Adapting and compiling costs tens of milliseconds to seconds per module,
//! so the result can be cached on disk ([`ComponentCache`]), keyed by a
//! SHA-256 of the input, the adapter and the engine's compatibility hash.

use std::fs;
use std::hash::{Hash, Hasher};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasi_preview1_component_adapter_provider::{
    WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME, WASI_SNAPSHOT_PREVIEW1_COMMAND_ADAPTER, WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
};
use wasmparser::{Parser, Payload};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Bumped whenever what is cached, or how it is keyed, changes.
const CACHE_FORMAT: &[u8] = b"packfs-component-cache-v1";
/// Length of the SHA-256 trailer that checks a cache file before use.
const DIGEST_LEN: usize = 32;

/// Why a guest binary could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// Neither a core module nor a component.
    #[error("not a WebAssembly module or component")]
    NotWasm,
    /// The module could not be adapted (it imports something the preview1
    /// adapter does not provide, or is malformed).
    #[error("adapting the WASI p1 module to a component: {0:#}")]
    Adapt(anyhow::Error),
    /// wasmtime rejected the component.
    #[error("compiling the component: {0:?}")]
    Compile(wasmtime::Error),
}

/// Whether a load used the cache.
#[derive(Debug)]
#[non_exhaustive]
pub enum CacheStatus {
    /// No cache configured.
    Off,
    /// Loaded from the cache.
    Hit,
    /// Compiled and stored.
    Stored,
    /// Compiled; the cached copy was unreadable, corrupt or from an
    /// incompatible engine, and was replaced.
    Replaced,
    /// Compiled, but storing it failed (the guest still runs).
    StoreFailed(io::Error),
}

/// Wraps a WASI p1 core module into a component, with the command adapter
/// if it exports `_start`, else the reactor adapter.
pub fn module_to_component(module: &[u8]) -> Result<Vec<u8>, LoadError> {
    let adapter = if exports_start(module)? {
        WASI_SNAPSHOT_PREVIEW1_COMMAND_ADAPTER
    } else {
        WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER
    };
    wit_component::ComponentEncoder::default()
        .module(module)
        .and_then(|e| e.adapter(WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME, adapter))
        .and_then(|e| e.validate(true).encode())
        .map_err(LoadError::Adapt)
}

fn exports_start(module: &[u8]) -> Result<bool, LoadError> {
    for payload in Parser::new(0).parse_all(module) {
        let payload = payload.map_err(|e| LoadError::Adapt(e.into()))?;
        if let Payload::ExportSection(exports) = payload {
            for export in exports {
                if export.map_err(|e| LoadError::Adapt(e.into()))?.name == "_start" {
                    return Ok(true);
                }
            }
        }
    }
    Ok(false)
}

/// Compiles `wasm` — a component, or a p1 core module adapted first —
/// through `cache` when there is one.
pub fn load(
    engine: &Engine,
    wasm: &[u8],
    cache: Option<&ComponentCache>,
) -> Result<(Component, CacheStatus), LoadError> {
    let compile = || -> Result<Component, LoadError> {
        if Parser::is_component(wasm) {
            Component::new(engine, wasm).map_err(LoadError::Compile)
        } else if Parser::is_core_wasm(wasm) {
            Component::new(engine, module_to_component(wasm)?).map_err(LoadError::Compile)
        } else {
            Err(LoadError::NotWasm)
        }
    };
    match cache {
        None => Ok((compile()?, CacheStatus::Off)),
        Some(cache) => cache.get_or_compile(engine, wasm, compile),
    }
}

/// A directory of compiled components, one file per input.
///
/// The directory must be private to this user (it is created `0700`):
/// loading a file from it runs the machine code inside without
/// verification beyond a checksum, so whoever can write there can run
/// code as the host.
#[derive(Debug, Clone)]
pub struct ComponentCache {
    dir: PathBuf,
}

impl ComponentCache {
    /// Uses (and creates, private to this user) `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> io::Result<Self> {
        let dir = dir.into();
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(&dir)?;
        Ok(ComponentCache { dir })
    }

    /// `$PACKFS_CACHE_DIR`, else `$XDG_CACHE_HOME/packfs`, else
    /// `$HOME/.cache/packfs`; `None` when none is set.
    pub fn default_dir() -> Option<PathBuf> {
        let var = |name| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        var("PACKFS_CACHE_DIR")
            .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("packfs")))
            .or_else(|| var("HOME").map(|d| d.join(".cache").join("packfs")))
    }

    /// The cache directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, engine: &Engine, wasm: &[u8]) -> PathBuf {
        let mut h = Sha256::new();
        h.update(CACHE_FORMAT);
        // The adapter and the engine's settings decide the output as much as
        // the input does.
        h.update(Sha256::digest(WASI_SNAPSHOT_PREVIEW1_COMMAND_ADAPTER));
        h.update(Sha256::digest(WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER));
        engine.precompile_compatibility_hash().hash(&mut ShaHasher(&mut h));
        h.update(Sha256::digest(wasm));
        let key: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{key}.cwasm"))
    }

    fn get_or_compile(
        &self,
        engine: &Engine,
        wasm: &[u8],
        compile: impl FnOnce() -> Result<Component, LoadError>,
    ) -> Result<(Component, CacheStatus), LoadError> {
        let path = self.path(engine, wasm);
        let existed = match fs::read(&path) {
            Ok(bytes) => match Self::deserialize(engine, &bytes) {
                Some(component) => return Ok((component, CacheStatus::Hit)),
                None => true,
            },
            Err(_) => false,
        };
        let component = compile()?;
        let status = match self.store(&path, &component) {
            Ok(()) if existed => CacheStatus::Replaced,
            Ok(()) => CacheStatus::Stored,
            Err(e) => CacheStatus::StoreFailed(e),
        };
        Ok((component, status))
    }

    fn deserialize(engine: &Engine, file: &[u8]) -> Option<Component> {
        let (payload, digest) = file.split_at_checked(file.len().checked_sub(DIGEST_LEN)?)?;
        if Sha256::digest(payload).as_slice() != digest {
            return None;
        }
        // SAFETY: `Component::deserialize` trusts its input to be code that
        // `Component::serialize` produced. This file is: the cache
        // directory is private to this user (created 0700, see
        // `ComponentCache`), every file in it is written by `store` below
        // from `serialize` output, published by an atomic rename, and its
        // SHA-256 trailer was checked just above, so a torn or corrupted
        // file is never loaded. wasmtime itself rejects output of another
        // wasmtime version or of incompatible engine settings.
        unsafe { Component::deserialize(engine, payload) }.ok()
    }

    fn store(&self, path: &Path, component: &Component) -> io::Result<()> {
        let payload = component.serialize().map_err(|e| io::Error::other(format!("{e:?}")))?;
        let mut tmp = tempfile::NamedTempFile::new_in(&self.dir)?;
        tmp.write_all(&payload)?;
        tmp.write_all(&Sha256::digest(&payload))?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    }
}

/// Feeds `Hash` output into a SHA-256.
struct ShaHasher<'a>(&'a mut Sha256);

impl Hasher for ShaHasher<'_> {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn finish(&self) -> u64 {
        // Only `write` is used; the digest is taken from the SHA-256.
        0
    }
}
