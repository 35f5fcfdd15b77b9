//! What `packfs` says when it fails, and what its `--help` says.
//!
//! Every error said its cause twice: `packfs: x.pack: No such file or
//! directory (os error 2): No such file or directory (os error 2)`,
//! `packfs: x.pack: corrupt pack at byte 0: bad header magic: corrupt pack
//! at byte 0: bad header magic`. The CLI prints an error with its chain of
//! sources (anyhow's `{:#}`), and the error types put their source's
//! message in their own and returned it from `source()` as well. A guest
//! that did not compile printed wasmtime's error with `{:?}`: its causes
//! on separate lines joined by `; `, and under `RUST_BACKTRACE=1` a Rust
//! backtrace of 24 frames. Here each message is one line, and says each
//! cause once.
//!
//! `packfs run --help` said `pub(super) dir: and dir-ro: mounts …`: a
//! continuation line of its help text had been rewritten as if it were a
//! field. No `--help` may show Rust.

use std::ffi::OsStr;
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;

/// What one run printed and how it ended.
#[derive(Debug)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// `packfs ARGS` in `cwd`, with a cache of its own (compiled guests and
/// remote chunks) and `RUST_BACKTRACE=1`, which must change no message.
fn packfs<S: AsRef<OsStr>>(cwd: &Path, args: impl IntoIterator<Item = S>) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_packfs"))
        .args(args)
        .current_dir(cwd)
        .env("PACKFS_CACHE_DIR", cwd.join("cache"))
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("runs packfs");
    Run {
        code: out.status.code().expect("exits, not killed"),
        stdout: String::from_utf8(out.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("UTF-8 stderr"),
    }
}

/// A working directory holding `good.pack` (of `tree/d/a.txt`), files
/// that are no pack (`magic.pack`: 200 bytes of `X`; `short.pack`: 24
/// bytes), a guest that runs (`ok.wasm`) and one that does not compile
/// (`bad.wasm`), and a journal directory whose log is junk (`jj`).
fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::create_dir_all(p.join("tree/d")).unwrap();
    std::fs::write(p.join("tree/d/a.txt"), "alpha\n").unwrap();
    let packed = packfs(p, ["pack", "tree", "-o", "good.pack"]);
    assert_eq!(packed.code, 0, "{packed:?}");
    std::fs::write(p.join("magic.pack"), [b'X'; 200]).unwrap();
    std::fs::write(p.join("short.pack"), [b'X'; 24]).unwrap();
    let guest = r#"(module (memory (export "memory") 1) (func (export "_start")))"#;
    std::fs::write(p.join("ok.wasm"), wat::parse_str(guest).unwrap()).unwrap();
    std::fs::write(p.join("bad.wasm"), b"\0asm\x01\0\0\0\x01\x05\x01\x60\x00").unwrap();
    std::fs::create_dir(p.join("jj")).unwrap();
    std::fs::write(p.join("jj/journal-0.log"), "junk\n").unwrap();
    dir
}

/// The OS's message for `errno`, as `std::io::Error` says it.
fn os(errno: i32) -> String {
    std::io::Error::from_raw_os_error(errno).to_string()
}

/// `r` failed with status 2 and said one line, `packfs: ` and a message
/// in which no part between `: ` is said twice; returns the message.
fn one_line_once(r: &Run) -> String {
    assert_eq!(r.code, 2, "{r:?}");
    let Some(message) = r.stderr.strip_prefix("packfs: ").and_then(|m| m.strip_suffix('\n')) else {
        panic!("not `packfs: ...`: {r:?}")
    };
    assert!(!message.contains('\n'), "one line: {r:?}");
    let parts: Vec<&str> = message.split(": ").map(str::trim).collect();
    for (i, part) in parts.iter().enumerate() {
        assert!(!parts[..i].contains(part), "{part:?} said twice in {message:?}");
    }
    message.to_owned()
}

/// `packfs ARGS` fails with exactly `packfs: WANT`.
fn says(cwd: &Path, args: &[&str], want: &str) {
    let r = packfs(cwd, args);
    let message = one_line_once(&r);
    assert_eq!(message, want, "packfs {args:?}");
}

#[test]
fn a_missing_pack_is_said_once() {
    let f = fixture();
    let p = f.path();
    let enoent = os(2);
    let missing = format!("missing.pack: {enoent}");
    says(p, &["ls", "missing.pack"], &missing);
    says(p, &["info", "missing.pack"], &missing);
    says(p, &["cat", "missing.pack", "d/a.txt"], &missing);
    says(p, &["stat", "missing.pack", "d"], &missing);
    says(p, &["verify", "missing.pack"], &missing);
    says(p, &["unpack", "missing.pack", "out"], &missing);
    says(p, &["diff", "good.pack", "missing.pack"], &missing);
    says(p, &["run", "--mount", "/=missing.pack+mem", "ok.wasm"], &format!("--mount /=missing.pack+mem: {missing}"));
}

