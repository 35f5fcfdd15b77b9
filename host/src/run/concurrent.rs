//! [`Runner`]'s runs of WASI 0.3 components: a linker of WASI 0.3 and 0.2
//! made once per runner, and runs driven on wasmtime-wasi's tokio runtime.

use wasmtime::Trap;
use wasmtime::component::{Component, InstancePre as ComponentPre, Linker};

use super::{GuestState, Runner};
use crate::limits::RunError;

impl<T: Send + 'static> Runner<T> {
    fn p3_linker(&self) -> wasmtime::Result<&Linker<GuestState<T>>> {
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
    pub(super) fn link_p3(&self, component: &Component) -> wasmtime::Result<ComponentPre<GuestState<T>>> {
        let pre = self.p3_linker()?.instantiate_pre(component)?;
        if wasmtime_wasi::p3::bindings::CommandPre::new(pre.clone()).is_err() {
            wasmtime_wasi::p2::bindings::CommandPre::new(pre.clone())?;
        }
        Ok(pre)
    }

    /// Runs a WASI 0.3 component's `wasi:cli/run` (of 0.3, or else of
    /// 0.2) to completion, with `wasi:filesystem` of both versions served
    /// by PackFS.
    ///
    /// The run is driven on wasmtime-wasi's tokio runtime. Under
    /// [`Limits::timeout`](crate::Limits::timeout) it ends at the deadline wherever the guest is:
    /// in its own code (the epoch), or waiting on a host future (the run's
    /// future is dropped, and with it every stream and task it held).
    pub(super) fn run_p3(&self, pre: &ComponentPre<GuestState<T>>, state: GuestState<T>) -> Result<i32, RunError> {
        use wasmtime_wasi::p2::bindings::Command as Command2;
        use wasmtime_wasi::p3::bindings::Command as Command3;

        let mut store = self.store(state, |s| &mut s.limiter)?;
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
