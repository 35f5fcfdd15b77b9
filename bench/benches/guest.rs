//! One guest workload (`guest-tests/src/bin/bench_workload.rs`: 20,000
//! small files created, read, stat'ed, listed and unlinked; 4,000
//! directories made and removed; a 64 MiB file written and read in 4 KiB,
//! 64 KiB and 1 MiB pieces) run on PackFS — `MemFs`, an overlay over a
//! mapped pack, the mapped pack itself — and on wasmtime-wasi over real
//! directories (`/tmp` and `/dev/shm`), for wasm32-wasip1, wasm32-wasip2
//! and WASI 0.3, in one process.
//!
//! ```sh
//! cargo bench -p packfs-bench --bench guest
//! ```
//!
//! Every phase is timed inside the guest (`std::time::Instant`, the WASI
//! monotonic clock), so compiling, instantiating and the host's set-up are
//! outside the figures; guests are compiled once. Each configuration runs
//! `GUEST_BENCH_RUNS` times (default 3), interleaved with the others so that
//! a burst of noise hits all alike; the tables show medians, with the spread
//! (half the max-min range, relative to the median). Ratios are the
//! baseline's median over the backend's — above 1 means PackFS is faster —
//! and, in brackets, the ratio of the fastest runs (noise only ever adds
//! time, so on a busy machine the minimums are a useful cross-check).
//!
//! p1 guests (core modules) run on PackFS's own preview1. Their baselines
//! are wasmtime's native preview1 on a real directory (`wasi-p1-*`: what
//! `wasmtime run` does with a core module), and, for comparison, the route
//! `packfs run` took before: the module wrapped into a component by
//! wasmtime's preview1 adapter, on PackFS's `wasi:filesystem` over a
//! `MemFs` (`adapter`). p2 guests (components) run on PackFS's
//! `wasi:filesystem` against wasmtime-wasi's (`wasi-*`). p3 guests (the
//! same workload through `wasi:filesystem@0.3.0`:
//! `guest-tests/p3/src/bin/p3_bench_workload.rs`) run as `packfs run` runs
//! them, on a [`Runner`] ([`Runner::run_prepared`]), against
//! wasmtime-wasi's own p3 (`wasi-*`, on the runner's engine for them), as
//! `wasmtime run` links it.
//!
//! The pack is read-only: on it, and on the overlay's lower layer, the
//! guest runs only its read phases (`ro`) over a pack holding the same files
//! the other runs create. Those are compared with the baselines' read phases,
//! which read back the files they just wrote (hot in the page cache).
//!
//! The baselines run with `allow_blocking_current_thread(true)`, as a
//! synchronous embedding should (file I/O on the calling thread, not
//! through tokio's `spawn_blocking`): the stronger baseline. wasmtime-wasi's
//! p3 honours the setting as its p2 does: its every `run_blocking` call
//! (open, stat, unlink, mkdir…), its `read-via-stream` producer and
//! `write-via-stream` consumer (straight between the file and the guest's
//! buffer, where `spawn_blocking` moves at most 8 KiB a task through a
//! copy) and its `read-directory` are then done on the calling thread,
//! many times faster so (on `/dev/shm`, 2.1 µs a `stat-at` against 36, 1 MiB
//! reads at 2,500 MiB/s against 180; `GUEST_BENCH_WASI_SPAWN_BLOCKING`
//! shows the other).
//!
//! Environment:
//! - `GUEST_BENCH_N`: small files (default 20000);
//! - `GUEST_BENCH_RUNS`: runs per configuration (default 3; under
//!   `cargo test`, a smoke run: 50 files, once);
//! - `GUEST_BENCH_ONLY`: comma-separated substrings of `target/backend` to
//!   keep, e.g. `p1/mem,p1/wasi-p1-shm`;
//! - `GUEST_BENCH_DEFAULT_ENGINE`: `Engine::default()` (with the component
//!   model's concurrency support) for p1 and p2, instead of the engine a
//!   `Runner` makes for them, which `packfs run` uses;
//! - `GUEST_BENCH_WASI_SPAWN_BLOCKING`: wasmtime-wasi's default file I/O
//!   through `spawn_blocking` instead;
//! - `GUEST_BENCH_PHASES`: the guest's PHASES for the read-write
//!   configurations instead of `all` (a profiling aid, e.g.
//!   `create,stat,stat,stat`);
//! - `GUEST_BENCH_OUT`: also write the tables to this file;
//! - `GUEST_BENCH_RAW`: also write every run's time of every phase to this
//!   file, one `target backend phase nanoseconds ops` line each (to
//!   compare two builds run alternately).

