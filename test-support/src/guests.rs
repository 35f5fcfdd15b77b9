//! Building the guest programs of `guest-tests/` once per test process.
//!
//! Rust guests are built with cargo into `target/guest-tests` (a target dir
//! of its own, so the outer `cargo test` holding the main one does not
//! block it); C guests with `clang --target=wasm32-wasi`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The repository root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("test-support/ has a parent").to_path_buf()
}

/// Where guests and their compiled components go.
pub fn guest_target_dir() -> PathBuf {
    workspace().join("target/guest-tests")
}

/// The cache of compiled guests the tests share.
pub fn guest_cache_dir() -> PathBuf {
    guest_target_dir().join("components")
}

/// The cargo that builds guests: this test's own, or, when
/// `PACKFS_GUEST_TOOLCHAIN` names one, that toolchain's through rustup.
/// The test command sets it when it runs the host tests on a toolchain
/// without the wasm targets (the newest wasmtime's, on nightly), so the
/// guests are the very ones the other runs use.
fn guest_cargo() -> Command {
    match std::env::var("PACKFS_GUEST_TOOLCHAIN") {
        Ok(toolchain) => {
            let mut c = Command::new("rustup");
            c.args(["run", &toolchain, "cargo"]);
            // This process's toolchain must not reach the guests' build.
            for var in ["RUSTUP_TOOLCHAIN", "RUSTC", "RUSTDOC", "RUSTC_WRAPPER"] {
                c.env_remove(var);
            }
            c
        }
        Err(_) => Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())),
    }
}

/// Builds every Rust guest for both targets, once per test process.
pub fn build_rust_guests() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let status = guest_cargo()
            .args(["build", "--release", "--target", "wasm32-wasip1", "--target", "wasm32-wasip2"])
            .arg("--manifest-path")
            .arg(workspace().join("guest-tests/Cargo.toml"))
            .arg("--target-dir")
            .arg(guest_target_dir())
            // Flags meant for the host build must not leak into the guests'.
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .status()
            .expect("running cargo to build the guests");
        assert!(
            status.success(),
            "building guest-tests failed (is `rustup target add wasm32-wasip1 wasm32-wasip2` done?)"
        );
    });
}

/// Builds the WASI 0.3 guests (`guest-tests/p3`, components for
/// wasm32-wasip2), once per test process.
pub fn build_p3_guests() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let status = guest_cargo()
            .args(["build", "--release", "--locked", "--target", "wasm32-wasip2"])
            .arg("--manifest-path")
            .arg(workspace().join("guest-tests/p3/Cargo.toml"))
            .arg("--target-dir")
            .arg(guest_target_dir().join("p3"))
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .status()
            .expect("running cargo to build the p3 guests");
        assert!(status.success(), "building guest-tests/p3 failed (is `rustup target add wasm32-wasip2` done?)");
    });
}

/// The built WASI 0.3 guest `name`, building them first if this process
/// has not.
pub fn p3_guest(name: &str) -> PathBuf {
    build_p3_guests();
    guest_target_dir().join("p3/wasm32-wasip2/release").join(format!("{name}.wasm"))
}

/// The built Rust guest `name` for `triple` (`wasm32-wasip1` or
/// `wasm32-wasip2`), building the guests first if this process has not.
pub fn rust_guest(name: &str, triple: &str) -> PathBuf {
    build_rust_guests();
    guest_target_dir().join(triple).join("release").join(format!("{name}.wasm"))
}

/// Builds the C guests `names` (`guest-tests/c/NAME.c`) with clang and
/// wasi-libc, once per test process. `$WASI_CC` overrides the compiler
/// (default `clang`).
pub fn build_c_guests(names: &[&str]) {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let cc = std::env::var("WASI_CC").unwrap_or_else(|_| "clang".into());
        let out = guest_target_dir().join("c");
        std::fs::create_dir_all(&out).unwrap();
        for name in names {
            let src = workspace().join("guest-tests/c").join(format!("{name}.c"));
            let status = Command::new(&cc)
                .args(["--target=wasm32-wasi", "-O2", "-Wall", "-Werror", "-o"])
                .arg(out.join(format!("{name}.wasm")))
                .arg(&src)
                .status()
                .unwrap_or_else(|e| {
                    panic!("running {cc}: {e} (C guests need: apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32)")
                });
            assert!(status.success(), "compiling {} failed", src.display());
        }
    });
}

/// The built C guest `name`, building `all` (every C guest) first if this
/// process has not.
pub fn c_guest(name: &str, all: &[&str]) -> PathBuf {
    build_c_guests(all);
    guest_target_dir().join("c").join(format!("{name}.wasm"))
}
