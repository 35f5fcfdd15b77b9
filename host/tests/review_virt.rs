//! Review reproductions for the `packfs virt` host:/dir:/sockets change
//! (d4d7d9a..HEAD). Each test asserts what the change promises, so a
//! failing test is a reproduced finding; each prints what it saw.
//!
//! Run: `nice -n 19 cargo test -j 1 -p packfs-host --test review_virt -- --nocapture --test-threads 1`
//!
//! The jco tests need node and web/node_modules (jco, preview2-shim); they
//! print a note and pass when those are missing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use packfs_core::pack::{PackFs, write_pack};
use packfs_core::{FileSystem, MemFs};
use packfs_host::Runner;
use packfs_host::virt::{Source, Virt};
use packfs_test_support as support;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Engine, ResourceLimiter, Store};
use wasmtime_wasi::p2::bindings::sync::CommandPre;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{DirPerms, FilePerms, WasiCtx, WasiCtxView, WasiView};

fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| Engine::new(&Runner::config()).unwrap())
}

fn guest(name: &str) -> Vec<u8> {
    std::fs::read(support::rust_guest(name, "wasm32-wasip2")).unwrap()
}

/// Caps every linear memory at `cap` bytes and records the largest size
/// any memory asked to grow to.
struct Limiter {
    cap: usize,
    peak: usize,
}

impl ResourceLimiter for Limiter {
    fn memory_growing(&mut self, _current: usize, desired: usize, _max: Option<usize>) -> wasmtime::Result<bool> {
        self.peak = self.peak.max(desired);
        Ok(desired <= self.cap)
    }

    fn table_growing(&mut self, _current: usize, _desired: usize, _max: Option<usize>) -> wasmtime::Result<bool> {
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

struct Ran {
    /// Exit status, or the trap.
    status: Result<i32, String>,
    stdout: Vec<u8>,
    stderr: String,
    /// The largest any linear memory asked to grow to, in bytes.
    peak: usize,
}

/// Runs `component` on wasmtime-wasi with each `(host dir, guest name)`
/// preopened read-write, every linear memory capped at `cap`.
fn run_wasmtime(component: &[u8], args: &[&str], dirs: &[(&Path, &str)], cap: usize) -> Ran {
    let component = Component::new(engine(), component).unwrap();
    let mut linker = Linker::<State>::new(engine());
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).unwrap();
    let pre = CommandPre::new(linker.instantiate_pre(&component).unwrap()).unwrap();
    let (stdout, stderr) = (MemoryOutputPipe::new(256 << 20), MemoryOutputPipe::new(1 << 20));
    let mut b = WasiCtx::builder();
    for (host, name) in dirs {
        b.preopened_dir(host, name, DirPerms::all(), FilePerms::all()).unwrap();
    }
    b.stdout(stdout.clone()).stderr(stderr.clone()).args(args);
    let state = State { ctx: b.build(), table: ResourceTable::new(), limiter: Limiter { cap, peak: 0 } };
    let mut store = Store::new(engine(), state);
    store.limiter(|s| &mut s.limiter);
    let status = pre
        .instantiate(&mut store)
        .and_then(|c| support::oracle::run_status(c.wasi_cli_run().call_run(&mut store)))
        .map_err(|e| format!("{e:?}"));
    let peak = store.data().limiter.peak;
    Ran { status, stdout: stdout.contents().to_vec(), stderr: String::from_utf8_lossy(&stderr.contents()).into(), peak }
}

fn digest(pack: &[u8]) -> packfs_core::pack::Digest {
    PackFs::open(pack).unwrap().digest().unwrap()
}

fn pack_of(fs: &MemFs) -> Vec<u8> {
    let mut out = Vec::new();
    write_pack(&fs.snapshot(), &mut out).unwrap();
    out
}

/// Incompressible, distinct bytes.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

// ---------------------------------------------------------------- jco ---

fn workspace() -> PathBuf {
    support::workspace()
}

/// `jco run` with `preopens` (guest name -> host dir): None when jco or
/// node is not here.
fn run_jco(component: &[u8], args: &[&str], preopens: &[(&str, &Path)]) -> Option<(i32, String, String)> {
    let jco = workspace().join("web/node_modules/.bin/jco");
    let shim = workspace().join("web/node_modules/@bytecodealliance/preview2-shim/dist/nodejs/filesystem.js");
    if !jco.exists() || !shim.exists() || Command::new("node").arg("--version").output().is_err() {
        eprintln!("note: jco or node missing: not run on jco");
        return None;
    }
    let tmp = tempfile::tempdir().unwrap();
    let map: Vec<String> = preopens.iter().map(|(g, h)| format!("{g:?}: {:?}", h.display().to_string())).collect();
    let module = format!(
        "import {{ _setPreopens }} from {:?};\n_setPreopens({{ {} }});\n",
        shim.display().to_string(),
        map.join(", ")
    );
    let pre = tmp.path().join("preopens.mjs");
    std::fs::write(&pre, module).unwrap();
    let wasm = tmp.path().join("c.wasm");
    std::fs::write(&wasm, component).unwrap();
    let out = Command::new(&jco).arg("run").arg("--jco-import").arg(&pre).arg(&wasm).args(args).output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    Some((out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr)))
}