use packfs_test_support as support;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use packfs_bench::results::Results;
use packfs_core::pack::write_pack;
use packfs_core::{FileSystem, MemFs, OpenOptions};
use packfs_host::filesystem::PackFsCtx;
use packfs_host::load::GuestCache;
use packfs_host::p1::{HostPlatform, Wasi};
use packfs_host::p2::GuestState;
use packfs_host::{Access, Capture, Prepared, Runner, Sandbox};
use packfs_os::mmap::open_pack;
use support::oracle;
use wasmtime::component::{Component, Linker};
use wasmtime::{Engine, Module, Store};
use wasmtime_wasi::p2::bindings::sync::CommandPre;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

const SMALL: usize = 128;
const CHUNK: usize = 64 << 10;
const BIG: usize = 64 << 20;
const PHASES: [&str; 13] = [
    "create", "read", "stat", "readdir", "unlink", "mkdir", "rmdir", "write4k", "read4k", "write64k", "read64k",
    "write1m", "read1m",
];
/// Metadata phases (per-operation figures); the rest are bulk (MiB/s).
const METADATA: [&str; 7] = ["create", "read", "stat", "readdir", "unlink", "mkdir", "rmdir"];

/// The target over wasmtime's native preview1 on tmpfs: create 3x, the
/// other metadata phases 5x, every bulk phase 1.5x.
fn target_of(phase: &str) -> f64 {
    match phase {
        "create" => 3.0,
        p if METADATA.contains(&p) => 5.0,
        _ => 1.5,
    }
}

/// The p3 target over wasmtime-wasi's p3 on tmpfs (issue 25): metadata
/// phases 3x, bulk 1x.
fn p3_target_of(phase: &str) -> f64 {
    if METADATA.contains(&phase) { 3.0 } else { 1.0 }
}

/// A phase's target over a baseline.
type Goal = fn(&str) -> f64;

