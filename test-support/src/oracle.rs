//! Guests on wasmtime-wasi's own WASI over real directories: the reference
//! the guest tests compare PackFS's transcripts and trees with, and the
//! baseline the guest benchmark times PackFS against.
//!
//! A p1 module runs on wasmtime's native preview1 ([`P1`]), a component on
//! wasmtime-wasi's WASI 0.2 ([`P2`]), a WASI 0.3 component on its p3 and
//! 0.2 together ([`P3`]), as `wasmtime run` links them. Each is instantiated ahead once
//! (`new`) and run any number of times over a context the caller builds
//! (`run`): its preopened host directories, args and pipes.

use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Engine, InstancePre, Module, Store};
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::p2::bindings::sync::CommandPre;
use wasmtime_wasi::{I32Exit, WasiCtx, WasiCtxView, WasiView};

/// A p1 module on wasmtime's native preview1.
pub struct P1 {
    pre: InstancePre<WasiP1Ctx>,
}

impl P1 {
    /// `module` linked to wasmtime-wasi's preview1.
    pub fn new(engine: &Engine, module: &Module) -> wasmtime::Result<P1> {
        let mut linker = wasmtime::Linker::<WasiP1Ctx>::new(engine);
        wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |ctx| ctx)?;
        Ok(P1 { pre: linker.instantiate_pre(module)? })
    }

    /// Runs `_start` over `ctx`: the exit status (0 when `_start`
    /// returns), or the trap.
    pub fn run(&self, ctx: WasiP1Ctx) -> wasmtime::Result<i32> {
        let mut store = Store::new(self.pre.module().engine(), ctx);
        let instance = self.pre.instantiate(&mut store)?;
        let start = instance.get_typed_func::<(), ()>(&mut store, "_start")?;
        match start.call(&mut store, ()) {
            Ok(()) => Ok(0),
            Err(e) => exited(e),
        }
    }
}

/// A component on wasmtime-wasi's WASI 0.2.
pub struct P2 {
    pre: CommandPre<State>,
}

/// A component's store data on wasmtime-wasi.
struct State {
    ctx: WasiCtx,
    table: ResourceTable,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.ctx, table: &mut self.table }
    }
}

impl P2 {
    /// `component` linked to wasmtime-wasi's WASI 0.2.
    pub fn new(engine: &Engine, component: &Component) -> wasmtime::Result<P2> {
        let mut linker = Linker::<State>::new(engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        Ok(P2 { pre: CommandPre::new(linker.instantiate_pre(component)?)? })
    }

    /// Runs `wasi:cli/run` over `ctx`: the exit status, or the trap.
    pub fn run(&self, ctx: WasiCtx) -> wasmtime::Result<i32> {
        let mut store = Store::new(self.pre.engine(), State { ctx, table: ResourceTable::new() });
        let command = self.pre.instantiate(&mut store)?;
        run_status(command.wasi_cli_run().call_run(&mut store))
    }
}

/// A WASI 0.3 component on wasmtime-wasi's p3, with its 0.2 beside it.
/// Its engine must have the component model's concurrency.
pub struct P3 {
    pre: wasmtime::component::InstancePre<State>,
}

impl P3 {
    /// `component` linked to wasmtime-wasi's WASI 0.3 and 0.2.
    pub fn new(engine: &Engine, component: &Component) -> wasmtime::Result<P3> {
        let mut linker = Linker::<State>::new(engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        wasmtime_wasi::p3::add_to_linker(&mut linker)?;
        Ok(P3 { pre: linker.instantiate_pre(component)? })
    }

    /// Runs its `wasi:cli/run@0.3` over `ctx`, as `wasmtime run` does: the
    /// exit status, or the trap.
    pub fn run(&self, ctx: WasiCtx) -> wasmtime::Result<i32> {
        let mut store = Store::new(self.pre.engine(), State { ctx, table: ResourceTable::new() });
        run_status(wasmtime_wasi::runtime::in_tokio(async {
            let instance = self.pre.instantiate_async(&mut store).await?;
            let command = wasmtime_wasi::p3::bindings::Command::new(&mut store, &instance)?;
            store.run_concurrent(async |s| command.wasi_cli_run().call_run(s).await).await?
        }))
    }
}

/// The exit status of a `wasi:cli/run` call on any host whose `exit` is
/// wasmtime-wasi's (the oracle's, and packfs-host's `GuestState`): 0 for
/// success, 1 for `run` returning an error, the code `exit` was given; or
/// the trap.
pub fn run_status(r: wasmtime::Result<Result<(), ()>>) -> wasmtime::Result<i32> {
    match r {
        Ok(Ok(())) => Ok(0),
        Ok(Err(())) => Ok(1),
        Err(e) => exited(e),
    }
}

/// The code a guest passed to `exit`, or `e` itself: a trap.
fn exited(e: wasmtime::Error) -> wasmtime::Result<i32> {
    match e.downcast_ref::<I32Exit>() {
        Some(exit) => Ok(exit.0),
        None => Err(e),
    }
}
