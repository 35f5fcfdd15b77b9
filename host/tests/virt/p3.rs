//! WASI 0.3 guests (`guest-tests/p3`: `p3_files`, `p3_dirs`), composed
//! with the virtual filesystem over the packs of the starting trees, each
//! a preopen of its own as these guests ask (`/` an overlay over the seed
//! tree's, `/ro` the `/ro` tree's, read-only), embedded or
//! in the host's files: each must print on wasmtime-wasi's 0.3 (in this
//! process) and on the `wasmtime` command (`-Wcomponent-model-async
//! -Sp3`) what it prints on PackFS's own host over the same namespace.
//! (wasmtime-py and jco's shim serve no WASI 0.3.)

use super::*;

/// The runner's engine of WASI 0.3 components.
fn p3_engine() -> &'static Engine {
    runner().engine(Kind::P3)
}

/// The guest on PackFS's own host over the namespace `virtualized` builds.
fn native(name: &str, wasm: &[u8]) -> String {
    let runner = runner();
    let guest = runner.load(wasm).unwrap();
    let out = Capture::new(16 << 20);
    let (seed, ro) = packs();
    let seed: Arc<dyn FileSystem> = Arc::new(PackFs::open(seed.clone()).unwrap());
    let sandbox = Sandbox::new()
        .arg(name)
        .stdout(out.clone())
        .preopen("/", Arc::new(MemFs::overlay(seed).unwrap()), Access::ReadWrite)
        .preopen("/ro", Arc::new(PackFs::open(ro.clone()).unwrap()), Access::ReadOnly);
    let status = runner.run(&guest, sandbox).unwrap_or_else(|e| panic!("{name} natively: {e:?}"));
    assert_eq!(status, 0, "{name} natively");
    String::from_utf8(out.contents()).unwrap()
}

fn on_wasmtime_wasi(component: &[u8], name: &str, out: &Path) -> (i32, String, String) {
    let component = Component::new(p3_engine(), component).unwrap();
    let (stdout, stderr) = (MemoryOutputPipe::new(16 << 20), MemoryOutputPipe::new(16 << 20));
    let mut b = WasiCtx::builder();
    b.preopened_dir(out, "/out", FsPerms::ReadWrite).unwrap();
    b.stdout(stdout.clone()).stderr(stderr.clone()).args(&[name]);
    let status = oracle::P3::new(p3_engine(), &component).and_then(|o| o.run(b.build())).unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (status, text(&stdout.contents()), text(&stderr.contents()))
}

fn on_wasmtime_command(component: &Path, name: &str, out: &Path) -> (i32, String, String) {
    let mut c = Command::new(std::env::var_os("PACKFS_WASMTIME").unwrap());
    c.args(["run", "-Wcomponent-model-async", "-Sp3", "--dir"]).arg(format!("{}::/out", out.display()));
    c.args(["--argv0", name]).arg(component);
    command(c)
}

/// A host's run of the component with `out` preopened at `/out`.
type RunIn<'a> = dyn Fn(&Path) -> (i32, String, String) + 'a;

