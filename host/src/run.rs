//! Running a command guest with PackFS as its filesystem: the ready-made
//! embedding that `packfs run`, the examples and the guest tests use. A
//! [`Runner`] is made once ([`Runner::builder`]) and owns its engines; one
//! [`Sandbox`] describes what a guest sees, whatever its kind, which the
//! load finds from the guest itself ([`Guest::kind`]):
//!
//! - a p1 core module runs its `_start` over PackFS's own preview1
//!   ([`crate::p1`]);
//! - a component runs its `wasi:cli/run` over `wasi:filesystem` 0.2
//!   ([`crate::p2`]) and wasmtime-wasi for the rest;
//! - a WASI 0.3 component (one that imports or exports a `wasi:`
//!   interface of 0.3) runs over `wasi:filesystem` 0.3 ([`crate::p3`])
//!   and 0.2, with wasmtime-wasi's p3 and 0.2 for the rest, driven by
//!   wasmtime's concurrent calls on an engine of its own.
//!
//! Plugin hosts with their own store data call
//! [`p1::add_to_linker`](crate::p1::add_to_linker) or
//! [`p2::add_to_linker_sync`](crate::p2::add_to_linker_sync) directly.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use packfs_core::deadline::Deadline;
#[cfg(feature = "p2")]
use wasmtime::component::Linker;
use wasmtime::{Engine, InstancePre, ResourceLimiter, Store, Trap, UpdateDeadline};
#[cfg(feature = "p2")]
use wasmtime_wasi::I32Exit;
#[cfg(feature = "p2")]
use wasmtime_wasi::p2::bindings::sync::CommandPre;

use crate::limits::{Limiter, Limits, MemoryLimitHit, RunError};
use crate::load::{self, Guest, GuestCache, Kind, LoadError, Source};
use crate::p1::P1State;
#[cfg(feature = "p2")]
use crate::p2::{GuestState, MAX_RESOURCES};
use crate::sandbox::Sandbox;

/// Making a runner: its engines' configuration, limits, pool and cache.
mod builder;
/// WASI 0.3 components: their engine and linker.
#[cfg(feature = "p3")]
mod concurrent;

pub use builder::RunnerBuilder;

/// A guest linked once for many runs ([`Runner::prepare`]).
pub struct Prepared<T: 'static = ()>(Linked<T>);

enum Linked<T: 'static> {
    Module(InstancePre<P1State<T>>),
    #[cfg(feature = "p2")]
    Component(CommandPre<GuestState<T>>),
    #[cfg(feature = "p3")]
    Concurrent(wasmtime::component::InstancePre<GuestState<T>>),
}

/// Loads and runs command guests (p1 modules, 0.2 and 0.3 components)
/// against PackFS preopens: each run in a fresh store of its own,
/// described by a [`Sandbox`], whose data `T` the embedder's host
/// functions reach.
///
/// ```no_run
/// use std::path::Path;
/// use std::sync::Arc;
/// use packfs_core::MemFs;
/// use packfs_host::{Access, Runner, Sandbox};
///
/// let runner = Runner::builder().build()?;
/// let guest = runner.load(Path::new("guest.wasm"))?; // a module or a component
/// let sandbox = Sandbox::new()
///     .arg("guest")
///     .inherit_stdio()
///     .preopen("/", Arc::new(MemFs::new()), Access::ReadWrite);
/// let status = runner.run(&guest, sandbox)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Many sandboxes
///
/// A plugin or serverless host that starts many short runs of one module,
/// one after another or many at once, gives its runner a [`Pool`](crate::Pool)
/// ([`RunnerBuilder::pool`]): wasmtime's pooling allocator with
/// copy-on-write memory images. A sandbox then takes a slot that is
/// already mapped, and its data segments are mapped from the module, not
/// copied. Its cost is address space reserved up front:
/// [`Pool::instances`](crate::Pool::instances) memory slots of wasmtime's
/// reservation (4 GiB, so compiled code needs no bounds checks, or
/// [`Limits::max_memory`] if larger) plus a 32 MiB guard each, about 4 TiB
/// for the default 1,000 sandboxes. That is reserved, not resident, but
/// making the runner can fail under `ulimit -v` or strict overcommit
/// (`vm.overcommit_memory=2`): there, use fewer instances. A pooled
/// runner refuses WASI 0.3 components (their calls run on fibers, and
/// their engine has no pool): they would escape its limits.
///
/// Such a host also links its guest once ([`Runner::prepare`]) and gives
/// each run its own fork of one base tree
/// ([`MemFs::overlay`](packfs_core::MemFs::overlay), O(1)):
///
/// ```no_run
/// use std::path::Path;
/// use std::sync::Arc;
/// use packfs_core::{FileSystem, MemFs};
/// use packfs_host::{Access, Limits, Pool, Runner, Sandbox};
///
/// let runner = Runner::builder()
///     .limits(Limits { max_memory: Some(64 << 20), ..Limits::default() })
///     .pool(Pool { instances: 100, ..Pool::default() })
///     .build()?;
/// let pre = runner.prepare(&runner.load(Path::new("plugin.wasm"))?)?;
/// let base: Arc<dyn FileSystem> = Arc::new(MemFs::new());
/// for _ in 0..1000 {
///     let fork = Arc::new(MemFs::overlay(base.clone())?);
///     runner.run_prepared(&pre, Sandbox::new().preopen("/", fork, Access::ReadWrite))?;
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Runner<T: 'static = ()> {
    /// p1 modules' and 0.2 components': without the component model's
    /// concurrency, which costs a 0.2 component's every host call a host
    /// task (about a sixth of a small-file read, `bench/guest-results.md`).
    engine: Engine,
    p1: wasmtime::Linker<P1State<T>>,
    /// WASI 0.2, made at the first component (or `linker_mut`): a start
    /// that runs a module does not pay for it.
    #[cfg(feature = "p2")]
    linker: std::sync::OnceLock<Linker<GuestState<T>>>,
    /// WASI 0.3 components' engine, and their linker, made at the first.
    #[cfg(feature = "p3")]
    p3: concurrent::Concurrent<T>,
    cache: Option<GuestCache>,
    limits: Limits,
    /// Its sandboxes come from a pool, which holds p1 and 0.2 guests only.
    pooled: bool,
}

