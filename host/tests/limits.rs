//! A limit a `Runner` cannot enforce is refused, never accepted and left
//! undone (issue 38, item 6).
//!
//! Tried as a new user would, from the docs: `Runner::new` said any engine
//! serves, and `with_limits` that it bounds every run's memory and time;
//! only `Limits::timeout`'s own doc said the engine must come from
//! `Runner::config_for`. With an engine of `Runner::config()` and a 5 s
//! timeout, a `(loop (br 0))` guest still ran at 15 s: the engine's code
//! never checks the epoch, so the runner's deadline could never fire.
//! Looking for the same class found three more: a memory limit past what
//! the engine lets a memory grow to (a pool's smaller slots, a reservation
//! memories may not move out of), where the guest saw `memory.grow` fail
//! below the limit instead of `MemoryLimit` at it; an engine that consumes
//! fuel, of which the runner gives none, so every guest trapped at once;
//! and an engine with epoch interruption but no timeout, whose guests
//! trapped at their first loop (a new store's deadline is the epoch now).
//!
//! Now a run on an engine that cannot hold the runner's limits is refused
//! before the guest starts (`RunError::Unenforceable`, and
//! `Runner::check_limits` up front), `Runner::new` refuses a fuel engine,
//! and an engine with epochs runs guests without a timeout as ever.

use std::sync::mpsc;
use std::time::Duration;

use packfs_host::load::Guest;
use packfs_host::{Limits, Pool, RunError, Runner, Sandbox, Unenforceable};
use wasmtime::Engine;

/// Never returns.
const SPIN: &str = r#"(module (memory (export "memory") 1) (func (export "_start") (loop (br 0))))"#;

/// Passes a loop header (an epoch check) and exits 7.
const EXIT7: &str = r#"(module
  (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
  (memory (export "memory") 1)
  (func (export "_start") (loop $l) (call $exit (i32.const 7))))"#;

/// Grows its memory a page at a time until refused; returns.
const GROW: &str = r#"(module (memory (export "memory") 1)
  (func (export "_start") (loop (br_if 0 (i32.ne (memory.grow (i32.const 1)) (i32.const -1))))))"#;

fn run(runner: &Runner, wat: &str) -> Result<i32, RunError> {
    let guest = runner.load(&wat::parse_str(wat).unwrap()).unwrap();
    assert!(matches!(guest, Guest::Module(_)), "a module");
    runner.run(&guest, Sandbox::new())
}

/// How a run of `wat` on `runner` ended, on a thread of its own; `None`
/// if it still runs after `within` (the thread is left spinning).
fn ends_within(runner: Runner, wat: &'static str, within: Duration) -> Option<Result<i32, RunError>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(run(&runner, wat));
    });
    rx.recv_timeout(within).ok()
}

fn timeout(secs: u64) -> Limits {
    Limits { timeout: Some(Duration::from_secs(secs)), ..Limits::default() }
}

/// The issue's case: a 1 s time limit on engines without epoch
/// interruption (`Runner::config`, `config_p3`) is refused, up front and
/// by the run, which ends at once instead of spinning for ever.
#[test]
fn a_timeout_on_an_engine_without_epochs_is_refused() {
    for config in [Runner::config(), Runner::config_p3()] {
        let runner = Runner::new(&Engine::new(&config).unwrap()).unwrap().with_limits(timeout(1));
        assert_eq!(runner.check_limits(), Err(Unenforceable::TimeoutWithoutEpochs));
        // Refused before the guest starts: a spinning guest that started
        // would never end on this engine.
        let r = ends_within(runner, SPIN, Duration::from_secs(10)).expect("the guest still ran 10 s into a 1 s limit");
        assert!(matches!(r, Err(RunError::Unenforceable(Unenforceable::TimeoutWithoutEpochs))), "{r:?}");
    }
    // On an engine of config_for, the same limit ends the guest at 1 s.
    let limits = timeout(1);
    let runner = Runner::new(&Engine::new(&Runner::config_for(&limits)).unwrap()).unwrap().with_limits(limits);
    assert_eq!(runner.check_limits(), Ok(()));
    let r = ends_within(runner, SPIN, Duration::from_secs(10)).expect("the guest still ran 10 s into a 1 s limit");
    assert!(matches!(r, Err(RunError::Timeout(_))), "{r:?}");
}

