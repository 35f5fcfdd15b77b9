//! The `packfs` command on packs given as URLs: served over plain HTTP by
//! the test file server, and from SeaweedFS over S3, through the counting
//! and fault-injecting proxy. Every reading subcommand gives what it gives
//! for the same pack as a file; `run` mounts them; the host-wide cache
//! serves later runs, is shared by concurrent ones (each chunk fetched
//! once) and survives `kill -9`; traces prefetch.

use packfs_test_support as support;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use packfs_testnet::{ACCESS_KEY, Fault, FileServer, Proxy, SECRET_KEY, Seaweed};

#[derive(Debug)]
struct Out {
    code: i32,
    stdout: Vec<u8>,
    stderr: String,
}

fn packfs<S: AsRef<OsStr>>(cwd: &Path, env: &[(&str, &str)], args: impl IntoIterator<Item = S>) -> Out {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_packfs"));
    cmd.args(args).current_dir(cwd).env("PACKFS_CACHE_DIR", support::guest_cache_dir());
    for (k, _) in std::env::vars() {
        if k.starts_with("AWS_") {
            cmd.env_remove(k);
        }
    }
    let out = cmd.envs(env.iter().copied()).stdin(Stdio::null()).output().expect("runs packfs");
    Out {
        code: out.status.code().expect("exits, not killed"),
        stdout: out.stdout,
        stderr: String::from_utf8(out.stderr).expect("UTF-8 stderr"),
    }
}

#[track_caller]
fn ok(out: Out) -> Vec<u8> {
    assert_eq!(out.code, 0, "{out:?}");
    out.stdout
}

/// A working directory with `tree/` packed into `app.pack` (zstd chunks
/// of 64 KiB, so that `big.bin` spans many; its bytes do not compress, so
/// that most of them lie before the open's 64 KiB tail and are fetched as
/// read), served over HTTP through a proxy.
struct Fixture {
    dir: tempfile::TempDir,
    _server: FileServer,
    proxy: Proxy,
    big: Vec<u8>,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("tree");
        std::fs::create_dir_all(tree.join("data/sub")).unwrap();
        std::fs::create_dir_all(tree.join("etc")).unwrap();
        std::fs::write(tree.join("data/a.txt"), "alpha beta\ngamma\n").unwrap();
        std::fs::write(tree.join("data/sub/b.txt"), "one two three\n").unwrap();
        std::fs::write(tree.join("etc/motd"), "hello from the pack\n").unwrap();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let big: Vec<u8> = (0..3_000_000)
            .map(|_| {
                // xorshift64: bytes zstd cannot shrink.
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x.to_le_bytes()[0]
            })
            .collect();
        std::fs::write(tree.join("data/big.bin"), &big).unwrap();
        std::os::unix::fs::symlink("a.txt", tree.join("data/link")).unwrap();
        let served = dir.path().join("served");
        std::fs::create_dir(&served).unwrap();
        ok(packfs(dir.path(), &[], ["pack", "tree", "-o", "served/app.pack", "--chunk-size", "65536"]));
        let server = FileServer::start(&served);
        let proxy = Proxy::start(server.addr());
        Fixture { dir, _server: server, proxy, big }
    }

    fn url(&self) -> String {
        format!("{}/app.pack", self.proxy.url())
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    /// `packfs --cache CACHE ARGS`.
    fn run<S: AsRef<OsStr>>(&self, cache: &str, args: impl IntoIterator<Item = S>) -> Out {
        let mut argv: Vec<std::ffi::OsString> = vec!["--cache".into(), self.path(cache).into()];
        argv.extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        packfs(self.dir.path(), &[], argv)
    }
}

