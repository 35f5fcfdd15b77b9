//! Running a guest's `wasi:cli/run` with PackFS as its filesystem: the
//! ready-made embedding that `packfs run`, the example and the guest tests
//! use. Plugin hosts with their own store data use
//! [`wasi::add_to_linker_sync`](crate::wasi::add_to_linker_sync) or
//! [`wasi::add_filesystem_to_linker`](crate::wasi::add_filesystem_to_linker)
//! directly.

use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::p2::bindings::sync::{Command, CommandPre};
use wasmtime_wasi::{I32Exit, WasiCtx, WasiCtxView, WasiView};

use crate::p1::{self, CacheStatus, ComponentCache, LoadError};
use crate::wasi::{PackFsCtx, PackFsCtxView, PackFsView};

/// A guest's store data: wasmtime-wasi's context for everything but the
/// filesystem, PackFS's for the filesystem, one resource table for both.
pub struct GuestState {
    /// Arguments, environment, stdio, clocks, random, sockets.
    pub wasi: WasiCtx,
    /// Preopens.
    pub packfs: PackFsCtx,
    /// Every resource the guest holds.
    pub table: ResourceTable,
}

impl GuestState {
    /// State for one guest run.
    pub fn new(wasi: WasiCtx, packfs: PackFsCtx) -> Self {
        GuestState { wasi, packfs, table: ResourceTable::new() }
    }
}

impl WasiView for GuestState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl PackFsView for GuestState {
    fn packfs(&mut self) -> PackFsCtxView<'_> {
        PackFsCtxView { ctx: &mut self.packfs, table: &mut self.table }
    }
}

/// Loads and runs command guests (components or p1 modules) against
/// PackFS preopens.
///
/// ```no_run
/// use std::sync::Arc;
/// use packfs_core::MemFs;
/// use packfs_host::{Runner, wasi::PackFsCtx};
///
/// let runner = Runner::new(&wasmtime::Engine::new(&Runner::config())?)?;
/// let guest = runner.load(&std::fs::read("guest.wasm")?)?;
/// let fs = PackFsCtx::builder().preopen("/", Arc::new(MemFs::new())).build();
/// let wasi = wasmtime_wasi::WasiCtx::builder().inherit_stdio().build();
/// let status = runner.run(&guest, wasi, fs)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Runner {
    engine: Engine,
    linker: Linker<GuestState>,
    cache: Option<ComponentCache>,
}

impl Runner {
    /// The engine configuration `packfs run` uses: wasmtime's defaults
    /// without [`Config::concurrency_support`](wasmtime::Config::concurrency_support).
    ///
    /// A `Runner` drives guests synchronously and links WASI 0.2, which
    /// needs none of the component model's concurrent calls; with that
    /// support on, every host call — each of a guest's file operations —
    /// also creates and deletes a host task, about a sixth of the time of
    /// a small-file read (`bench/guest-results.md`). Components using
    /// component-model async do not load on such an engine.
    ///
    /// ```
    /// let engine = wasmtime::Engine::new(&packfs_host::Runner::config())?;
    /// let runner = packfs_host::Runner::new(&engine)?;
    /// # Ok::<(), wasmtime::Error>(())
    /// ```
    pub fn config() -> wasmtime::Config {
        let mut config = wasmtime::Config::new();
        config.concurrency_support(false);
        config
    }

    /// A runner on `engine`, driving guests synchronously, without a
    /// compilation cache. Any engine serves; [`Runner::config`] makes the
    /// fastest for it.
    pub fn new(engine: &Engine) -> wasmtime::Result<Runner> {
        let mut linker = Linker::new(engine);
        crate::wasi::add_to_linker_sync(&mut linker)?;
        Ok(Runner { engine: engine.clone(), linker, cache: None })
    }

    /// Caches compiled guests in `cache`.
    pub fn with_cache(mut self, cache: ComponentCache) -> Self {
        self.cache = Some(cache);
        self
    }

    /// The engine guests are compiled for.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The linker, with all of WASI defined; add host functions of your own.
    pub fn linker_mut(&mut self) -> &mut Linker<GuestState> {
        &mut self.linker
    }

    /// Compiles a component, or a WASI p1 core module via the adapter.
    pub fn load(&self, wasm: &[u8]) -> Result<Component, LoadError> {
        self.load_with_status(wasm).map(|(c, _)| c)
    }

    /// As [`load`](Self::load), also saying whether the cache served it.
    pub fn load_with_status(&self, wasm: &[u8]) -> Result<(Component, CacheStatus), LoadError> {
        p1::load(&self.engine, wasm, self.cache.as_ref())
    }

    /// Checks that `component` can run here: every import it has is
    /// defined, and it exports `wasi:cli/run`. [`Runner::run`] fails the
    /// same way without it; this tells such a guest from one that traps.
    pub fn check(&self, component: &Component) -> wasmtime::Result<()> {
        CommandPre::new(self.linker.instantiate_pre(component)?).map(|_| ())
    }

    /// Runs the guest's `wasi:cli/run` to completion; returns its exit
    /// status (0 for success, 1 for `run` returning an error, or the code
    /// it passed to `exit`). A trap, or a guest that cannot be
    /// instantiated (see [`Runner::check`]), is an `Err`.
    pub fn run(&self, component: &Component, wasi: WasiCtx, packfs: PackFsCtx) -> wasmtime::Result<i32> {
        let mut store = Store::new(&self.engine, GuestState::new(wasi, packfs));
        let command = Command::instantiate(&mut store, component, &self.linker)?;
        match command.wasi_cli_run().call_run(&mut store) {
            Ok(Ok(())) => Ok(0),
            Ok(Err(())) => Ok(1),
            Err(e) => match e.downcast_ref::<I32Exit>() {
                Some(exit) => Ok(exit.0),
                None => Err(e),
            },
        }
    }
}