/// The targets over `base`, if it has some: said in a table's heading, and
/// each phase's.
fn goals(target: Target, base: Backend) -> Option<(&'static str, Goal)> {
    match (target, base) {
        (Target::P1, WasiP1Shm) => Some(("create 3x, other metadata 5x, bulk 1.5x", target_of)),
        (Target::P3, WasiShm) => Some(("metadata 3x, bulk 1x", p3_target_of)),
        _ => None,
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Target {
    P1,
    P2,
    /// WASI 0.3: a component for wasm32-wasip2 importing
    /// `wasi:filesystem@0.3.0`.
    P3,
}

impl Target {
    fn name(self) -> &'static str {
        match self {
            Target::P1 => "p1",
            Target::P2 => "p2",
            Target::P3 => "p3",
        }
    }
    /// The built guest.
    fn guest(self) -> std::path::PathBuf {
        match self {
            Target::P1 => support::rust_guest("bench_workload", "wasm32-wasip1"),
            Target::P2 => support::rust_guest("bench_workload", "wasm32-wasip2"),
            Target::P3 => support::p3_guest("p3_bench_workload"),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Backend {
    /// A fresh `MemFs` at `/`.
    Mem,
    /// A fresh overlay over the mapped pack at `/`; the workload runs in a
    /// new directory (`/new`), so every file it makes is the upper layer's.
    Overlay,
    /// The same overlay, the read phases on the pack's files (`/work`).
    OverlayLower,
    /// The mapped pack at `/`, read-only: the read phases.
    Pack,
    /// p1 only: the module through wasmtime's preview1 adapter, on
    /// PackFS's `wasi:filesystem` over a fresh `MemFs` (the old route).
    Adapter,
    /// wasmtime-wasi, a fresh directory on `/tmp`. p2 and p3.
    WasiTmp,
    /// wasmtime-wasi, a fresh directory on `/dev/shm` (tmpfs).
    WasiShm,
    /// wasmtime-wasi's native preview1 (no adapter), on `/tmp`. p1 only.
    WasiP1Tmp,
    /// As above, on `/dev/shm`.
    WasiP1Shm,
}

use Backend::*;

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Mem => "mem",
            Overlay => "overlay",
            OverlayLower => "overlay-lower",
            Pack => "pack",
            Adapter => "adapter",
            WasiTmp => "wasi-tmp",
            WasiShm => "wasi-shm",
            WasiP1Tmp => "wasi-p1-tmp",
            WasiP1Shm => "wasi-p1-shm",
        }
    }
    /// The guest's PHASES and ROOT arguments.
    fn workload(self) -> (&'static str, &'static str) {
        match self {
            Overlay => ("all", "/new"),
            OverlayLower | Pack => ("ro", "/work"),
            _ => ("all", "/work"),
        }
    }
    fn uses_pack(self) -> bool {
        matches!(self, Overlay | OverlayLower | Pack)
    }
    fn is_baseline(self) -> bool {
        matches!(self, Adapter | WasiTmp | WasiShm | WasiP1Tmp | WasiP1Shm)
    }
    /// Whether wasmtime-wasi runs it on a real directory.
    fn on_host(self) -> bool {
        matches!(self, WasiTmp | WasiShm | WasiP1Tmp | WasiP1Shm)
    }
    fn host_dir(self) -> &'static str {
        match self {
            WasiShm | WasiP1Shm => "/dev/shm",
            _ => "/tmp",
        }
    }
}

const PACKFS: [Backend; 4] = [Mem, Overlay, OverlayLower, Pack];

fn backends(target: Target) -> Vec<Backend> {
    let mut v = vec![Mem, Overlay, OverlayLower, Pack];
    match target {
        Target::P1 => v.extend([WasiP1Shm, WasiP1Tmp, Adapter]),
        Target::P2 | Target::P3 => v.extend([WasiShm, WasiTmp]),
    }
    v
}

/// Whether a configuration runs: `only` empty or naming it.
fn selected(only: &[String], t: Target, b: Backend) -> bool {
    let name = format!("{}/{}", t.name(), b.name());
    only.is_empty() || only.iter().any(|o| name.contains(o.as_str()))
}

fn baselines(target: Target) -> Vec<Backend> {
    backends(target).into_iter().filter(|b| b.is_baseline()).collect()
}

/// A p1 module's store data on PackFS's own preview1.
struct Own {
    wasi: Wasi,
}

/// A guest compiled and pre-instantiated for each way of running it.
enum Guest {
    P1 {
        /// The module on PackFS's own preview1.
        own: wasmtime::InstancePre<Own>,
        /// The module on wasmtime-wasi's native preview1.
        native: oracle::P1,
        /// The module through wasmtime's preview1 adapter, on PackFS's
        /// `wasi:filesystem`.
        adapter: CommandPre<GuestState>,
    },
    P2 {
        packfs: CommandPre<GuestState>,
        oracle: oracle::P2,
    },
    P3 {
        /// A runner as `packfs run`'s, and the guest linked on it.
        runner: Arc<Runner>,
        packfs: Prepared,
        oracle: oracle::P3,
    },
}

