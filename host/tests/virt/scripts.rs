//! The randomized scripts of `wasi:filesystem` 0.2 calls (`p2_scripts.rs`
//! generates them, with the same seed): `p2_script` composed with the
//! virtual filesystem over the same preopens (`/` an overlay over the
//! seed pack, `/ro` the pack itself, read-only) must answer each call as
//! it does on PackFS's own host, on wasmtime-wasi and the `wasmtime`
//! command (precompiled once), and the first few on wasmtime-py.

use super::*;
use crate::script::{Op, script, seed};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// Scripts run, as `p2_scripts.rs`.
const COUNT: usize = 48;

/// Of them, run on wasmtime-py too (each run compiles the component).
const ON_PYTHON: usize = 6;

#[test]
fn every_call_of_every_script_answers_as_natively() {
    let base = MemFs::new();
    seed(&base);
    let mut pack = Vec::new();
    write_pack(&base.snapshot(), &mut pack).unwrap();
    let wasm = std::fs::read(support::rust_guest("p2_script", "wasm32-wasip2")).unwrap();
    let virt = Virt::new()
        .preopen("/", Source::Pack { bytes: pack.clone(), overlay: Some(Default::default()) })
        .preopen("/ro", Source::Pack { bytes: pack.clone(), overlay: None })
        .build(&wasm)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p2_script.virt.wasm");
    std::fs::write(&path, &virt).unwrap();
    let component = Component::new(engine(), &virt).unwrap();
    let on_wasmtime_wasi = oracle::P2::new(engine(), &component).unwrap();
    // The `wasmtime` command, precompiled once.
    let cwasm = dir.path().join("p2_script.cwasm");
    let cli = std::env::var_os("PACKFS_WASMTIME");
    if let Some(cli) = &cli {
        let (status, _, err) = command({
            let mut c = Command::new(cli);
            c.arg("compile").arg(&path).arg("-o").arg(&cwasm);
            c
        });
        assert_eq!(status, 0, "wasmtime compile: {err}");
    }
    let python = std::env::var_os("PACKFS_PYTHON");

    let runner = runner();
    let native = runner.load(&wasm).unwrap();
    let mut rng = TestRunner::new_with_rng(Config::default(), TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    for n in 0..COUNT {
        let ops: Vec<Op> = script().new_tree(&mut rng).unwrap().current();
        let args: Vec<String> = std::iter::once("p2_script".to_owned()).chain(ops.iter().map(Op::to_string)).collect();
        let lower: Arc<dyn FileSystem> = Arc::new(PackFs::open(pack.clone()).unwrap());
        let root = Arc::new(MemFs::overlay(lower.clone()).unwrap());
        let out = Capture::new(16 << 20);
        let sandbox = Sandbox::new().args(&args).stdout(out.clone()).preopen("/", root, Access::ReadWrite).preopen(
            "/ro",
            lower,
            Access::ReadOnly,
        );
        assert_eq!(runner.run(&native, sandbox).unwrap(), 0, "script {n} natively");
        let want = String::from_utf8(out.contents()).unwrap();
        assert!(want.ends_with("done\n"), "script {n} natively did not finish:\n{want}");

        let (stdout, stderr) = (MemoryOutputPipe::new(16 << 20), MemoryOutputPipe::new(1 << 20));
        let mut b = WasiCtx::builder();
        b.stdout(stdout.clone()).stderr(stderr.clone()).args(&args);
        let status = on_wasmtime_wasi.run(b.build()).unwrap();
        let got = String::from_utf8_lossy(&stdout.contents()).into_owned();
        let err = String::from_utf8_lossy(&stderr.contents()).into_owned();
        assert_eq!((status, got.as_str()), (0, want.as_str()), "script {n}, virtualized, on wasmtime-wasi: {err}");

        if let Some(cli) = &cli {
            let (status, got, err) = command({
                let mut c = Command::new(cli);
                c.args(["run", "--allow-precompiled", "--argv0", "p2_script"]).arg(&cwasm).args(&args[1..]);
                c
            });
            assert_eq!((status, got.as_str()), (0, want.as_str()), "script {n}, virtualized, on wasmtime: {err}");
        }
        if let Some(python) = python.as_ref().filter(|_| n < ON_PYTHON) {
            let (status, got, err) = command({
                let mut c = Command::new(python);
                let script = support::workspace().join("host/tests/virt/run_component.py");
                c.arg(script).arg(&path).arg(dir.path()).args(&args);
                c
            });
            assert_eq!((status, got.as_str()), (0, want.as_str()), "script {n}, virtualized, on wasmtime-py: {err}");
        }
    }
}
