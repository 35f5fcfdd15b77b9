//! A pack in a file of the host's (`host:`), as a hostile or careless host
//! leaves it: what the component reads of it before the pin can refuse it
//! is bounded, a FIFO at its path is refused without waiting, and an
//! extent whose bytes did not match its digest is read again next time.

use super::*;
use packfs_core::pack::PackOptions;
use std::sync::Mutex;
use wasmtime::component::{Linker, ResourceTable};
use wasmtime::{ResourceLimiter, Store};
use wasmtime_wasi::p2::bindings::sync::CommandPre;
use wasmtime_wasi::{WasiCtxBuilder, WasiCtxView, WasiView};

const MIB: usize = 1 << 20;

/// Records the largest any linear memory asked to grow to, and refuses
/// past `cap`.
struct Limiter {
    cap: usize,
    peak: usize,
}

impl ResourceLimiter for Limiter {
    fn memory_growing(&mut self, _: usize, desired: usize, _: Option<usize>) -> wasmtime::Result<bool> {
        self.peak = self.peak.max(desired);
        Ok(desired <= self.cap)
    }

    fn table_growing(&mut self, _: usize, _: usize, _: Option<usize>) -> wasmtime::Result<bool> {
        Ok(true)
    }
}

struct State {
    ctx: WasiCtx,
    table: ResourceTable,
    limiter: Limiter,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.ctx, table: &mut self.table }
    }
}

/// Runs `component` on wasmtime-wasi with `out` preopened at `/out`, each
/// memory capped at `cap`: the status (or the trap) and the largest memory.
fn run_capped(
    component: &[u8],
    args: &[&str],
    out: &Path,
    cap: usize,
    more: impl FnOnce(&mut WasiCtxBuilder),
) -> (wasmtime::Result<i32>, usize) {
    let component = Component::new(engine(), component).unwrap();
    let mut linker = Linker::<State>::new(engine());
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).unwrap();
    let pre = CommandPre::new(linker.instantiate_pre(&component).unwrap()).unwrap();
    let mut b = WasiCtx::builder();
    b.preopened_dir(out, "/out", FsPerms::ReadWrite).unwrap();
    b.args(args);
    more(&mut b);
    let state = State { ctx: b.build(), table: ResourceTable::new(), limiter: Limiter { cap, peak: 0 } };
    let mut store = Store::new(engine(), state);
    store.limiter(|s| &mut s.limiter);
    let status = pre.instantiate(&mut store).and_then(|c| oracle::run_status(c.wasi_cli_run().call_run(&mut store)));
    (status, store.data().limiter.peak)
}

fn pack_of(files: &[(&str, &[u8])]) -> Vec<u8> {
    let fs = MemFs::new();
    for (name, bytes) in files {
        packfs_core::write_file(&fs, name, bytes).unwrap();
    }
    let mut out = Vec::new();
    PackOptions::new().write(&fs.snapshot(), &mut out).unwrap();
    out
}

fn host_pack(pinned: &[u8]) -> Source {
    Source::HostPack { host_path: "/out/app.pack".into(), digest: digest(pinned), overlay: None }
}

fn guest(name: &str) -> Vec<u8> {
    std::fs::read(support::rust_guest(name, "wasm32-wasip2")).unwrap()
}

/// A sparse file of `size` bytes ending in a well-formed trailer that
/// calls everything from byte 64 on the index.
fn forge(path: &Path, size: u64) {
    use std::os::unix::fs::FileExt;
    let file = std::fs::File::create(path).unwrap();
    file.set_len(size).unwrap();
    let mut t = [0u8; 128];
    t[..8].copy_from_slice(b"\x89PACKEND");
    t[8..12].copy_from_slice(&1u32.to_le_bytes());
    t[16..24].copy_from_slice(&size.to_le_bytes());
    t[24..32].copy_from_slice(&64u64.to_le_bytes());
    t[40..48].copy_from_slice(&64u64.to_le_bytes());
    let sum = xxhash_rust::xxh3::xxh3_64(&t[..120]);
    t[120..].copy_from_slice(&sum.to_le_bytes());
    file.write_all_at(&t, size - 128).unwrap();
}

