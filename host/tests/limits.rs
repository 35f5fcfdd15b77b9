//! A limit a `Runner` cannot enforce is refused, never accepted and left
//! undone (issue 38, item 6).
//!
//! Tried as a new user would, from the docs, the runner once took any
//! engine and limits after the fact: with an engine without epoch
//! interruption and a 5 s timeout, a `(loop (br 0))` guest still ran at
//! 15 s; a memory limit past what the engine let a memory grow to (a
//! pool's smaller slots, a reservation memories may not move out of) let
//! the guest see `memory.grow` fail below the limit; an engine that
//! consumed fuel trapped every guest at once; and an engine with epochs
//! but no timeout trapped guests at their first loop.
//!
//! Now the runner makes its own engines from its limits
//! (`Runner::builder`): a timeout gives them epoch interruption whatever
//! the base configuration says, a pool's slots hold the memory limit, and
//! a base configuration that cannot hold the limits (fuel, memories that
//! may not grow to the limit) is refused when the runner is made.

use std::sync::mpsc;
use std::time::Duration;

use packfs_host::load::Kind;
use packfs_host::{Limits, MAX_TIMEOUT, Pool, RunError, Runner, Sandbox, Unenforceable};
use wasmtime::Config;

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
    assert_eq!(guest.kind(), Kind::P1, "a module");
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

/// The issue's case: a 1 s time limit ends a spinning guest, even on a
/// base configuration that turned epoch interruption off.
#[test]
fn a_timeout_ends_a_spinning_guest_whatever_the_base_configuration() {
    let mut no_epochs = Config::new();
    no_epochs.epoch_interruption(false);
    for config in [Config::new(), no_epochs] {
        let runner = Runner::builder().config(config).limits(timeout(1)).build().unwrap();
        let r = ends_within(runner, SPIN, Duration::from_secs(10)).expect("the guest still ran 10 s into a 1 s limit");
        assert!(matches!(r, Err(RunError::Timeout(_))), "{r:?}");
    }
}

/// Under a pool, whose slots the builder sizes to the limit, a guest
/// growing past it sees `MemoryLimit` at the limit. A memory limit past a
/// reservation memories may not move out of is refused when the runner is
/// made: the guest would see `memory.grow` fail below the limit.
#[test]
fn a_memory_limit_holds_at_the_limit_or_the_runner_is_refused() {
    let limits = Limits { max_memory: Some(2 << 20), ..Limits::default() };
    for pool in [None, Some(Pool { instances: 2, ..Pool::default() })] {
        let mut builder = Runner::builder().limits(limits);
        if let Some(pool) = pool {
            builder = builder.pool(pool);
        }
        let runner = builder.build().unwrap();
        assert!(matches!(run(&runner, GROW), Err(RunError::MemoryLimit(n)) if n == 2 << 20));
    }

    let fixed = || {
        let mut fixed = Config::new();
        fixed.memory_may_move(false).memory_reservation(2 << 20).memory_reservation_for_growth(0);
        fixed
    };
    let over = Limits { max_memory: Some(8 << 20), ..Limits::default() };
    let Err(e) = Runner::builder().config(fixed()).limits(over).build() else { panic!("the runner was made") };
    let past = Unenforceable::MemoryPastEngine { limit: 8 << 20, bound: 2 << 20 };
    assert_eq!(e.downcast_ref::<Unenforceable>(), Some(&past), "{e:#}");
    let runner = Runner::builder().config(fixed()).limits(limits).build().unwrap();
    assert!(matches!(run(&runner, GROW), Err(RunError::MemoryLimit(n)) if n == 2 << 20));
}

/// A time limit past MAX_TIMEOUT is refused when the runner is made: a
/// deadline `Instant::now() + timeout` panicked in the run, at once for
/// Duration::MAX, and, for one just below what the clock can count to
/// when the runner was made, in a run a moment later (found by review).
#[test]
fn a_timeout_past_the_longest_is_refused_not_a_panic() {
    for timeout in [Duration::MAX, Duration::from_secs(u64::MAX / 2), MAX_TIMEOUT + Duration::from_nanos(1)] {
        let limits = Limits { timeout: Some(timeout), ..Limits::default() };
        let Err(e) = Runner::builder().limits(limits).build() else { panic!("{timeout:?} was accepted") };
        assert_eq!(e.downcast_ref::<Unenforceable>(), Some(&Unenforceable::TimeoutTooLong(timeout)), "{e:#}");
    }
    let runner = Runner::builder().limits(Limits { timeout: Some(MAX_TIMEOUT), ..Limits::default() }).build().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(run(&runner, EXIT7).unwrap(), 7);
}

/// The engine of WASI 0.3 components is made and checked with the runner:
/// a base configuration it cannot hold the limits on is refused then, with
/// the reason, not at the first 0.3 guest as a string (found by review).
/// Under a pool, whose slots raise the reservation to the limit, it
/// reserves as much.
#[test]
fn the_0_3_engine_is_checked_when_the_runner_is_made() {
    let fixed = || {
        let mut config = Config::new();
        config.memory_may_move(false);
        config
    };
    let limits = Limits { max_memory: Some(5 << 30), ..Limits::default() };
    let Err(e) = Runner::builder().config(fixed()).limits(limits).build() else { panic!("made") };
    assert!(matches!(e.downcast_ref::<Unenforceable>(), Some(Unenforceable::MemoryPastEngine { .. })), "{e:#}");
    let pooled =
        Runner::builder().config(fixed()).limits(limits).pool(Pool { instances: 1, ..Pool::default() }).build();
    let runner = pooled.unwrap();
    for kind in [Kind::P1, Kind::P3] {
        assert!(runner.engine(kind).get_memory_reservation() >= 5 << 30, "{kind:?}");
    }
}

/// A base configuration that consumes fuel is refused when the runner is
/// made: the runner gives its stores none, and every guest trapped at once.
#[test]
fn a_configuration_that_consumes_fuel_is_refused() {
    let mut config = Config::new();
    config.consume_fuel(true);
    let Err(e) = Runner::builder().config(config).build() else { panic!("a fuel engine was accepted") };
    assert_eq!(e.downcast_ref::<Unenforceable>(), Some(&Unenforceable::Fuel));
}

/// A base configuration with epoch interruption serves a runner without a
/// timeout: its guests run past their loops (they trapped at the first).
#[test]
fn epochs_in_the_base_configuration_do_not_trap_an_untimed_guest() {
    let mut config = Config::new();
    config.epoch_interruption(true);
    let runner = Runner::builder().config(config).build().unwrap();
    assert_eq!(run(&runner, EXIT7).unwrap(), 7);
}

/// A base configuration made for WASI 0.3 guests (the component model's
/// async on, as wasmtime's docs for them say) makes a runner: the builder
/// turns it off on the engine without concurrency, which wasmtime refused
/// (found by review).
#[test]
fn a_base_configuration_with_component_async_makes_a_runner() {
    // Each of the features wasmtime refuses without concurrency (async,
    // and, found by the next review, its extra builtins and error context).
    let features: [fn(&mut Config); 3] = [
        |c| {
            c.wasm_component_model_async(true);
        },
        |c| {
            c.wasm_component_model_more_async_builtins(true);
        },
        |c| {
            c.wasm_component_model_error_context(true);
        },
    ];
    for turn_on in features {
        let mut config = Config::new();
        turn_on(&mut config);
        let runner = Runner::builder().config(config).build().unwrap();
        assert_eq!(run(&runner, EXIT7).unwrap(), 7);
    }
}