/// Names, sizes, contents' first bytes and mtimes of a directory's files.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>, std::time::SystemTime)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            (e.file_name().into_string().unwrap(), std::fs::read(e.path()).unwrap(), m.modified().unwrap())
        })
        .collect();
    v.sort();
    v
}

fn ro_fixture(out: &Path) -> PathBuf {
    let ro = out.join("ro");
    std::fs::create_dir_all(&ro).unwrap();
    std::fs::write(ro.join("secret.txt"), "secret\n").unwrap();
    std::fs::write(ro.join("victim.txt"), "victim\n").unwrap();
    std::fs::write(ro.join("gone.txt"), "gone\n").unwrap();
    std::fs::write(ro.join("stamp.txt"), "stamp\n").unwrap();
    ro
}

/// p2_script ops on slot 1 (`/ro`, dir-ro) and slot 0 (`/`, dir:, rw):
/// every change reaches `/ro` through a *file* descriptor opened from it,
/// by the directory calls with the empty path.
const RO_ATTACK: &[&str] = &[
    "open|2|1|f||r|stamp.txt",
    "timesat|2|f||1.0|1.0", // set-times-at "" on the file: its own times
    "open|3|1|f||r|secret.txt",
    "link|3||0|stolen", // link-at "" from the ro file into the rw dir
    "open|4|0|f||rw|stolen",
    "write|4|0|5|7|5", // ...and written through the link
    "open|5|1|f||r|victim.txt",
    "rename|5||0|moved", // rename-at "" out of the ro dir
    "open|6|1|f||r|gone.txt",
    "unlink|6|", // unlink-file-at "" on the file: deleted
    // The same changes through the directory: all refused.
    "unlink|1|secret.txt",
    "timesat|1|f|secret.txt|1.0|1.0",
];

/// Finding 1: a dir-ro host directory is writable on jco. HostDesc's
/// `dir_change` lets a directory call on a read-only *file* descriptor
/// through to the host (passthrough.rs:94-108), trusting the host to
/// refuse it as wasmtime does (NotDirectory); jco's shim resolves the
/// empty path against the file itself, so the file is unlinked, renamed
/// and hard-linked into a writable preopen, and its times set.
#[test]
fn review_dir_ro_is_writable_through_a_file_descriptor_on_jco() {
    let out = tempfile::tempdir().unwrap();
    let rw = tempfile::tempdir().unwrap();
    let ro = ro_fixture(out.path());
    // `/` is the host's own preopen `/rw` (opening a subdirectory rw fails on
    // jco: see the next test); `/ro` is dir-ro under `/out`.
    let component = Virt::new()
        .preopen("/", Source::HostDir { host_path: "/rw".into(), read_only: false })
        .preopen("/ro", Source::HostDir { host_path: "/out/ro".into(), read_only: true })
        .build(&guest("p2_script"))
        .unwrap();

    // wasmtime-wasi: refused (the host says not-directory).
    let before = snapshot(&ro);
    let mut args = vec!["p2_script"];
    args.extend_from_slice(RO_ATTACK);
    let ran = run_wasmtime(&component, &args, &[(out.path(), "/out"), (rw.path(), "/rw")], usize::MAX);
    println!("--- wasmtime-wasi: {:?}\n{}{}", ran.status, String::from_utf8_lossy(&ran.stdout), ran.stderr);
    assert_eq!(snapshot(&ro), before, "wasmtime-wasi: the dir-ro directory changed");

    // jco's stock shim.
    let Some((status, stdout, stderr)) = run_jco(&component, RO_ATTACK, &[("/out", out.path()), ("/rw", rw.path())])
    else {
        return;
    };
    println!("--- jco: exit {status}\n{stdout}{stderr}");
    let after = snapshot(&ro);
    println!("--- ro dir before: {:?}", before.iter().map(|(n, b, t)| (n, b.len(), t)).collect::<Vec<_>>());
    println!("--- ro dir after:  {:?}", after.iter().map(|(n, b, t)| (n, b.len(), t)).collect::<Vec<_>>());
    println!("--- rw dir after:  {:?}", snapshot(rw.path()).iter().map(|(n, b, _)| (n, b.clone())).collect::<Vec<_>>());
    assert_eq!(after, before, "jco: a guest changed the dir-ro directory");
}

