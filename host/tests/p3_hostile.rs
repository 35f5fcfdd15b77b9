//! WASI 0.3 guests that misuse streams and futures
//! (`guest-tests/p3/src/bin/p3_hostile.rs`): streams held unread, a flood
//! of them, futures never awaited, a stream written past a quota, a guest
//! waiting on itself. The run must end as the limits say, and when it has,
//! the host must hold nothing of the guest's: every stream and future is
//! gone with its store, so the filesystem is referenced by the test alone.

use packfs_test_support as support;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use packfs_core::mem::Limits as TreeLimits;
use packfs_core::pack::PackOptions;
use packfs_core::{FileSystem, MemFs, system_clock};
use packfs_host::load::Guest;
use packfs_host::wasi::{PackFsCtx, PackFsCtxBuilder};
use packfs_host::{Limits, MAX_RESOURCES, RunError, Runner};
use packfs_remote::{Location, RemoteOptions};
use packfs_testnet::{FileServer, Proxy};
use wasmtime::Engine;
use wasmtime::component::Component;
use wasmtime_wasi::WasiCtx;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;

fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        Engine::new(&Runner::config_p3_for(&Limits { timeout: Some(Duration::ZERO), ..Limits::default() })).unwrap()
    })
}

fn component() -> &'static Component {
    static GUEST: OnceLock<Component> = OnceLock::new();
    GUEST.get_or_init(|| {
        let wasm = std::fs::read(support::p3_guest("p3_hostile")).unwrap();
        match Runner::new(engine()).unwrap().load(&wasm).unwrap() {
            Guest::Component(c) => c,
            Guest::Module(_) => panic!("p3_hostile is a component"),
        }
    })
}

/// What a run left: its outcome and what it printed.
struct Outcome {
    status: Result<i32, RunError>,
    stdout: String,
}

/// Runs `p3_hostile ARGS` on `fs` at `/`, under `limits`, and checks that
/// the host let go of everything the guest held: `fs` is the caller's
/// alone again.
fn run(fs: &Arc<MemFs>, limits: Limits, args: &[&str]) -> Outcome {
    run_with(fs, |_| {}, limits, args)
}

/// [`run`], with the preopens of `more` beside `/`.
fn run_with(fs: &Arc<MemFs>, more: impl FnOnce(&mut PackFsCtxBuilder), limits: Limits, args: &[&str]) -> Outcome {
    let runner = Runner::new(engine()).unwrap().with_limits(limits);
    let out = MemoryOutputPipe::new(1 << 20);
    let mut argv = vec!["p3_hostile"];
    argv.extend(args);
    let wasi = WasiCtx::builder().stdout(out.clone()).args(&argv).build();
    let mut packfs = PackFsCtx::builder();
    more(packfs.preopen("/", fs.clone() as Arc<dyn FileSystem>));
    let packfs = packfs.build();
    let status = runner.run(component(), wasi, packfs);
    assert_eq!(Arc::strong_count(fs), 1, "p3_hostile {args:?}: the host still holds the filesystem after the run");
    Outcome { status, stdout: String::from_utf8_lossy(&out.contents()).into_owned() }
}

fn limits(timeout_secs: u64) -> Limits {
    Limits { timeout: Some(Duration::from_secs(timeout_secs)), max_memory: Some(256 << 20) }
}

#[test]
fn streams_held_unread_are_released_with_the_run() {
    let o = run(&Arc::new(MemFs::new()), limits(60), &["unread", "5000"]);
    assert_eq!(o.status.unwrap(), 0, "{}", o.stdout);
    assert!(o.stdout.contains("holding 10000 streams\n"), "{}", o.stdout);
    assert!(o.stdout.ends_with("done\n"), "{}", o.stdout);
}

#[test]
fn a_flood_of_streams_ends_at_the_handle_limit() {
    let o = run(&Arc::new(MemFs::new()), limits(60), &["flood"]);
    let e = match o.status {
        Err(RunError::Trap(e)) => format!("{e:?}"),
        other => panic!("a flood of streams must trap, not {other:?}\n{}", o.stdout),
    };
    assert!(e.contains("handle limit"), "{e}");
    // A stream and its future are two handles; the guest holds a few more.
    let held: usize = o.stdout.lines().filter_map(|l| l.strip_prefix("holding ")?.parse().ok()).max().unwrap_or(0);
    assert!((MAX_RESOURCES / 2 - 10_000..MAX_RESOURCES / 2).contains(&held), "held {held} pairs before the trap");
}