impl<T: Send + 'static> Runner<T> {
    /// Compiles a p1 module or a component, from its bytes or its file
    /// ([`Source`]), for the engine its [`Kind`] runs on, through the cache if the
    /// runner has one ([`Guest::cache_status`] says whether it served it).
    ///
    /// ```
    /// let runner = packfs_host::Runner::builder().build()?;
    /// let guest = runner.load(&wat::parse_str("(module (func (export \"_start\")))")?)?;
    /// assert_eq!(guest.kind(), packfs_host::load::Kind::P1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load<'a>(&self, source: impl Into<Source<'a>>) -> Result<Guest, LoadError> {
        load::load(source.into(), self.cache.as_ref(), |kind| self.engine(kind))
    }

    /// The engine guests of `kind` are compiled for and run on: p1 modules
    /// and 0.2 components share one; WASI 0.3 components have one with the
    /// component model's concurrency.
    pub fn engine(&self, kind: Kind) -> &Engine {
        match kind {
            #[cfg(feature = "p3")]
            Kind::P3 => &self.p3.engine,
            _ => &self.engine,
        }
    }

    /// The component linker of 0.2 components, with all of WASI 0.2
    /// defined; add host functions of your own, which reach the sandbox's
    /// data as [`GuestState::data`].
    #[cfg(feature = "p2")]
    pub fn linker_mut(&mut self) -> &mut Linker<GuestState<T>> {
        self.linker();
        self.linker.get_mut().expect("made just above")
    }

    /// The component linker, made at its first use.
    #[cfg(feature = "p2")]
    fn linker(&self) -> &Linker<GuestState<T>> {
        self.linker.get_or_init(|| {
            let mut linker = Linker::new(&self.engine);
            // Only a name defined twice fails, and a new linker has none.
            crate::p2::add_to_linker_sync(&mut linker).expect("WASI 0.2 links into an empty linker");
            linker
        })
    }

    /// The core-module linker, with all of preview1 defined; add host
    /// functions of your own, which reach the sandbox's data as
    /// [`P1State::data`].
    pub fn module_linker_mut(&mut self) -> &mut wasmtime::Linker<P1State<T>> {
        &mut self.p1
    }

    /// Checks that `guest` can run here: every import it has is defined,
    /// and it exports `_start` (a module) or `wasi:cli/run` (a component).
    /// The runs fail the same way without it; this tells such a guest from
    /// one that traps.
    pub fn check(&self, guest: &Guest) -> Result<(), RunError> {
        self.prepare(guest).map(drop)
    }

    /// Links `guest` once, for many runs
    /// ([`run_prepared`](Self::run_prepared)): each run then only
    /// instantiates, with no import resolution. A p1 module is linked
    /// against preview1, a 0.2 component against WASI 0.2, a 0.3 one
    /// against 0.3 and 0.2. A guest loaded by another runner is refused.
    pub fn prepare(&self, guest: &Guest) -> Result<Prepared<T>, RunError> {
        let refuse = |why: &str| Err(RunError::Instantiate(wasmtime::Error::msg(why.to_owned())));
        if !Engine::same(guest.code.engine(), self.engine(guest.kind())) {
            return refuse("the guest was loaded by another runner");
        }
        let linked = match (guest.kind(), guest.module(), guest.component()) {
            (Kind::P1, Some(m), _) => {
                if !matches!(m.get_export("_start"), Some(wasmtime::ExternType::Func(_))) {
                    return refuse("the module exports no `_start` function");
                }
                Linked::Module(self.p1.instantiate_pre(m).map_err(RunError::Instantiate)?)
            }
            (Kind::P3, ..) if self.pooled => {
                return refuse(
                    "a pooled runner runs no WASI 0.3 component: its engine has no pool, whose limits the guest would escape",
                );
            }
            #[cfg(feature = "p3")]
            (Kind::P3, _, Some(c)) => Linked::Concurrent(self.p3.link(c).map_err(RunError::Instantiate)?),
            #[cfg(feature = "p2")]
            (Kind::P2, _, Some(c)) => Linked::Component(
                self.linker().instantiate_pre(c).and_then(CommandPre::new).map_err(RunError::Instantiate)?,
            ),
            (Kind::P3, ..) => return refuse("WASI 0.3 components need packfs-host's `p3` feature"),
            _ => return refuse("components need packfs-host's `p2` feature"),
        };
        Ok(Prepared(linked))
    }

    /// Runs `guest` to completion in `sandbox`; returns its exit status: a
    /// module's 0 when `_start` returns, else the code it passed to
    /// `proc_exit`; a component's 0 for success, 1 for `run` returning an
    /// error, or the code it passed to `exit`; modulo 256, as a POSIX
    /// exit status.
    pub fn run(&self, guest: &Guest, sandbox: Sandbox<T>) -> Result<i32, RunError> {
        self.run_prepared(&self.prepare(guest)?, sandbox)
    }

    /// As [`run`](Self::run), for a guest linked by
    /// [`prepare`](Self::prepare) on this runner.
    pub fn run_prepared(&self, pre: &Prepared<T>, sandbox: Sandbox<T>) -> Result<i32, RunError> {
        match &pre.0 {
            Linked::Module(pre) => {
                let (wasi, data) = sandbox.p1().map_err(RunError::Sandbox)?;
                self.run_module(pre, P1State::new(wasi, data))
            }
            #[cfg(feature = "p2")]
            Linked::Component(pre) => {
                let (wasi, packfs, data) = sandbox.p2();
                self.run_component(pre, GuestState::new(wasi, packfs, data))
            }
            #[cfg(feature = "p3")]
            Linked::Concurrent(pre) => {
                let (wasi, packfs, data) = sandbox.p2();
                self.run_p3(pre, GuestState::new(wasi, packfs, data))
            }
        }
    }

    /// A store on `engine` for one run, bounded by the limits (which the
    /// builder checked the engine can hold).
    fn store<D>(
        &self,
        engine: &Engine,
        data: D,
        limiter: impl Fn(&mut D) -> &mut Limiter + Send + Sync + 'static,
    ) -> Store<D> {
        let mut store = Store::new(engine, data);
        #[cfg(feature = "p2")]
        store.set_max_component_handles(MAX_RESOURCES);
        limiter(store.data_mut()).max = self.limits.max_memory;
        store.limiter(move |d| limiter(d) as &mut dyn ResourceLimiter);
        if let Some(timeout) = self.limits.timeout {
            // The epoch is the engine's: another run's watchdog bumps it
            // too. Each store traps only once its own time is up, and
            // otherwise waits for the next bump.
            let deadline = Instant::now() + timeout;
            store.set_epoch_deadline(1);
            store.epoch_deadline_callback(move |_| {
                if Instant::now() >= deadline { Err(Trap::Interrupt.into()) } else { Ok(UpdateDeadline::Continue(1)) }
            });
        }
        store
    }

    /// Runs `f` under the timeout, if there is one: a watchdog bumps
    /// `engine`'s epoch when it passes, and the store's deadline callback
    /// interrupts the guest's code. A guest blocked in a host call is cut
    /// short too: every wait a host call makes on this thread ends at the
    /// [`Deadline`], and past it a preview1 call traps instead of
    /// returning ([`crate::p1::add_to_linker`]).
    fn timed<R>(&self, engine: &Engine, f: impl FnOnce() -> R) -> (R, bool) {
        let Some(timeout) = self.limits.timeout else { return (f(), false) };
        let done = Arc::new((Mutex::new(false), Condvar::new()));
        let fired = Arc::new(AtomicBool::new(false));
        let deadline = Deadline::new(Instant::now() + timeout);
        let watchdog = {
            let (done, fired, engine) = (Arc::clone(&done), Arc::clone(&fired), engine.clone());
            let deadline = Arc::clone(&deadline);
            std::thread::spawn(move || {
                let (lock, cvar) = &*done;
                let guard = packfs_core::sync::lock(lock);
                let (guard, wait) = cvar.wait_timeout_while(guard, timeout, |d| !*d).unwrap_or_else(|e| e.into_inner());
                if wait.timed_out() && !*guard {
                    fired.store(true, Ordering::SeqCst);
                    deadline.expire();
                    engine.increment_epoch();
                }
            })
        };
        let r = deadline.scope(f);
        // A guest may stop at the deadline a moment before the watchdog
        // wakes: the time tells, not the watchdog.
        let timed_out = fired.load(Ordering::SeqCst) || deadline.passed();
        *packfs_core::sync::lock(&done.0) = true;
        done.1.notify_all();
        let _ = watchdog.join();
        (r, timed_out)
    }

    /// What a trap means: a limit hit, or the guest's own.
    fn classify(&self, e: wasmtime::Error, timed_out: bool) -> RunError {
        if timed_out && e.downcast_ref::<Trap>() == Some(&Trap::Interrupt) {
            return RunError::Timeout(self.limits.timeout.unwrap_or_default());
        }
        if e.downcast_ref::<MemoryLimitHit>().is_some() {
            return RunError::MemoryLimit(self.limits.max_memory.unwrap_or_default());
        }
        RunError::Trap(e)
    }

    /// Runs a p1 module's `_start`.
    fn run_module(&self, pre: &InstancePre<P1State<T>>, state: P1State<T>) -> Result<i32, RunError> {
        let mut store = self.store(&self.engine, state, |s| &mut s.limiter);
        let (r, timed_out) = self.timed(&self.engine, || {
            let instance = pre.instantiate(&mut store).map_err(RunError::Instantiate)?;
            let start = instance.get_typed_func::<(), ()>(&mut store, "_start").map_err(RunError::Instantiate)?;
            Ok(start.call(&mut store, ()))
        });
        match r? {
            Ok(()) => Ok(0),
            Err(e) => match crate::p1::exit_status(&e) {
                Some(code) => Ok((code & 0xff) as i32),
                None => Err(self.classify(e, timed_out)),
            },
        }
    }

    /// Runs a 0.2 component's `wasi:cli/run`.
    #[cfg(feature = "p2")]
    fn run_component(&self, pre: &CommandPre<GuestState<T>>, state: GuestState<T>) -> Result<i32, RunError> {
        let mut store = self.store(&self.engine, state, |s| &mut s.limiter);
        let (r, timed_out) = self.timed(&self.engine, || {
            let command = pre.instantiate(&mut store).map_err(RunError::Instantiate)?;
            Ok(command.wasi_cli_run().call_run(&mut store))
        });
        self.exit_status(r?, timed_out)
    }

    /// Runs a WASI 0.3 component's `wasi:cli/run` (of 0.3, or else of
    /// 0.2) to completion, with `wasi:filesystem` of both versions served
    /// by PackFS.
    ///
    /// The run is driven on wasmtime-wasi's tokio runtime. Under
    /// [`Limits::timeout`](crate::Limits::timeout) it ends at the deadline wherever the guest is:
    /// in its own code (the epoch), or waiting on a host future (the run's
    /// future is dropped, and with it every stream and task it held).
    #[cfg(feature = "p3")]
    fn run_p3(
        &self,
        pre: &wasmtime::component::InstancePre<GuestState<T>>,
        state: GuestState<T>,
    ) -> Result<i32, RunError> {
        use wasmtime_wasi::p2::bindings::Command as Command2;
        use wasmtime_wasi::p3::bindings::Command as Command3;

        let engine = pre.engine().clone();
        let mut store = self.store(&engine, state, |s| &mut s.limiter);
        let timeout = self.limits.timeout;
        let (r, timed_out) = self.timed(&engine, || {
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

    /// A component's exit status from what its `run` gave.
    #[cfg(feature = "p2")]
    fn exit_status(&self, r: wasmtime::Result<Result<(), ()>>, timed_out: bool) -> Result<i32, RunError> {
        match r {
            Ok(Ok(())) => Ok(0),
            Ok(Err(())) => Ok(1),
            Err(e) => match e.downcast_ref::<I32Exit>() {
                Some(exit) => Ok((exit.0 as u32 & 0xff) as i32),
                None => Err(self.classify(e, timed_out)),
            },
        }
    }
}
