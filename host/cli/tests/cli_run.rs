//! `packfs run` and `packfs compact`, driven as a user drives them: the
//! built binary, a guest from `guest-tests/` (`toolbox`, whose arguments
//! are commands; `demo`; a C guest), real files, exit codes and output.
//!
//! Every SOURCE kind, nested mounts, arguments, environment, stdin, exit
//! status, traps, `--save` round trips (run, save, then `ls`/`cat` the
//! saved pack), a journal surviving from one run to the next and compacted,
//! and the errors: a missing module, pack or directory, bad `--mount`
//! specs, a mount point that cannot be made.

use packfs_test_support as support;

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What one run printed and how it ended.
#[derive(Debug, Clone)]
struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// `packfs ARGS`, with `stdin` as its standard input, the tests' shared
/// cache of compiled guests and a working directory of the test's own.
fn packfs_in<S: AsRef<OsStr>>(cwd: &Path, args: impl IntoIterator<Item = S>, stdin: &[u8]) -> Out {
    packfs_cached(cwd, &support::guest_cache_dir(), args, stdin)
}

/// As [`packfs_in`], with `cache` as `$PACKFS_CACHE_DIR`.
fn packfs_cached<S: AsRef<OsStr>>(cwd: &Path, cache: &Path, args: impl IntoIterator<Item = S>, stdin: &[u8]) -> Out {
    let mut child = Command::new(env!("CARGO_BIN_EXE_packfs"))
        .args(args)
        .current_dir(cwd)
        .env("PACKFS_CACHE_DIR", cache)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs packfs");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin).unwrap();
    drop(input);
    let out = child.wait_with_output().unwrap();
    Out {
        code: out.status.code().expect("exits, not killed"),
        stdout: String::from_utf8(out.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("UTF-8 stderr"),
    }
}

/// A test's working directory holding `app.pack`, packed from `tree/`:
///
/// ```text
/// data/a.txt        "alpha beta\ngamma\n"
/// data/sub/b.txt    "one two three\n"
/// etc/motd          "hello from the pack\n"
/// ```
struct Fixture {
    dir: tempfile::TempDir,
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
        let f = Fixture { dir };
        f.ok(["pack", "tree", "-o", "app.pack"]);
        f
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    fn packfs<S: AsRef<OsStr>>(&self, args: impl IntoIterator<Item = S>) -> Out {
        packfs_in(self.dir.path(), args, b"")
    }

    /// `packfs ARGS` must exit 0; returns its stdout.
    fn ok<S: AsRef<OsStr>>(&self, args: impl IntoIterator<Item = S>) -> String {
        let out = self.packfs(args);
        assert_eq!(out.code, 0, "{out:?}");
        out.stdout
    }

    /// `packfs run MOUNTS... toolbox.wasm COMMANDS...` (p1).
    fn toolbox(&self, mounts: &[&str], commands: &[&str]) -> Out {
        self.run_guest(&toolbox(P1), mounts, commands)
    }

    fn run_guest(&self, guest: &Path, options: &[&str], args: &[&str]) -> Out {
        let mut argv: Vec<&OsStr> = vec!["run".as_ref()];
        argv.extend(options.iter().map(OsStr::new));
        argv.push(guest.as_os_str());
        argv.extend(args.iter().map(OsStr::new));
        self.packfs(argv)
    }
}

const P1: &str = "wasm32-wasip1";
const P2: &str = "wasm32-wasip2";

fn toolbox(triple: &str) -> PathBuf {
    support::rust_guest("toolbox", triple)
}

/// The run must exit 0; returns its stdout.
#[track_caller]
fn success(out: Out) -> String {
    assert_eq!(out.code, 0, "{out:?}");
    out.stdout
}

/// `packfs` itself must fail: exit 2, one line `packfs: ...` holding every
/// one of `needles`.
#[track_caller]
fn refused(out: Out, needles: &[&str]) {
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(out.stderr.lines().count(), 1, "one line: {out:?}");
    assert!(out.stderr.starts_with("packfs: "), "{out:?}");
    for n in needles {
        assert!(out.stderr.contains(n), "{n:?} in {out:?}");
    }
}

/// The guest must fail a command: exit 1, toolbox's message on stderr.
#[track_caller]
fn guest_failed(out: Out, needle: &str) {
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains(needle), "{needle:?} in {out:?}");
}

#[test]
fn without_mounts_the_guest_has_no_preopens() {
    let f = Fixture::new();
    guest_failed(f.toolbox(&[], &["ls", "/"]), "ls /");
}

#[test]
fn default_root_is_an_empty_writable_tree() {
    let f = Fixture::new();
    let out = success(f.toolbox(
        &["--mount", "/t=mem"],
        &["ls", "/", "mkdir", "/a/b", "write", "/a/b/f", "x", "cat", "/a/b/f", "ls", "/"],
    ));
    assert_eq!(out, "t\nxa\nt\n");
}

