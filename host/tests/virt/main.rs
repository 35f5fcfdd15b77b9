//! `packfs virt` on every component host: each guest of `guests.rs`
//! (Rust for wasm32-wasip2 and wasm32-wasip1, C for preview1; a preview1
//! module adapted with wasmtime's standard adapter), composed with the
//! virtual filesystem over the packs of the starting trees (`/` an
//! overlay over the seed tree's, `/ro` the `/ro` tree's) and saving its
//! namespace after the run, must print on each host what the same
//! component prints on PackFS's own host over the same namespace, and
//! leave the same tree (read back from the pack it saved): with the packs
//! embedded, and with the packs in the host's files (`host:`), read
//! through the host's filesystem. Composed with the starting trees as
//! host directories passed through instead (`dir:` at `/`, `dir-ro:` at
//! `/ro`), it must print what it prints on wasmtime-wasi over the same
//! directories, and leave the same tree in them.
//!
//! The hosts: wasmtime-wasi as any embedder links it (in this process),
//! the `wasmtime` command and wasmtime-py (from PyPI, which the test
//! command installs and names in `PACKFS_WASMTIME` and `PACKFS_PYTHON`;
//! with `PACKFS_VIRT_HOSTS=all` a missing one fails the test). jco with
//! its stock shim runs the components written to
//! `target/guest-tests/virt/` (`web/e2e/virt.test.mjs`).

use packfs_test_support as support;

mod host_packs;
mod hostile;
mod http;
mod p3;
#[path = "../script/mod.rs"]
mod script;
mod scripts;
mod sockets;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};

use packfs_core::mount::MountTable;
use packfs_core::pack::{PackFs, write_pack};
use packfs_core::{FileSystem, MemFs};
use packfs_host::load::Kind;
use packfs_host::virt::{Source, Virt, component_of};
use packfs_host::{Access, Capture};
use packfs_host::{Runner, Sandbox};
use support::oracle;
use support::trees::{Tree, hashed, ro_layout, seed_layout, tree_of, tree_of_dir};
use wasmtime::Engine;
use wasmtime::component::Component;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{FsPerms, WasiCtx};

/// Where the saved pack goes, under the host's preopen `/out`.
const SAVE: &str = "/out/after.pack";

/// PackFS's own host, run natively.
fn runner() -> &'static Runner {
    static RUNNER: OnceLock<Runner> = OnceLock::new();
    RUNNER.get_or_init(|| Runner::builder().build().unwrap())
}

/// Its engine of 0.2 components, on which wasmtime-wasi runs them too.
fn engine() -> &'static Engine {
    runner().engine(Kind::P2)
}

/// The packs of the starting trees: (seed, ro).
fn packs() -> &'static (Vec<u8>, Vec<u8>) {
    static PACKS: OnceLock<(Vec<u8>, Vec<u8>)> = OnceLock::new();
    PACKS.get_or_init(|| {
        let pack = |fs: &dyn FileSystem| {
            let mut out = Vec::new();
            write_pack(fs, &mut out).unwrap();
            out
        };
        (pack(&seed_layout().in_memory().snapshot()), pack(&ro_layout().in_memory().snapshot()))
    })
}

/// The namespace `virt` builds, natively: `/` an overlay over the seed
/// pack, `/ro` the ro pack, read-only.
fn native_namespace() -> Arc<MountTable> {
    let (seed, ro) = packs();
    let seed: Arc<dyn FileSystem> = Arc::new(PackFs::open(seed.clone()).unwrap());
    let table = Arc::new(MountTable::new(Arc::new(MemFs::overlay(seed).unwrap()), false));
    table.mount("/ro", Arc::new(PackFs::open(ro.clone()).unwrap()), true).unwrap();
    table
}

/// How the starting trees reach the virtual filesystem.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Trees {
    /// Packs embedded in the component.
    Embedded,
    /// Packs in the host's files under `/out` (`host:`).
    HostPacks,
    /// Host directories under `/out`, passed through (`dir:`, `dir-ro:`).
    HostDirs,
}

fn digest(pack: &[u8]) -> packfs_core::pack::Digest {
    PackFs::open(pack).unwrap().digest().unwrap()
}

fn virtualized(guest: &[u8], trees: Trees) -> Vec<u8> {
    let (seed, ro) = packs();
    let virt = match trees {
        Trees::Embedded => Virt::new()
            .mount("/", Source::Pack { bytes: seed.clone(), overlay: Some(Default::default()) })
            .mount("/ro", Source::Pack { bytes: ro.clone(), overlay: None }),
        Trees::HostPacks => Virt::new()
            .mount(
                "/",
                Source::HostPack {
                    host_path: "/out/seed.pack".into(),
                    digest: digest(seed),
                    overlay: Some(Default::default()),
                },
            )
            .mount("/ro", Source::HostPack { host_path: "/out/ro.pack".into(), digest: digest(ro), overlay: None }),
        Trees::HostDirs => {
            return Virt::new()
                .preopen("/", Source::HostDir { host_path: "/out/root".into(), read_only: false })
                .preopen("/ro", Source::HostDir { host_path: "/out/ro".into(), read_only: true })
                .build(guest)
                .unwrap();
        }
    };
    virt.save(SAVE).build(guest).unwrap()
}

