//! Loading guests (p1 modules, components) and running p1 modules with
//! `Runner`; the cache of compiled guests is `guest_cache.rs`'s.

use std::path::Path;
use std::sync::Arc;

use packfs_core::{FileSystem, MemFs};
use packfs_host::Access;
use packfs_host::load::{Kind, LoadError};
use packfs_host::{Limits, RunError, Runner, Sandbox};

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
    assert_eq!(guest.kind(), Kind::P1, "not a module");
    runner.run(&guest, sandbox)
}

#[test]
fn p1_module_runs_on_packfs_preview1() {
    let runner = Runner::builder().build().unwrap();
    let fs = Arc::new(MemFs::new());
    let sandbox = Sandbox::new().preopen("/", fs.clone(), Access::ReadWrite);
    assert_eq!(run(&runner, &module(), sandbox).unwrap(), 7);
    assert!(fs.lookup(fs.root(), "made").is_ok());
    // Without preopens the same guest runs, and makes nothing.
    assert_eq!(run(&runner, &module(), Sandbox::new()).unwrap(), 7);
}

#[test]
fn bad_input_is_a_typed_error() {
    let runner = Runner::builder().build().unwrap();
    assert!(matches!(runner.load(b"not wasm"), Err(LoadError::NotWasm)));
    assert!(matches!(runner.load(b"\0asm\x01\0\0\0\x99"), Err(LoadError::Compile(_))));
    assert!(matches!(runner.load(b"\0asm"), Err(LoadError::NotWasm)));
    assert!(matches!(runner.load(Path::new("/nonexistent/guest.wasm")), Err(LoadError::Io(_))));
    // A module importing something nothing provides loads, but cannot run.
    let bad = wat::parse_str(r#"(module (import "env" "nope" (func)) (memory (export "memory") 1))"#).unwrap();
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
    let runner = Runner::builder().limits(limits).build().unwrap();
    let r = run(&runner, &wat::parse_str(grow).unwrap(), Sandbox::new());
    assert!(matches!(r, Err(RunError::MemoryLimit(n)) if n == 4 << 20), "{r:?}");

    let spin = r#"(module (memory (export "memory") 1) (func (export "_start") (loop (br 0))))"#;
    let limits = Limits { max_memory: None, timeout: Some(std::time::Duration::from_millis(200)) };
    let runner = Runner::builder().limits(limits).build().unwrap();
    let r = run(&runner, &wat::parse_str(spin).unwrap(), Sandbox::new());
    assert!(matches!(r, Err(RunError::Timeout(_))), "{r:?}");
    // Within both, a guest runs as ever.
    assert_eq!(run(&runner, &module(), Sandbox::new()).unwrap(), 7);
}

/// Every status `proc_exit` can give, modulo 256 as a POSIX exit status;
/// a module that returns from `_start` exits 0.
#[test]
fn proc_exit_status_reaches_the_host() {
    let runner = Runner::builder().build().unwrap();
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
    let runner = Runner::builder().limits(limits).build().unwrap();
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
    let mut runner = Runner::builder().data::<Arc<AtomicU32>>().build().unwrap();
    runner
        .module_linker_mut()
        .func_wrap("host", "bump", |caller: wasmtime::Caller<'_, packfs_host::p1::P1State<Arc<AtomicU32>>>| {
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

/// The load finds a guest's kind from its bytes, and compiles it for the
/// engine that kind runs on: a component naming a WASI 0.3 interface gets
/// the engine with the component model's concurrency, made then.
#[test]
fn the_load_finds_the_kind_and_its_engine() {
    let runner = Runner::builder().build().unwrap();
    let p1 = runner.load(&module()).unwrap();
    assert_eq!(p1.kind(), Kind::P1);
    let component = |version: &str| {
        wat::parse_str(format!(
            r#"(component (import "wasi:cli/environment@{version}" (instance (export "get-arguments" (func (result (list string)))))))"#
        ))
        .unwrap()
    };
    let p2 = runner.load(&component("0.2.6")).unwrap();
    assert_eq!(p2.kind(), Kind::P2);
    let p3 = runner.load(&component("0.3.0-rc-2025-09-16")).unwrap();
    assert_eq!(p3.kind(), Kind::P3);
    let (main, concurrent) = (runner.engine(Kind::P1), runner.engine(Kind::P3));
    assert!(wasmtime::Engine::same(p1.module().unwrap().engine(), main));
    assert!(wasmtime::Engine::same(p2.component().unwrap().engine(), main));
    assert!(wasmtime::Engine::same(p3.component().unwrap().engine(), concurrent));
    assert!(!wasmtime::Engine::same(main, concurrent));
    // From a file, the same.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p3.wasm");
    std::fs::write(&path, component("0.3.0")).unwrap();
    assert_eq!(runner.load(&path).unwrap().kind(), Kind::P3);
}

/// A guest compiled by one runner cannot run on another (each owns its
/// engines): refused with the reason, not a wasmtime panic or a
/// cross-engine instantiation.
#[test]
fn a_guest_of_another_runner_is_refused() {
    let (one, two) = (Runner::builder().build().unwrap(), Runner::builder().build().unwrap());
    let guest = one.load(&module()).unwrap();
    let Err(e) = two.run(&guest, Sandbox::new()) else { panic!("ran on another runner") };
    assert!(matches!(&e, RunError::Instantiate(_)) && e.to_string().contains("another runner"), "{e}");
    assert!(two.check(&guest).is_err());
    assert_eq!(one.run(&guest, Sandbox::new()).unwrap(), 7);
}