/// Finding 2: `dir:PATH` naming a subdirectory of a host preopen opens it
/// with MUTATE_DIRECTORY (passthrough.rs:293-297), which jco's shim
/// refuses (`unsupported`): the preopen is a failed one on jco.
#[test]
fn review_dir_rw_subdirectory_fails_on_jco() {
    let out = tempfile::tempdir().unwrap();
    std::fs::create_dir(out.path().join("rw")).unwrap();
    ro_fixture(out.path());
    let component = Virt::new()
        .preopen("/", Source::HostDir { host_path: "/out/rw".into(), read_only: false })
        .preopen("/ro", Source::HostDir { host_path: "/out/ro".into(), read_only: true })
        .build(&guest("p2_script"))
        .unwrap();
    let ops = ["type|0", "open|2|0|fc||rw|new.txt", "list|0|0", "list|1|0"];
    let mut args = vec!["p2_script"];
    args.extend_from_slice(&ops);
    let ran = run_wasmtime(&component, &args, &[(out.path(), "/out")], usize::MAX);
    let wasmtime = String::from_utf8_lossy(&ran.stdout).into_owned();
    println!("--- wasmtime-wasi: {:?}\n{wasmtime}{}", ran.status, ran.stderr);
    let _ = std::fs::remove_file(out.path().join("rw/new.txt"));
    let Some((status, stdout, stderr)) = run_jco(&component, &ops, &[("/out", out.path())]) else { return };
    println!("--- jco: exit {status}\n{stdout}{stderr}");
    assert_eq!(stdout, wasmtime, "jco: dir:/out/rw does not open");
}

// ----------------------------------------------------------- host packs ---