/// The target's guest, compiled on `engine` (p1 and p2) or on `runner`'s
/// engine for it (p3, with the component model's concurrency).
fn load(runner: &Arc<Runner>, engine: &Engine, target: Target) -> Guest {
    let path = target.guest();
    let wasm = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let component = || Component::new(engine, &wasm).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let on_packfs = |component: &Component| {
        let mut linker = Linker::<GuestState>::new(engine);
        packfs_host::p2::add_to_linker_sync(&mut linker).unwrap();
        CommandPre::new(linker.instantiate_pre(component).unwrap()).unwrap()
    };
    match target {
        Target::P1 => {
            let module = Module::new(engine, &wasm).unwrap();
            let mut linker = wasmtime::Linker::<Own>::new(engine);
            packfs_host::p1::add_to_linker(&mut linker, |s| &mut s.wasi).unwrap();
            Guest::P1 {
                own: linker.instantiate_pre(&module).unwrap(),
                native: oracle::P1::new(engine, &module).unwrap(),
                adapter: on_packfs(&adapt(engine, &wasm)),
            }
        }
        Target::P2 => {
            let component = component();
            Guest::P2 { packfs: on_packfs(&component), oracle: oracle::P2::new(engine, &component).unwrap() }
        }
        Target::P3 => {
            let guest = runner.load(&wasm).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let component = guest.component().expect("a component");
            let packfs = runner.prepare(&guest).unwrap();
            let oracle = oracle::P3::new(component.engine(), component).unwrap();
            Guest::P3 { runner: Arc::clone(runner), packfs, oracle }
        }
    }
}

/// A p1 module as a component through wasmtime's preview1 adapter: the
/// route `packfs run` took before PackFS served preview1 itself.
fn adapt(engine: &Engine, module: &[u8]) -> Component {
    use wasi_preview1_component_adapter_provider::{
        WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME, WASI_SNAPSHOT_PREVIEW1_COMMAND_ADAPTER,
    };
    let bytes = wit_component::ComponentEncoder::default()
        .module(module)
        .and_then(|e| e.adapter(WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME, WASI_SNAPSHOT_PREVIEW1_COMMAND_ADAPTER))
        .and_then(|e| e.validate(true).encode())
        .expect("adapting the module");
    Component::new(engine, bytes).expect("compiling the adapted component")
}

fn small(i: usize) -> [u8; SMALL] {
    let mut buf = [b'.'; SMALL];
    buf[..5].copy_from_slice(format!("{i:05}").as_bytes());
    buf
}

/// The tree the `create` and `write` phases make, under `/work`, as a pack
/// in `dir`, mapped.
fn build_pack(dir: &Path, n: usize) -> Arc<dyn FileSystem> {
    let fs = MemFs::new();
    let work = fs.mkdir(fs.root(), "work", 0o755).unwrap();
    let d = fs.mkdir(work, "d", 0o755).unwrap();
    for i in 0..n {
        let ino = fs.open(d, &format!("f{i:05}"), &OpenOptions::create()).unwrap();
        fs.write_at(ino, 0, &small(i)).unwrap();
        fs.close(ino);
    }
    let big = fs.open(work, "big", &OpenOptions::create()).unwrap();
    let mut chunk = vec![0xa5u8; CHUNK];
    for k in 0..BIG / CHUNK {
        chunk[..8].copy_from_slice(&(k as u64).to_le_bytes());
        fs.write_at(big, (k * CHUNK) as u64, &chunk).unwrap();
    }
    fs.close(big);
    let path = dir.join("work.pack");
    write_pack(&fs.snapshot(), std::fs::File::create(&path).unwrap()).unwrap();
    Arc::new(open_pack(&path).unwrap())
}

/// One phase as the guest reported it.
type Phases = BTreeMap<String, (u64, u64)>;

/// How a run is set up, beyond the backend.
struct Setup<'a> {
    engine: &'a Engine,
    /// The mapped pack of the prepared tree.
    pack: &'a Arc<dyn FileSystem>,
    /// wasmtime-wasi's `allow_blocking_current_thread`.
    wasi_blocking: bool,
}

