//! Running a command guest with PackFS as its filesystem: the ready-made
//! embedding that `packfs run`, the examples and the guest tests use. One
//! [`Sandbox`] describes what the guest sees, whatever its kind, which
//! [`Runner::run`] finds from the guest itself:
//!
//! - a p1 core module runs its `_start` over PackFS's own preview1
//!   ([`crate::p1`]);
//! - a component runs its `wasi:cli/run` over `wasi:filesystem` 0.2
//!   ([`crate::p2`]) and wasmtime-wasi for the rest;
//! - a WASI 0.3 component (one that imports or exports a `wasi:`
//!   interface of 0.3) runs over `wasi:filesystem` 0.3 ([`crate::p3`])
//!   and 0.2, with wasmtime-wasi's p3 and 0.2 for the rest, driven by
//!   wasmtime's concurrent calls on an engine of [`Runner::config_p3`].
//!
//! Plugin hosts with their own store data call
//! [`p1::add_to_linker`](crate::p1::add_to_linker) or
//! [`p2::add_to_linker_sync`](crate::p2::add_to_linker_sync) directly.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use packfs_core::deadline::Deadline;
use packfs_core::wasi::p1::Wasi;
#[cfg(feature = "p2")]
use wasmtime::component::{Linker, ResourceTable};
use wasmtime::{Engine, InstancePre, ResourceLimiter, Store, Trap, UpdateDeadline};
#[cfg(feature = "p2")]
use wasmtime_wasi::p2::bindings::sync::CommandPre;
#[cfg(feature = "p2")]
use wasmtime_wasi::{I32Exit, WasiCtx, WasiCtxView, WasiView};

#[cfg(feature = "p2")]
use crate::filesystem::{PackFsCtx, PackFsCtxView, PackFsView};
use crate::limits::{Limiter, Limits, MemoryLimitHit, RunError, Unenforceable};
use crate::load::{self, CacheStatus, Guest, GuestCache, LoadError};
use crate::pool::Pool;
use crate::sandbox::Sandbox;

/// WASI 0.3 components: their linker and runs.
#[cfg(feature = "p3")]
mod concurrent;
/// The engine configurations a runner's engine is made with.
mod config;

/// Most resources a component guest holds at once in a [`GuestState`]; a
/// call that would make one more traps (wasmtime's `ResourceTableError::Full`).
/// It is also the store's bound on the guest's component-model handles
/// (wasmtime's `Store::set_max_component_handles`): a WASI 0.3 stream or
/// future is one, and holds host memory that no resource table counts.
#[cfg(feature = "p2")]
pub const MAX_RESOURCES: usize = 1 << 16;

/// A component guest's store data: wasmtime-wasi's context for everything
/// but the filesystem, PackFS's for the filesystem, one resource table,
/// and the embedder's own data.
#[cfg(feature = "p2")]
pub struct GuestState<T = ()> {
    /// Arguments, environment, stdio, clocks, random, sockets. Its own
    /// preopens are never seen: the guest's filesystem is `packfs`'s.
    pub wasi: WasiCtx,
    /// Preopens.
    pub packfs: PackFsCtx,
    /// Every resource the guest holds.
    pub table: ResourceTable,
    /// The embedder's data ([`Sandbox::with_data`]), for its host functions.
    pub data: T,
    limiter: Limiter,
}

#[cfg(feature = "p2")]
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

#[cfg(feature = "p2")]
impl<T: Send> WasiView for GuestState<T> {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

#[cfg(feature = "p2")]
impl<T: Send> PackFsView for GuestState<T> {
    fn packfs(&mut self) -> PackFsCtxView<'_> {
        PackFsCtxView { ctx: &mut self.packfs, table: &mut self.table }
    }
}

/// A p1 module's store data.
pub struct P1State<T = ()> {
    /// The guest's preview1 state.
    pub wasi: Wasi,
    /// The embedder's data ([`Sandbox::with_data`]), for its host functions.
    pub data: T,
    limiter: Limiter,
}