/// Finding 3: a host pack keeps every extent it ever read
/// (host_pack.rs:66-76: one `OnceLock<Box<[u8]>>` per extent, never
/// released), so a guest that streams files it does not keep makes the
/// component hold all of them; past the host's memory limit (or 4 GiB)
/// the allocation aborts: a trap, not an error (host_pack.rs:43 is
/// `Vec::with_capacity`, no `try_reserve`).
#[test]
fn review_host_pack_keeps_every_extent_read_and_traps_past_memory() {
    const FILES: usize = 12;
    const MIB: usize = 1 << 20;
    let fs = MemFs::new();
    for i in 0..FILES {
        packfs_core::write_file(&fs, &format!("f{i}"), &noise(4 * MIB, i as u64 + 1)).unwrap();
    }
    let pack = pack_of(&fs);
    let out = tempfile::tempdir().unwrap();
    std::fs::write(out.path().join("app.pack"), &pack).unwrap();
    let component = Virt::new()
        .mount("/", Source::HostPack { host_path: "/out/app.pack".into(), digest: digest(&pack), overlay: None })
        .build(&guest("toolbox"))
        .unwrap();
    let mut args: Vec<String> = vec!["toolbox".into()];
    for i in 0..FILES {
        args.extend(["stderr".into(), format!("reading f{i}"), "splice".into(), format!("/f{i}")]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();

    // No limit: how much the component's memory grew for 48 MiB streamed
    // 4 MiB at a time (64 KiB splices).
    let ran = run_wasmtime(&component, &args, &[(out.path(), "/out")], usize::MAX);
    println!(
        "--- no limit: {:?}, {} MiB streamed, largest linear memory {} MiB",
        ran.status,
        ran.stdout.len() / MIB,
        ran.peak / MIB
    );
    assert_eq!(ran.status, Ok(0), "{}", ran.stderr);

    // 32 MiB per memory: far more than one file and the index.
    let ran = run_wasmtime(&component, &args, &[(out.path(), "/out")], 32 * MIB);
    let last = ran.stderr.lines().filter(|l| l.starts_with("reading")).last().unwrap_or("").to_string();
    println!(
        "--- capped at 32 MiB: {:?}\n    last stderr line: {last}",
        ran.status.as_ref().map_err(|e| e.lines().next())
    );
    assert!(ran.status.is_ok(), "the component trapped (at {last}) instead of an error the guest sees");
}

/// Finding 4: a host file that is not the pinned pack is read whole
/// before the pin refuses it. The trailer alone decides how much: up to
/// MAX_FETCHED_INDEX (1 GiB) read in one `Vec::with_capacity`
/// (host_pack.rs:43), then copied again by `LazyOpen::split`. A sparse
/// file of 160 MiB with a forged 128-byte trailer makes the component
/// allocate > 320 MiB; under a 256 MiB memory limit that is a trap, not
/// the documented "error at the guest's first call".
#[test]
fn review_hostile_host_pack_trailer_makes_the_component_read_and_copy_its_claimed_index() {
    const MIB: u64 = 1 << 20;
    let size: u64 = 160 * MIB;
    let out = tempfile::tempdir().unwrap();
    let path = out.path().join("app.pack");
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(size).unwrap(); // sparse: no disk used
    let mut t = [0u8; 128];
    t[..8].copy_from_slice(b"\x89PACKEND");
    t[8..12].copy_from_slice(&1u32.to_le_bytes()); // version
    t[16..24].copy_from_slice(&size.to_le_bytes()); // pack_len
    t[24..32].copy_from_slice(&64u64.to_le_bytes()); // data_offset
    t[40..48].copy_from_slice(&64u64.to_le_bytes()); // index_offset: all of it is "index"
    let sum = xxhash_rust::xxh3::xxh3_64(&t[..120]);
    t[120..].copy_from_slice(&sum.to_le_bytes());
    use std::os::unix::fs::FileExt;
    file.write_all_at(&t, size - 128).unwrap();
    drop(file);

    // Pinned to some other, real pack: this file can never be it.
    let fs = MemFs::new();
    packfs_core::write_file(&fs, "a.txt", b"hi").unwrap();
    let pinned = digest(&pack_of(&fs));
    let component = Virt::new()
        .mount("/", Source::HostPack { host_path: "/out/app.pack".into(), digest: pinned, overlay: None })
        .build(&guest("toolbox"))
        .unwrap();
    let args = ["toolbox", "ls", "/"];
    let ran = run_wasmtime(&component, &args, &[(out.path(), "/out")], usize::MAX);
    println!(
        "--- no limit: {:?}, stderr {:?}, largest linear memory {} MiB for a refused {} MiB file",
        ran.status,
        ran.stderr.trim(),
        ran.peak as u64 / MIB,
        size / MIB
    );
    let ran = run_wasmtime(&component, &args, &[(out.path(), "/out")], 256 * MIB as usize);
    println!("--- capped at 256 MiB: {:?}", ran.status.as_ref().map_err(|e| e.lines().next()));
    assert!(ran.status.is_ok(), "a file that is not the pinned pack trapped the component");
}

/// Finding 3b: the bytes of an extent that fails its digest are kept
/// (host_pack.rs:71-73 sets the slot before the reader checks it), so
/// the extent is never read again: a host file put right (the pinned
/// pack restored in place) still answers EIO for it for the rest of the
/// run. Here the file is put right between two reads in one run, by a
/// guest that waits on stdin.
#[test]
fn review_host_pack_keeps_a_bad_extent_after_the_file_is_put_right() {
    use std::io::Write;
    const TEXT: &[u8] = b"the right bytes of a file in the pack\n";
    let fs = MemFs::new();
    packfs_core::write_file(&fs, "a.txt", TEXT).unwrap();
    let good = pack_of(&fs);
    let at = good.windows(TEXT.len()).position(|w| w == TEXT).unwrap();
    let mut bad = good.clone();
    bad[at] ^= 0x01;
    let out = tempfile::tempdir().unwrap();
    let path = out.path().join("app.pack");
    std::fs::write(&path, &bad).unwrap();
    let component = Virt::new()
        .mount("/", Source::HostPack { host_path: "/out/app.pack".into(), digest: digest(&good), overlay: None })
        .mount("/tmp", Source::Mem(Default::default()))
        .build(&guest("toolbox"))
        .unwrap();
    // The wasmtime command: its stdin is a pipe we write after fixing the file.
    let Some(wasmtime) = std::env::var_os("PACKFS_WASMTIME") else {
        eprintln!("note: PACKFS_WASMTIME not set: not run");
        return;
    };
    let wasm = out.path().join("c.wasm");
    std::fs::write(&wasm, &component).unwrap();
    // `cat` fails (EIO) and toolbox exits at the first failure, so the
    // first read is `splice` (whose failure... also exits): instead, read
    // once with `cat` through a second run? No: one run only keeps the
    // slot. toolbox stops at the first failure, so the order is: stdin
    // (blocks until we fix the file), then cat. The first read of the
    // extent happens at `cat`, after the fix: this checks the positive
    // path only, and the negative is argued in the report.
    let mut child = Command::new(wasmtime)
        .arg("run")
        .arg("--dir")
        .arg(format!("{}::/out", out.path().display()))
        .arg(&wasm)
        .args(["stdin", "/tmp/in", "cat", "/a.txt"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::fs::write(&path, &good).unwrap();
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let o = child.wait_with_output().unwrap();
    println!(
        "--- fixed before the first read: exit {:?}, stdout {:?}, stderr {:?}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}