/// `--timeout` and `--max-memory` end the guest with their own status and
/// one line saying why; a mount's limits show the guest EDQUOT.
#[test]
fn limits_end_a_run_with_their_own_status() {
    let f = Fixture::new();
    let spin = r#"(module (memory (export "memory") 1) (func (export "_start") (loop (br 0))))"#;
    std::fs::write(f.path("spin.wasm"), wat::parse_str(spin).unwrap()).unwrap();
    let grow = r#"(module (memory (export "memory") 1)
        (func (export "_start") (loop (br_if 0 (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))))"#;
    std::fs::write(f.path("grow.wasm"), wat::parse_str(grow).unwrap()).unwrap();
    let out = f.packfs(["run", "--timeout", "0.3", "spin.wasm"]);
    assert_eq!(out.code, 124, "{out:?}");
    assert!(out.stderr.contains("time limit"), "{out:?}");
    let out = f.packfs(["run", "--max-memory", "8M", "grow.wasm"]);
    assert_eq!(out.code, 137, "{out:?}");
    assert!(out.stderr.contains("memory limit of 8388608 bytes"), "{out:?}");
    assert_eq!(out.stderr.lines().count(), 1, "{out:?}");

    let out = f.toolbox(&["--mount", "/t=mem:max-bytes=10"], &["write", "/t/a", "12345", "write", "/t/b", "123456"]);
    guest_failed(out.clone(), "Quota");
    assert!(out.stderr.contains("errno 19") && out.stderr.contains("--mount /t: full"), "{out:?}");
    let out = f.toolbox(&["--mount", "/t=mem:max-inodes=2"], &["mkdir", "/t/a", "mkdir", "/t/b"]);
    guest_failed(out, "errno 19");
    // A journal's tree is held in memory too: the same limits.
    let big = "x".repeat(3000);
    let out = f.toolbox(&["--mount", "/t=journal:j:max-bytes=2k"], &["write", "/t/a", "1", "write", "/t/b", &big]);
    guest_failed(out.clone(), "Quota");
    assert!(out.stderr.contains("--mount /t: full"), "{out:?}");
    // What fit was kept, durably: `a`, and `b` made but empty (its write
    // was refused whole).
    let out = success(f.toolbox(&["--mount", "/t=journal:j"], &["cat", "/t/a", "cat", "/t/b", "ls", "/t"]));
    assert_eq!(out, "1a\nb\n");
    for bad in ["mem:max-bytes=lots", "mem:colour=red", "mem:max-bytes"] {
        refused(f.packfs(["run", "--mount", &format!("/t={bad}"), "spin.wasm"]), &["--mount"]);
    }
    refused(f.packfs(["run", "--timeout", "0", "spin.wasm"]), &["--timeout"]);
    refused(f.packfs(["run", "--max-memory", "8X", "spin.wasm"]), &["--max-memory"]);
    refused(f.packfs(["run", "--save", "x.pack", "spin.wasm"]), &["--save needs a --mount"]);
}