#[test]
fn a_corrupt_pack_is_said_once() {
    let f = fixture();
    let p = f.path();
    let magic = "magic.pack: corrupt pack at byte 0: bad header magic";
    says(p, &["ls", "magic.pack"], magic);
    says(p, &["info", "magic.pack"], magic);
    says(p, &["diff", "magic.pack", "good.pack"], magic);
    says(p, &["run", "--mount", "/=magic.pack", "ok.wasm"], &format!("--mount /=magic.pack: {magic}"));
    // `verify` answers "no" (1) to a damaged pack, in the same words.
    let r = packfs(p, ["verify", "magic.pack"]);
    assert_eq!((r.code, r.stderr.as_str()), (1, format!("packfs: {magic}\n").as_str()), "{r:?}");
    // Shorter than a header.
    let short = one_line_once(&packfs(p, ["ls", "short.pack"]));
    assert!(short.starts_with("short.pack: corrupt pack at byte 0: truncated: "), "{short:?}");
}

#[test]
fn a_pack_that_is_not_the_pinned_one_is_said_once() {
    let f = fixture();
    let zeros = format!("blake3:{}", "0".repeat(64));
    let message = one_line_once(&packfs(f.path(), ["ls", &format!("good.pack@{zeros}")]));
    let want = format!("good.pack: pack refused: not the pinned pack: pinned {zeros}, the pack is blake3:");
    assert!(message.starts_with(&want), "{message:?}");
}

#[test]
fn a_guest_that_does_not_load_is_said_once_on_one_line() {
    let f = fixture();
    let p = f.path();
    says(p, &["run", "missing.wasm"], &format!("missing.wasm: {}", os(2)));
    says(p, &["run", "tree"], &format!("tree: {}", os(21)));
    // wasmtime's causes, joined on one line; no backtrace.
    says(
        p,
        &["run", "bad.wasm"],
        "bad.wasm: compiling the guest: failed to parse WebAssembly module: unexpected end-of-file (at offset 0xa)",
    );
    // A time limit no clock can count to is refused, not a panic.
    let r = packfs(p, ["run", "--timeout", "1e19", "ok.wasm"]);
    let message = one_line_once(&r);
    assert!(message.contains("past the longest one a run is given"), "{r:?}");
}

#[test]
fn other_sources_and_outputs_are_said_once() {
    let f = fixture();
    let p = f.path();
    let enoent = os(2);
    says(p, &["run", "--mount", "/=dir:nodir", "ok.wasm"], &format!("--mount /=dir:nodir: nodir: {enoent}"));
    says(p, &["pack", "nodir", "-o", "x.pack"], &format!("nodir: {enoent}"));
    says(p, &["compact", "nodir", "-o", "x.pack"], &format!("nodir: {enoent}"));
    says(p, &["pack", "tree", "-o", "no/x.pack"], &format!("packing tree into no/x.pack: writing the pack: {enoent}"));
    // A journal's bad log: the words are the journal's; each once.
    one_line_once(&packfs(p, ["run", "--mount", "/j=journal:jj", "ok.wasm"]));
    one_line_once(&packfs(p, ["compact", "jj", "-o", "x.pack"]));
}

/// A server that refuses the connection: object_store's errors each say
/// their source's message, and the cause at the bottom is only in the
/// chain (`Connection refused`). Each is said once.
#[test]
fn a_remote_pack_that_cannot_be_reached_is_said_once() {
    let f = fixture();
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/x.pack");
    let message = one_line_once(&packfs(f.path(), ["ls", &url]));
    assert!(message.starts_with(&format!("{url}: ")), "{message:?}");
    assert_eq!(message.matches("error sending request").count(), 1, "{message:?}");
    assert_eq!(message.matches(&os(111)).count(), 1, "{message:?}");
}

/// A cache that cannot be opened is said once, naming its directory once;
/// the command goes on without it.
#[test]
fn a_cache_that_cannot_be_used_is_said_once() {
    let f = fixture();
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/x.pack");
    let r = packfs(f.path(), ["--cache", "good.pack/c", "ls", &url]);
    let first = r.stderr.lines().next().unwrap_or_default();
    assert_eq!(first, format!("packfs: not caching remote packs: good.pack/c: {}", os(20)), "{r:?}");
}

/// The subcommands `packfs --help` lists.
fn subcommands(cwd: &Path) -> Vec<String> {
    let help = packfs(cwd, ["--help"]);
    assert_eq!(help.code, 0, "{help:?}");
    let listed = help.stdout.split("Commands:").nth(1).expect("a list of commands");
    let names: Vec<String> = listed
        .lines()
        .skip(1) // the rest of the `Commands:` line
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect();
    assert!(names.len() >= 10 && names.iter().any(|n| n == "run"), "{names:?}");
    names
}

/// Words of Rust that help text taken from doc comments and string
/// continuations can carry.
const RUST: &[&str] =
    &["pub(", "pub ", "fn ", "impl ", "crate::", "Self::", "///", "#[", "[`", "`]", "Option<", "Vec<", "&str", "\\\n"];

#[test]
fn no_help_shows_rust() {
    let dir = tempfile::tempdir().unwrap();
    let mut pages = vec![("packfs --help".to_owned(), packfs(dir.path(), ["--help"]))];
    for name in subcommands(dir.path()) {
        for flag in ["--help", "-h"] {
            pages.push((format!("packfs {name} {flag}"), packfs(dir.path(), [name.as_str(), flag])));
        }
    }
    for (what, r) in pages {
        assert_eq!(r.code, 0, "{what}: {r:?}");
        assert!(r.stdout.len() > 100, "{what}: {r:?}");
        for word in RUST {
            assert!(!r.stdout.contains(word), "{what} says {word:?}:\n{}", r.stdout);
        }
    }
}
