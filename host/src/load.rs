//! Loading guests: a WASI p1 core module or a component, compiled for the
//! engine, through an on-disk cache of compiled code ([`GuestCache`]) keyed
//! by a SHA-256 of the input and the engine's compatibility hash.

use std::fs;
use std::hash::{Hash, Hasher};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmparser::Parser;
use wasmtime::component::Component;
use wasmtime::{Engine, Module};

/// Bumped whenever what is cached, or how it is keyed, changes.
const CACHE_FORMAT: &[u8] = b"packfs-guest-cache-v3";
/// Length of the SHA-256 trailer that checks a cache file before use.
const DIGEST_LEN: usize = 32;

/// A compiled guest.
#[derive(Clone)]
pub enum Guest {
    /// A WASI preview1 core module, served by PackFS's own preview1.
    Module(Module),
    /// A component (WASI 0.2), served through `wasi:filesystem`.
    Component(Component),
}

/// Why a guest binary could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// Neither a core module nor a component.
    #[error("not a WebAssembly module or component")]
    NotWasm,
    /// wasmtime rejected it.
    #[error("compiling the guest: {0:?}")]
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

/// Compiles `wasm`, a core module or a component, through `cache` when
/// there is one.
pub fn load(engine: &Engine, wasm: &[u8], cache: Option<&GuestCache>) -> Result<(Guest, CacheStatus), LoadError> {
    let compile = || -> Result<Guest, LoadError> {
        if Parser::is_component(wasm) {
            Component::new(engine, wasm).map(Guest::Component).map_err(LoadError::Compile)
        } else if Parser::is_core_wasm(wasm) {
            Module::new(engine, wasm).map(Guest::Module).map_err(LoadError::Compile)
        } else {
            Err(LoadError::NotWasm)
        }
    };
    match cache {
        None => Ok((compile()?, CacheStatus::Off)),
        Some(cache) => cache.get_or_compile(engine, wasm, compile),
    }
}

/// A directory of compiled guests, one file per input.
///
/// The directory must be private to this user (it is created `0700`):
/// loading a file from it runs the machine code inside without
/// verification beyond a checksum, so whoever can write there can run
/// code as the host.
#[derive(Debug, Clone)]
pub struct GuestCache {
    dir: PathBuf,
}

impl GuestCache {
    /// Uses (and creates, private to this user) `dir`. A directory that
    /// was already there must be one this user owns and nobody else can
    /// write to (`PermissionDenied` otherwise): whoever can plant a file in
    /// it could run code as the host.
    pub fn new(dir: impl Into<PathBuf>) -> io::Result<Self> {
        let dir = dir.into();
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(&dir)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            // Not followed: a symlink could point anywhere later.
            let md = fs::symlink_metadata(&dir)?;
            let ours = md.uid() == rustix::process::geteuid().as_raw();
            if !md.is_dir() || !ours || md.mode() & 0o022 != 0 {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!("{} is not a directory private to this user", dir.display()),
                ));
            }
        }
        Ok(GuestCache { dir })
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
        // The engine's settings decide the output as much as the input does.
        engine.precompile_compatibility_hash().hash(&mut ShaHasher(&mut h));
        h.update(Sha256::digest(wasm));
        let key: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{key}.cwasm"))
    }

    fn get_or_compile(
        &self,
        engine: &Engine,
        wasm: &[u8],
        compile: impl FnOnce() -> Result<Guest, LoadError>,
    ) -> Result<(Guest, CacheStatus), LoadError> {
        let path = self.path(engine, wasm);
        let existed = match fs::read(&path) {
            Ok(bytes) => match Self::deserialize(engine, &bytes) {
                Some(guest) => return Ok((guest, CacheStatus::Hit)),
                None => true,
            },
            Err(_) => false,
        };
        let guest = compile()?;
        let status = match self.store(&path, &guest) {
            Ok(()) if existed => CacheStatus::Replaced,
            Ok(()) => CacheStatus::Stored,
            Err(e) => CacheStatus::StoreFailed(e),
        };
        Ok((guest, status))
    }

    #[allow(unsafe_code, reason = "loading compiled code the cache wrote: see SAFETY")]
    fn deserialize(engine: &Engine, file: &[u8]) -> Option<Guest> {
        let (payload, digest) = file.split_at_checked(file.len().checked_sub(DIGEST_LEN)?)?;
        if Sha256::digest(payload).as_slice() != digest {
            return None;
        }
        // Why the two unsafe calls below hold: `Module::deserialize` and
        // `Component::deserialize` trust their input to be code that
        // `serialize` produced. This file is: the cache directory is private
        // to this user (created 0700, see `GuestCache`), every file in it is
        // written by `store` below from `serialize` output, published by an
        // atomic rename, and its SHA-256 trailer was checked just above, so a
        // torn or corrupted file is never loaded. wasmtime itself rejects
        // output of another wasmtime version or of incompatible engine
        // settings, and a module's bytes from a component's (the header says
        // which it is).
        let (kind, code) = payload.split_first()?;
        match kind {
            // SAFETY: `serialize` output from the private cache, checked above.
            b'm' => unsafe { Module::deserialize(engine, code) }.ok().map(Guest::Module),
            // SAFETY: as for a module.
            b'c' => unsafe { Component::deserialize(engine, code) }.ok().map(Guest::Component),
            _ => None,
        }
    }

    fn store(&self, path: &Path, guest: &Guest) -> io::Result<()> {
        let (kind, code) = match guest {
            Guest::Module(m) => (b'm', m.serialize()),
            Guest::Component(c) => (b'c', c.serialize()),
        };
        let code = code.map_err(|e| io::Error::other(format!("{e:?}")))?;
        let mut payload = Vec::with_capacity(code.len() + 1);
        payload.push(kind);
        payload.extend_from_slice(&code);
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
