//! A component guest's store data, as a [`Runner`](crate::Runner) makes it
//! for 0.2 and 0.3 components alike.

use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::filesystem::{PackFsCtx, PackFsCtxView, PackFsView};
use crate::limits::Limiter;

/// Most resources a component guest holds at once in a [`GuestState`]; a
/// call that would make one more traps (wasmtime's `ResourceTableError::Full`).
/// It is also the store's bound on the guest's component-model handles
/// (wasmtime's `Store::set_max_component_handles`): a WASI 0.3 stream or
/// future is one, and holds host memory that no resource table counts.
pub const MAX_RESOURCES: usize = 1 << 16;

/// A component guest's store data: wasmtime-wasi's context for everything
/// but the filesystem, PackFS's for the filesystem, one resource table,
/// and the embedder's own data.
pub struct GuestState<T = ()> {
    /// Arguments, environment, stdio, clocks, random, sockets. Its own
    /// preopens are never seen: the guest's filesystem is `packfs`'s.
    pub wasi: WasiCtx,
    /// Preopens.
    pub packfs: PackFsCtx,
    /// Every resource the guest holds.
    pub table: ResourceTable,
    /// The embedder's data ([`Sandbox::with_data`](crate::Sandbox::with_data)),
    /// for its host functions.
    pub data: T,
    pub(crate) limiter: Limiter,
}

impl<T> GuestState<T> {
    /// State for one guest run. The guest holds at most [`MAX_RESOURCES`]
    /// resources (descriptors, streams, pollables, ...) at once, as a p1
    /// guest holds at most 65,536 descriptors: each is host memory.
    pub fn new(wasi: WasiCtx, packfs: PackFsCtx, data: T) -> Self {
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_RESOURCES);
        GuestState { wasi, packfs, table, data, limiter: Limiter::default() }
    }
}

impl<T: Send> WasiView for GuestState<T> {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl<T: Send> PackFsView for GuestState<T> {
    fn packfs(&mut self) -> PackFsCtxView<'_> {
        PackFsCtxView { ctx: &mut self.packfs, table: &mut self.table }
    }
}
