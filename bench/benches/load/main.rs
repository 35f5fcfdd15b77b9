//! Starting guests: how long a whole process takes from nothing to a
//! guest's exit, warm (the compiled guest cached) and cold (compiled
//! afresh), against wasmtime 48's own API in the same run; and how fast and
//! how small many sandboxes of one module are (`sandboxes.rs`).
//!
//! ```sh
//! cargo bench -p packfs-bench --bench load
//! # with `packfs run` beside them, the release binary, and the `wasmtime`
//! # command's rows (`$WASMTIME`, or installed here):
//! cargo build --release -p packfs-cli
//! cargo install wasmtime-cli --version 48.0.8 --locked --root target/wasmtime-cli
//! cargo bench -p packfs-bench --bench load
//! ```
//!
//! The modules: a trivial command (`_start` yields once), and a generated
//! one of 52 MB of code and a 4 MiB data segment, as an interpreter is
//! (`modules.rs`). `LOAD_RUNS` warm runs (11) and `LOAD_COLD_RUNS` cold runs
//! (5) per row, interleaved, medians and spread. Under `cargo test`, a smoke run:
//! the trivial module once per row, and a few small sandboxes.
//! `LOAD_PARTS=startup,instantiate,density` picks what runs (all of it).

mod modules;
mod peer;
mod proc;
mod sandboxes;
mod startup;

use std::path::PathBuf;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, kind, rest @ ..] = args.as_slice()
        && flag == "--child"
    {
        let done = match kind.as_str() {
            "spawn" => proc::spawn(rest),
            "density" => sandboxes::child(rest),
            _ => startup::child(kind, rest),
        };
        assert!(done, "unknown child {kind} {rest:?}");
        return;
    }
    let bench = args.iter().any(|a| a == "--bench");
    // `LOAD_PARTS`: which of startup, instantiate and density to run (all).
    let parts = std::env::var("LOAD_PARTS").unwrap_or_else(|_| "startup,instantiate,density".into());
    let part = |name: &str| parts.split(',').any(|p| p.trim() == name);
    // `packfs run` too, when its release binary is built.
    let bin = std::env::var_os("PACKFS_BIN").map(PathBuf::from).or_else(|| {
        let release = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release/packfs");
        release.exists().then_some(release)
    });
    let bin = bin.filter(|_| bench);
    let mut md = String::new();
    if part("startup") {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, wasm: Vec<u8>| {
            let path = dir.path().join(name);
            std::fs::write(&path, wasm).unwrap();
            path
        };
        let mut modules: Vec<(&str, PathBuf)> =
            vec![("trivial", write("trivial.wasm", modules::command(&modules::Body::Yield, 0, 0)))];
        if bench {
            modules.push(("large", write("large.wasm", modules::command(&modules::Body::Yield, 52 << 20, 4 << 20))));
        }
        md += &startup::run(bench, &modules, bin.as_deref());
    }
    if part("instantiate") {
        md += &sandboxes::instantiate(bench);
    }
    if part("density") {
        md += &sandboxes::density(bench);
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let md = format!(
        "{md}\n{}; {cores} cores; packfs run: {}",
        startup::config_diff(),
        bin.as_ref().map_or("not built".into(), |b| b.display().to_string())
    );
    println!("{md}");
    if packfs_bench::results::whole_run() && std::env::var_os("LOAD_PARTS").is_none() {
        let mut results = packfs_bench::results::Results::new(
            "load",
            "cargo build --release -p packfs-cli && cargo bench -p packfs-bench --bench load",
            &["bench/benches/load", "host/src", "host/cli/src/run", "core/src", "Cargo.lock"],
        );
        results.push(&md);
        results.write().unwrap_or_else(|e| panic!("writing bench/load-results.md: {e}"));
    }
}