#[test]
fn reading_subcommands_answer_for_a_url_as_for_the_file() {
    let f = Fixture::new();
    let (url, file) = (f.url(), "served/app.pack".to_owned());
    let cases: &[&[&str]] = &[
        &["ls", "-l", "-R", "PACK"],
        &["ls", "PACK", "data"],
        &["cat", "PACK", "data/a.txt", "etc/motd", "data/big.bin"],
        &["stat", "PACK", "data/link"],
        &["stat", "-L", "PACK", "data/link"],
        &["info", "PACK"],
        &["verify", "PACK"],
        &["diff", "PACK", "served/app.pack"],
    ];
    for case in cases {
        let with =
            |p: &str| case.iter().map(|a| if *a == "PACK" { p.to_owned() } else { a.to_string() }).collect::<Vec<_>>();
        let local = packfs(f.dir.path(), &[], with(&file));
        let remote = f.run("cache", with(&url));
        assert_eq!(remote.code, local.code, "{case:?}: {remote:?}");
        let shown = String::from_utf8_lossy(&remote.stdout).replace(&url, &file);
        assert_eq!(shown, String::from_utf8_lossy(&local.stdout), "{case:?}");
    }
    ok(f.run("cache", ["unpack", &url, "out"]));
    assert_eq!(std::fs::read(f.path("out/data/big.bin")).unwrap(), f.big);
    assert_eq!(std::fs::read_link(f.path("out/data/link")).unwrap(), Path::new("a.txt"));
}

#[test]
fn run_mounts_a_url_and_the_cache_serves_the_next_run() {
    let f = Fixture::new();
    support::build_rust_guests();
    let toolbox = support::rust_guest("toolbox", "wasm32-wasip1");
    let guest = |cache: &str, extra: &[&str]| {
        let mount = format!("/={}+mem", f.url());
        let mut args: Vec<&OsStr> = vec!["run".as_ref(), "--stats".as_ref(), "--mount".as_ref(), mount.as_ref()];
        args.extend(extra.iter().map(OsStr::new));
        args.push(toolbox.as_os_str());
        args.extend(["cat", "/data/big.bin", "write", "/new.txt", "x", "cat", "/etc/motd"].map(OsStr::new));
        f.run(cache, args)
    };
    let first = guest("c1", &["--record-trace", "trace.txt"]);
    let mut want = f.big.clone();
    want.extend_from_slice(b"hello from the pack\n");
    assert!(ok(first) == want);
    f.proxy.reset_stats();
    // The same cache: nothing but the open is fetched.
    let second = guest("c1", &[]);
    assert!(second.stderr.contains(" 0 chunks fetched after the open"), "{second:?}");
    assert!(second.stderr.contains("; unpinned"), "--stats names an unpinned pack so: {second:?}");
    assert!(ok(second) == want);
    // The open's, and one for a trace published beside the pack (none).
    assert_eq!(f.proxy.stats().requests, OPEN.len() as u64 + 1);
    // A cold cache with the trace: everything the guest read was asked for
    // ahead, and the output is the same.
    let trace = std::fs::read_to_string(f.path("trace.txt")).unwrap();
    assert!(trace.starts_with("packfs-trace 2\n") && trace.lines().count() > 40, "{trace}");
    let third = guest("c2", &["--prefetch", "trace.txt"]);
    assert!(ok(third) == want);
    // A trace stored next to the pack, as an object: written and read by URL.
    let trace_url = format!("{}/app.trace", f.proxy.url());
    assert!(ok(guest("c3", &["--record-trace", &trace_url])) == want);
    assert_eq!(std::fs::read_to_string(f.path("served/app.trace")).unwrap().lines().next(), Some("packfs-trace 2"));
    assert!(ok(guest("c4", &["--prefetch", &trace_url])) == want);
    let out = guest("c5", &["--prefetch", &format!("{}/none.trace", f.proxy.url())]);
    assert_eq!(out.code, 2, "{out:?}");
    // Published beside the pack as PACK.trace: found without a flag, on a
    // cold cache; --no-prefetch leaves it.
    let beside = format!("{}.trace", f.url());
    assert!(ok(guest("c6", &["--record-trace", &beside])) == want);
    let found = guest("c7", &[]);
    assert!(found.stderr.contains("a published trace prefetched"), "{found:?}");
    assert!(ok(found) == want);
    let left = guest("c8", &["--no-prefetch"]);
    assert!(!left.stderr.contains("published trace"), "{left:?}");
    assert!(ok(left) == want);
    // Pinned by the digest `info` prints: --stats says so.
    let info = String::from_utf8(ok(f.run("c1", ["info", &f.url()]))).unwrap();
    let digest = info.lines().find_map(|l| l.strip_prefix("digest:")).unwrap().trim().to_owned();
    let mount = format!("/={}@{digest}+mem", f.url());
    let args = ["run", "--stats", "--mount", &mount, toolbox.to_str().unwrap(), "cat", "/etc/motd"];
    let out = f.run("c1", args);
    assert!(out.stderr.contains(&format!("; pinned {digest}")), "{out:?}");
    assert_eq!(ok(out), b"hello from the pack\n");
}