/// `packfs ARGS` with its stdin a pipe held open and never written (a
/// guest reading it waits for ever), killed if it has not ended after
/// `limit`; how it ended and when.
fn packfs_waiting<S: AsRef<OsStr>>(
    cwd: &Path,
    args: impl IntoIterator<Item = S>,
    guard: std::time::Duration,
) -> (Out, std::time::Duration) {
    let start = std::time::Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_packfs"))
        .args(args)
        .current_dir(cwd)
        .env("PACKFS_CACHE_DIR", support::guest_cache_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs packfs");
    support::kill_after(child.id(), guard);
    // Held open, never written, until the child has ended.
    let stdin = child.stdin.take();
    let out = child.wait_with_output().unwrap();
    let took = start.elapsed();
    drop(stdin);
    let out = Out {
        code: out.status.code().expect("exits, not killed: the deadline did not end it"),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    };
    (out, took)
}

/// A guest blocked in a host call stops at `--timeout` too: a sleep (one
/// clock subscription, wasmtime's special case, and two), a read of stdin
/// that no input will ever answer, and writes to a stdout no one reads. Each would block for an hour or
/// for ever; the run is killed after 30 s if the deadline does not end it.
#[test]
fn a_timeout_ends_a_guest_blocked_in_a_host_call() {
    let f = Fixture::new();
    // A clock subscription at `at`: userdata, clock tag, monotonic, an hour.
    let clock = |at: u32| {
        format!(
            "(i32.store8 (i32.const {tag}) (i32.const 0)) (i32.store (i32.const {id}) (i32.const 1)) \
             (i64.store (i32.const {t}) (i64.const 3600000000000))",
            tag = at + 8,
            id = at + 16,
            t = at + 24
        )
    };
    let poll = |n: u32, subs: String| {
        format!(
            r#"(module (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
                 (memory (export "memory") 1)
                 (func (export "_start") {subs} (drop (call $poll (i32.const 0) (i32.const 1024) (i32.const {n}) (i32.const 2048)))))"#
        )
    };
    let stdin = r#"(module (import "wasi_snapshot_preview1" "fd_read" (func $read (param i32 i32 i32 i32) (result i32)))
        (memory (export "memory") 1)
        (func (export "_start") (i32.store (i32.const 0) (i32.const 64)) (i32.store (i32.const 4) (i32.const 16))
          (drop (call $read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 32)))))"#;
    // Writes to stdout for ever, which the test never reads: the pipe
    // fills, and each write waits for room.
    let stdout = r#"(module (import "wasi_snapshot_preview1" "fd_write" (func $write (param i32 i32 i32 i32) (result i32)))
        (memory (export "memory") 2)
        (func (export "_start") (i32.store (i32.const 0) (i32.const 1024)) (i32.store (i32.const 4) (i32.const 65536))
          (loop (drop (call $write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 32))) (br 0))))"#;
    let guests = [
        ("sleep.wasm", poll(1, clock(0))),
        ("sleep2.wasm", poll(2, clock(0) + &clock(48))),
        ("stdin.wasm", stdin.to_owned()),
        ("stdout.wasm", stdout.to_owned()),
    ];
    for (name, wat) in guests {
        std::fs::write(f.path(name), wat::parse_str(&wat).unwrap()).unwrap();
        let (out, took) =
            packfs_waiting(f.dir.path(), ["run", "--timeout", "1", name], std::time::Duration::from_secs(30));
        assert_eq!(out.code, 124, "{name}: {out:?}");
        assert!(out.stderr.contains("time limit"), "{name}: {out:?}");
        println!("{name}: ended {:?} after it started (--timeout 1)", took);
    }
    // A component waiting on stdin in wasmtime-wasi's own stdio, which
    // knows no deadline: packfs ends the process a moment past it.
    let p2 = toolbox(P2);
    let args = [OsStr::new("run"), "--timeout".as_ref(), "1".as_ref(), p2.as_os_str(), "stdin".as_ref(), "/x".as_ref()];
    let (out, took) = packfs_waiting(f.dir.path(), args, std::time::Duration::from_secs(30));
    assert_eq!(out.code, 124, "component: {out:?}");
    assert!(out.stderr.contains("time limit"), "component: {out:?}");
    println!("component on stdin: ended {took:?} after it started (--timeout 1)");
    // A sleep shorter than the limit still ends as the guest asked.
    let short = poll(1, clock(0).replace("3600000000000", "10000000"));
    std::fs::write(f.path("short.wasm"), wat::parse_str(&short).unwrap()).unwrap();
    assert_eq!(f.packfs(["run", "--timeout", "20", "short.wasm"]).code, 0);
}

