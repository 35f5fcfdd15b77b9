//! WASI 0.3 guests that misuse streams and futures
//! (`guest-tests/p3/src/bin/p3_hostile.rs`): streams held unread, a flood
//! of them, futures never awaited, a stream written past a quota, a guest
//! waiting on itself. The run must end as the limits say, and when it has,
//! the host must hold nothing of the guest's: every stream and future is
//! gone with its store, so the filesystem is referenced by the test alone.
//! Nor may it hold more while the guest runs than its bounds allow: the
//! host's heap is counted (a counting allocator; linear memory is mapped
//! apart from it).

use packfs_test_support as support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use packfs_core::mem::Quota;
use packfs_core::pack::PackOptions;
use packfs_core::{FileSystem, MemFs};
use packfs_host::load::{Guest, GuestCache, Kind};
use packfs_host::p2::MAX_RESOURCES;
use packfs_host::{Access, Capture};
use packfs_host::{Limits, RunError, Runner, Sandbox};
use packfs_remote::{Location, RemoteOptions};
use packfs_testnet::{FileServer, Proxy};

/// The host's heap: bytes live now, and the most since [`Heap::reset`].
struct Heap;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

impl Heap {
    fn track(grown: usize, shrunk: usize) {
        let live = LIVE.fetch_add(grown, Ordering::Relaxed) + grown;
        LIVE.fetch_sub(shrunk, Ordering::Relaxed);
        PEAK.fetch_max(live, Ordering::Relaxed);
    }

    /// The most bytes live since now, from here on, beyond those live now.
    fn reset() -> usize {
        let live = LIVE.load(Ordering::Relaxed);
        PEAK.store(live, Ordering::Relaxed);
        live
    }
}

// SAFETY: every call goes unchanged to the system allocator; the counters
// are atomics, which never allocate.
#[allow(unsafe_code, reason = "a counting allocator is a GlobalAlloc")]
unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        Heap::track(layout.size(), 0);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        Heap::track(0, layout.size());
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        Heap::track(new_size.saturating_sub(layout.size()), layout.size().saturating_sub(new_size));
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static HEAP: Heap = Heap;

/// A runner under `limits` (through the guests' cache) and `p3_hostile`
/// loaded on it.
fn hosted(limits: Limits) -> (Runner, Guest) {
    let cache = GuestCache::new(support::guest_cache_dir()).expect("guest cache dir");
    let runner = Runner::builder().limits(limits).cache(cache).build().unwrap();
    let guest = runner.load(&support::p3_guest("p3_hostile")).unwrap();
    assert_eq!(guest.kind(), Kind::P3, "p3_hostile is a WASI 0.3 component");
    (runner, guest)
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
    run_with(fs, |s| s, limits, args)
}

/// [`run`], with the preopens of `more` beside `/`.
fn run_with(fs: &Arc<MemFs>, more: impl FnOnce(Sandbox) -> Sandbox, limits: Limits, args: &[&str]) -> Outcome {
    run_on(&hosted(limits), fs, more, args)
}

/// [`run_with`] on a runner already made.
fn run_on(
    (runner, guest): &(Runner, Guest),
    fs: &Arc<MemFs>,
    more: impl FnOnce(Sandbox) -> Sandbox,
    args: &[&str],
) -> Outcome {
    let out = Capture::new(1 << 20);
    let sandbox = Sandbox::new().arg("p3_hostile").args(args.iter().copied()).stdout(out.clone()).preopen(
        "/",
        fs.clone() as Arc<dyn FileSystem>,
        Access::ReadWrite,
    );
    let status = runner.run(guest, more(sandbox));
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
    let fs = Arc::new(MemFs::builder().quota(Quota { max_bytes: Some(quota), max_inodes: None }).build());
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

/// A pack of one 1 MiB file `big`, served slowly (every request held
/// `delay` once it is open): a remote pack under an overlay, whose first
/// write to `big` copies it up over the network. The server and proxy go
/// with it.
fn slow_remote(delay: Duration, overlay: bool) -> (Arc<dyn FileSystem>, (Proxy, FileServer, tempfile::TempDir)) {
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
    let pack = packfs_remote::open(&Location::parse(&url).unwrap().unwrap(), &RemoteOptions::default()).unwrap();
    proxy.set_delay(delay);
    let fs: Arc<dyn FileSystem> = match overlay {
        false => Arc::new(pack),
        true => Arc::new(MemFs::overlay(Arc::new(pack)).unwrap()),
    };
    (fs, (proxy, server, dir))
}

/// 2,000 writes of 64 KiB at once into a file whose first write waits on
/// the network (its copy-up from a slow server), each through its own
/// stream: at most `MAX_WAITING` of them hold a copy of their bytes in the
/// host, the others wait their turn holding none. The host's heap stays
/// within 32 MiB (on 65991d3 each queued write copied its bytes first:
/// 125 MiB here; 3.1 GB for 3,000 writes of 1 MiB). Counted in a process
/// of its own (this test run again, alone), so that no other test's heap
/// is counted.
#[test]
fn writes_waiting_their_turn_hold_no_copy_of_their_bytes() {
    const ALONE: &str = "PACKFS_P3_HOSTILE_ALONE";
    const NAME: &str = "writes_waiting_their_turn_hold_no_copy_of_their_bytes";
    if std::env::var_os(ALONE).is_none() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
            .env(ALONE, "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        let peak: usize = stdout.lines().find_map(|l| l.split_once("heap peak: ")?.1.parse().ok()).expect("measured");
        assert!(peak < 32 << 20, "the host's heap grew by {} MiB during the run", peak >> 20);
        return;
    }
    let (r, _server) = slow_remote(Duration::from_millis(1500), true);
    let hosted = hosted(limits(120));
    let more = |s: Sandbox| s.preopen("/r", r, Access::ReadWrite);
    let base = Heap::reset();
    let o = run_on(&hosted, &Arc::new(MemFs::new()), more, &["queued", "2000"]);
    let peak = PEAK.load(Ordering::Relaxed) - base;
    assert_eq!(o.status.unwrap(), 0, "{}", o.stdout);
    assert!(o.stdout.contains("written 2000 of 2000\n"), "{}", o.stdout);
    assert!(o.stdout.contains("size: ok 1048576\n"), "{}", o.stdout);
    println!("heap peak: {peak}");
}

/// A read of a remote pack waiting on a slow server leaves the guest's
/// other futures running: the read waits off the executor's thread. Were it
/// to block the thread, the guest's clock could not tick until the read had
/// ended (1.5 s a request, against the 100 ticks' 0.1 s). So does a write
/// to the pack's file under an overlay, whose copy-up reads all of it.
#[test]
fn reads_and_writes_waiting_on_the_network_leave_the_guest_running() {
    for how in ["read", "write"] {
        let (r, _server) = slow_remote(Duration::from_millis(1500), how == "write");
        let more = |s: Sandbox| s.preopen("/r", r, Access::ReadWrite);
        let o = run_with(&Arc::new(MemFs::new()), more, limits(60), &["concurrent", how]);
        assert_eq!(o.status.unwrap(), 0, "{how}: {}", o.stdout);
        assert!(o.stdout.starts_with("ticked 100\n"), "{how}: the guest stood still while it waited:\n{}", o.stdout);
        assert!(o.stdout.contains("remote read: ok true\n"), "{how}: {}", o.stdout);
    }
}
