//! The reference for the 0.2 side of the scripted test: [`COUNT`] scripts
//! of `wasi:filesystem` 0.2 calls, generated as `p3_differential.rs`
//! generates its own (`script/`, a fixed seed), each run by the `p2_script`
//! guest on PackFS natively over an overlay of the seed pack (`/`) and the
//! pack itself (`/ro`). Each must finish; the scripts and their
//! transcripts go to `target/guest-tests/browser/p2-scripts/` (`N.args`,
//! one argument a line; `N.txt`; `seed.pack`), where
//! `web/e2e/preview2.test.mjs` runs the same scripts through jco and
//! packfs-web/preview2 and must print the same, line for line.

use packfs_test_support as support;

mod script;

use std::sync::Arc;

use packfs_core::pack::{PackFs, write_pack};
use packfs_core::{FileSystem, MemFs};
use packfs_host::load::Kind;
use packfs_host::{Access, Capture};
use packfs_host::{Runner, Sandbox};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use script::{Op, script, seed};

/// Scripts written.
const COUNT: usize = 48;

#[test]
fn p2_scripts_run_natively_for_the_jco_adapter() {
    let runner = Runner::builder().build().unwrap();
    let component = runner.load(&support::rust_guest("p2_script", "wasm32-wasip2")).unwrap();
    assert_eq!(component.kind(), Kind::P2, "p2_script is a 0.2 component");
    let base = MemFs::new();
    seed(&base);
    let mut pack = Vec::new();
    write_pack(&base.snapshot(), &mut pack).unwrap();
    let dir = support::guest_target_dir().join("browser/p2-scripts");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("seed.pack"), &pack).unwrap();
    std::fs::copy(support::rust_guest("p2_script", "wasm32-wasip2"), dir.join("p2_script.wasm")).unwrap();

    let mut rng = TestRunner::new_with_rng(Config::default(), TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    for n in 0..COUNT {
        let ops: Vec<Op> = script().new_tree(&mut rng).unwrap().current();
        let args: Vec<String> = std::iter::once("p2_script".to_owned()).chain(ops.iter().map(Op::to_string)).collect();
        let lower: Arc<dyn FileSystem> = Arc::new(PackFs::open(pack.clone()).unwrap());
        let root = Arc::new(MemFs::overlay(lower.clone()).unwrap());
        let (out, err) = (Capture::new(16 << 20), Capture::new(1 << 20));
        let sandbox = Sandbox::new()
            .args(&args)
            .stdout(out.clone())
            .stderr(err.clone())
            .preopen("/", root, Access::ReadWrite)
            .preopen("/ro", lower, Access::ReadOnly);
        let status = runner.run(&component, sandbox).unwrap_or_else(|e| panic!("script {n} trapped: {e:?}"));
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.contents()).into_owned(),
            String::from_utf8_lossy(&err.contents()).into_owned(),
        );
        assert_eq!(status, 0, "script {n}: {stderr}");
        assert!(stdout.ends_with("done\n"), "script {n} did not finish:\n{stdout}\n{stderr}");
        assert_eq!(stdout.lines().count(), ops.len() + 1, "script {n}: a line per call");
        std::fs::write(dir.join(format!("{n}.args")), args[1..].iter().map(|a| format!("{a}\n")).collect::<String>())
            .unwrap();
        std::fs::write(dir.join(format!("{n}.txt")), stdout).unwrap();
    }
}