/// `--save` is the guest's too: a file of 4 EiB (a sparse one the guest
/// made in a moment) would take the host centuries to pack. Under
/// `--timeout` the save stops at the deadline, and nothing is published.
#[test]
fn a_timeout_bounds_the_save_of_what_the_guest_left() {
    let f = Fixture::new();
    let huge = r#"(module
        (import "wasi_snapshot_preview1" "path_open" (func $open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
        (import "wasi_snapshot_preview1" "fd_filestat_set_size" (func $size (param i32 i64) (result i32)))
        (memory (export "memory") 1)
        (data (i32.const 16) "big")
        (func (export "_start")
          (drop (call $open (i32.const 3) (i32.const 0) (i32.const 16) (i32.const 3) (i32.const 1)
            (i64.const 0x3fffffff) (i64.const 0) (i32.const 0) (i32.const 64)))
          (drop (call $size (i32.load (i32.const 64)) (i64.const 0x4000000000000000)))))"#;
    std::fs::write(f.path("huge.wasm"), wat::parse_str(huge).unwrap()).unwrap();
    let args = ["run", "--timeout", "2", "--mount", "/=mem", "--save", "out.pack", "huge.wasm"];
    let (out, took) = packfs_waiting(f.dir.path(), args, std::time::Duration::from_secs(30));
    assert_eq!(out.code, 124, "{out:?}");
    assert!(out.stderr.contains("not done within the time limit"), "{out:?}");
    assert!(!f.path("out.pack").exists(), "nothing published");
    println!("ended {took:?} after it started (--timeout 2)");
}

#[test]
fn mem_source() {
    let f = Fixture::new();
    let out = success(f.toolbox(&["--mount", "/=mem"], &["write", "/f", "in memory", "cat", "/f"]));
    assert_eq!(out, "in memory");
}

#[test]
fn pack_source_is_read_only() {
    let f = Fixture::new();
    let out = success(f.toolbox(&["--mount", "/=app.pack"], &["ls", "/", "ls", "/data", "cat", "/etc/motd"]));
    assert_eq!(out, "data\netc\na.txt\nsub\nhello from the pack\n");
    guest_failed(f.toolbox(&["--mount", "/=app.pack"], &["write", "/new", "x"]), "write /new: ReadOnlyFilesystem");
    guest_failed(f.toolbox(&["--mount", "/=app.pack"], &["rm", "/etc/motd"]), "rm /etc/motd: ReadOnlyFilesystem");
    guest_failed(f.toolbox(&["--mount", "/=app.pack"], &["cat", "/missing"]), "cat /missing: NotFound");
}

#[test]
fn pack_overlay_source_takes_changes_in_memory() {
    let f = Fixture::new();
    let before = std::fs::read(f.path("app.pack")).unwrap();
    let out = success(f.toolbox(
        &["--mount", "/=app.pack+mem"],
        &[
            "append",
            "/etc/motd",
            "changed\n",
            "rm",
            "/data/a.txt",
            "write",
            "/new",
            "n\n",
            "cat",
            "/etc/motd",
            "ls",
            "/data",
            "cat",
            "/new",
        ],
    ));
    assert_eq!(out, "hello from the pack\nchanged\nsub\nn\n");
    assert_eq!(std::fs::read(f.path("app.pack")).unwrap(), before, "the pack is never written");
    // Each run starts from the pack again.
    assert_eq!(success(f.toolbox(&["--mount", "/=app.pack+mem"], &["cat", "/etc/motd"])), "hello from the pack\n");
}

#[test]
fn dir_sources() {
    let f = Fixture::new();
    let out = success(
        f.toolbox(&["--mount", "/host=dir:tree"], &["cat", "/host/etc/motd", "write", "/host/out.txt", "written"]),
    );
    assert_eq!(out, "hello from the pack\n");
    assert_eq!(std::fs::read_to_string(f.path("tree/out.txt")).unwrap(), "written", "lands on the host");

    let out = success(f.toolbox(&["--mount", "/host=dir-ro:tree"], &["cat", "/host/out.txt"]));
    assert_eq!(out, "written");
    guest_failed(f.toolbox(&["--mount", "/host=dir-ro:tree"], &["write", "/host/x", "x"]), "ReadOnlyFilesystem");
    guest_failed(f.toolbox(&["--mount", "/host=dir-ro:tree"], &["rm", "/host/out.txt"]), "ReadOnlyFilesystem");
    assert!(!f.path("tree/x").exists());
    assert!(f.path("tree/out.txt").exists());
}

#[test]
fn journal_keeps_the_first_runs_writes() {
    let f = Fixture::new();
    let mount = ["--mount", "/state=journal:j"];
    success(f.toolbox(&mount, &["mkdir", "/state/d", "write", "/state/d/count", "1", "write", "/state/gone", "x"]));
    assert!(f.path("j").is_dir(), "created when missing");
    let out =
        success(f.toolbox(&mount, &["cat", "/state/d/count", "rm", "/state/gone", "append", "/state/d/count", "2"]));
    assert_eq!(out, "1");
    assert_eq!(success(f.toolbox(&mount, &["cat", "/state/d/count", "ls", "/state"])), "12d\n");

    // compact: the journal's tree as a pack, the journal untouched.
    let listing = std::fs::read_dir(f.path("j")).unwrap().count();
    let report = f.ok(["compact", "j", "-o", "state.pack"]);
    assert!(report.starts_with("state.pack: 2 entries"), "{report}");
    assert_eq!(f.ok(["cat", "state.pack", "d/count"]), "12");
    assert_eq!(f.ok(["ls", "state.pack"]), "d\n");
    assert_eq!(std::fs::read_dir(f.path("j")).unwrap().count(), listing);
    assert_eq!(success(f.toolbox(&mount, &["cat", "/state/d/count"])), "12");
}

/// A guest rewriting a 1 MiB file 1,500 times through one descriptor on a
/// journal mount with a 2 MiB quota: the log is rewritten as the tree's
/// image whenever it outgrows the tree, so every rewrite succeeds, the run
/// holds little more than a run on an empty journal, and what is left on
/// disk after it is a few MiB; the next run's open holds little too. On
/// 65991d3 the log held every rewrite (1.57 GB), and the next open read
/// all of it (1.57 GB resident).
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
#[test]
fn a_journal_log_stays_in_proportion_to_its_tree() {
    let f = Fixture::new();
    let peak = |mount: &[&str], args: &[&str]| {
        let child = Command::new(env!("CARGO_BIN_EXE_packfs"))
            .current_dir(f.dir.path())
            .env("PACKFS_CACHE_DIR", support::guest_cache_dir())
            .args(["run"])
            .args(mount)
            .arg(toolbox(P1))
            .args(args)
            .stdout(std::fs::File::create(f.path("out.txt")).unwrap())
            .spawn()
            .unwrap();
        let (code, peak) = support::wait_peak_rss(child);
        (code, peak, std::fs::read_to_string(f.path("out.txt")).unwrap())
    };
    let mount = ["--mount", "/j=journal:j:max-bytes=2M"];
    let (code, rewriting, out) = peak(&mount, &["rewrite", "/j/f", "1500"]);
    assert_eq!((code, out.trim()), (0, "rewrote 1500"));
    let on_disk =
        |dir: &Path| -> u64 { std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum() };
    assert!(on_disk(&f.path("j")) < 4 << 20, "{} bytes left after the run", on_disk(&f.path("j")));
    let (_, empty, _) = peak(&["--mount", "/j=journal:empty"], &["ls", "/j"]);
    assert!(
        rewriting < empty + (32 << 20),
        "{} MiB resident, {} MiB on an empty journal",
        rewriting >> 20,
        empty >> 20
    );
    let (code, reopened, _) = peak(&mount, &["ls", "/j"]);
    assert_eq!(code, 0);
    assert!(reopened < empty + (16 << 20), "{} MiB resident, {} MiB on an empty journal", reopened >> 20, empty >> 20);
    eprintln!(
        "peak RSS: rewriting {} MiB, reopening {} MiB, empty {} MiB",
        rewriting >> 20,
        reopened >> 20,
        empty >> 20
    );
    f.ok(["compact", "j", "-o", "kept.pack"]);
    let pack = packfs_core::pack::PackFs::open(std::fs::read(f.path("kept.pack")).unwrap()).unwrap();
    let ino = packfs_core::FileSystem::lookup(&pack, packfs_core::FileSystem::root(&pack), "f").unwrap();
    assert!(*pack.file_bytes(ino).unwrap() == vec![(1499 % 251) as u8; 1 << 20][..], "the last rewrite is kept");
}

#[test]
fn nested_mounts() {
    let f = Fixture::new();
    let mounts = [
        "--mount",
        "/tmp=mem",
        "--mount",
        "/=app.pack+mem",
        "--mount",
        "/data/deep/er=mem",
        "--mount",
        "/data/ro=app.pack",
        "--mount",
        "/tmp/host=dir:tree",
    ];
    let out = success(f.toolbox(
        &mounts,
        &[
            "ls",
            "/",
            "ls",
            "/data",
            "ls",
            "/data/ro",
            "cat",
            "/data/ro/etc/motd",
            "write",
            "/tmp/t",
            "t",
            "write",
            "/data/deep/er/e",
            "e",
            "cat",
            "/tmp/host/data/a.txt",
            "ls",
            "/data/deep/er",
        ],
    ));
    assert_eq!(
        out,
        "data\netc\ntmp\n\
         a.txt\ndeep\nro\nsub\n\
         data\netc\n\
         hello from the pack\n\
         alpha beta\ngamma\n\
         e\n"
    );
    // A read-only mount inside a writable one, and a writable one inside
    // a read-only one.
    guest_failed(f.toolbox(&mounts, &["write", "/data/ro/x", "x"]), "ReadOnlyFilesystem");
    let mounts = ["--mount", "/=app.pack", "--mount", "/etc/scratch=mem"];
    assert_eq!(success(f.toolbox(&mounts, &["write", "/etc/scratch/s", "s", "cat", "/etc/scratch/s"])), "s");
    guest_failed(f.toolbox(&mounts, &["write", "/etc/x", "x"]), "ReadOnlyFilesystem");
}

#[test]
fn arguments_environment_and_stdin_pass_through() {
    let f = Fixture::new();
    let guest = toolbox(P1);
    let out = success(f.run_guest(
        &guest,
        &["--env", "GREETING=hi there", "--env", "EQ=a=b", "--env", "EMPTY="],
        &[
            "argv0",
            "echo",
            "--not-an-option",
            "echo",
            "two words",
            "env",
            "GREETING",
            "env",
            "EQ",
            "env",
            "EMPTY",
            "env",
            "HOME",
        ],
    ));
    assert_eq!(out, format!("{}\n--not-an-option\ntwo words\nhi there\na=b\n\n<unset>\n", guest.display()));

    let out = packfs_in(
        f.dir.path(),
        [
            OsStr::new("run"),
            "--mount".as_ref(),
            "/=mem".as_ref(),
            guest.as_os_str(),
            "stdin".as_ref(),
            "/in".as_ref(),
            "cat".as_ref(),
            "/in".as_ref(),
        ],
        b"from stdin\n\0binary",
    );
    assert_eq!(success(out), "from stdin\n\0binary");

    let out = f.toolbox(&[], &["stderr", "to stderr", "echo", "to stdout"]);
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("to stdout\n", "to stderr\n"));
}

