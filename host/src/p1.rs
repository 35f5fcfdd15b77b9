//! Loading guests: components as they are, WASI p1 core modules (the
//! `wasm32-wasip1` target, wasi-libc C, most real-world WASI binaries)
//! wrapped into components with the preview1 adapter of this wasmtime
//! release — so one filesystem implementation, p2's, serves both.
//!
//! Adapting and compiling costs tens of milliseconds to seconds per module,
//! so the result can be cached on disk ([`ComponentCache`]), keyed by a
//! SHA-256 of the input, the adapter and the engine's compatibility hash.
//!
//! Exit statuses: the preview1 adapter turns `proc_exit(n)` into
//! `wasi:cli/exit.exit(result)`, which says only success or failure. So a
//! module's `proc_exit` import is served instead by a one-function adapter
//! of our own ([`exit_adapter`]) calling `exit-with-code(n)`, and a host
//! sees the status the program passed to `exit` (as POSIX, modulo 256).

use std::fs;
use std::hash::{Hash, Hasher};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sha2::{Digest, Sha256};
use wasi_preview1_component_adapter_provider::{
    WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME, WASI_SNAPSHOT_PREVIEW1_COMMAND_ADAPTER, WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
};
use wasmparser::{Parser, Payload};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Bumped whenever what is cached, or how it is keyed, changes.
const CACHE_FORMAT: &[u8] = b"packfs-component-cache-v2";
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
/// A module's `proc_exit` import is served by [`exit_adapter`] instead.
pub fn module_to_component(module: &[u8]) -> Result<Vec<u8>, LoadError> {
    let adapter = if exports_start(module)? {
        WASI_SNAPSHOT_PREVIEW1_COMMAND_ADAPTER
    } else {
        WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER
    };
    let redirected = redirect_proc_exit(module).map_err(LoadError::Adapt)?;
    let mut encoder = wit_component::ComponentEncoder::default()
        .module(redirected.as_deref().unwrap_or(module))
        .and_then(|e| e.adapter(WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME, adapter))
        .map_err(LoadError::Adapt)?;
    if redirected.is_some() {
        encoder = encoder.adapter(EXIT_ADAPTER_NAME, exit_adapter()).map_err(LoadError::Adapt)?;
    }
    encoder.validate(true).encode().map_err(LoadError::Adapt)
}

/// The import module name `proc_exit` is moved to.
const EXIT_ADAPTER_NAME: &str = "packfs:proc-exit";

/// `wasi:cli/exit` as wasmtime-wasi 48 defines it (`exit-with-code` is
/// stable since 0.2.12), and the world of [`exit_adapter`].
const EXIT_WIT: &str = r#"
package wasi:cli@0.2.12;

@since(version = 0.2.0)
interface exit {
  @since(version = 0.2.0)
  exit: func(status: result);

  @since(version = 0.2.12)
  exit-with-code: func(status-code: u8);
}

world proc-exit-adapter {
  import exit;
}
"#;

/// An adapter module exporting `proc_exit(code)` as
/// `wasi:cli/exit.exit-with-code(code)` (a `u8`: the code modulo 256, as a
/// POSIX exit status).
///
/// ```text
/// (module
///   (import "wasi:cli/exit@0.2.12" "exit-with-code" (func $exit (param i32)))
///   (func (export "proc_exit") (param i32)
///     local.get 0  call $exit  unreachable)
///   (@custom "component-type" ...))    ;; the world above
/// ```
pub fn exit_adapter() -> &'static [u8] {
    static ADAPTER: OnceLock<Vec<u8>> = OnceLock::new();
    ADAPTER.get_or_init(|| {
        use wasm_encoder::{
            CodeSection, ExportKind, ExportSection, Function, FunctionSection, ImportSection, Instruction, Module,
            TypeSection, ValType,
        };
        let mut types = TypeSection::new();
        types.ty().function([ValType::I32], []);
        let mut imports = ImportSection::new();
        imports.import("wasi:cli/exit@0.2.12", "exit-with-code", wasm_encoder::EntityType::Function(0));
        let mut functions = FunctionSection::new();
        functions.function(0);
        let mut exports = ExportSection::new();
        exports.export("proc_exit", ExportKind::Func, 1);
        let mut body = Function::new([]);
        body.instruction(&Instruction::LocalGet(0)).instruction(&Instruction::Call(0));
        body.instruction(&Instruction::Unreachable).instruction(&Instruction::End);
        let mut code = CodeSection::new();
        code.function(&body);
        let mut module = Module::new();
        module.section(&types).section(&imports).section(&functions).section(&exports).section(&code);
        let mut bytes = module.finish();

        let mut resolve = wit_parser::Resolve::default();
        let world = resolve
            .push_str("exit.wit", EXIT_WIT)
            .and_then(|pkg| resolve.select_world(&[pkg], Some("proc-exit-adapter")))
            .expect("EXIT_WIT is valid WIT");
        wit_component::embed_component_metadata(&mut bytes, &resolve, world, wit_component::StringEncoding::UTF8)
            .expect("EXIT_WIT's world encodes");
        bytes
    })
}

/// `module` with its `wasi_snapshot_preview1.proc_exit` import moved to
/// [`EXIT_ADAPTER_NAME`]; `None` when it has no such import. Every other
/// section is copied byte for byte.
fn redirect_proc_exit(module: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
    use wasm_encoder::reencode::{Reencode, RoundtripReencoder};
    let is_proc_exit =
        |i: &wasmparser::Import<'_>| i.module == WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME && i.name == "proc_exit";
    let mut out = wasm_encoder::Module::new();
    let mut found = false;
    for payload in Parser::new(0).parse_all(module) {
        let payload = payload?;
        if let Payload::ImportSection(reader) = &payload {
            let mut imports = wasm_encoder::ImportSection::new();
            for import in reader.clone().into_imports() {
                let import = import?;
                let ty = RoundtripReencoder.entity_type(import.ty)?;
                if is_proc_exit(&import) {
                    found = true;
                    imports.import(EXIT_ADAPTER_NAME, import.name, ty);
                } else {
                    imports.import(import.module, import.name, ty);
                }
            }
            out.section(&imports);
        } else if let Some((id, range)) = payload.as_section() {
            out.section(&wasm_encoder::RawSection { id, data: &module[range] });
        }
    }
    Ok(found.then(|| out.finish()))
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
        h.update(Sha256::digest(exit_adapter()));
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
