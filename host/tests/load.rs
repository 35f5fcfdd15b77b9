//! Loading guests (p1 modules, components) and running p1 modules with
//! `Runner`; the cache of compiled guests is `guest_cache.rs`'s.

use std::sync::Arc;

use packfs_core::{FileSystem, MemFs};
use packfs_host::Access;
use packfs_host::load::{self as p1, Guest, LoadError};
use packfs_host::{Limits, RunError, Runner, Sandbox};
use wasmtime::Engine;

/// A p1 command that creates `/made` through the preopen and exits 7.
const MODULE: &str = r#"
(module
  (import "wasi_snapshot_preview1" "path_open"
    (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "made")
  (func (export "_start")
    ;; fd 3 is the first preopen; O_CREAT; rights: fd_write
    (drop (call $path_open (i32.const 3) (i32.const 0) (i32.const 16) (i32.const 4)
      (i32.const 1) (i64.const 64) (i64.const 0) (i32.const 0) (i32.const 8)))
    (call $exit (i32.const 7))))
"#;

fn module() -> Vec<u8> {
    wat::parse_str(MODULE).unwrap()
}

fn run(runner: &Runner, wasm: &[u8], sandbox: Sandbox) -> Result<i32, RunError> {
    let guest = runner.load(wasm).unwrap();
    assert!(matches!(guest, Guest::Module(_)), "not a module");
    runner.run(&guest, sandbox)
}

#[test]
fn p1_module_runs_on_packfs_preview1() {
    let runner = Runner::new(&Engine::default()).unwrap();
    let fs = Arc::new(MemFs::new());
    let sandbox = Sandbox::new().preopen("/", fs.clone(), Access::ReadWrite);
    assert_eq!(run(&runner, &module(), sandbox).unwrap(), 7);
    assert!(fs.lookup(fs.root(), "made").is_ok());
    // Without preopens the same guest runs, and makes nothing.
    assert_eq!(run(&runner, &module(), Sandbox::new()).unwrap(), 7);
}

#[test]
fn bad_input_is_a_typed_error() {
    let engine = Engine::default();
    assert!(matches!(p1::load(&engine, b"not wasm", None), Err(LoadError::NotWasm)));
    assert!(matches!(p1::load(&engine, b"\0asm\x01\0\0\0\x99", None), Err(LoadError::Compile(_))));
    // A module importing something nothing provides loads, but cannot run.
    let bad = wat::parse_str(r#"(module (import "env" "nope" (func)) (memory (export "memory") 1))"#).unwrap();
    let runner = Runner::new(&engine).unwrap();
    let guest = runner.load(&bad).unwrap();
    assert!(runner.check(&guest).is_err());
    let no_start = wat::parse_str(r#"(module (memory (export "memory") 1))"#).unwrap();
    assert!(runner.check(&runner.load(&no_start).unwrap()).is_err());
}

/// A guest growing its memory past `max_memory` ends with `MemoryLimit`;
/// one spinning past `timeout` with `Timeout`.
#[test]
fn limits_end_a_run_with_their_own_error() {
    let grow = r#"(module (memory (export "memory") 1)
        (func (export "_start") (loop (br_if 0 (i32.ne (memory.grow (i32.const 1)) (i32.const -1))))))"#;
    let limits = Limits { max_memory: Some(4 << 20), timeout: None };
    let runner = Runner::new(&Engine::default()).unwrap().with_limits(limits);
    let r = run(&runner, &wat::parse_str(grow).unwrap(), Sandbox::new());
    assert!(matches!(r, Err(RunError::MemoryLimit(n)) if n == 4 << 20), "{r:?}");

    let spin = r#"(module (memory (export "memory") 1) (func (export "_start") (loop (br 0))))"#;
    let limits = Limits { max_memory: None, timeout: Some(std::time::Duration::from_millis(200)) };
    let runner = Runner::new(&Engine::new(&Runner::config_for(&limits)).unwrap()).unwrap().with_limits(limits);
    let r = run(&runner, &wat::parse_str(spin).unwrap(), Sandbox::new());
    assert!(matches!(r, Err(RunError::Timeout(_))), "{r:?}");
    // Within both, a guest runs as ever.
    assert_eq!(run(&runner, &module(), Sandbox::new()).unwrap(), 7);
}

/// Every status `proc_exit` can give, modulo 256 as a POSIX exit status;
/// a module that returns from `_start` exits 0.
#[test]
fn proc_exit_status_reaches_the_host() {
    let runner = Runner::new(&Engine::default()).unwrap();
    let run = |wat: &str| run(&runner, &wat::parse_str(wat).unwrap(), Sandbox::new()).unwrap();
    for (code, status) in [(0, 0), (1, 1), (42, 42), (255, 255), (256, 0), (-1, 255)] {
        let wat = format!(
            r#"(module
                 (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
                 (memory (export "memory") 1)
                 (func (export "_start") (call $exit (i32.const {code}))))"#
        );
        assert_eq!(run(&wat), status, "proc_exit({code})");
    }
    let no_exit = r#"(module
        (import "wasi_snapshot_preview1" "sched_yield" (func $y (result i32)))
        (memory (export "memory") 1)
        (func (export "_start") (drop (call $y))))"#;
    assert_eq!(run(no_exit), 0);
}

/// One run's timeout does not end another run on the same `Runner`: the
/// watchdog of the first bumps the engine's epoch while the second is
/// asleep in `poll_oneoff`, and the second, not yet at its own deadline,
/// goes on (it is interrupted only at its own). The times leave each run
/// 2 s for starting and ending, however loaded the machine: the sleeper
/// starts 3 s into the spinner's 6 s, sleeps 4 s, and has 6 s of its own.
#[test]
fn a_timeout_ends_only_its_own_run() {
    let limits = Limits { max_memory: None, timeout: Some(std::time::Duration::from_secs(6)) };
    let runner = Runner::new(&Engine::new(&Runner::config_for(&limits)).unwrap()).unwrap().with_limits(limits);
    let spin =
        wat::parse_str(r#"(module (memory (export "memory") 1) (func (export "_start") (loop (br 0))))"#).unwrap();
    // Sleeps 4 s (a clock subscription), passes a loop header, exits 42.
    let sleeper = wat::parse_str(
        r#"(module
          (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
          (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
          (memory (export "memory") 1)
          (func (export "_start")
            (i64.store8 (i32.const 8) (i64.const 0))
            (i32.store (i32.const 16) (i32.const 1))
            (i64.store (i32.const 24) (i64.const 4000000000))
            (drop (call $poll (i32.const 0) (i32.const 64) (i32.const 1) (i32.const 128)))
            (loop $after)
            (call $exit (i32.const 42))))"#,
    )
    .unwrap();
    let (spun, slept) = std::thread::scope(|s| {
        let spinning = s.spawn(|| run(&runner, &spin, Sandbox::new()));
        std::thread::sleep(std::time::Duration::from_secs(3));
        let slept = run(&runner, &sleeper, Sandbox::new());
        (spinning.join().unwrap(), slept)
    });
    assert!(matches!(spun, Err(RunError::Timeout(_))), "{spun:?}");
    assert!(matches!(slept, Ok(42)), "the other run was cut short: {slept:?}");
}

/// A host function the embedder links reaches the data its sandbox was
/// given, in the run's own store: each run counts into its own counter.
#[test]
fn host_functions_reach_the_sandbox_data() {
    use std::sync::atomic::{AtomicU32, Ordering};
    let mut runner = Runner::new(&Engine::default()).unwrap().with_data::<Arc<AtomicU32>>();
    runner
        .module_linker_mut()
        .func_wrap("host", "bump", |caller: wasmtime::Caller<'_, packfs_host::P1State<Arc<AtomicU32>>>| {
            caller.data().data.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let guest = runner
        .load(
            &wat::parse_str(
                r#"(module (import "host" "bump" (func $bump)) (memory (export "memory") 1)
                     (func (export "_start") (call $bump) (call $bump) (call $bump)))"#,
            )
            .unwrap(),
        )
        .unwrap();
    let (one, two) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(10)));
    assert_eq!(runner.run(&guest, Sandbox::with_data(one.clone())).unwrap(), 0);
    assert_eq!(runner.run(&guest, Sandbox::with_data(two.clone())).unwrap(), 0);
    assert_eq!((one.load(Ordering::SeqCst), two.load(Ordering::SeqCst)), (3, 13));
}
