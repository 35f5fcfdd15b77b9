//! `packfs virt`, driven as a user drives it: the built binary, the
//! toolbox guest, a pack made by `packfs pack`; the component it writes
//! run by the `wasmtime` command where the test command installed one
//! (`PACKFS_WASMTIME`; required with `PACKFS_VIRT_HOSTS=all`). The
//! component hosts themselves are host/tests/virt's.

use packfs_test_support as support;

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

/// `PROGRAM ARGS` in `cwd`: exit code, stdout, stderr.
fn run<S: AsRef<OsStr>>(program: &OsStr, cwd: &Path, args: impl IntoIterator<Item = S>) -> (i32, String, String) {
    let out = Command::new(program).args(args).current_dir(cwd).output().expect("runs");
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    (out.status.code().expect("exits, not killed"), text(out.stdout), text(out.stderr))
}

fn packfs<S: AsRef<OsStr>>(cwd: &Path, args: impl IntoIterator<Item = S>) -> (i32, String, String) {
    run(env!("CARGO_BIN_EXE_packfs").as_ref(), cwd, args)
}

/// The `wasmtime` command, if this run has one.
fn wasmtime() -> Option<std::ffi::OsString> {
    let found = std::env::var_os("PACKFS_WASMTIME");
    if found.is_none() && std::env::var("PACKFS_VIRT_HOSTS").is_ok_and(|v| v == "all") {
        panic!(
            "PACKFS_WASMTIME is not set: the wasmtime command must run what packfs virt makes (./test.sh installs it)"
        );
    }
    found
}

#[test]
fn host_packs_and_host_directories_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let at = |p: &str| dir.path().join(p);
    for d in ["tree", "packs", "srv"] {
        std::fs::create_dir(at(d)).unwrap();
    }
    std::fs::write(at("tree/a.txt"), "from the host's pack\n").unwrap();
    std::fs::write(at("srv/s.txt"), "from the host's directory\n").unwrap();
    let (code, _, err) = packfs(dir.path(), ["pack", "tree", "-o", "packs/app.pack"]);
    assert_eq!(code, 0, "{err}");
    let (_, info, _) = packfs(dir.path(), ["info", "packs/app.pack"]);
    let digest = info.lines().find_map(|l| l.strip_prefix("digest:")).unwrap().trim().to_string();
    let toolbox = support::rust_guest("toolbox", "wasm32-wasip1");

    // A host path not here to read its digest from: named, or refused.
    let virt = |mounts: &[&str]| {
        let mut args = vec![OsStr::new("virt"), toolbox.as_os_str()];
        args.extend(mounts.iter().map(OsStr::new));
        args.extend(["-o", "out.wasm"].map(OsStr::new));
        packfs(dir.path(), args)
    };
    let (code, _, err) = virt(&["--mount", "/=host:/packs/app.pack+mem"]);
    assert!(code == 2 && err.contains("not here to pin") && err.contains("@blake3:"), "{err}");
    let (code, _, err) = virt(&["--mount", "/srv=dir:/srv"]);
    assert!(code == 2 && err.contains("passed through as a --preopen"), "{err}");
    let (code, _, err) = virt(&["--mount", "/=host:mem"]);
    assert!(code == 2 && err.contains("takes a pack"), "{err}");
    let run_host = [OsStr::new("run"), "--mount".as_ref(), "/=host:packs/app.pack".as_ref(), toolbox.as_os_str()];
    let (code, _, err) = packfs(dir.path(), run_host);
    assert!(code == 2 && err.contains("for packfs virt"), "{err}");

    let pinned = format!("/=host:/packs/app.pack@{digest}+mem");
    let (code, _, err) = virt(&["--mount", &pinned, "--preopen", "/rw=dir:/srv", "--preopen", "/ro=dir-ro:/srv"]);
    assert_eq!(code, 0, "{err}");
    let Some(wasmtime) = wasmtime() else { return };
    let dirs = ["--dir", "packs::/packs", "--dir", "srv::/srv"];
    let script = ["cat", "/a.txt", "write", "/a.txt", "changed", "cat", "/rw/s.txt", "write", "/rw/new", "hi"];
    let (code, out, err) = run(&wasmtime, dir.path(), [&["run"][..], &dirs, &["out.wasm"], &script].concat());
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "from the host's pack\nfrom the host's directory\n");
    assert_eq!(std::fs::read(at("srv/new")).unwrap(), b"hi", "written through to the host's directory");
    let (code, _, err) =
        run(&wasmtime, dir.path(), [&["run"][..], &dirs, &["out.wasm", "write", "/ro/x", "no"]].concat());
    assert!(code == 1 && err.contains("errno 63"), "{err}");
    assert!(!at("srv/x").exists());
    // A relative host path, pinned from the file here, is under the
    // host's preopen named `.`.
    let (code, _, err) = packfs(
        dir.path(),
        [
            "virt".as_ref(),
            toolbox.as_os_str(),
            "--mount".as_ref(),
            "/=host:packs/app.pack".as_ref(),
            "-o".as_ref(),
            "rel.wasm".as_ref(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run(&wasmtime, dir.path(), ["run", "--dir", ".", "rel.wasm", "cat", "/a.txt"]);
    assert_eq!((code, out.as_str()), (0, "from the host's pack\n"), "{err}");
    // Another pack at the path: not the pinned one, refused at the first call.
    std::fs::write(at("tree/a.txt"), "another tree\n").unwrap();
    let (code, _, err) = packfs(dir.path(), ["pack", "tree", "-o", "packs/app.pack"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run(&wasmtime, dir.path(), [&["run"][..], &dirs, &["out.wasm", "cat", "/a.txt"]].concat());
    assert!(code == 1 && out.is_empty() && err.contains("cat /a.txt"), "{err}");
}
