//! What a load gives and how it can fail: [`Guest`], [`LoadError`],
//! [`CacheStatus`], and compiling without a cache.

use std::io;

use wasmparser::Parser;
use wasmtime::component::Component;
use wasmtime::{Engine, Module};

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
    /// wasmtime rejected it. (Its whole chain, on one line: `{:?}` would
    /// add a Rust backtrace under `RUST_BACKTRACE=1`.)
    #[error("compiling the guest: {0:#}")]
    Compile(wasmtime::Error),
    /// The module file could not be opened or read (`load_file`).
    #[error("{0}")]
    Io(io::Error),
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
    /// Compiled; the cached copy was missing its pin, did not match it,
    /// was damaged or from an incompatible engine, and was replaced.
    Replaced,
    /// Compiled, but storing it failed (the guest still runs).
    StoreFailed(io::Error),
}

/// Which of the two a guest binary is; its compiled form says the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Module,
    Component,
}

impl Kind {
    /// What `wasm` is, from its header.
    pub(crate) fn of(wasm: &[u8]) -> Result<Kind, LoadError> {
        if Parser::is_component(wasm) {
            Ok(Kind::Component)
        } else if Parser::is_core_wasm(wasm) {
            Ok(Kind::Module)
        } else {
            Err(LoadError::NotWasm)
        }
    }

    /// The byte a pin records it as.
    pub(crate) fn tag(self) -> char {
        match self {
            Kind::Module => 'm',
            Kind::Component => 'c',
        }
    }

    /// The inverse of [`Kind::tag`].
    pub(crate) fn from_tag(tag: &str) -> Option<Kind> {
        match tag {
            "m" => Some(Kind::Module),
            "c" => Some(Kind::Component),
            _ => None,
        }
    }
}

/// Compiles `wasm` into code in this process's memory, as wasmtime does
/// without a cache.
pub(crate) fn compile(engine: &Engine, kind: Kind, wasm: &[u8]) -> Result<Guest, LoadError> {
    match kind {
        Kind::Module => Module::new(engine, wasm).map(Guest::Module),
        Kind::Component => Component::new(engine, wasm).map(Guest::Component),
    }
    .map_err(LoadError::Compile)
}

/// Compiles `wasm` into wasmtime's serialized form, the bytes an artifact
/// holds.
pub(crate) fn precompile(engine: &Engine, kind: Kind, wasm: &[u8]) -> Result<Vec<u8>, LoadError> {
    match kind {
        Kind::Module => engine.precompile_module(wasm),
        Kind::Component => engine.precompile_component(wasm),
    }
    .map_err(LoadError::Compile)
}