/// A guest linked once for many runs ([`Runner::prepare`]).
pub struct Prepared<T: 'static = ()>(Linked<T>);

enum Linked<T: 'static> {
    Module(InstancePre<P1State<T>>),
    #[cfg(feature = "p2")]
    Component(CommandPre<GuestState<T>>),
    #[cfg(feature = "p3")]
    Concurrent(wasmtime::component::InstancePre<GuestState<T>>),
}

/// Loads and runs command guests (p1 modules and components) against
/// PackFS preopens: each run in a fresh store of its own, described by a
/// [`Sandbox`], whose data `T` the embedder's host functions reach.
///
/// ```no_run
/// use std::sync::Arc;
/// use packfs_core::MemFs;
/// use packfs_host::Runner;
/// use packfs_host::{Access, Sandbox};
///
/// let runner = Runner::new(&wasmtime::Engine::new(&Runner::config())?)?;
/// let guest = runner.load_file("guest.wasm".as_ref())?; // a module or a component
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
/// one after another or many at once, makes its runner with
/// [`Runner::pooled`] (or its engine with [`Runner::config_pooled`]):
/// wasmtime's pooling allocator with copy-on-write memory images. A
/// sandbox then takes a slot that is already mapped, and its data segments
/// are mapped from the module, not copied. Its cost is address space
/// reserved up front: [`Pool::instances`] memory slots of wasmtime's
/// reservation (4 GiB, so compiled code needs no bounds checks, or
/// [`Limits::max_memory`] if larger) plus a 32 MiB guard each, about 4 TiB
/// for the default 1,000 sandboxes. That is reserved, not resident, but
/// making the engine can fail under `ulimit -v` or strict overcommit
/// (`vm.overcommit_memory=2`): there, use fewer instances, or a smaller
/// reservation ([`Runner::config_pooled`]).
///
/// Such a host also links its guest once ([`Runner::prepare`]) and gives
/// each run its own fork of one base tree
/// ([`MemFs::overlay`](packfs_core::MemFs::overlay), O(1)):
///
/// ```no_run
/// use std::sync::Arc;
/// use packfs_core::{FileSystem, MemFs};
/// use packfs_host::{Limits, Pool, Runner};
/// use packfs_host::{Access, Sandbox};
///
/// let limits = Limits { max_memory: Some(64 << 20), ..Limits::default() };
/// let runner = Runner::pooled(limits, &Pool { instances: 100, ..Pool::default() })?;
/// let pre = runner.prepare(&runner.load_file("plugin.wasm".as_ref())?)?;
/// let base: Arc<dyn FileSystem> = Arc::new(MemFs::new());
/// for _ in 0..1000 {
///     let fork = Arc::new(MemFs::overlay(base.clone())?);
///     runner.run_prepared(&pre, Sandbox::new().preopen("/", fork, Access::ReadWrite))?;
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Runner<T: 'static = ()> {
    engine: Engine,
    /// WASI 0.2, made at the first component (or `linker_mut`): a start
    /// that runs a module does not pay for it.
    #[cfg(feature = "p2")]
    linker: std::sync::OnceLock<Linker<GuestState<T>>>,
    p1: wasmtime::Linker<P1State<T>>,
    /// WASI 0.3 and 0.2, made at the first 0.3 component: it needs an
    /// engine with concurrency, and costs the others nothing.
    #[cfg(feature = "p3")]
    p3: std::sync::OnceLock<Result<Linker<GuestState<T>>, String>>,
    cache: Option<GuestCache>,
    limits: Limits,
}

impl Runner<()> {
    /// A runner with an engine of its own made by
    /// [`Runner::config_pooled`], bounded by `limits`. Fails when the
    /// pool's address space cannot be reserved.
    pub fn pooled(limits: Limits, pool: &Pool) -> wasmtime::Result<Runner> {
        let engine = Engine::new(&Runner::config_pooled(&limits, pool))?;
        Ok(Runner::new(&engine)?.with_limits(limits))
    }

