//! A runner's engine of WASI 0.3 components, and their linker, made at the
//! first one.

use std::sync::OnceLock;

use wasmtime::Engine;
use wasmtime::component::{Component, InstancePre as ComponentPre, Linker};

use crate::p2::GuestState;

/// The engine with the component model's concurrency that 0.3 components
/// need, made and checked with the runner (it is cheap), and their linker
/// of WASI 0.3 and 0.2, made at the first such guest, so that the others
/// pay nothing for it.
pub(super) struct Concurrent<T: 'static> {
    pub(super) engine: Engine,
    /// The linker, or why it could not be made.
    linker: OnceLock<Result<Linker<GuestState<T>>, String>>,
}

impl<T: Send + 'static> Concurrent<T> {
    pub(super) fn new(engine: Engine) -> Self {
        Concurrent { engine, linker: OnceLock::new() }
    }

    fn linker(&self) -> wasmtime::Result<&Linker<GuestState<T>>> {
        let linker = self.linker.get_or_init(|| {
            let mut linker = Linker::new(&self.engine);
            crate::p3::add_to_linker(&mut linker).map(|()| linker).map_err(|e| format!("{e:#}"))
        });
        linker.as_ref().map_err(|e| wasmtime::Error::msg(format!("linking WASI 0.3: {e}")))
    }

    /// Links a WASI 0.3 component, which exports `wasi:cli/run` of 0.3 or 0.2.
    pub(super) fn link(&self, component: &Component) -> wasmtime::Result<ComponentPre<GuestState<T>>> {
        let pre = self.linker()?.instantiate_pre(component)?;
        if wasmtime_wasi::p3::bindings::CommandPre::new(pre.clone()).is_err() {
            wasmtime_wasi::p2::bindings::CommandPre::new(pre.clone())?;
        }
        Ok(pre)
    }
}
