//! What a load gives and how it can fail: [`Guest`], its [`Kind`],
//! [`LoadError`], [`CacheStatus`], and compiling without a cache.

use std::io;
use std::sync::Arc;

use wasmparser::Parser;
use wasmtime::component::Component;
use wasmtime::{Engine, Module};

/// A guest compiled by a [`Runner`](crate::Runner) for the engine its
/// kind runs on ([`Runner::load`](crate::Runner::load)).
#[derive(Clone)]
pub struct Guest {
    pub(crate) code: Code,
    kind: Kind,
    status: Arc<CacheStatus>,
}

/// What a guest is, which says what serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// A WASI preview1 core module, served by PackFS's own preview1
    /// ([`crate::p1`]).
    P1,
    /// A component of WASI 0.2, served through `wasi:filesystem` 0.2
    /// ([`crate::p2`]) and wasmtime-wasi.
    P2,
    /// A component that imports or exports an interface of WASI 0.3,
    /// served through `wasi:filesystem` 0.3 and 0.2 ([`crate::p3`]) on an
    /// engine with the component model's concurrency.
    P3,
}

impl Guest {
    pub(crate) fn new(code: Code, kind: Kind, status: CacheStatus) -> Guest {
        Guest { code, kind, status: Arc::new(status) }
    }

    /// What the guest is.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Whether the load that made it used the cache.
    pub fn cache_status(&self) -> &CacheStatus {
        &self.status
    }

    /// The compiled module, for a p1 guest.
    pub fn module(&self) -> Option<&Module> {
        match &self.code {
            Code::Module(m) => Some(m),
            Code::Component(_) => None,
        }
    }

    /// The compiled component, for a 0.2 or 0.3 guest.
    pub fn component(&self) -> Option<&Component> {
        match &self.code {
            Code::Component(c) => Some(c),
            Code::Module(_) => None,
        }
    }
}

/// Compiled code, of either form.
#[derive(Clone)]
pub(crate) enum Code {
    Module(Module),
    Component(Component),
}

impl Code {
    /// The engine it was compiled for.
    pub(crate) fn engine(&self) -> &Engine {
        match self {
            Code::Module(m) => m.engine(),
            Code::Component(c) => c.engine(),
        }
    }
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
    /// The module file could not be opened or read.
    #[error("{0}")]
    Io(io::Error),
    /// The file changed between the look at what it is and its compile
    /// (it was compiled as another kind than it said it was): load it
    /// again.
    #[error("the guest changed while it was loaded")]
    Changed,
}

/// Whether a load used the cache.
#[derive(Debug, Clone)]
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
    StoreFailed(Arc<io::Error>),
}

/// Which of the two binary forms a guest has; its compiled code has the
/// same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    Module,
    Component,
}

impl Form {
    /// What `wasm` is, from its header.
    pub(crate) fn of(wasm: &[u8]) -> Result<Form, LoadError> {
        if Parser::is_component(wasm) {
            Ok(Form::Component)
        } else if Parser::is_core_wasm(wasm) {
            Ok(Form::Module)
        } else {
            Err(LoadError::NotWasm)
        }
    }

    /// The byte a pin records it as.
    pub(crate) fn tag(self) -> char {
        match self {
            Form::Module => 'm',
            Form::Component => 'c',
        }
    }

    /// The inverse of [`Form::tag`].
    pub(crate) fn from_tag(tag: &str) -> Option<Form> {
        match tag {
            "m" => Some(Form::Module),
            "c" => Some(Form::Component),
            _ => None,
        }
    }
}

/// Compiles `wasm` into code in this process's memory, as wasmtime does
/// without a cache.
pub(crate) fn compile(engine: &Engine, form: Form, wasm: &[u8]) -> Result<Code, LoadError> {
    match form {
        Form::Module => Module::new(engine, wasm).map(Code::Module),
        Form::Component => Component::new(engine, wasm).map(Code::Component),
    }
    .map_err(LoadError::Compile)
}

/// Compiles `wasm` into wasmtime's serialized form, the bytes an artifact
/// holds.
pub(crate) fn precompile(engine: &Engine, form: Form, wasm: &[u8]) -> Result<Vec<u8>, LoadError> {
    match form {
        Form::Module => engine.precompile_module(wasm),
        Form::Component => engine.precompile_component(wasm),
    }
    .map_err(LoadError::Compile)
}