#[test]
fn what_is_read_of_a_hosts_file_before_the_pin_refuses_it_is_bounded() {
    let pinned = pack_of(&[("a.txt", b"hi")]);
    let component = Virt::new().mount("/", host_pack(&pinned)).build(&guest("toolbox")).unwrap();
    // An index of 200 MiB claimed (past the 128 MiB a host's pack may
    // have): refused before it is read, in a component of a few MiB.
    let out = tempfile::tempdir().unwrap();
    forge(&out.path().join("app.pack"), 200 << 20);
    let (status, peak) = run_capped(&component, &["toolbox", "ls", "/"], out.path(), 64 * MIB, |_| {});
    assert_eq!(status.expect("an error the guest sees, not a trap"), 1);
    assert!(peak < 64 * MIB, "{} MiB of memory", peak / MIB);
    // One at the bound is read, then refused by the pin, in at most twice
    // its size (the run it is read into grows once, by the tail).
    forge(&out.path().join("app.pack"), 128 << 20);
    let (status, peak) = run_capped(&component, &["toolbox", "ls", "/"], out.path(), 300 * MIB, |_| {});
    assert_eq!(status.expect("an error the guest sees, not a trap"), 1);
    assert!(peak < 300 * MIB, "{} MiB of memory", peak / MIB);
}

#[test]
fn a_fifo_at_a_host_packs_path_is_refused_without_waiting_for_a_writer() {
    // Opening a FIFO waits for a writer: the type is asked first. (The
    // wasmtime command, killed if it hangs; in this process a hang would
    // hang the test.)
    let Some(wasmtime) = std::env::var_os("PACKFS_WASMTIME") else {
        assert!(std::env::var("PACKFS_VIRT_HOSTS").is_err(), "PACKFS_WASMTIME is not set");
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let fifo = out.path().join("app.pack");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let pinned = pack_of(&[("a.txt", b"hi")]);
    let component = Virt::new().mount("/", host_pack(&pinned)).build(&guest("toolbox")).unwrap();
    let wasm = out.path().join("c.wasm");
    std::fs::write(&wasm, &component).unwrap();
    let child = Command::new(wasmtime)
        .arg("run")
        .arg("--dir")
        .arg(format!("{}::/out", out.path().display()))
        .arg(&wasm)
        .args(["ls", "/"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    support::kill_after(child.id(), std::time::Duration::from_secs(30));
    let done = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(1), "not the guest's error exit: {err}");
    assert!(err.starts_with("toolbox: ls /: "), "{err}");
}

/// A stdout that puts the pinned pack back once the guest has printed its
/// first read's answer.
#[derive(Clone)]
struct PutRight {
    path: PathBuf,
    good: Vec<u8>,
    seen: Arc<Mutex<Vec<u8>>>,
}

impl wasmtime_wasi::cli::IsTerminal for PutRight {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl wasmtime_wasi::cli::StdoutStream for PutRight {
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl tokio::io::AsyncWrite for PutRight {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let mut seen = self.seen.lock().unwrap();
        let before = String::from_utf8_lossy(&seen).contains("1 read");
        seen.extend_from_slice(buf);
        if !before && String::from_utf8_lossy(&seen).contains("1 read") {
            std::fs::write(&self.path, &self.good).unwrap();
        }
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

#[test]
fn an_extent_that_did_not_match_its_digest_is_read_again_next_time() {
    const TEXT: &[u8] = b"the right bytes of a file in the pack\n";
    let good = pack_of(&[("a.txt", TEXT)]);
    let at = good.windows(TEXT.len()).position(|w| w == TEXT).unwrap();
    let mut bad = good.clone();
    bad[at] ^= 0x01;
    let out = tempfile::tempdir().unwrap();
    let path = out.path().join("app.pack");
    std::fs::write(&path, &bad).unwrap();
    let component = Virt::new()
        .mount("/", host_pack(&good))
        .preopen("/ro", Source::Mem(Default::default()))
        .build(&guest("p2_script"))
        .unwrap();
    let stdout = PutRight { path: path.clone(), good: good.clone(), seen: Default::default() };
    let seen = stdout.seen.clone();
    let args = ["p2_script", "open|2|0|f||r|a.txt", "read|2|0|0|64", "read|2|0|0|64"];
    let (status, _) = run_capped(&component, &args, out.path(), usize::MAX, |b| {
        b.stdout(stdout);
    });
    assert_eq!(status.unwrap(), 0);
    let printed = String::from_utf8_lossy(&seen.lock().unwrap()).into_owned();
    let line = |n: &str| printed.lines().find(|l| l.starts_with(n)).unwrap_or_default().to_string();
    assert!(line("1 read").contains("err"), "the damaged extent read: {printed}");
    assert!(!line("2 read").contains("err"), "the extent put right still fails: {printed}");
}