#[test]
fn futures_never_awaited_do_not_lose_the_write() {
    let fs = Arc::new(MemFs::new());
    let o = run(&fs, limits(60), &["unawaited"]);
    assert_eq!(o.status.unwrap(), 0, "{}", o.stdout);
    assert!(o.stdout.contains("written 300000\nread back: ok true\n"), "{}", o.stdout);
}

#[test]
fn a_stream_written_past_the_quota_stops_at_it() {
    let quota = 1 << 20;
    let fs = Arc::new(MemFs::with_options(TreeLimits { max_bytes: Some(quota), max_inodes: None }, system_clock()));
    let o = run(&fs, limits(60), &["quota"]);
    assert_eq!(o.status.unwrap(), 0, "{}", o.stdout);
    assert!(o.stdout.contains("write 4 MiB: err ErrorCode::Quota\n"), "{}", o.stdout);
    assert!(o.stdout.contains("kept: ok true\n"), "{}", o.stdout);
    let size: u64 = o.stdout.lines().find_map(|l| l.strip_prefix("size: ok ")?.parse().ok()).expect("a size");
    assert!(size > 0 && size <= quota, "{size} bytes kept under a quota of {quota}");
    assert!(fs.usage().bytes <= quota && fs.quota_refusals() > 0);
}

/// wasmtime traps a guest that waits when nothing can wake it only if no
/// host future is pending either; one is here (as on wasmtime-wasi's own
/// p3), so the run waits: the time limit is what ends it.
#[test]
fn a_guest_waiting_on_itself_ends_at_its_time_limit() {
    let o = run(&Arc::new(MemFs::new()), limits(2), &["deadlock"]);
    assert!(o.stdout.contains("reading my own stream\n"), "{}", o.stdout);
    assert!(!o.stdout.contains("read returned"), "{}", o.stdout);
    assert!(matches!(o.status, Err(RunError::Timeout(_))), "{:?}", o.status);
}

/// A read of a remote pack waiting on a slow server leaves the guest's
/// other futures running: the read waits off the executor's thread. Were it
/// to block the thread, the guest's clock could not tick until the read had
/// ended (1.5 s a request, against the 100 ticks' 0.1 s). So does a write
/// to the pack's file under an overlay, whose copy-up reads all of it.
#[test]
fn reads_and_writes_waiting_on_the_network_leave_the_guest_running() {
    let src = MemFs::new();
    let f = src.open(src.root(), "big", &packfs_core::OpenOptions::create()).unwrap();
    let data: Vec<u8> = (0..1u32 << 20).map(|i| i.wrapping_mul(2_654_435_761).to_le_bytes()[3] ^ 7).collect();
    src.write_at(f, 0, &data).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = std::fs::File::create(dir.path().join("r.pack")).unwrap();
    PackOptions::new().compress(None).write(&src.snapshot(), out).unwrap();
    let server = FileServer::start(dir.path());
    let proxy = Proxy::start(server.addr());
    let url = format!("{}/r.pack", proxy.url());
    for how in ["read", "write"] {
        proxy.set_delay(Duration::ZERO);
        let pack = packfs_remote::open(&Location::parse(&url).unwrap().unwrap(), &RemoteOptions::default()).unwrap();
        proxy.set_delay(Duration::from_millis(1500));
        let r: Arc<dyn FileSystem> = match how {
            "read" => Arc::new(pack),
            _ => Arc::new(MemFs::overlay(Arc::new(pack)).unwrap()),
        };
        let more = |b: &mut PackFsCtxBuilder| {
            b.preopen("/r", r);
        };
        let o = run_with(&Arc::new(MemFs::new()), more, limits(60), &["concurrent", how]);
        assert_eq!(o.status.unwrap(), 0, "{how}: {}", o.stdout);
        assert!(o.stdout.starts_with("ticked 100\n"), "{how}: the guest stood still while it waited:\n{}", o.stdout);
        assert!(o.stdout.contains("remote read: ok true\n"), "{how}: {}", o.stdout);
    }
}
