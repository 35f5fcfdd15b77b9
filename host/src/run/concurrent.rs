//! [`Runner`]'s runs of WASI 0.3 components: a linker of WASI 0.3 and 0.2
//! made once per runner, and runs driven on wasmtime-wasi's tokio runtime.

use wasmtime::Trap;
use wasmtime::component::{Component, InstancePre as ComponentPre, Linker};
use wasmtime_wasi::WasiCtx;

use super::{GuestState, Runner};
use crate::limits::RunError;
use crate::wasi::PackFsCtx;

impl Runner {
    fn p3_linker(&self) -> wasmtime::Result<&Linker<GuestState>> {
        let linker = self.p3.get_or_init(|| {
            let mut linker = Linker::new(&self.engine);
            crate::p3::add_to_linker(&mut linker).map(|()| linker).map_err(|e| format!("{e:#}"))
        });
        linker.as_ref().map_err(|e| {
            wasmtime::Error::msg(format!(
                "a WASI 0.3 component needs an engine with the component model's concurrency (Runner::config_p3): {e}"
            ))
        })
    }

    /// Links a WASI 0.3 component, which exports `wasi:cli/run` of 0.3 or 0.2.
    pub(super) fn link_p3(&self, component: &Component) -> wasmtime::Result<ComponentPre<GuestState>> {
        let pre = self.p3_linker()?.instantiate_pre(component)?;
        if wasmtime_wasi::p3::bindings::CommandPre::new(pre.clone()).is_err() {
            wasmtime_wasi::p2::bindings::CommandPre::new(pre.clone())?;
        }
        Ok(pre)
    }

    /// Links a WASI 0.3 component against WASI 0.3 and 0.2 once, for many
    /// runs ([`run_prepared_p3`](Self::run_prepared_p3)). The runner's
    /// engine must be made with [`Runner::config_p3`].
    pub fn prepare_p3(&self, component: &Component) -> Result<ComponentPre<GuestState>, RunError> {
        self.link_p3(component).map_err(RunError::Instantiate)
    }

    /// Runs a WASI 0.3 component's `wasi:cli/run` (of 0.3, or else of
    /// 0.2) to completion, with `wasi:filesystem` of both versions served
    /// by PackFS; returns its exit status as [`run`](Self::run) does,
    /// which calls it for such a component.
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use packfs_core::MemFs;
    /// use packfs_host::{Runner, load::Guest, wasi::PackFsCtx};
    ///
    /// let runner = Runner::new(&wasmtime::Engine::new(&Runner::config_p3())?)?;
    /// let Guest::Component(component) = runner.load_file("guest.wasm".as_ref())? else { panic!() };
    /// let fs = PackFsCtx::builder().preopen("/", Arc::new(MemFs::new())).build();
    /// let wasi = wasmtime_wasi::WasiCtx::builder().inherit_stdio().build();
    /// let status = runner.run_p3(&component, wasi, fs)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn run_p3(&self, component: &Component, wasi: WasiCtx, packfs: PackFsCtx) -> Result<i32, RunError> {
        self.run_prepared_p3(&self.prepare_p3(component)?, wasi, packfs)
    }

    /// As [`run_p3`](Self::run_p3), for a component linked by
    /// [`prepare_p3`](Self::prepare_p3) on this runner.
    ///
    /// The run is driven on wasmtime-wasi's tokio runtime. Under
    /// [`Limits::timeout`](crate::Limits::timeout) it ends at the deadline wherever the guest is:
    /// in its own code (the epoch), or waiting on a host future (the run's
    /// future is dropped, and with it every stream and task it held).
    pub fn run_prepared_p3(
        &self,
        pre: &ComponentPre<GuestState>,
        wasi: WasiCtx,
        packfs: PackFsCtx,
    ) -> Result<i32, RunError> {
        use wasmtime_wasi::p2::bindings::Command as Command2;
        use wasmtime_wasi::p3::bindings::Command as Command3;

        let mut store = self.store(GuestState::new(wasi, packfs), |s| &mut s.limiter)?;
        let timeout = self.limits.timeout;
        let (r, timed_out) = self.timed(|| {
            wasmtime_wasi::runtime::in_tokio(async {
                let run = async {
                    let instance = pre.instantiate_async(&mut store).await.map_err(RunError::Instantiate)?;
                    Ok(match Command3::new(&mut store, &instance) {
                        Ok(command) => store
                            .run_concurrent(async |s| command.wasi_cli_run().call_run(s).await)
                            .await
                            .and_then(|r| r),
                        Err(_) => {
                            let command = Command2::new(&mut store, &instance).map_err(RunError::Instantiate)?;
                            command.wasi_cli_run().call_run(&mut store).await
                        }
                    })
                };
                match timeout {
                    Some(t) => tokio::time::timeout(t, run).await.unwrap_or_else(|_| Ok(Err(Trap::Interrupt.into()))),
                    None => run.await,
                }
            })
        });
        self.exit_status(r?, timed_out)
    }
}