#[test]
fn concurrent_runs_fetch_each_chunk_once() {
    let f = Fixture::new();
    // What one open costs, without a cache.
    ok(f.run("none", ["--cache-size", "0", "ls", &f.url()]));
    let open = f.proxy.stats();
    assert_eq!(open.requests, OPEN.len() as u64);
    f.proxy.reset_stats();
    f.proxy.set_delay(Duration::from_millis(10));
    let cache = f.path("shared");
    let url = f.url();
    let children: Vec<_> = (0..8)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_packfs"))
                .arg("--cache")
                .arg(&cache)
                .args(["cat", &url, "data/big.bin"])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success());
        assert!(out.stdout == f.big);
    }
    let pack_len = std::fs::metadata(f.path("served/app.pack")).unwrap().len();
    let st = f.proxy.stats();
    // Eight opens, and then each chunk once: at most the pack once (the
    // open's tail may end inside a chunk, which is then fetched whole; one
    // chunk fetched twice would put 64 KiB more past that).
    let data = st.bytes - 8 * open.bytes;
    assert!(data > 0 && data <= pack_len, "{st:?}: {data} data bytes for a pack of {pack_len}");
}

/// Starts `packfs --cache CACHE ARGS` in `cwd`, its output thrown away.
fn spawn(cwd: &Path, cache: &Path, args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_packfs"))
        .arg("--cache")
        .arg(cache)
        .args(args)
        .current_dir(cwd)
        .env("PACKFS_CACHE_DIR", support::guest_cache_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until `cond` holds (the tests' own guards end a child that
/// would make it wait for ever).
fn wait_until(mut cond: impl FnMut() -> bool) {
    while !cond() {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// What one open asks the proxy for: the last 64 KiB (the trailer and the
/// whole index of this pack), then the header (two ranged requests).
const OPEN: [Fault; 2] = [Fault::Pass; 2];

/// `kill -9` while a fetch is under way, each time: the proxy sends half
/// of the reply's body and holds the rest, and the kill lands while it
/// holds it. A run before them leaves entries in the cache, so that the
/// last run's check has something to check (hits, not an empty cache
/// passing it), and none may be damaged.
#[test]
fn the_cache_survives_kill_9_mid_fetch() {
    let f = Fixture::new();
    let cache = f.path("c");
    ok(f.run("c", ["cat", &f.url(), "data/a.txt", "etc/motd"]));
    for _ in 0..5 {
        let stalls = f.proxy.stalls();
        let mut faults = OPEN.to_vec();
        faults.push(Fault::StallBody(Duration::from_secs(20)));
        f.proxy.inject(&faults);
        let mut child = spawn(f.dir.path(), &cache, &["cat", &f.url(), "data/big.bin"]);
        // The reply is held, or the run ended without meeting it.
        wait_until(|| f.proxy.stalls() > stalls || child.try_wait().unwrap().is_some());
        assert!(child.try_wait().unwrap().is_none(), "the run ended without its fetch being held");
        child.kill().unwrap(); // SIGKILL
        let _ = child.wait();
        assert_eq!(f.proxy.pending(), 0);
    }
    let out = f.run("c", ["--stats", "cat", &f.url(), "data/a.txt", "etc/motd", "data/big.bin"]);
    // `packfs: cache DIR: N hits (...), ...`
    let hits: u64 = (out.stderr.lines())
        .find_map(|l| l.strip_prefix("packfs: cache ")?.split(": ").nth(1)?.split(' ').next()?.parse().ok())
        .unwrap_or(0);
    assert!(hits > 0, "the first run left entries to check: {out:?}");
    assert!(out.stderr.contains(" 0 damaged"), "{out:?}");
    let mut want = b"alpha beta\ngamma\nhello from the pack\n".to_vec();
    want.extend_from_slice(&f.big);
    assert!(ok(out) == want);
}

/// A guest whose read waits on a fetch stops at `--timeout` too: the proxy
/// holds every data reply mid-body for a minute, and the run ends with
/// 124 (it is killed after a minute if the deadline does not end it).
#[test]
fn a_timeout_ends_a_guest_waiting_for_a_fetch() {
    let f = Fixture::new();
    support::build_rust_guests();
    let toolbox = support::rust_guest("toolbox", "wasm32-wasip1");
    let mut faults = OPEN.to_vec();
    faults.extend([Fault::StallBody(Duration::from_secs(60)); 32]);
    f.proxy.inject(&faults);
    let stalls = f.proxy.stalls();
    let mount = format!("/={}", f.url());
    let start = std::time::Instant::now();
    let args = ["run", "--timeout", "1", "--mount", &mount, toolbox.to_str().unwrap(), "cat", "/data/big.bin"];
    let child = spawn(f.dir.path(), &f.path("c"), &args);
    support::kill_after(child.id(), Duration::from_secs(60));
    let out = child.wait_with_output().unwrap();
    let took = start.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(f.proxy.stalls() > stalls, "the guest's read waited on a held reply");
    assert_eq!(out.status.code(), Some(124), "{stderr}");
    assert!(stderr.contains("time limit"), "{stderr}");
    println!("ended {took:?} after it started (--timeout 1)");
}

/// A pack of 33 KB from any server, whose index is one zstd frame
/// declaring a 2 TiB window over 1 GiB of RLE blocks, or 64 GiB (2 MB):
/// `run` mounting it and `info` refuse it as corrupt, holding no more than
/// a run on a sound pack does, give or take 32 MiB. On
/// 65991d3 `run` peaked at 1.09 GB, and the 2 MB one made it abort.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
#[test]
fn a_served_frame_declaring_a_huge_window_is_refused_in_bounded_memory() {
    use packfs_core::pack::fuzzing::{Head, window_bomb};
    use std::io::Read;
    let f = Fixture::new();
    support::build_rust_guests();
    let toolbox = support::rust_guest("toolbox", "wasm32-wasip1");
    let base = std::fs::read(f.path("served/app.pack")).unwrap();
    // What a run on the pack itself holds, as the yardstick.
    let mount = format!("/={}+mem", f.url());
    let child = spawn(f.dir.path(), &f.path("c"), &["run", "--mount", &mount, toolbox.to_str().unwrap(), "ls", "/"]);
    let (code, good) = support::wait_peak_rss(child);
    assert_eq!(code, 0);
    for (i, zeros) in [1usize << 30, 64 << 30].into_iter().enumerate() {
        std::fs::write(f.path("served/bomb.pack"), window_bomb(&base, Head::window(31 << 3 | 7), zeros)).unwrap();
        let url = format!("{}/bomb.pack", f.proxy.url());
        let mount = format!("/={url}+mem");
        let runs: [&[&str]; 2] = [&["run", "--mount", &mount, toolbox.to_str().unwrap(), "ls", "/"], &["info", &url]];
        for args in runs {
            let mut child = spawn(f.dir.path(), &f.path(&format!("c{i}")), args);
            let mut stderr = String::new();
            child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
            let (code, peak) = support::wait_peak_rss(child);
            assert_eq!(code, 2, "{args:?}: {stderr}");
            assert!(stderr.contains("corrupt pack"), "{args:?}: {stderr}");
            assert!(
                peak < good + (32 << 20),
                "{args:?}: {} MiB resident at peak ({} MiB for the pack itself)",
                peak >> 20,
                good >> 20
            );
        }
    }
}

#[test]
fn bad_urls_and_unreachable_stores_are_errors() {
    let f = Fixture::new();
    let out = f.run("c", ["ls", "ftp://host/x.pack"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("unsupported scheme"), "{out:?}");
    let port = packfs_testnet::free_port();
    let out = f.run("c", ["ls", &format!("http://127.0.0.1:{port}/x.pack")]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains(&format!("127.0.0.1:{port}")), "{out:?}");
    let out = f.run("c", ["ls", &format!("{}/missing.pack", f.proxy.url())]);
    assert_eq!(out.code, 2, "{out:?}");
    // Not a pack: damaged, which verify answers with 1.
    std::fs::write(f.path("served/junk.pack"), vec![7u8; 5000]).unwrap();
    let out = f.run("c", ["verify", &format!("{}/junk.pack", f.proxy.url())]);
    assert_eq!(out.code, 1, "{out:?}");
}

#[test]
fn s3_urls_take_credentials_region_and_endpoint_as_aws_tools_do() {
    let f = Fixture::new();
    let weed = Seaweed::start().expect("SeaweedFS for the S3 tests");
    weed.put("packs", "app.pack", &std::fs::read(f.path("served/app.pack")).unwrap()).unwrap();
    let endpoint = weed.endpoint();
    let env = [
        ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
        ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
    ];
    let cache = f.path("c");
    let cache = cache.to_str().unwrap();
    let out = packfs(f.dir.path(), &env, ["--cache", cache, "cat", "s3://packs/app.pack", "etc/motd"]);
    assert_eq!(ok(out), b"hello from the pack\n");
    support::build_rust_guests();
    let toolbox = support::rust_guest("toolbox", "wasm32-wasip1");
    let out = packfs(
        f.dir.path(),
        &env,
        [
            OsStr::new("--cache"),
            cache.as_ref(),
            "run".as_ref(),
            "--mount".as_ref(),
            "/=s3://packs/app.pack+mem".as_ref(),
            toolbox.as_os_str(),
            "cat".as_ref(),
            "/data/big.bin".as_ref(),
        ],
    );
    assert!(ok(out) == f.big);
    // Wrong credentials: refused, said so.
    let mut bad = env;
    bad[1].1 = "wrong";
    let out = packfs(f.dir.path(), &bad, ["--cache", cache, "ls", "s3://packs/app.pack"]);
    assert_eq!(out.code, 2, "{out:?}");
}

/// Issue 23, item 4: `--cache DIR --cache-size 64k` on a directory of a
/// user's files deleted some of them ("4 evicted"). The cache now refuses
/// a directory it did not make, and the command runs without it. (This
/// pack's chunks repeat, so 1k is what makes every store evict here.)
#[test]
fn the_cache_refuses_a_directory_of_a_users_files() {
    let f = Fixture::new();
    let files = ["photos/2019/img1.jpg", "projects/app/main.c", "projects/app/main.lock", "main.lock"];
    for name in files {
        let path = f.path("user").join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, name).unwrap();
    }
    let out = f.run("user", ["--cache-size", "1k", "cat", &f.url(), "data/big.bin"]);
    for name in files {
        let kept = std::fs::read_to_string(f.path("user").join(name)).ok();
        assert_eq!(kept.as_deref(), Some(name), "{}", out.stderr);
    }
    assert!(out.stderr.contains("not a packfs cache"), "{}", out.stderr);
    assert!(ok(out) == f.big);
}