/// Runs the guest once (`phases`: its PHASES argument, or the backend's
/// workload); returns its phases.
fn run(guest: &Guest, backend: Backend, setup: &Setup, n: usize, phases: Option<&str>) -> Phases {
    let (engine, pack) = (setup.engine, setup.pack);
    let (workload, root) = backend.workload();
    let custom = std::env::var("GUEST_BENCH_PHASES").ok().filter(|_| workload == "all" && phases.is_none());
    let phases = phases.or(custom.as_deref()).unwrap_or(workload);
    let args = ["bench_workload".to_string(), phases.to_string(), n.to_string(), root.to_string()];
    let (out, err) = (MemoryOutputPipe::new(1 << 16), MemoryOutputPipe::new(1 << 16));
    let mut b = WasiCtxBuilder::new();
    b.stdout(out.clone()).stderr(err.clone()).args(&args);
    // Sync embeddings (`wasmtime run` among them) let wasmtime-wasi do its
    // file I/O on the calling thread rather than through tokio's
    // spawn_blocking, and its p3 honours the setting too; PackFS's
    // filesystem ignores it.
    b.allow_blocking_current_thread(setup.wasi_blocking);
    // Kept until the run ends.
    let host_dir = backend.on_host().then(|| tempfile::tempdir_in(backend.host_dir()).unwrap());
    if let Some(dir) = &host_dir {
        b.preopened_dir(dir.path(), "/", FsPerms::ReadWrite).unwrap();
    }
    let fs = || -> Arc<dyn FileSystem> {
        match backend {
            Mem | Adapter => Arc::new(MemFs::new()),
            Pack => pack.clone(),
            _ => Arc::new(MemFs::overlay(pack.clone()).unwrap()),
        }
    };
    let packfs_ctx = || {
        let mut ctx = PackFsCtx::builder();
        match backend {
            Pack => ctx.preopen("/", fs(), Access::ReadOnly),
            _ => ctx.preopen("/", fs(), Access::ReadWrite),
        };
        ctx.build()
    };
    let trap = |e: &dyn std::fmt::Debug| -> i32 { panic!("trap: {e:?}") };
    let status = match (guest, backend) {
        (Guest::P1 { own, .. }, Mem | Overlay | OverlayLower | Pack) => {
            let (out, err) = (Capture::new(1 << 16), Capture::new(1 << 16));
            let access = if backend == Pack { Access::ReadOnly } else { Access::ReadWrite };
            let wasi = Wasi::builder(Box::new(HostPlatform::default()))
                .args(&args)
                .stdout(Box::new(out.clone()))
                .stderr(Box::new(err.clone()))
                .preopen("/", fs(), access)
                .build()
                .unwrap();
            let mut store = Store::new(engine, Own { wasi });
            let instance = own.instantiate(&mut store).unwrap();
            let start = instance.get_typed_func::<(), ()>(&mut store, "_start").unwrap();
            let status = match start.call(&mut store, ()) {
                Ok(()) => 0,
                Err(e) => packfs_host::p1::exit_status(&e).map_or_else(|| trap(&e), |s| s as i32),
            };
            let (stdout, stderr) = (text(&out.contents()), text(&err.contents()));
            return phases_of(backend, status, &stdout, &stderr);
        }
        (Guest::P1 { adapter: command, .. }, Adapter)
        | (Guest::P2 { packfs: command, .. }, Mem | Overlay | OverlayLower | Pack) => {
            let mut store = Store::new(engine, GuestState::new(b.build(), packfs_ctx(), ()));
            let command = command.instantiate(&mut store).unwrap();
            oracle::run_status(command.wasi_cli_run().call_run(&mut store)).unwrap_or_else(|e| trap(&e))
        }
        (Guest::P3 { runner, packfs, .. }, Mem | Overlay | OverlayLower | Pack) => {
            // As `packfs run` runs it: the runner's own stores and stdio.
            let (out, err) = (Capture::new(1 << 16), Capture::new(1 << 16));
            let access = if backend == Pack { Access::ReadOnly } else { Access::ReadWrite };
            let sandbox = Sandbox::new().args(&args).stdout(out.clone()).stderr(err.clone()).preopen("/", fs(), access);
            let status = runner.run_prepared(packfs, sandbox).unwrap_or_else(|e| trap(&e));
            return phases_of(backend, status, &text(&out.contents()), &text(&err.contents()));
        }
        (Guest::P1 { native, .. }, WasiP1Tmp | WasiP1Shm) => native.run(b.build_p1()).unwrap_or_else(|e| trap(&e)),
        (Guest::P2 { oracle, .. }, WasiTmp | WasiShm) => oracle.run(b.build()).unwrap_or_else(|e| trap(&e)),
        (Guest::P3 { oracle, .. }, WasiTmp | WasiShm) => oracle.run(b.build()).unwrap_or_else(|e| trap(&e)),
        (_, backend) => unreachable!("{} is no backend of this target", backend.name()),
    };
    phases_of(backend, status, &text(&out.contents()), &text(&err.contents()))
}