/// What the host's directory `out` holds before a run of `trees`.
fn prepare(out: &Path, trees: Trees) {
    let (seed, ro) = packs();
    match trees {
        Trees::Embedded => {}
        Trees::HostPacks => {
            std::fs::write(out.join("seed.pack"), seed).unwrap();
            std::fs::write(out.join("ro.pack"), ro).unwrap();
        }
        Trees::HostDirs => {
            for (name, layout) in [("root", seed_layout()), ("ro", ro_layout())] {
                std::fs::create_dir(out.join(name)).unwrap();
                layout.write_to(&out.join(name));
            }
        }
    }
}

/// The tree a run of `trees` left: saved as a pack, or in the directory.
fn left(out: &Path, trees: Trees, who: &str) -> Tree {
    match trees {
        Trees::HostDirs => tree_of_dir(&out.join("root")),
        _ => saved(out, who),
    }
}

/// The component on wasmtime-wasi over real directories, `/` and `/ro`
/// (read-only): what a passed-through run must match.
fn oracle_on_dirs(name: &str, component: &[u8]) -> Run {
    let (root, ro) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    seed_layout().write_to(root.path());
    ro_layout().write_to(ro.path());
    let component = Component::new(engine(), component).unwrap();
    let (stdout, stderr) = (MemoryOutputPipe::new(16 << 20), MemoryOutputPipe::new(16 << 20));
    let mut b = WasiCtx::builder();
    b.preopened_dir(root.path(), "/", FsPerms::ReadWrite).unwrap();
    b.preopened_dir(ro.path(), "/ro", FsPerms::ReadOnly).unwrap();
    b.stdout(stdout.clone()).stderr(stderr.clone()).args(&[name]);
    let status = oracle::P2::new(engine(), &component).and_then(|o| o.run(b.build())).unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    Run { status, stdout: text(&stdout.contents()), stderr: text(&stderr.contents()), tree: tree_of_dir(root.path()) }
}

#[derive(Debug)]
struct Run {
    status: i32,
    stdout: String,
    stderr: String,
    tree: Tree,
}

/// The component on PackFS's own host over the same namespace.
fn native(name: &str, component: &[u8]) -> Run {
    let runner = runner();
    let guest = runner.load(component).unwrap();
    assert_eq!(guest.kind(), Kind::P2);
    let table = native_namespace();
    let (out, err) = (Capture::new(16 << 20), Capture::new(16 << 20));
    let sandbox =
        Sandbox::new().arg(name).stdout(out.clone()).stderr(err.clone()).preopen("/", table.clone(), Access::ReadWrite);
    let status = runner.run(&guest, sandbox).unwrap_or_else(|e| panic!("{name} natively: {e:?}"));
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    Run { status, stdout: text(out.contents()), stderr: text(err.contents()), tree: tree_of(&*table) }
}

/// The tree saved in `out/after.pack`.
fn saved(out: &Path, who: &str) -> Tree {
    let bytes = std::fs::read(out.join("after.pack")).unwrap_or_else(|e| panic!("{who}: no pack saved: {e}"));
    tree_of(&PackFs::open(bytes).unwrap())
}

/// A component host: runs the component at `path` with argv[0] `name`
/// and the directory `out` preopened at `/out`.
type Host = fn(path: &Path, name: &str, out: &Path) -> (i32, String, String);

/// wasmtime-wasi, linked as any embedder links it.
fn wasmtime_wasi(path: &Path, name: &str, out: &Path) -> (i32, String, String) {
    wasmtime_wasi_args(path, &[name], out)
}

/// [`wasmtime_wasi`] with the arguments `args`.
fn wasmtime_wasi_args(path: &Path, args: &[&str], out: &Path) -> (i32, String, String) {
    let component = Component::from_file(engine(), path).unwrap();
    let (stdout, stderr) = (MemoryOutputPipe::new(16 << 20), MemoryOutputPipe::new(16 << 20));
    let mut b = WasiCtx::builder();
    b.preopened_dir(out, "/out", FsPerms::ReadWrite).unwrap();
    b.stdout(stdout.clone()).stderr(stderr.clone()).args(args);
    let status = oracle::P2::new(engine(), &component).and_then(|o| o.run(b.build())).unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (status, text(&stdout.contents()), text(&stderr.contents()))
}