    /// A runner with an engine of its own made by [`Runner::config_for`],
    /// bounded by `limits`: p1 modules and 0.2 components. (A 0.3
    /// component needs an engine of [`Runner::config_p3_for`].)
    ///
    /// ```
    /// use std::time::Duration;
    /// use packfs_host::{Limits, Runner};
    ///
    /// let limits = Limits { max_memory: Some(64 << 20), timeout: Some(Duration::from_secs(5)) };
    /// assert_eq!(Runner::limited(limits)?.check_limits(), Ok(()));
    /// # Ok::<(), wasmtime::Error>(())
    /// ```
    pub fn limited(limits: Limits) -> wasmtime::Result<Runner> {
        let engine = Engine::new(&Runner::config_for(&limits))?;
        Ok(Runner::new(&engine)?.with_limits(limits))
    }

    /// A runner on `engine`, driving guests synchronously, without a
    /// compilation cache or limits, its stores holding no data of the
    /// embedder's ([`with_data`](Self::with_data) gives them some). Any
    /// engine serves but one that consumes fuel, which is refused
    /// ([`Unenforceable::Fuel`], inside the error): a runner gives its
    /// stores none, so every guest would trap at once. [`Runner::config`]
    /// makes the fastest engine for it; limits need more of the engine
    /// ([`with_limits`](Self::with_limits)).
    pub fn new(engine: &Engine) -> wasmtime::Result<Runner> {
        if engine.get_consume_fuel() {
            return Err(wasmtime::Error::new(Unenforceable::Fuel));
        }
        Ok(Runner::on(engine.clone(), None, Limits::default()))
    }
}