/// The phases a guest run printed, after checking it finished.
fn phases_of(backend: Backend, status: i32, stdout: &str, stderr: &str) -> Phases {
    assert!(status == 0 && stdout.ends_with("done\n"), "{} exited {status}\n{stdout}{stderr}", backend.name());
    stdout
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 4 && f[0] == "phase")
                .then(|| (f[1].to_string(), (f[2].parse().unwrap(), f[3].parse().unwrap())))
        })
        .collect()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn median(v: &mut [u64]) -> f64 {
    v.sort_unstable();
    let m = v.len() / 2;
    if v.len() % 2 == 1 { v[m] as f64 } else { (v[m - 1] + v[m]) as f64 / 2.0 }
}

/// Median time, relative spread, and operation count of each phase.
struct Stat {
    median: f64,
    min: f64,
    spread: f64,
    ops: u64,
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn main() {
    // `cargo test --all-targets` runs this binary without `--bench`: a
    // smoke run (every backend, a few files, once) keeps it fast there.
    let bench = std::env::args().any(|a| a == "--bench");
    let (default_n, default_runs) = if bench { (20_000, 3) } else { (50, 1) };
    let n: usize = std::env::var("GUEST_BENCH_N").ok().and_then(|v| v.parse().ok()).unwrap_or(default_n);
    let runs: usize = std::env::var("GUEST_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(default_runs);
    let only: Vec<String> = std::env::var("GUEST_BENCH_ONLY")
        .map(|v| v.split(',').filter(|s| !s.is_empty()).map(String::from).collect())
        .unwrap_or_default();
    let keep = |t: Target, b: Backend| selected(&only, t, b);
    let started = Instant::now();
    let load_before = loadavg();

    let targets: Vec<Target> = [Target::P1, Target::P2, Target::P3]
        .into_iter()
        .filter(|&t| backends(t).into_iter().any(|b| keep(t, b)))
        .collect();
    // Built by cargo before compiling them is timed.
    for target in &targets {
        target.guest();
    }
    // The same engine for PackFS and the baselines; p3's has the component
    // model's concurrency, as `packfs run` makes it for a p3 guest.
    let default_engine = std::env::var_os("GUEST_BENCH_DEFAULT_ENGINE").is_some();
    let cache = GuestCache::new(support::guest_cache_dir()).expect("guest cache dir");
    let runner = Arc::new(Runner::builder().cache(cache).build().unwrap());
    let engine = if default_engine { Engine::default() } else { runner.engine(packfs_host::load::Kind::P1).clone() };
    let t = Instant::now();
    let guests: Vec<Guest> = targets.iter().map(|&t| load(&runner, &engine, t)).collect();
    eprintln!("guests compiled in {:.1} s", t.elapsed().as_secs_f64());
    let pack_dir = tempfile::tempdir_in("/tmp").unwrap();
    let needs_pack = targets.iter().any(|&t| backends(t).into_iter().any(|b| keep(t, b) && b.uses_pack()));
    let pack: Arc<dyn FileSystem> = if needs_pack {
        let t = Instant::now();
        let pack = build_pack(pack_dir.path(), n);
        eprintln!("pack of {n} files + 64 MiB built and mapped in {:.1} s", t.elapsed().as_secs_f64());
        pack
    } else {
        Arc::new(MemFs::new())
    };
    let wasi_blocking = std::env::var_os("GUEST_BENCH_WASI_SPAWN_BLOCKING").is_none();
    let setup = Setup { engine: &engine, pack: &pack, wasi_blocking };

    // Warm-up, untimed: each configuration's small-file phases on a few files
    // (first-touch page faults, lazily initialised state, the pack's pages).
    let warm = n.min(500);
    for (&target, guest) in targets.iter().zip(&guests) {
        for backend in backends(target).into_iter().filter(|&b| keep(target, b)) {
            let phases =
                if backend.workload().0 == "ro" { "read,stat" } else { "create,read,stat,readdir,unlink,mkdir,rmdir" };
            run(guest, backend, &setup, warm, Some(phases));
        }
    }

    let mut samples: BTreeMap<(Target, Backend, String), (Vec<u64>, u64)> = BTreeMap::new();
    for rep in 0..runs {
        for (&target, guest) in targets.iter().zip(&guests) {
            for backend in backends(target).into_iter().filter(|&b| keep(target, b)) {
                let t = Instant::now();
                let phases = run(guest, backend, &setup, n, None);
                eprintln!(
                    "run {}/{runs} {}/{}: {:.2} s",
                    rep + 1,
                    target.name(),
                    backend.name(),
                    t.elapsed().as_secs_f64()
                );
                for (phase, (ns, ops)) in phases {
                    let e = samples.entry((target, backend, phase)).or_insert_with(|| (Vec::new(), ops));
                    e.0.push(ns);
                }
            }
        }
    }
    if let Ok(path) = std::env::var("GUEST_BENCH_RAW") {
        let mut raw = String::new();
        for ((t, b, phase), (v, ops)) in &samples {
            for ns in v {
                let _ = writeln!(raw, "{} {} {phase} {ns} {ops}", t.name(), b.name());
            }
        }
        std::fs::write(&path, raw).unwrap_or_else(|e| panic!("{path}: {e}"));
    }
    let stats: BTreeMap<(Target, Backend, String), Stat> = samples
        .into_iter()
        .map(|(k, (mut v, ops))| {
            let (lo, hi) = (*v.iter().min().unwrap() as f64, *v.iter().max().unwrap() as f64);
            let median = median(&mut v);
            (k, Stat { median, min: lo, spread: (hi - lo) / 2.0 / median, ops })
        })
        .collect();

    let mut md = String::new();
    let _ = writeln!(
        md,
        "N = {n} small files of {SMALL} B, {} directories; big file {} MiB; {runs} runs per configuration, medians.",
        n / 5,
        BIG >> 20,
    );
    let _ = writeln!(
        md,
        "Load average before / after: {load_before} / {}; whole run {:.0} s.",
        loadavg(),
        started.elapsed().as_secs_f64()
    );
    let _ = writeln!(
        md,
        "Engine: {}; wasmtime-wasi allow_blocking_current_thread({wasi_blocking}).\n",
        if default_engine {
            "Engine::default()"
        } else {
            "a Runner's (concurrency_support(false) for p1 and p2, true for p3, as packfs run)"
        }
    );
    for &target in &targets {
        let cols: Vec<Backend> = backends(target).into_iter().filter(|&b| keep(target, b)).collect();
        if cols.is_empty() {
            continue;
        }
        let _ = writeln!(md, "### {}: time per phase (median, ± half the range)\n", target.name());
        let _ = writeln!(md, "| phase | {} |", cols.iter().map(|b| b.name()).collect::<Vec<_>>().join(" | "));
        let _ = writeln!(md, "|---|{}", "---:|".repeat(cols.len()));
        for phase in PHASES {
            let mut row = format!("| {phase} |");
            for &b in &cols {
                match stats.get(&(target, b, phase.to_string())) {
                    Some(s) => {
                        let per = if METADATA.contains(&phase) {
                            format!("{:.2} µs/op", s.median / s.ops as f64 / 1e3)
                        } else {
                            format!("{:.0} MiB/s", (BIG >> 20) as f64 / (s.median / 1e9))
                        };
                        let _ = write!(row, " {:.1} ms ({per}) ±{:.0}% |", s.median / 1e6, s.spread * 100.0);
                    }
                    None => row.push_str(" — |"),
                }
            }
            let _ = writeln!(md, "{row}");
        }
        let _ = writeln!(md);
        let packfs: Vec<Backend> = PACKFS.into_iter().filter(|&b| keep(target, b)).collect();
        for base in baselines(target).into_iter().filter(|&b| keep(target, b) && !packfs.is_empty()) {
            let goals = goals(target, base);
            let _ = writeln!(
                md,
                "### {}: speed-up over {} (its median / PackFS's [fastest runs']{})\n",
                target.name(),
                base.name(),
                goals.map(|(said, _)| format!("; target {said}")).unwrap_or_default()
            );
            let _ = writeln!(md, "| phase | {} |", packfs.iter().map(|b| b.name()).collect::<Vec<_>>().join(" | "));
            let _ = writeln!(md, "|---|{}", "---:|".repeat(packfs.len()));
            for phase in PHASES {
                let goal = goals.map(|(_, of)| of(phase));
                let mut row = format!("| {phase} |");
                for &b in &packfs {
                    let key = |b| (target, b, phase.to_string());
                    match (stats.get(&key(base)), stats.get(&key(b))) {
                        (Some(x), Some(y)) => {
                            let (r, rmin) = (x.median / y.median, x.min / y.min);
                            let verdict = match goal {
                                Some(g) if r >= g => " met",
                                Some(_) => " **not met**",
                                None => "",
                            };
                            let _ = write!(row, " {r:.2}x [{rmin:.2}x]{verdict} |");
                        }
                        _ => row.push_str(" — |"),
                    }
                }
                let _ = writeln!(md, "{row}");
            }
            let _ = writeln!(md);
        }
    }
    // wasmtime-wasi 48's preview2 sends every write of a file's output
    // stream through tokio's `spawn_blocking`, whatever
    // `allow_blocking_current_thread` says; its preview1 runs the same
    // filesystem calls inline. PackFS's p2 against the peer's preview1 is
    // what PackFS itself gains without that cost.
    if stats.keys().any(|k| k.0 == Target::P2 && k.1 == Mem) && stats.keys().any(|k| k.1 == WasiP1Shm) {
        let _ = writeln!(
            md,
            "### p2 on `mem` against wasmtime-wasi's preview1 on `/dev/shm` (its calls inline: no `spawn_blocking` per write), the same workload\n"
        );
        let _ = writeln!(md, "| phase | its median / PackFS's [fastest runs'] |\n|---|---:|");
        for phase in PHASES {
            let key = |t, b| (t, b, phase.to_string());
            if let (Some(x), Some(y)) = (stats.get(&key(Target::P1, WasiP1Shm)), stats.get(&key(Target::P2, Mem))) {
                let _ = writeln!(md, "| {phase} | {:.2}x [{:.2}x] |", x.median / y.median, x.min / y.min);
            }
        }
        let _ = writeln!(md);
    }
    print!("{md}");
    if let Ok(path) = std::env::var("GUEST_BENCH_OUT") {
        std::fs::write(&path, &md).unwrap_or_else(|e| panic!("{path}: {e}"));
    }
    // Only the whole default run is the results file's: the others (a
    // subset, another N, bench/readdir-scaling.sh) are the caller's.
    let defaults = ["GUEST_BENCH_N", "GUEST_BENCH_RUNS", "GUEST_BENCH_ONLY", "GUEST_BENCH_PHASES"];
    if packfs_bench::results::whole_run() && defaults.iter().all(|v| std::env::var_os(v).is_none()) {
        let mut results = Results::new("guest", "cargo bench -p packfs-bench --bench guest", GUEST_CODE);
        results.push(&md);
        results.write().unwrap_or_else(|e| panic!("writing bench/guest-results.md: {e}"));
    }
}

/// What the guest benchmark measures (bench/readdir-scaling.sh's too).
const GUEST_CODE: &[&str] =
    &["bench/benches/guest.rs", "guest-tests/src/bin/bench_workload.rs", "core/src", "host/src", "Cargo.lock"];