fn command(mut c: Command) -> (i32, String, String) {
    let out = c.stdin(Stdio::null()).output().unwrap_or_else(|e| panic!("{c:?}: {e}"));
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

/// The `wasmtime` command.
fn wasmtime_cli(path: &Path, name: &str, out: &Path) -> (i32, String, String) {
    let mut c = Command::new(std::env::var_os("PACKFS_WASMTIME").unwrap());
    c.arg("run").arg("--dir").arg(format!("{}::/out", out.display())).args(["--argv0", name]).arg(path);
    command(c)
}

/// wasmtime-py.
fn wasmtime_py(path: &Path, name: &str, out: &Path) -> (i32, String, String) {
    let mut c = Command::new(std::env::var_os("PACKFS_PYTHON").unwrap());
    c.arg(support::workspace().join("host/tests/virt/run_component.py")).arg(path).arg(out).arg(name);
    command(c)
}

/// The hosts this run has: wasmtime-wasi always; the others when the test
/// command installed them (required with `PACKFS_VIRT_HOSTS=all`).
fn hosts() -> Vec<(&'static str, Host)> {
    let mut hosts: Vec<(&'static str, Host)> = vec![("wasmtime-wasi", wasmtime_wasi)];
    let required = std::env::var("PACKFS_VIRT_HOSTS").is_ok_and(|v| v == "all");
    for (var, name, host) in [
        ("PACKFS_WASMTIME", "the wasmtime command", wasmtime_cli as Host),
        ("PACKFS_PYTHON", "wasmtime-py", wasmtime_py as Host),
    ] {
        match std::env::var_os(var) {
            Some(_) => hosts.push((name, host)),
            None if required => {
                panic!("{var} is not set: {name} is a host this test must run on (./test.sh installs it)")
            }
            None => eprintln!("warning: {var} is not set: not run on {name} (./test.sh installs it)"),
        }
    }
    hosts
}

/// Where the jco test finds each component, its transcript and tree; and
/// the packs a `HostPacks` component reads from its `/out`.
fn for_jco(file: &str, component: &[u8], run: &Run) {
    let dir = support::guest_target_dir().join("virt");
    std::fs::create_dir_all(&dir).unwrap();
    let (seed, ro) = packs();
    for (name, pack) in [("seed.pack", seed), ("ro.pack", ro)] {
        std::fs::write(dir.join(name), pack).unwrap();
    }
    std::fs::write(dir.join(format!("{file}.wasm")), component).unwrap();
    std::fs::write(dir.join(format!("{file}.txt")), &run.stdout).unwrap();
    let tree = hashed(&run.tree);
    std::fs::write(dir.join(format!("{file}.tree")), tree).unwrap();
}

fn check(name: &str, target: &str, wasm: PathBuf) {
    let file = format!("{name}-{target}");
    let guest = std::fs::read(&wasm).unwrap_or_else(|e| panic!("{}: {e}", wasm.display()));
    let component = component_of(&guest).unwrap();
    let reference = native(name, &component);
    let on_dirs = oracle_on_dirs(name, &component);
    for (run, on) in [(&reference, "natively"), (&on_dirs, "on wasmtime-wasi's directories")] {
        assert_eq!(run.status, 0, "{file} {on} exited {}:\n{}", run.status, run.stderr);
        assert!(run.stdout.ends_with("done\n"), "{file} {on} did not finish:\n{}", run.stdout);
    }
    let dir = tempfile::tempdir().unwrap();
    for trees in [Trees::Embedded, Trees::HostPacks, Trees::HostDirs] {
        let want = if trees == Trees::HostDirs { &on_dirs } else { &reference };
        let virt = virtualized(&guest, trees);
        let path = dir.path().join(format!("{file}-{trees:?}.virt.wasm"));
        std::fs::write(&path, &virt).unwrap();
        for (host, run) in hosts() {
            let out = tempfile::tempdir().unwrap();
            prepare(out.path(), trees);
            let (status, stdout, stderr) = run(&path, name, out.path());
            let who = format!("{file} virtualized ({trees:?}), on {host}");
            assert_eq!(status, 0, "{who} exited {status}:\n{stderr}");
            assert_eq!(stdout, want.stdout, "{who}: not the transcript of the run it must match");
            assert!(left(out.path(), trees, &who) == want.tree, "{who}: not the tree the run it must match left");
        }
        match trees {
            Trees::Embedded => for_jco(&file, &virt, &reference),
            Trees::HostPacks => for_jco(&format!("{file}-hostpacks"), &virt, &reference),
            // jco's shim's directories are not wasmtime-wasi's: the
            // transcripts would not be the oracle's.
            Trees::HostDirs => {}
        }
    }
}

macro_rules! guests {
    (rust: [$($rust:ident),*], c: [$($c:ident),*]) => {
        $(
            mod $rust {
                #[test]
                fn p2() {
                    let wasm = super::support::rust_guest(stringify!($rust), "wasm32-wasip2");
                    super::check(stringify!($rust), "p2", wasm);
                }
                #[test]
                fn p1() {
                    let wasm = super::support::rust_guest(stringify!($rust), "wasm32-wasip1");
                    super::check(stringify!($rust), "p1", wasm);
                }
            }
        )*
        const C_GUESTS: &[&str] = &[$(stringify!($c)),*];
        $(
            mod $c {
                #[test]
                fn p1() {
                    let wasm = super::support::c_guest(stringify!($c), super::C_GUESTS);
                    super::check(stringify!($c), "c", wasm);
                }
            }
        )*
    };
}

guests! {
    rust: [files, dirs, links, meta, readonly, seeded],
    c: [c_stdio, c_dirs, c_reads]
}
