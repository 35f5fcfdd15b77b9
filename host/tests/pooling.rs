//! A pooled `Runner` (`RunnerBuilder::pool`): many
//! runs of one module over fresh overlays of one pack, one after another
//! and from several threads; the memory limit under the pool; a pool that
//! is full.

use std::sync::Arc;
use std::time::Duration;

use packfs_core::pack::{PackFs, write_pack};
use packfs_core::{FileSystem, MemFs, OpenOptions};
use packfs_host::load::{Guest, Kind};
use packfs_host::{Access, Capture, Stdin};
use packfs_host::{Limits, Pool, RunError, Runner, Sandbox};
use wasmtime::{Instance, Module, Store};

const GREETING: &[u8] = b"hello from the pack\n";

/// A p1 command: copies `/greeting` (from the pack) to stdout, then its
/// stdin to stdout and to a new `/mine`, created exclusively, so that a
/// `/mine` left by another run shows (exit 11).
const GUEST: &str = r#"
(module
  (import "wasi_snapshot_preview1" "path_open"
    (func $open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_read" (func $read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "greeting")
  (data (i32.const 32) "mine")
  ;; Reads up to `len` bytes of `fd` into `buf`; returns how many.
  (func $read_into (param $fd i32) (param $buf i32) (param $len i32) (result i32)
    (i32.store (i32.const 0) (local.get $buf)) (i32.store (i32.const 4) (local.get $len))
    (if (call $read (local.get $fd) (i32.const 0) (i32.const 1) (i32.const 8)) (then (call $exit (i32.const 12))))
    (i32.load (i32.const 8)))
  (func $write_from (param $fd i32) (param $buf i32) (param $len i32)
    (i32.store (i32.const 0) (local.get $buf)) (i32.store (i32.const 4) (local.get $len))
    (if (call $write (local.get $fd) (i32.const 0) (i32.const 1) (i32.const 8)) (then (call $exit (i32.const 13)))))
  (func (export "_start") (local $greeting i32) (local $input i32)
    ;; fd 3 is the preopen; rights: fd_read
    (if (call $open (i32.const 3) (i32.const 0) (i32.const 16) (i32.const 8)
          (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 12))
      (then (call $exit (i32.const 10))))
    (local.set $greeting (call $read_into (i32.load (i32.const 12)) (i32.const 1024) (i32.const 512)))
    (local.set $input (call $read_into (i32.const 0) (i32.const 2048) (i32.const 256)))
    (call $write_from (i32.const 1) (i32.const 1024) (local.get $greeting))
    (call $write_from (i32.const 1) (i32.const 2048) (local.get $input))
    ;; O_CREAT | O_EXCL; rights: fd_write
    (if (call $open (i32.const 3) (i32.const 0) (i32.const 32) (i32.const 4)
          (i32.const 5) (i64.const 64) (i64.const 0) (i32.const 0) (i32.const 12))
      (then (call $exit (i32.const 11))))
    (call $write_from (i32.load (i32.const 12)) (i32.const 2048) (local.get $input))))
"#;

/// A p1 command that grows its memory (1 page) by the pages its name
/// says, and exits 1 if the growth failed.
fn grower(pages: u32) -> Vec<u8> {
    wat::parse_str(format!(
        r#"(module
          (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
          (memory (export "memory") 1)
          (func (export "_start")
            (if (i32.eq (memory.grow (i32.const {pages})) (i32.const -1)) (then (call $exit (i32.const 1))))))"#
    ))
    .unwrap()
}

fn module(runner: &Runner, wasm: &[u8]) -> Guest {
    let guest = runner.load(wasm).unwrap();
    assert_eq!(guest.kind(), Kind::P1, "not a module");
    guest
}

/// The base every run forks: a pack holding `/greeting`.
fn base() -> Arc<dyn FileSystem> {
    let fs = MemFs::new();
    let f = fs.open(fs.root(), "greeting", &OpenOptions::create()).unwrap();
    fs.write_at(f, 0, GREETING).unwrap();
    fs.close(f);
    let mut bytes = Vec::new();
    write_pack(&fs.snapshot(), &mut bytes).unwrap();
    Arc::new(PackFs::open(bytes).unwrap())
}

/// The contents of `/name` in `fs`, if it is there.
fn read(fs: &dyn FileSystem, name: &str) -> Option<Vec<u8>> {
    let ino = fs.open(fs.root(), name, &OpenOptions::read()).ok()?;
    let (mut out, mut buf) = (Vec::new(), [0u8; 512]);
    loop {
        let n = fs.read_at(ino, out.len() as u64, &mut buf).unwrap();
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    fs.close(ino);
    Some(out)
}

/// One run of [`GUEST`] over a fresh overlay of `base`, with `input` on
/// stdin: it prints the greeting and its input, and leaves its input in
/// its own overlay only.
fn run_once(runner: &Runner, module: &Guest, base: &Arc<dyn FileSystem>, input: &str) {
    run_with(base, input, |sandbox| runner.run(module, sandbox).unwrap());
}

/// [`run_once`], through `run`.
fn run_with(base: &Arc<dyn FileSystem>, input: &str, run: impl FnOnce(Sandbox) -> i32) {
    let fork = Arc::new(MemFs::overlay(base.clone()).unwrap());
    let stdout = Capture::new(1 << 10);
    let sandbox = Sandbox::new().stdin(Stdin::Bytes(input.as_bytes().to_vec())).stdout(stdout.clone()).preopen(
        "/",
        fork.clone(),
        Access::ReadWrite,
    );
    assert_eq!(run(sandbox), 0, "run {input}");
    assert_eq!(stdout.contents(), [GREETING, input.as_bytes()].concat());
    assert_eq!(read(&*fork, "mine").as_deref(), Some(input.as_bytes()));
    assert_eq!(read(&**base, "mine"), None);
}

/// A pool small enough to reserve anywhere the tests run.
fn pool(instances: u32) -> Pool {
    Pool { instances, ..Pool::default() }
}

/// A runner of a pool of `instances` under `limits`.
fn pooled(limits: Limits, instances: u32) -> Runner {
    Runner::builder().limits(limits).pool(pool(instances)).build().unwrap()
}

#[test]
fn many_sequential_runs_each_on_its_own_overlay() {
    let limits = Limits { max_memory: Some(16 << 20), ..Limits::default() };
    let runner = Runner::builder().limits(limits).pool(pool(4)).build().unwrap();
    assert!(runner.engine(Kind::P1).get_pooling_config().is_some());
    let (module, base) = (module(&runner, &wat::parse_str(GUEST).unwrap()), base());
    // 200 runs through a pool of 4: each store gives its slot back.
    for i in 0..200 {
        run_once(&runner, &module, &base, &format!("run {i}\n"));
    }
}

#[test]
fn prepared_runs_share_one_link() {
    let runner = pooled(Limits { max_memory: Some(16 << 20), ..Limits::default() }, 4);
    let (guest, base) = (module(&runner, &wat::parse_str(GUEST).unwrap()), base());
    let pre = runner.prepare(&guest).unwrap();
    // 1,000 runs of one prepared module, from 4 threads at once.
    std::thread::scope(|s| {
        for t in 0..4 {
            let (runner, pre, base) = (&runner, &pre, &base);
            s.spawn(move || {
                for i in 0..250 {
                    run_with(base, &format!("thread {t} run {i}\n"), |sandbox| {
                        runner.run_prepared(pre, sandbox).unwrap()
                    });
                }
            });
        }
    });
    // A module whose imports preview1 does not define is refused when it is
    // prepared, not when it runs.
    let stranger = module(&runner, &wat::parse_str(r#"(module (import "host" "f" (func)))"#).unwrap());
    assert!(matches!(runner.prepare(&stranger), Err(RunError::Instantiate(_))));
}

#[test]
fn concurrent_runs_on_one_pooled_engine() {
    // A timeout too: the pooled engine has epoch interruption as well.
    let limits = Limits { max_memory: Some(16 << 20), timeout: Some(Duration::from_secs(60)) };
    let runner = pooled(limits, 8);
    let (module, base) = (module(&runner, &wat::parse_str(GUEST).unwrap()), base());
    std::thread::scope(|s| {
        for t in 0..4 {
            let (runner, module, base) = (&runner, &module, &base);
            s.spawn(move || {
                for i in 0..25 {
                    run_once(runner, module, base, &format!("thread {t} run {i}\n"));
                }
            });
        }
    });
}

#[test]
fn memory_limit_under_the_pool() {
    // Not a whole number of pages: the slot rounds up, the limit holds.
    let max = (2 << 20) + 100;
    let runner = pooled(Limits { max_memory: Some(max), ..Limits::default() }, 2);
    // Up to the limit (1 + 31 pages = 2 MiB) grows.
    let fits = module(&runner, &grower(31));
    assert_eq!(runner.run(&fits, Sandbox::new()).unwrap(), 0);
    // One page more is past it, though it would fit the rounded-up slot.
    let over = module(&runner, &grower(32));
    match runner.run(&over, Sandbox::new()) {
        Err(RunError::MemoryLimit(n)) => assert_eq!(n, max),
        other => panic!("expected MemoryLimit, got {other:?}"),
    }
    // Far past it too, and the slot is free again afterwards.
    let far = module(&runner, &grower(1000));
    assert!(matches!(runner.run(&far, Sandbox::new()), Err(RunError::MemoryLimit(_))));
    assert_eq!(runner.run(&fits, Sandbox::new()).unwrap(), 0);
}

#[test]
fn a_reservation_of_the_limit_alone_holds_it_too() {
    // Less address space per slot, bounds checks in compiled code.
    let limits = Limits { max_memory: Some(2 << 20), ..Limits::default() };
    let mut config = wasmtime::Config::new();
    config.memory_reservation(2 << 20);
    let runner = Runner::builder().config(config).limits(limits).pool(pool(2)).build().unwrap();
    let (guest, base) = (module(&runner, &wat::parse_str(GUEST).unwrap()), base());
    run_once(&runner, &guest, &base, "small\n");
    let over = module(&runner, &grower(32));
    assert!(matches!(runner.run(&over, Sandbox::new()), Err(RunError::MemoryLimit(_))));
}

#[test]
fn a_full_pool_refuses_one_more_sandbox() {
    let limits = Limits { max_memory: Some(1 << 20), ..Limits::default() };
    let runner = Runner::builder().limits(limits).pool(pool(2)).build().unwrap();
    let engine = runner.engine(Kind::P1).clone();
    let guest = module(&runner, &grower(0));
    // Two sandboxes alive at once, holding the pool's two memory slots.
    let held = Module::new(&engine, r#"(module (memory 1))"#).unwrap();
    let mut stores: Vec<Store<()>> = (0..2).map(|_| Store::new(&engine, ())).collect();
    for store in &mut stores {
        Instance::new(&mut *store, &held, &[]).unwrap();
    }
    // A third is refused with the pool's error, not a panic or a trap.
    match runner.run(&guest, Sandbox::new()) {
        Err(e @ RunError::Instantiate(_)) => {
            let message = e.to_string();
            assert!(message.contains("maximum concurrent limit of 2"), "{message}");
        }
        other => panic!("expected Instantiate, got {other:?}"),
    }
    // Once one is gone, the next run has its slot.
    stores.pop();
    assert_eq!(runner.run(&guest, Sandbox::new()).unwrap(), 0);
}

/// A component whose `wasi:cli/run` returns `ok` from a core module with a
/// memory of its own.
#[cfg(feature = "p2")]
const COMPONENT: &str = r#"
(component
  (core module $m
    (memory (export "memory") 1)
    (func (export "run") (result i32) (i32.const 0)))
  (core instance $i (instantiate $m))
  (func $run (result (result)) (canon lift (core func $i "run")))
  (instance $cli (export "run" (func $run)))
  (export "wasi:cli/run@0.2.0" (instance $cli)))
"#;

#[cfg(feature = "p2")]
#[test]
fn components_run_pooled_too() {
    let runner = pooled(Limits { max_memory: Some(1 << 20), ..Limits::default() }, 2);
    let component = runner.load(&wat::parse_str(COMPONENT).unwrap()).unwrap();
    assert_eq!(component.kind(), Kind::P2, "not a component");
    // More runs than slots: each gives its slot back, run and prepared.
    let pre = runner.prepare(&component).unwrap();
    for _ in 0..10 {
        assert_eq!(runner.run(&component, Sandbox::new()).unwrap(), 0);
        assert_eq!(runner.run_prepared(&pre, Sandbox::new()).unwrap(), 0);
    }
}

/// A base configuration that pools gives the engine of p1 modules and 0.2
/// components its pool; the 0.3 engine, made with the runner, takes none
/// (its pool's address space would be reserved twice, and its calls run
/// on fibers a pool reserves no stacks for). Found by review: a runner of
/// such a configuration failed to be made where one engine fit.
#[test]
fn a_pooled_base_configuration_pools_only_the_synchronous_engine() {
    let mut config = wasmtime::Config::new();
    let pooling = wasmtime::PoolingAllocationConfig::default();
    config.allocation_strategy(wasmtime::InstanceAllocationStrategy::Pooling(pooling));
    let runner = Runner::builder().config(config).build().unwrap();
    assert!(runner.engine(Kind::P1).get_pooling_config().is_some());
    assert!(runner.engine(Kind::P3).get_pooling_config().is_none());
}

/// A WASI 0.3 component runs on an engine with no pool: a pooled runner
/// refuses it, whatever it names, where it would have escaped the pool's
/// sandboxes and memories (found by review: one export named like a 0.3
/// interface let a guest fill 24 memories under a pool of one).
#[cfg(feature = "p3")]
#[test]
fn a_pooled_runner_refuses_a_0_3_component() {
    let runner = pooled(Limits { max_memory: Some(16 << 20), ..Limits::default() }, 1);
    let guest = runner.load(&wat::parse_str(r#"(component (import "wasi:x/y@0.3.0" (instance)))"#).unwrap()).unwrap();
    assert_eq!(guest.kind(), Kind::P3);
    let Err(e) = runner.prepare(&guest) else { panic!("a pooled runner took a 0.3 guest") };
    assert!(e.to_string().contains("pooled runner runs no WASI 0.3"), "{e}");
}