/// A memory limit past a pool's slots, or past a reservation memories may
/// not move out of, is refused: the guest would see `memory.grow` fail
/// below the limit. Within them, the limit holds as ever.
#[test]
fn a_memory_limit_past_what_the_engine_lets_a_memory_grow_to_is_refused() {
    let pool = Pool { instances: 2, ..Pool::default() };
    let slot = Limits { max_memory: Some(2 << 20), ..Limits::default() };
    let pooled = Engine::new(&Runner::config_pooled(&slot, &pool)).unwrap();
    let runner = Runner::new(&pooled).unwrap().with_limits(Limits { max_memory: Some(8 << 20), ..slot });
    let past = Unenforceable::MemoryPastEngine { limit: 8 << 20, bound: 2 << 20 };
    assert_eq!(runner.check_limits(), Err(past.clone()));
    assert!(matches!(run(&runner, GROW), Err(RunError::Unenforceable(e)) if e == past));
    let runner = runner.with_limits(slot);
    assert!(matches!(run(&runner, GROW), Err(RunError::MemoryLimit(n)) if n == 2 << 20));

    let mut fixed = Runner::config();
    fixed.memory_may_move(false).memory_reservation(2 << 20).memory_reservation_for_growth(0);
    let runner = Runner::new(&Engine::new(&fixed).unwrap())
        .unwrap()
        .with_limits(Limits { max_memory: Some(8 << 20), ..Limits::default() });
    assert_eq!(runner.check_limits(), Err(past.clone()));
    assert!(matches!(run(&runner, GROW), Err(RunError::Unenforceable(e)) if e == past));
    let runner = runner.with_limits(slot);
    assert!(matches!(run(&runner, GROW), Err(RunError::MemoryLimit(n)) if n == 2 << 20));
}

/// An engine that consumes fuel is refused when the runner is made: the
/// runner gives its stores none, and every guest trapped at once.
#[test]
fn an_engine_that_consumes_fuel_is_refused() {
    let mut config = Runner::config();
    config.consume_fuel(true);
    let Err(e) = Runner::new(&Engine::new(&config).unwrap()) else { panic!("a fuel engine was accepted") };
    assert_eq!(e.downcast_ref::<Unenforceable>(), Some(&Unenforceable::Fuel));
}

/// An engine with epoch interruption serves a runner without a timeout:
/// its guests run to the end, even while another runner's watchdog bumps
/// the shared engine's epoch. They trapped at their first loop header.
#[test]
fn an_engine_with_epochs_runs_guests_without_a_timeout() {
    let limits = Limits { timeout: Some(Duration::from_millis(200)), ..Limits::default() };
    let engine = Engine::new(&Runner::config_for(&limits)).unwrap();
    let untimed = Runner::new(&engine).unwrap();
    assert_eq!(untimed.check_limits(), Ok(()));
    assert_eq!(run(&untimed, EXIT7).unwrap(), 7);
    // Asleep for 1 s (a clock subscription) while the timed run's watchdog
    // bumps the epoch at 200 ms, then past a loop header.
    let sleeper = r#"(module
      (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
      (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
      (memory (export "memory") 1)
      (func (export "_start")
        (i64.store8 (i32.const 8) (i64.const 0))
        (i32.store (i32.const 16) (i32.const 1))
        (i64.store (i32.const 24) (i64.const 1000000000))
        (drop (call $poll (i32.const 0) (i32.const 64) (i32.const 1) (i32.const 128)))
        (loop $after)
        (call $exit (i32.const 42))))"#;
    let timed = Runner::new(&engine).unwrap().with_limits(limits);
    let (slept, spun) = std::thread::scope(|s| {
        let sleeping = s.spawn(|| run(&untimed, sleeper));
        let spun = run(&timed, SPIN);
        (sleeping.join().unwrap(), spun)
    });
    assert!(matches!(spun, Err(RunError::Timeout(_))), "{spun:?}");
    assert!(matches!(slept, Ok(42)), "the untimed run was cut short: {slept:?}");
}