#[test]
fn exit_status_passes_through() {
    let f = Fixture::new();
    for code in ["0", "1", "3", "42", "255"] {
        let out = f.toolbox(&[], &["echo", "before", "exit", code, "echo", "never"]);
        assert_eq!(out.code.to_string(), code, "{out:?}");
        assert_eq!(out.stdout, "before\n");
    }
    // A p2 component built with wasi-libc exits through `exit(result)`,
    // which carries success or failure only.
    let out = f.run_guest(&toolbox(P2), &[], &["exit", "5"]);
    assert_eq!(out.code, 1, "{out:?}");
}

#[test]
fn a_trap_is_status_134_and_saves_nothing() {
    let f = Fixture::new();
    let out = f.toolbox(&["--mount", "/=mem", "--save", "never.pack"], &["write", "/f", "x", "echo", "before", "trap"]);
    assert_eq!(out.code, 134, "{out:?}");
    assert_eq!(out.stdout, "before\n");
    assert_eq!(out.stderr.lines().count(), 1, "{out:?}");
    assert!(
        out.stderr.starts_with("packfs: ") && out.stderr.contains("trapped") && out.stderr.contains("unreachable"),
        "{out:?}"
    );
    assert!(!f.path("never.pack").exists());
}

#[test]
fn save_round_trip() {
    let f = Fixture::new();
    let out = f.run_guest(
        &support::rust_guest("demo", P1),
        &["--mount", "/=app.pack+mem", "--mount", "/scratch=mem", "--save", "saved.pack"],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let report = "  lines   words     bytes  file\n      \
                  2       3        17  /data/a.txt\n      \
                  1       3        14  /data/sub/b.txt\n      \
                  3       6        31  total (2 files)\n";
    assert_eq!(out.stdout, format!("{report}report written to /out/report.txt\n"));
    assert!(out.stderr.starts_with("saved saved.pack: "), "{out:?}");

    // The whole namespace as the guest left it: the pack's files, the new
    // report, the (empty) mount at /scratch.
    let listing = f.ok(["ls", "-R", "saved.pack"]);
    assert_eq!(listing, "data\ndata/a.txt\ndata/sub\ndata/sub/b.txt\netc\netc/motd\nout\nout/report.txt\nscratch\n");
    assert_eq!(f.ok(["cat", "saved.pack", "out/report.txt"]), report);
    assert_eq!(f.ok(["cat", "saved.pack", "etc/motd"]), "hello from the pack\n");
    f.ok(["verify", "saved.pack"]);

    // Saved over the pack it runs on: the mapping keeps the old file, the
    // name gets the new one.
    let out =
        f.toolbox(&["--mount", "/=app.pack+mem", "--save", "app.pack"], &["rm", "/etc/motd", "write", "/v2", "2"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(f.ok(["ls", "-R", "app.pack"]), "data\ndata/a.txt\ndata/sub\ndata/sub/b.txt\netc\nv2\n");

    // A guest that fails is still saved: its status comes after.
    let out = f.toolbox(&["--mount", "/=mem", "--save", "failed.pack"], &["write", "/partial", "p", "cat", "/missing"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(f.ok(["cat", "failed.pack", "partial"]), "p");
}

#[test]
fn p2_component_and_c_guest() {
    let f = Fixture::new();
    let out = success(f.run_guest(
        &toolbox(P2),
        &["--mount", "/=app.pack+mem"],
        &["write", "/w", "p2", "cat", "/w", "cat", "/etc/motd"],
    ));
    assert_eq!(out, "p2hello from the pack\n");
    // A wasi-libc C program (stdio, POSIX fds) on an empty root.
    let out = success(f.run_guest(&support::c_guest("c_stdio", &["c_stdio"]), &["--mount", "/=mem"], &[]));
    assert!(out.ends_with("done\n"), "{out}");
}

/// A WASI 0.3 component (`p3_tool`: its files through
/// `wasi:filesystem@0.3.0`'s streams, its output through 0.2's stdout) on
/// each mount kind, with `--save`, a quota, `--max-memory`, and
/// `--timeout` ending it while it waits on 0.3's clock for an hour.
#[test]
fn p3_component_runs_on_every_mount_with_its_limits() {
    let f = Fixture::new();
    let tool = support::p3_guest("p3_tool");
    let run = |mounts: &[&str], args: &[&str]| f.run_guest(&tool, mounts, args);
    let out = success(run(&["--mount", "/=app.pack+mem"], &["write", "/w", "p3", "cat", "/w", "cat", "/etc/motd"]));
    assert_eq!(out, "p3hello from the pack\n");
    let out = success(run(&["--mount", "/=app.pack"], &["ls", "/data", "cat", "/data/sub/b.txt"]));
    assert_eq!(out, "a.txt\nsub\none two three\n");
    let out = run(&["--mount", "/=app.pack"], &["write", "/w", "x"]);
    guest_failed(out, "write: ErrorCode::ReadOnly");
    std::fs::create_dir(f.path("host")).unwrap();
    success(run(&["--mount", "/=dir:host"], &["write", "/on-disk", "d"]));
    assert_eq!(std::fs::read_to_string(f.path("host/on-disk")).unwrap(), "d");
    success(run(&["--mount", "/=journal:j"], &["write", "/kept", "j"]));
    assert_eq!(success(run(&["--mount", "/=journal:j"], &["cat", "/kept"])), "j");
    success(run(&["--mount", "/=mem", "--mount", "/p=app.pack", "--save", "out.pack"], &["write", "/new", "saved"]));
    assert_eq!(f.ok(["cat", "out.pack", "new"]), "saved");
    assert_eq!(f.ok(["cat", "out.pack", "p/etc/motd"]), "hello from the pack\n");

    let out = run(&["--mount", "/=mem:max-bytes=10"], &["write", "/a", "more than ten bytes"]);
    guest_failed(out.clone(), "write: ErrorCode::Quota");
    assert!(out.stderr.contains("--mount /: full"), "{out:?}");
    let out = run(&["--mount", "/=mem", "--max-memory", "8M"], &["grow", "64"]);
    assert_eq!(out.code, 137, "{out:?}");
    assert!(out.stderr.contains("memory limit of 8388608 bytes"), "{out:?}");
    let args = ["run", "--mount", "/=mem", "--timeout", "1"].map(OsStr::new);
    let args = args.into_iter().chain([tool.as_os_str(), "sleep".as_ref(), "3600".as_ref()]);
    let (out, took) = packfs_waiting(f.dir.path(), args, std::time::Duration::from_secs(30));
    assert_eq!(out.code, 124, "{out:?}");
    assert!(out.stderr.contains("time limit"), "{out:?}");
    println!("p3 sleep: ended {took:?} after it started (--timeout 1)");
    assert_eq!(success(run(&["--mount", "/=mem", "--timeout", "20"], &["sleep", "0"])), "");
}

/// The guest compiles on a thread of its own while the mounts are set up;
/// `--stats` says how it was loaded: compiled and stored on the first run,
/// from the cache on the next. A stderr that is not a terminal never gets
/// the spinner.
#[test]
fn stats_say_whether_the_guest_was_compiled_or_cached() {
    let f = Fixture::new();
    let cache = tempfile::tempdir().unwrap();
    let guest = toolbox(P1);
    let run = || {
        let args: [&OsStr; 7] = [
            "run".as_ref(),
            "--stats".as_ref(),
            "--mount".as_ref(),
            "/=app.pack".as_ref(),
            guest.as_os_str(),
            "cat".as_ref(),
            "/etc/motd".as_ref(),
        ];
        packfs_cached(f.dir.path(), cache.path(), args, b"")
    };
    let name = format!("packfs: guest {}: ", guest.display());
    for (want, then) in [("compiled in ", " ms (stored in the cache); "), ("from the cache in ", " ms; ")] {
        let out = run();
        assert_eq!(success(out.clone()), "hello from the pack\n");
        let line = out.stderr.lines().find(|l| l.starts_with(&name)).unwrap_or_else(|| panic!("{out:?}"));
        assert!(line[name.len()..].starts_with(want) && line.contains(then), "{want:?}, {then:?} in {out:?}");
        assert!(!out.stderr.contains(['\r', '\x1b']), "no spinner: {out:?}");
    }
}

/// `--guest-cache-size` bounds the cache: one smaller than the artifact
/// keeps nothing after the store (each run compiles), and 0 is no cache.
#[test]
fn the_guest_cache_size_bounds_the_cache() {
    let f = Fixture::new();
    let guest = toolbox(P1);
    let name = format!("packfs: guest {}: ", guest.display());
    for (size, says) in [("1k", "(stored in the cache)"), ("0", "(no cache)")] {
        let cache = tempfile::tempdir().unwrap();
        for _ in 0..2 {
            let args = ["run", "--stats", "--guest-cache-size", size, "--mount", "/=app.pack"];
            let args = args.iter().map(OsStr::new).chain([guest.as_os_str(), "cat".as_ref(), "/etc/motd".as_ref()]);
            let out = packfs_cached(f.dir.path(), cache.path(), args, b"");
            assert_eq!(success(out.clone()), "hello from the pack\n");
            let line = out.stderr.lines().find(|l| l.starts_with(&name)).unwrap_or_else(|| panic!("{out:?}"));
            assert!(line[name.len()..].starts_with("compiled in ") && line.contains(says), "{size}: {out:?}");
        }
        let names = std::fs::read_dir(cache.path().join("guests")).into_iter().flatten();
        let artifacts = names.filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with("a-")).count();
        assert_eq!(artifacts, 0, "{size}: nothing kept");
    }
    let out = packfs_in(f.dir.path(), ["run", "--guest-cache-size", "lots", "x.wasm"], b"");
    assert!(out.stderr.contains("--guest-cache-size") && out.stderr.contains("not a number"), "{out:?}");
}

/// The module's own errors come before any mount's, though it is loaded
/// while the mounts are set up; a mount's error with a module still
/// compiling (a cache of its own, empty) is said alone, as is a module
/// that does not compile.
#[test]
fn module_errors_come_first_and_mount_errors_during_a_compile() {
    let f = Fixture::new();
    let cache = tempfile::tempdir().unwrap();
    std::fs::write(f.path("not.wasm"), "not wasm at all").unwrap();
    std::fs::write(f.path("bad.wasm"), b"\0asm\x01\0\0\0\xff\xff").unwrap();
    let guest = toolbox(P1);
    let g = guest.to_str().unwrap();
    let cases: &[(&[&str], &[&str])] = &[
        (&["run", "--mount", "/=missing.pack", "missing.wasm"], &["missing.wasm", "No such file"]),
        (&["run", "--mount", "/=missing.pack", "not.wasm"], &["not.wasm", "not a WebAssembly"]),
        (&["run", "--mount", "/d=dir:missing", "tree"], &["tree", "Is a directory"]),
        (&["run", "--mount", "/=missing.pack", g], &["--mount /=missing.pack", "No such file"]),
        (&["run", "--mount", "/=app.pack", "bad.wasm"], &["bad.wasm", "compiling the guest"]),
    ];
    for (args, needles) in cases {
        refused(packfs_cached(f.dir.path(), cache.path(), *args, b""), needles);
    }
}

#[test]
fn errors_are_one_line() {
    let f = Fixture::new();
    let guest = toolbox(P1);
    let g = guest.to_str().unwrap();
    std::fs::write(f.path("not.wasm"), "not wasm at all").unwrap();
    std::fs::write(f.path("not.pack"), "not a pack").unwrap();
    // Components that cannot run here: an import nothing defines, and no
    // `wasi:cli/run` to call.
    let unknown = r#"(component (import "example:nowhere/api" (instance (export "f" (func)))))"#;
    std::fs::write(f.path("unknown.wasm"), wat::parse_str(unknown).unwrap()).unwrap();
    std::fs::write(f.path("norun.wasm"), wat::parse_str("(component)").unwrap()).unwrap();
    // A WASI 0.3 component (it imports 0.3's preopens) that also needs an
    // interface PackFS does not serve.
    let http = r#"(component
        (import "wasi:filesystem/preopens@0.3.0" (instance))
        (import "wasi:http/handler@0.3.0" (instance (export "handle" (func)))))"#;
    std::fs::write(f.path("http.wasm"), wat::parse_str(http).unwrap()).unwrap();
    let cases: &[(&[&str], &[&str])] = &[
        (&["run", "missing.wasm"], &["missing.wasm", "No such file"]),
        (&["run", "not.wasm"], &["not.wasm", "not a WebAssembly"]),
        (&["run", "unknown.wasm"], &["unknown.wasm", "cannot run it here", "example:nowhere/api"]),
        (&["run", "norun.wasm"], &["norun.wasm", "cannot run it here", "wasi:cli/run"]),
        (&["run", "http.wasm"], &["http.wasm", "cannot run it here", "wasi:http/handler@0.3.0"]),
        (&["run"], &["MODULE.wasm"]),
        (&["run", "--mount", "tmp=mem", g], &["--mount", "not absolute"]),
        (&["run", "--mount", "/tmp", g], &["--mount", "GUEST_PATH=SOURCE"]),
        (&["run", "--mount", "/tmp=", g], &["--mount", "empty SOURCE"]),
        (&["run", "--mount", "/a/../b=mem", g], &["--mount", "`..`"]),
        (&["run", "--mount", "/t=dir:", g], &["--mount", "needs a path"]),
        (&["run", "--mount", "/=missing.pack", g], &["--mount /=missing.pack", "missing.pack", "No such file"]),
        (&["run", "--mount", "/=missing.pack+mem", g], &["missing.pack", "No such file"]),
        (&["run", "--mount", "/=not.pack", g], &["not.pack"]),
        (&["run", "--mount", "/d=dir:missing", g], &["missing", "No such file"]),
        (&["run", "--mount", "/d=dir:app.pack", g], &["app.pack", "not a directory"]),
        (&["run", "--mount", "/t=mem", "--mount", "/t/=mem", g], &["/t", "mounted twice"]),
        (&["run", "--mount", "/=app.pack", "--mount", "/etc/motd/x=mem", g], &["/etc/motd", "not a directory"]),
        (
            &["run", "--mount", "/=app.pack", "--mount", "/new/x=mem", g],
            &["/new/x=mem: making the directories above it", "read-only"],
        ),
        (&["run", "--env", "NOEQUALS", g], &["--env", "K=V"]),
        (&["compact", "missing", "-o", "x.pack"], &["missing", "No such file"]),
        (&["compact", "app.pack", "-o", "x.pack"], &["app.pack", "not a directory"]),
        (&["compact", "tree"], &["--output"]),
    ];
    for (args, needles) in cases {
        refused(f.packfs(*args), needles);
    }
    assert!(!f.path("x.pack").exists());
    // A failed save: the guest ran, its status is lost to packfs's error.
    refused(
        f.toolbox(&["--mount", "/=mem", "--save", "no/such/dir/out.pack"], &["write", "/f", "x"]),
        &["saving to no/such/dir/out.pack"],
    );
}

/// A mount names a pinned pack as every command does: the guest reads
/// the pack that was pinned, and another under the pin never runs.
#[test]
fn a_mount_of_a_pinned_pack_opens_only_that_pack() {
    let f = Fixture::new();
    let digest =
        f.ok(["info", "app.pack"]).lines().find_map(|l| l.strip_prefix("digest:").map(|d| d.trim().to_owned()));
    let digest = digest.expect("a digest");
    for mount in [format!("/p=app.pack@{digest}"), format!("/p=app.pack@{digest}+mem")] {
        assert_eq!(success(f.toolbox(&["--mount", &mount], &["cat", "/p/etc/motd"])), "hello from the pack\n");
    }
    std::fs::write(f.path("tree/etc/motd"), "hello from another pack\n").unwrap();
    f.ok(["pack", "tree", "-o", "other.pack"]);
    let out = f.toolbox(&["--mount", &format!("/p=other.pack@{digest}")], &["cat", "/p/etc/motd"]);
    refused(out.clone(), &["other.pack", "not the pinned pack"]);
    assert!(!out.stdout.contains("hello"), "{out:?}");
}
