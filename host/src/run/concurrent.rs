//! A runner's engine and linker of WASI 0.3 components, made at the first
//! one.

use std::sync::OnceLock;

use wasmtime::component::{Component, InstancePre as ComponentPre, Linker};
use wasmtime::{Config, Engine};

use crate::limits::{Limits, check};
use crate::p2::GuestState;

/// The engine with the component model's concurrency that 0.3 components
/// need, and their linker of WASI 0.3 and 0.2: made once, when a runner
/// first meets such a guest, so that the others pay nothing for them.
pub(super) struct Concurrent<T: 'static> {
    config: Config,
    limits: Limits,
    /// The engine and linker, or why they could not be made.
    made: OnceLock<Result<Made<T>, String>>,
}

type Made<T> = (Engine, Linker<GuestState<T>>);

impl<T: Send + 'static> Concurrent<T> {
    pub(super) fn new(config: Config, limits: Limits) -> Self {
        Concurrent { config, limits, made: OnceLock::new() }
    }

    fn made(&self) -> wasmtime::Result<&Made<T>> {
        let made = self.made.get_or_init(|| {
            let make = || {
                let engine = Engine::new(&self.config)?;
                check(&engine, &self.limits).map_err(wasmtime::Error::new)?;
                let mut linker = Linker::new(&engine);
                crate::p3::add_to_linker(&mut linker)?;
                Ok::<_, wasmtime::Error>((engine, linker))
            };
            make().map_err(|e| format!("{e:#}"))
        });
        made.as_ref().map_err(|e| wasmtime::Error::msg(format!("making the WASI 0.3 engine: {e}")))
    }

    pub(super) fn engine(&self) -> wasmtime::Result<&Engine> {
        self.made().map(|(engine, _)| engine)
    }

    /// Links a WASI 0.3 component, which exports `wasi:cli/run` of 0.3 or 0.2.
    pub(super) fn link(&self, component: &Component) -> wasmtime::Result<ComponentPre<GuestState<T>>> {
        let pre = self.made()?.1.instantiate_pre(component)?;
        if wasmtime_wasi::p3::bindings::CommandPre::new(pre.clone()).is_err() {
            wasmtime_wasi::p2::bindings::CommandPre::new(pre.clone())?;
        }
        Ok(pre)
    }
}