impl<T: Send + 'static> Runner<T> {
    fn on(engine: Engine, cache: Option<GuestCache>, limits: Limits) -> Runner<T> {
        let mut p1 = wasmtime::Linker::new(&engine);
        // Only a name defined twice fails, and a new linker has none.
        crate::p1::add_to_linker(&mut p1, |s: &mut P1State<T>| &mut s.wasi)
            .expect("preview1 links into an empty linker");
        Runner {
            engine,
            #[cfg(feature = "p2")]
            linker: std::sync::OnceLock::new(),
            p1,
            #[cfg(feature = "p3")]
            p3: std::sync::OnceLock::new(),
            cache,
            limits,
        }
    }

    /// The same runner with stores that hold the embedder's data `U`
    /// ([`Sandbox::with_data`]), which host functions it links reach
    /// ([`P1State::data`], [`GuestState::data`]). Call it before adding
    /// host functions: the linkers start anew.
    ///
    /// ```
    /// use packfs_host::{Runner, wasmtime};
    ///
    /// struct Plugin { calls: u32 }
    /// let mut runner = Runner::new(&wasmtime::Engine::default())?.with_data::<Plugin>();
    /// runner.module_linker_mut().func_wrap("host", "count", |mut c: wasmtime::Caller<'_, packfs_host::P1State<Plugin>>| {
    ///     c.data_mut().data.calls += 1;
    /// })?;
    /// # Ok::<(), wasmtime::Error>(())
    /// ```
    pub fn with_data<U: Send + 'static>(self) -> Runner<U> {
        Runner::on(self.engine, self.cache, self.limits)
    }

    /// Caches compiled guests in `cache`.
    pub fn with_cache(mut self, cache: GuestCache) -> Self {
        self.cache = Some(cache);
        self
    }

    /// Bounds every run's memory and time, on an engine that can hold
    /// them: one made by [`Runner::config_for`] (or
    /// [`config_p3_for`](Self::config_p3_for),
    /// [`config_pooled`](Self::config_pooled)) given the same limits, as
    /// [`Runner::pooled`] does. On another, every run is refused before the
    /// guest starts ([`RunError::Unenforceable`]), never run without the
    /// bound; [`check_limits`](Self::check_limits) tells up front.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Whether this runner's engine can hold its limits: a timeout needs
    /// epoch interruption ([`Unenforceable::TimeoutWithoutEpochs`]), a
    /// memory limit an engine that lets a memory grow that far
    /// ([`Unenforceable::MemoryPastEngine`]). Every run asks this first.
    ///
    /// ```
    /// use std::time::Duration;
    /// use packfs_host::{Limits, Runner, Unenforceable};
    ///
    /// let limits = Limits { timeout: Some(Duration::from_secs(5)), ..Limits::default() };
    /// let plain = Runner::new(&wasmtime::Engine::new(&Runner::config())?)?.with_limits(limits);
    /// assert_eq!(plain.check_limits(), Err(Unenforceable::TimeoutWithoutEpochs));
    /// let timed = Runner::new(&wasmtime::Engine::new(&Runner::config_for(&limits))?)?.with_limits(limits);
    /// assert_eq!(timed.check_limits(), Ok(()));
    /// # Ok::<(), wasmtime::Error>(())
    /// ```
    pub fn check_limits(&self) -> Result<(), Unenforceable> {
        if self.limits.timeout.is_some() && !self.engine.get_epoch_interruption() {
            return Err(Unenforceable::TimeoutWithoutEpochs);
        }
        if let (Some(limit), Some(bound)) = (self.limits.max_memory, memory_bound(&self.engine))
            && limit > bound
        {
            return Err(Unenforceable::MemoryPastEngine { limit, bound });
        }
        Ok(())
    }

    /// The engine guests are compiled for.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The component linker, with all of WASI 0.2 defined; add host
    /// functions of your own, which reach the sandbox's data as
    /// [`GuestState::data`].
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

    /// Compiles a p1 module or a component.
    pub fn load(&self, wasm: &[u8]) -> Result<Guest, LoadError> {
        self.load_with_status(wasm).map(|(g, _)| g)
    }

    /// As [`load`](Self::load), also saying whether the cache served it.
    pub fn load_with_status(&self, wasm: &[u8]) -> Result<(Guest, CacheStatus), LoadError> {
        load::load(&self.engine, wasm, self.cache.as_ref())
    }

    /// Loads the p1 module or component at `path`; with a cache, a warm
    /// load does not read the file ([`load::load_file`]).
    pub fn load_file(&self, path: &std::path::Path) -> Result<Guest, LoadError> {
        self.load_file_with_status(path).map(|(g, _)| g)
    }

    /// As [`load_file`](Self::load_file), also saying whether the cache
    /// served it.
    pub fn load_file_with_status(&self, path: &std::path::Path) -> Result<(Guest, CacheStatus), LoadError> {
        load::load_file(&self.engine, path, self.cache.as_ref())
    }

    /// Checks that `guest` can run here: every import it has is defined,
    /// and it exports `_start` (a module) or `wasi:cli/run` (a component).
    /// The runs fail the same way without it; this tells such a guest from
    /// one that traps.
    pub fn check(&self, guest: &Guest) -> wasmtime::Result<()> {
        match self.prepare(guest) {
            Ok(_) => Ok(()),
            Err(RunError::Instantiate(e)) => Err(e),
            Err(e) => Err(wasmtime::Error::new(e)),
        }
    }

    /// A store for one run, bounded by the limits: refused if the engine
    /// cannot hold them ([`check_limits`](Self::check_limits)).
    fn store<D>(
        &self,
        data: D,
        limiter: impl Fn(&mut D) -> &mut Limiter + Send + Sync + 'static,
    ) -> Result<Store<D>, RunError> {
        self.check_limits().map_err(RunError::Unenforceable)?;
        let mut store = Store::new(&self.engine, data);
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
        } else if self.engine.get_epoch_interruption() {
            // No time limit, on an engine whose code checks the epoch: a
            // new store's deadline is the epoch now, so its guest would
            // trap at its first check, and another runner's watchdog may
            // bump the epoch. It goes on whatever the epoch.
            store.set_epoch_deadline(1);
            store.epoch_deadline_callback(|_| Ok(UpdateDeadline::Continue(1)));
        }
        Ok(store)
    }

    /// Runs `f` under the timeout, if there is one: a watchdog bumps the
    /// engine's epoch when it passes, and the store's deadline callback
    /// interrupts the guest's code. A guest blocked in a host call is cut
    /// short too: every wait a host call makes on this thread ends at the
    /// [`Deadline`], and past it a preview1 call traps instead of
    /// returning ([`crate::p1::add_to_linker`]).
    fn timed<R>(&self, f: impl FnOnce() -> R) -> (R, bool) {
        let Some(timeout) = self.limits.timeout else { return (f(), false) };
        let done = Arc::new((Mutex::new(false), Condvar::new()));
        let fired = Arc::new(AtomicBool::new(false));
        let deadline = Deadline::new(Instant::now() + timeout);
        let watchdog = {
            let (done, fired, engine) = (Arc::clone(&done), Arc::clone(&fired), self.engine.clone());
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

    /// Links `guest` once, for many runs
    /// ([`run_prepared`](Self::run_prepared)): each run then only
    /// instantiates, with no import resolution. A p1 module is linked
    /// against preview1, a component against WASI 0.2, and one that speaks
    /// WASI 0.3 ([`crate::p3::uses_p3`]) against 0.3 and 0.2, on an engine
    /// of [`Runner::config_p3`].
    pub fn prepare(&self, guest: &Guest) -> Result<Prepared<T>, RunError> {
        let linked = match guest {
            Guest::Module(m) => {
                if !matches!(m.get_export("_start"), Some(wasmtime::ExternType::Func(_))) {
                    return Err(RunError::Instantiate(wasmtime::Error::msg("the module exports no `_start` function")));
                }
                Linked::Module(self.p1.instantiate_pre(m).map_err(RunError::Instantiate)?)
            }
            #[cfg(feature = "p3")]
            Guest::Component(c) if crate::p3::uses_p3(&self.engine, c) => {
                Linked::Concurrent(self.link_p3(c).map_err(RunError::Instantiate)?)
            }
            #[cfg(feature = "p2")]
            Guest::Component(c) => Linked::Component(
                self.linker().instantiate_pre(c).and_then(CommandPre::new).map_err(RunError::Instantiate)?,
            ),
            #[cfg(not(feature = "p2"))]
            Guest::Component(_) => {
                return Err(RunError::Instantiate(wasmtime::Error::msg("components need packfs-host's `p2` feature")));
            }
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
                self.run_module(pre, P1State { wasi, data, limiter: Limiter::default() })
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

    /// Runs a p1 module's `_start`.
    fn run_module(&self, pre: &InstancePre<P1State<T>>, state: P1State<T>) -> Result<i32, RunError> {
        let mut store = self.store(state, |s| &mut s.limiter)?;
        let (r, timed_out) = self.timed(|| {
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
        let mut store = self.store(state, |s| &mut s.limiter)?;
        let (r, timed_out) = self.timed(|| {
            let command = pre.instantiate(&mut store).map_err(RunError::Instantiate)?;
            Ok(command.wasi_cli_run().call_run(&mut store))
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

/// How far `engine` lets one linear memory grow, where it bounds that: a
/// pool's memory slots, or a reservation that memories may not move out
/// of. `None` where a memory may grow as far as its type allows.
fn memory_bound(engine: &Engine) -> Option<usize> {
    if let Some(pool) = engine.get_pooling_config() {
        return Some(pool.get_max_memory_size());
    }
    if !engine.get_memory_may_move() {
        return Some(usize::try_from(engine.get_memory_reservation()).unwrap_or(usize::MAX));
    }
    None
}