fn check(name: &str) {
    let wasm = std::fs::read(support::p3_guest(name)).unwrap();
    let want = native(name, &wasm);
    assert!(want.ends_with("done\n"), "{name} natively did not finish:\n{want}");
    let dir = tempfile::tempdir().unwrap();
    for trees in [Trees::Embedded, Trees::HostPacks] {
        let (seed, ro) = packs();
        let virt = match trees {
            Trees::Embedded => Virt::new()
                .preopen("/", Source::Pack { bytes: seed.clone(), overlay: Some(Default::default()) })
                .preopen("/ro", Source::Pack { bytes: ro.clone(), overlay: None }),
            _ => Virt::new()
                .preopen(
                    "/",
                    Source::HostPack {
                        host_path: "/out/seed.pack".into(),
                        digest: digest(seed),
                        overlay: Some(Default::default()),
                    },
                )
                .preopen(
                    "/ro",
                    Source::HostPack { host_path: "/out/ro.pack".into(), digest: digest(ro), overlay: None },
                ),
        };
        let component = virt.build(&wasm).unwrap();
        let path = dir.path().join(format!("{name}-{trees:?}.wasm"));
        std::fs::write(&path, &component).unwrap();
        // wasmtime-wasi in this process (a debug build: tens of seconds a
        // run) takes the embedded packs; the command takes both.
        let mut hosts: Vec<(&str, Box<RunIn<'_>>)> = Vec::new();
        if trees == Trees::Embedded {
            hosts.push(("wasmtime-wasi", Box::new(|out: &Path| on_wasmtime_wasi(&component, name, out))));
        }
        if std::env::var_os("PACKFS_WASMTIME").is_some() {
            hosts.push(("the wasmtime command", Box::new(|out: &Path| on_wasmtime_command(&path, name, out))));
        }
        for (host, run) in hosts {
            let out = tempfile::tempdir().unwrap();
            prepare(out.path(), trees);
            let (status, stdout, stderr) = run(out.path());
            let who = format!("{name} virtualized ({trees:?}), on {host}");
            assert_eq!(status, 0, "{who} exited {status}:\n{stderr}");
            assert_eq!(stdout, want, "{who}: not the native transcript");
        }
    }
}

#[test]
fn p3_files() {
    check("p3_files");
}

#[test]
fn p3_dirs() {
    check("p3_dirs");
}

/// `p3_script`'s transcript on PackFS's own host and virtualized (on the
/// wasmtime command, else wasmtime-wasi), over the same preopens.
fn script(ops: &[&str]) -> (String, String) {
    let wasm = std::fs::read(support::p3_guest("p3_script")).unwrap();
    let args: Vec<&str> = [&["p3_script"][..], ops].concat();
    let (seed, ro) = packs();
    let runner = runner();
    let guest = runner.load(&wasm).unwrap();
    let out = Capture::new(1 << 20);
    let lower: Arc<dyn FileSystem> = Arc::new(PackFs::open(seed.clone()).unwrap());
    let sandbox = Sandbox::new()
        .args(args.iter().copied())
        .stdout(out.clone())
        .preopen("/", Arc::new(MemFs::overlay(lower).unwrap()), Access::ReadWrite)
        .preopen("/ro", Arc::new(PackFs::open(ro.clone()).unwrap()), Access::ReadOnly);
    assert_eq!(runner.run(&guest, sandbox).unwrap(), 0);
    let native = String::from_utf8(out.contents()).unwrap();
    let component = Virt::new()
        .preopen("/", Source::Pack { bytes: seed.clone(), overlay: Some(Default::default()) })
        .preopen("/ro", Source::Pack { bytes: ro.clone(), overlay: None })
        .build(&wasm)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (status, virt, err) = match std::env::var_os("PACKFS_WASMTIME") {
        Some(cli) => {
            let path = dir.path().join("p3_script.wasm");
            std::fs::write(&path, &component).unwrap();
            let mut c = Command::new(cli);
            c.args(["run", "-Wcomponent-model-async", "-Sp3", "--argv0", "p3_script"]).arg(&path).args(ops);
            // A stream nobody writes would wait for ever: killed, it fails.
            let child = c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
            support::kill_after(child.id(), std::time::Duration::from_secs(60));
            let out = child.wait_with_output().unwrap();
            let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
        }
        None => {
            let component = Component::new(p3_engine(), &component).unwrap();
            let stdout = MemoryOutputPipe::new(1 << 20);
            let mut b = WasiCtx::builder();
            b.stdout(stdout.clone()).args(&args);
            let status = oracle::P3::new(p3_engine(), &component).and_then(|o| o.run(b.build())).unwrap();
            (status, String::from_utf8_lossy(&stdout.contents()).into_owned(), String::new())
        }
    };
    assert_eq!(status, 0, "{err}");
    (native, virt)
}

#[test]
fn a_first_call_that_hands_out_a_stream_finds_the_streams_task_running() {
    // `read-directory` and `read-via-stream` on a preopen, before any
    // call that could start the task: the run's wrapper started it.
    let (native, virt) = script(&["list|0|100", "read|0|0|0|10", "list|1|100"]);
    assert_eq!(virt, native);
    assert!(native.starts_with("0 list|0|100: [1 of") && native.ends_with("done\n"), "{native}");
}

#[test]
fn what_a_0_3_guest_cannot_have_yet_is_refused_with_the_reason() {
    let wasm = std::fs::read(support::p3_guest("p3_files")).unwrap();
    let mem = || Source::Mem(Default::default());
    let e = Virt::new().mount("/", mem()).save("/out/x.pack").build(&wasm).unwrap_err();
    assert!(format!("{e:#}").contains("not a WASI 0.3 guest's yet"), "{e:#}");
    let dir = Source::HostDir { host_path: "/out".into(), read_only: true };
    let e = Virt::new().mount("/", mem()).preopen("/d", dir).build(&wasm).unwrap_err();
    assert!(format!("{e:#}").contains("WASI 0.2 calls only"), "{e:#}");
    let both = wat::parse_str(
        r#"(component (import "wasi:filesystem/types@0.3.0" (instance)) (import "wasi:sockets/tcp@0.2.12" (instance)))"#,
    )
    .unwrap();
    let e = Virt::new().mount("/", mem()).build(&both).unwrap_err();
    assert!(format!("{e:#}").contains("does not serve both yet"), "{e:#}");
    // 0.3's stdio and clocks hand out no wasi:io: the host's, not refused;
    // an unversioned wasi:io import must be the component's, and cannot.
    let two = |a: &str, b: &str| {
        wat::parse_str(format!(r#"(component (import "{a}" (instance)) (import "{b}" (instance)))"#)).unwrap()
    };
    for host in ["wasi:cli/stdout@0.3.0", "wasi:clocks/monotonic-clock@0.3.0"] {
        Virt::new().mount("/", mem()).build(&two("wasi:filesystem/types@0.3.0", host)).unwrap();
    }
    let e = Virt::new().mount("/", mem()).build(&two("wasi:filesystem/types@0.3.0", "wasi:io/streams")).unwrap_err();
    assert!(format!("{e:#}").contains("must serve and cannot"), "{e:#}");
}

/// `p3_streams ARGS` on PackFS's own host (`/` an empty tree) and
/// virtualized over the same on the wasmtime command with `-W` options
/// `limits`, killed if it hangs: the native transcript, and the
/// virtualized exit status and transcript. None without the command.
fn streams(args: &[&str], limits: &[&str]) -> Option<(String, i32, String)> {
    let cli = std::env::var_os("PACKFS_WASMTIME");
    let Some(cli) = cli else {
        assert!(std::env::var("PACKFS_VIRT_HOSTS").is_err(), "PACKFS_WASMTIME is not set");
        return None;
    };
    let wasm = std::fs::read(support::p3_guest("p3_streams")).unwrap();
    let runner = runner();
    let guest = runner.load(&wasm).unwrap();
    let out = Capture::new(1 << 20);
    let root: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let sandbox = Sandbox::new().arg("p3_streams").args(args.iter().copied()).stdout(out.clone()).preopen(
        "/",
        root,
        Access::ReadWrite,
    );
    assert_eq!(runner.run(&guest, sandbox).unwrap(), 0, "p3_streams {args:?} natively");
    let native = String::from_utf8(out.contents()).unwrap();
    let component = Virt::new().preopen("/", Source::Mem(Default::default())).build(&wasm).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p3_streams.wasm");
    std::fs::write(&path, &component).unwrap();
    let mut c = Command::new(cli);
    c.args(["run", "-Wcomponent-model-async", "-Sp3"]);
    for limit in limits {
        c.args(["-W", limit]);
    }
    c.args(["--argv0", "p3_streams"]).arg(&path).args(args);
    let child = c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    support::kill_after(child.id(), std::time::Duration::from_secs(60));
    let out = child.wait_with_output().unwrap();
    Some((native, out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned()))
}

#[test]
fn a_read_stream_gives_what_the_file_holds_when_the_guest_reads() {
    let Some((native, status, virt)) = streams(&["stale"], &[]) else { return };
    assert!(native.contains("bytes 10..1010 are new") && native.ends_with("done\n"), "{native}");
    assert_eq!((status, virt), (0, native));
}

#[test]
fn a_listing_read_to_its_end_holds_no_place() {
    let Some((native, status, virt)) = streams(&["listings", "512"], &[]) else { return };
    assert!(native.contains("one more listing: 1 entries"), "{native}");
    assert_eq!((status, virt), (0, native));
}

#[test]
fn streams_the_guest_holds_unread_or_unwritten_cost_the_component_little() {
    // A stream holds no piece of the file until the guest reads it, and a
    // write stream no buffer until the guest writes: 4,000 of each fit in
    // 40 MiB (a piece of 16 KiB each would be 64 MiB).
    for args in [["unread", "4000"], ["pending", "4000"]] {
        let Some((native, status, virt)) = streams(&args, &["max-memory-size=41943040"]) else { return };
        assert_eq!((status, virt), (0, native), "{args:?}");
    }
}

#[test]
fn a_write_stream_that_fails_lets_the_guests_writer_go() {
    // The guest writes all before it awaits the future: its writer must be
    // let go at the error (it waited for ever). The bytes taken differ: the
    // component reads them to try the write, the host's adapter takes none.
    let Some((native, status, virt)) = streams(&["seqerr", "200000"], &[]) else { return };
    assert!(native.ends_with("taken 0\nfuture: err ErrorCode::Invalid\ndone\n"), "{native}");
    assert_eq!(status, 0, "{virt}");
    assert!(virt.ends_with("future: err ErrorCode::Invalid\ndone\n"), "{virt}");
}
