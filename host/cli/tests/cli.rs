//! The `packfs` command, driven as a user drives it: the built binary, real
//! directories, exit codes and the text it prints. Every subcommand; the
//! error cases (a missing file, a corrupt pack, a wrong argument, unpack
//! refusing to overwrite or to write outside its directory); a round trip
//! DIR -> pack -> unpack that must give the same tree, byte for byte and
//! metadata for metadata; determinism; `--exclude`.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;

use rustix::fs::{AtFlags, CWD, Timespec, Timestamps, utimensat};

#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
use packfs_test_support::wait_peak_rss;

/// What one run printed and how it ended.
#[derive(Debug)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// `packfs ARGS` under umask 022, whatever the tests' own: modes of what
/// `unpack` makes depend on it.
fn packfs<S: AsRef<OsStr>>(args: impl IntoIterator<Item = S>) -> Run {
    packfs_umask(0o022, args)
}

/// `packfs ARGS` under umask `mask`, set by a shell that then execs it.
fn packfs_umask<S: AsRef<OsStr>>(mask: u32, args: impl IntoIterator<Item = S>) -> Run {
    let out = Command::new("sh")
        .args(["-c", &format!("umask {mask:03o} && exec \"$0\" \"$@\""), env!("CARGO_BIN_EXE_packfs")])
        .args(args)
        .output()
        .expect("runs packfs");
    Run {
        code: out.status.code().expect("exits, not killed"),
        stdout: String::from_utf8(out.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("UTF-8 stderr"),
    }
}

/// `packfs ARGS` must succeed; returns its stdout.
fn ok<S: AsRef<OsStr>>(args: impl IntoIterator<Item = S>) -> String {
    let r = packfs(args);
    assert_eq!(r.code, 0, "{r:?}");
    r.stdout
}

/// `packfs ARGS` must fail with exit 2 and one line `packfs: ...` holding
/// every one of `needles`.
fn fails<S: AsRef<OsStr>>(args: impl IntoIterator<Item = S>, needles: &[&str]) -> Run {
    let r = packfs(args);
    assert_eq!(r.code, 2, "{r:?}");
    assert_eq!(r.stderr.lines().count(), 1, "one line: {r:?}");
    assert!(r.stderr.starts_with("packfs: "), "{r:?}");
    for n in needles {
        assert!(r.stderr.contains(n), "{n:?} in {r:?}");
    }
    r
}

/// Sets a path's access and modification times, not following a symlink.
fn set_mtime(path: &Path, secs: i64, nanos: i64) {
    let t = Timespec { tv_sec: secs, tv_nsec: nanos };
    utimensat(CWD, path, &Timestamps { last_access: t, last_modification: t }, AtFlags::SYMLINK_NOFOLLOW).unwrap();
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Bytes that do not repeat soon (an xorshift stream).
fn noise(len: usize, mut seed: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as u8
        })
        .collect()
}

/// A tree with every kind of thing a pack keeps: nested directories with
/// their own modes (one read-only, one empty), files of several sizes and
/// modes (setuid too), equal contents in different files, a hard link,
/// relative and dangling symlinks, a non-ASCII name, and odd mtimes with
/// nanoseconds on everything, the root included.
fn make_tree(root: &Path) {
    std::fs::create_dir_all(root.join("docs/sub/deep")).unwrap();
    std::fs::create_dir(root.join("empty.d")).unwrap();
    std::fs::create_dir(root.join("ro")).unwrap();
    std::fs::create_dir(root.join("build")).unwrap();
    let files: [(&str, Vec<u8>, u32); 10] = [
        ("docs/a.txt", b"hello\n".to_vec(), 0o644),
        ("docs/b.txt", b"hello\n".to_vec(), 0o600), // same bytes: one blob
        ("docs/sub/deep/big.bin", noise(300_000, 7), 0o640),
        ("docs/sub/notes.tmp", b"scratch".to_vec(), 0o644),
        ("run.sh", b"#!/bin/sh\necho hi\n".to_vec(), 0o755),
        ("setuid", b"s".to_vec(), 0o4750),
        ("empty", Vec::new(), 0o444),
        ("ro/inside.txt", b"in a read-only dir".to_vec(), 0o644),
        ("build/x.o", noise(1000, 3), 0o644),
        ("héllo wörld.txt", "ünïcode\n".as_bytes().to_vec(), 0o664),
    ];
    for (i, (path, data, mode)) in files.iter().enumerate() {
        let p = root.join(path);
        std::fs::write(&p, data).unwrap();
        chmod(&p, *mode);
        set_mtime(&p, 1_600_000_000 + i as i64 * 1000, 123_456_789 + i as i64);
    }
    std::fs::hard_link(root.join("docs/a.txt"), root.join("hard.txt")).unwrap();
    symlink("docs/a.txt", root.join("link")).unwrap();
    symlink("../nowhere/at/all", root.join("docs/dangling")).unwrap();
    symlink("sub", root.join("docs/to-sub")).unwrap();
    for (i, l) in ["link", "docs/dangling", "docs/to-sub"].iter().enumerate() {
        set_mtime(&root.join(l), 1_500_000_000 + i as i64, 42);
    }
    // Directories last, deepest first, so that nothing changes them after.
    for (dir, mode) in
        [("docs/sub/deep", 0o700), ("docs/sub", 0o750), ("docs", 0o755), ("empty.d", 0o711), ("build", 0o755)]
    {
        chmod(&root.join(dir), mode);
        set_mtime(&root.join(dir), 1_400_000_000, 999_999_999);
    }
    set_mtime(&root.join("ro"), 1_400_000_001, 1);
    chmod(&root.join("ro"), 0o555);
    chmod(root, 0o751);
    set_mtime(root, 1_300_000_000, 5);
}

/// Everything a pack keeps of one entry.
#[derive(Debug, PartialEq, Eq)]
struct Node {
    kind: &'static str,
    /// Permission bits (not for symlinks, whose mode Linux fixes).
    mode: Option<u32>,
    size: u64,
    mtime: (i64, i64),
    content: Option<Vec<u8>>,
    target: Option<PathBuf>,
    /// The other names of the same inode (hard links), sorted.
    also: Vec<String>,
}

/// Every entry under `root` (the root itself as ""), by path.
fn snapshot(root: &Path) -> BTreeMap<String, Node> {
    let mut nodes = BTreeMap::new();
    let mut inodes: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    let mut todo = vec![String::new()];
    while let Some(rel) = todo.pop() {
        let path = if rel.is_empty() { root.to_owned() } else { root.join(&rel) };
        let md = std::fs::symlink_metadata(&path).unwrap();
        let ft = md.file_type();
        let kind = if ft.is_dir() {
            "dir"
        } else if ft.is_symlink() {
            "symlink"
        } else {
            "file"
        };
        if ft.is_dir() {
            for e in std::fs::read_dir(&path).unwrap() {
                let name = e.unwrap().file_name().into_string().unwrap();
                todo.push(if rel.is_empty() { name } else { format!("{rel}/{name}") });
            }
        } else {
            inodes.entry(md.ino()).or_default().push(rel.clone());
        }
        let node = Node {
            kind,
            mode: (!ft.is_symlink()).then_some(md.mode() & 0o7777),
            size: if ft.is_dir() { 0 } else { md.len() },
            mtime: (md.mtime(), md.mtime_nsec()),
            content: ft.is_file().then(|| std::fs::read(&path).unwrap()),
            target: ft.is_symlink().then(|| std::fs::read_link(&path).unwrap()),
            also: Vec::new(),
        };
        nodes.insert(rel, node);
    }
    for names in inodes.values() {
        for n in names {
            let mut also: Vec<String> = names.iter().filter(|m| *m != n).cloned().collect();
            also.sort();
            nodes.get_mut(n).unwrap().also = also;
        }
    }
    nodes
}

/// A temporary directory holding `src/` (the tree) and room for packs.
struct Fixture {
    tmp: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("src")).unwrap();
        make_tree(&tmp.path().join("src"));
        Fixture { tmp }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    /// Packs `src/` into `name` with `extra` arguments; returns its path.
    fn pack(&self, name: &str, extra: &[&str]) -> PathBuf {
        let out = self.path(name);
        let (src, o) = (self.path("src"), out.clone());
        let args = [OsStr::new("pack"), src.as_os_str(), OsStr::new("-o"), o.as_os_str()];
        ok(args.into_iter().chain(extra.iter().map(OsStr::new)));
        out
    }
}

fn flip_byte(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at] ^= 0x55;
    std::fs::write(path, bytes).unwrap();
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn round_trip_gives_the_same_tree_and_the_same_pack() {
    let f = Fixture::new();
    let pack = f.pack("a.pack", &[]);
    let report = ok(["verify", p(&pack)]);
    assert!(report.contains("ok"), "{report}");

    let out = f.path("out/nested"); // created, parents too
    let said = ok(["unpack", "--same-permissions", p(&pack), p(&out)]);
    assert!(said.contains("10 files") && said.contains("3 symlinks") && said.contains("1 hard links"), "{said}");
    let (want, got) = (snapshot(&f.path("src")), snapshot(&out));
    assert_eq!(want.keys().collect::<Vec<_>>(), got.keys().collect::<Vec<_>>());
    for (path, node) in &want {
        assert_eq!(&got[path], node, "{path:?}");
    }
    assert_eq!(got["hard.txt"].also, ["docs/a.txt"], "the hard link is one inode again");

    // Packing the unpacked tree gives the very same bytes.
    let again = f.path("b.pack");
    ok(["pack", p(&out), "-o", p(&again)]);
    assert_eq!(std::fs::read(&pack).unwrap(), std::fs::read(&again).unwrap());
}

#[test]
fn packing_twice_gives_identical_bytes_and_a_summary() {
    let f = Fixture::new();
    let said = ok(["pack", p(&f.path("src")), "-o", p(&f.path("one.pack"))]);
    // 15 names: 10 files, a hard link, 3 symlinks ... and the dirs.
    assert!(said.contains("entries") && said.contains("in:") && said.contains("out:"), "{said}");
    assert!(said.contains("dedup: 6 bytes saved"), "docs/b.txt shares docs/a.txt's blob: {said}");
    ok(["pack", p(&f.path("src")), "-o", p(&f.path("two.pack"))]);
    let one = std::fs::read(f.path("one.pack")).unwrap();
    assert_eq!(one, std::fs::read(f.path("two.pack")).unwrap());
    assert_eq!(u64::try_from(one.len()).unwrap() % 8, 0);

    // An aligned pack is another layout of the same tree.
    ok(["pack", p(&f.path("src")), "-o", p(&f.path("paged.pack")), "--align", "4096"]);
    let info = ok(["info", p(&f.path("paged.pack"))]);
    assert!(info.contains("aligned to 4096 bytes"), "{info}");
    assert_eq!(packfs(["diff", p(&f.path("one.pack")), p(&f.path("paged.pack"))]).code, 0);
}

#[test]
fn exclude_hides_names_paths_and_directories() {
    let f = Fixture::new();
    let pack = f.pack("x.pack", &["--exclude", "*.tmp", "--exclude", "build/", "--exclude", "/docs/sub/deep"]);
    let all = ok(["ls", "-R", p(&pack)]);
    let names: Vec<&str> = all.lines().collect();
    for gone in ["build", "build/x.o", "docs/sub/notes.tmp", "docs/sub/deep", "docs/sub/deep/big.bin"] {
        assert!(!names.contains(&gone), "{gone} excluded: {all}");
    }
    for kept in ["docs/sub", "docs/a.txt", "hard.txt", "link", "run.sh"] {
        assert!(names.contains(&kept), "{kept} kept: {all}");
    }
    // `build/` matches directories only; a rooted pattern only at its place.
    std::fs::write(f.path("src/docs/build"), b"a file named build").unwrap();
    let pack = f.pack("y.pack", &["--exclude", "build/", "--exclude", "/sub"]);
    let all = ok(["ls", "-R", p(&pack)]);
    assert!(all.lines().any(|l| l == "docs/build") && all.lines().any(|l| l == "docs/sub"), "{all}");
    assert!(!all.lines().any(|l| l == "build"), "{all}");

    // A bad pattern is a wrong argument.
    fails(["pack", p(&f.path("src")), "-o", p(&f.path("z.pack")), "--exclude", "a["], &["--exclude", "a["]);
    assert!(!f.path("z.pack").exists());
}

#[test]
fn a_pack_written_inside_its_source_leaves_itself_out() {
    let f = Fixture::new();
    let inside = f.path("src/self.pack");
    ok(["pack", p(&f.path("src")), "-o", p(&inside)]);
    ok(["pack", p(&f.path("src")), "-o", p(&inside)]); // now self.pack exists
    let top = ok(["ls", p(&inside)]);
    assert!(!top.lines().any(|l| l == "self.pack"), "{top}");
    // Named through a symlink outside the source: the same file.
    let link = f.path("link.pack");
    symlink(&inside, &link).unwrap();
    ok(["pack", p(&f.path("src")), "-o", p(&link)]);
    let top = ok(["ls", p(&inside)]);
    assert!(!top.lines().any(|l| l == "self.pack"), "{top}");
}

#[test]
fn ls_lists_short_long_and_recursive() {
    let f = Fixture::new();
    let pack = f.pack("a.pack", &[]);
    let top = ok(["ls", p(&pack)]);
    assert_eq!(
        top.lines().collect::<Vec<_>>(),
        ["build", "docs", "empty", "empty.d", "hard.txt", "héllo wörld.txt", "link", "ro", "run.sh", "setuid"]
    );
    assert_eq!(ok(["ls", p(&pack), "/docs"]), "a.txt\nb.txt\ndangling\nsub\nto-sub\n");
    assert_eq!(ok(["ls", p(&pack), "docs/to-sub"]), "deep\nnotes.tmp\n", "a symlink to a directory is followed");

    let long = ok(["ls", "-l", p(&pack)]);
    let line = |name: &str| long.lines().find(|l| l.ends_with(name)).unwrap_or_else(|| panic!("{name}: {long}"));
    assert!(line(" hard.txt").starts_with("-rw-r--r-- 2 "), "{long}");
    assert!(line(" setuid").starts_with("-rwsr-x--- 1 "), "{long}");
    assert!(line(" empty.d").starts_with("drwx--x--x 2 "), "{long}");
    assert!(line(" run.sh").contains(" 2020-09-13 13:33:20 run.sh"), "UTC mtime: {long}");
    assert!(long.contains(" link -> docs/a.txt\n"), "{long}");
    assert!(ok(["ls", "-l", p(&pack), "link"]).starts_with("lrwxrwxrwx 1 10 "), "-l shows the link itself");

    let all = ok(["ls", "-R", p(&pack), "docs"]);
    assert_eq!(
        all.lines().collect::<Vec<_>>(),
        ["a.txt", "b.txt", "dangling", "sub", "sub/deep", "sub/deep/big.bin", "sub/notes.tmp", "to-sub"]
    );
    let long_all = ok(["ls", "-lR", p(&pack)]);
    assert!(long_all.contains(" docs/sub/deep/big.bin\n") && long_all.contains("300000 "), "{long_all}");
    assert_eq!(ok(["ls", p(&pack), "run.sh"]), "run.sh\n", "a file lists itself");
    fails(["ls", p(&pack), "docs/missing"], &["docs/missing", "no such file"]);
}

#[test]
fn cat_prints_files_and_refuses_the_rest() {
    let f = Fixture::new();
    let pack = f.pack("a.pack", &[]);
    assert_eq!(ok(["cat", p(&pack), "docs/a.txt"]), "hello\n");
    assert_eq!(ok(["cat", p(&pack), "/link", "run.sh"]), "hello\n#!/bin/sh\necho hi\n", "symlinks followed, in order");
    let out = Command::new(env!("CARGO_BIN_EXE_packfs")).args(["cat", p(&pack), "docs/sub/deep/big.bin"]).output();
    assert_eq!(out.unwrap().stdout, noise(300_000, 7), "binary content, byte for byte");
    fails(["cat", p(&pack), "docs"], &["docs", "is a directory"]);
    fails(["cat", p(&pack), "nope"], &["nope", "no such file"]);
    fails(["cat", p(&pack), "docs/dangling"], &["docs/dangling"]);
    fails(["cat", p(&pack), "../../etc/passwd"], &["../../etc/passwd"]);
    fails(["cat", p(&pack)], &["required"]);
}

#[test]
fn stat_shows_metadata() {
    let f = Fixture::new();
    let pack = f.pack("a.pack", &[]);
    let s = ok(["stat", p(&pack), "docs/a.txt"]);
    for want in
        ["type: file", "size: 6", "mode: 0644 (-rw-r--r--)", "links: 2", "mtime: 2020-09-13 12:26:40.123456789 UTC"]
    {
        assert!(s.contains(want), "{want:?} in {s}");
    }
    let s = ok(["stat", p(&pack), "link"]);
    assert!(s.contains("type: symlink") && s.contains("target: docs/a.txt") && s.contains("size: 10"), "{s}");
    let s = ok(["stat", "-L", p(&pack), "link"]);
    assert!(s.contains("type: file") && !s.contains("target:"), "{s}");
    let s = ok(["stat", p(&pack), "/"]);
    assert!(s.contains("type: directory") && s.contains("mode: 0751"), "{s}");
    fails(["stat", p(&pack), "no/such"], &["no/such"]);
}

/// A compressed pack (the default) whose stored bytes are damaged: verify
/// names the files of the damaged chunk, and reads of them fail, never
/// serve what the damage decodes to.
#[test]
fn verify_finds_damage_in_compressed_chunks() {
    let f = Fixture::new();
    let pack = f.pack("z.pack", &["--compress", "zstd:3", "--chunk-size", "4096"]);
    assert_eq!(packfs(["verify", p(&pack)]).code, 0);
    flip_byte(&pack, 64 + 3); // the first chunk's stored bytes
    let r = packfs(["verify", p(&pack)]);
    assert_eq!(r.code, 1, "{r:?}");
    // Verify checks by digest; a plain read by checksum, a pinned one by
    // digest.
    assert!(r.stdout.contains("chunk digest mismatch"), "{r:?}");
    let damaged = r.stdout.lines().next().unwrap().split(':').next().unwrap().to_owned();
    fails(["cat", p(&pack), &damaged], &["checksum"]);
    let digest = ok(["info", p(&pack)]).lines().find_map(|l| l.strip_prefix("digest:").map(|d| d.trim().to_owned()));
    fails(["cat", &format!("{}@{}", p(&pack), digest.unwrap()), &damaged], &["digest mismatch"]);
}

#[test]
fn info_shows_format_counts_and_dedup() {
    let f = Fixture::new();
    let plain = f.pack("plain.pack", &["--compress", "none"]);
    assert!(ok(["info", p(&plain)]).contains("version 1"));
    let pack = f.pack("a.pack", &["--compress", "lz4"]);
    let info = ok(["info", p(&pack)]);
    let len = std::fs::metadata(&pack).unwrap().len();
    for want in [
        "version 2".to_owned(),
        "chunks of up to 128.00 KiB (131072 bytes)".to_owned(),
        "aligned to 8 bytes".to_owned(),
        format!("{len} bytes"),
        // 10 files + hard link + 3 symlinks + 6 directories = 20 names;
        // the root makes 21 inodes, less one for the hard link.
        "20 names, 20 inodes".to_owned(),
        "files:  10".to_owned(),
        "dirs:   7".to_owned(),
        "3 symlinks, 1 extra hard-link names".to_owned(),
        "6 bytes saved".to_owned(),
    ] {
        assert!(info.contains(&want), "{want:?} in {info}");
    }
}

/// A tree of many small files gets a dictionary by default (`info` says
/// so), none with `--no-dictionary`; either unpacks to the same bytes.
#[test]
fn small_files_get_a_dictionary_unless_asked_not_to() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    for i in 0..200u32 {
        let dir = src.join(format!("d{}", i % 5));
        std::fs::create_dir_all(&dir).unwrap();
        let body: String = (0..40 + i % 30).map(|j| format!("def f{j}(self, x{}): return x * {i}\n", j % 7)).collect();
        std::fs::write(dir.join(format!("m{i}.py")), body).unwrap();
    }
    let (with, without) = (tmp.path().join("d.pack"), tmp.path().join("n.pack"));
    ok(["pack", p(&src), "-o", p(&with)]);
    ok(["pack", p(&src), "-o", p(&without), "--no-dictionary"]);
    assert!(ok(["info", p(&with)]).contains("with a dictionary of"));
    assert!(!ok(["info", p(&without)]).contains("dictionary"));
    for pack in [&with, &without] {
        let out = tmp.path().join(format!("{}.out", pack.display()));
        ok(["unpack", p(pack), p(&out)]);
        for i in (0..200).step_by(37) {
            let rel = format!("d{}/m{i}.py", i % 5);
            assert_eq!(std::fs::read(out.join(&rel)).unwrap(), std::fs::read(src.join(&rel)).unwrap(), "{rel}");
        }
    }
}

#[test]
fn verify_lists_damaged_entries() {
    let f = Fixture::new();
    // Uncompressed, so that big.bin's bytes can be found in the pack.
    let pack = f.pack("a.pack", &["--align", "4096", "--compress", "none"]);
    assert_eq!(packfs(["verify", p(&pack)]).code, 0);

    // Damage big.bin's content (the index stays whole: the pack opens).
    let out = Command::new(env!("CARGO_BIN_EXE_packfs")).args(["cat", p(&pack), "docs/sub/deep/big.bin"]).output();
    let big = out.unwrap().stdout;
    let bytes = std::fs::read(&pack).unwrap();
    let at = bytes.windows(big.len()).position(|w| w == big).unwrap();
    flip_byte(&pack, at + 1000);
    let r = packfs(["verify", p(&pack)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains("docs/sub/deep/big.bin: corrupt pack at byte") && r.stdout.contains("digest"), "{r:?}");
    assert_eq!(r.stdout.lines().count(), 1, "only the damaged entry: {r:?}");
    assert!(r.stderr.starts_with("packfs: ") && r.stderr.contains("damaged entries: 1"), "{r:?}");
    // Damaged content is never served, nor unpacked.
    fails(["cat", p(&pack), "docs/sub/deep/big.bin"], &["big.bin", "checksum"]);
    fails(["unpack", p(&pack), p(&f.path("out"))], &["big.bin", "nothing extracted"]);
    assert!(!f.path("out").exists(), "nothing written");
    assert_eq!(ok(["cat", p(&pack), "docs/a.txt"]), "hello\n", "the rest still reads");
}

#[test]
fn a_corrupt_index_is_one_clear_error_everywhere() {
    let f = Fixture::new();
    let pack = f.pack("a.pack", &[]);
    let len = std::fs::metadata(&pack).unwrap().len() as usize;
    flip_byte(&pack, len - 200); // in the index
    let out = f.path("out");
    for cmd in ["ls", "info", "unpack", "stat", "cat"] {
        let mut args = vec![cmd, p(&pack)];
        match cmd {
            "unpack" => args.push(p(&out)),
            "stat" | "cat" => args.push("docs/a.txt"),
            _ => {}
        }
        fails(&args, &["a.pack", "corrupt pack"]);
    }
    let r = packfs(["verify", p(&pack)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("corrupt pack") && r.stderr.lines().count() == 1, "{r:?}");
    // Not a pack at all, and a truncated one.
    std::fs::write(f.path("junk.pack"), b"just some text").unwrap();
    fails(["ls", p(&f.path("junk.pack"))], &["junk.pack", "corrupt pack"]);
    let whole = std::fs::read(f.pack("b.pack", &[])).unwrap();
    std::fs::write(f.path("short.pack"), &whole[..whole.len() - 7]).unwrap();
    fails(["info", p(&f.path("short.pack"))], &["short.pack", "corrupt pack"]);
}

#[test]
fn missing_files_and_wrong_arguments_are_one_line() {
    let f = Fixture::new();
    let missing = f.path("missing.pack");
    let out = f.path("out");
    for cmd in ["ls", "info", "verify", "stat", "cat", "unpack", "diff"] {
        let mut args = vec![cmd, p(&missing)];
        match cmd {
            "stat" | "cat" => args.push("x"),
            "unpack" => args.push(p(&out)),
            "diff" => args.push(p(&missing)),
            _ => {}
        }
        fails(&args, &["missing.pack", "No such file"]);
    }
    fails(["pack", p(&f.path("no-such-dir")), "-o", p(&f.path("o.pack"))], &["no-such-dir", "No such file"]);
    fails(["pack", p(&f.path("src/run.sh")), "-o", p(&f.path("o.pack"))], &["run.sh", "not a directory"]);
    fails(["pack", p(&f.path("src"))], &["--output"]);
    fails(["pack", p(&f.path("src")), "-o", p(&f.path("o.pack")), "--align", "100"], &["--align", "100"]);
    fails(["pack", p(&f.path("src")), "-o", p(&f.path("o.pack")), "--compress", "zstd:0"], &["--compress", "zstd:0"]);
    fails(["pack", p(&f.path("src")), "-o", p(&f.path("o.pack")), "--compress", "gzip"], &["--compress", "gzip"]);
    fails(["pack", p(&f.path("src")), "-o", p(&f.path("o.pack")), "--chunk-size", "5000"], &["--chunk-size"]);
    fails(["frobnicate"], &["frobnicate"]);
    fails(["ls", p(&missing), "-x"], &["-x"]);
    fails(["pack", p(&f.path("src")), "-o", p(&f.path("no/dir/o.pack"))], &["o.pack"]);
    assert!(!f.path("o.pack").exists() && !f.path("no").exists(), "nothing written");
}

#[test]
fn a_failed_pack_leaves_the_old_one_and_no_garbage() {
    let f = Fixture::new();
    let pack = f.pack("a.pack", &[]);
    let before = std::fs::read(&pack).unwrap();
    // A symlink whose target is not UTF-8 cannot go in a pack.
    symlink(OsStr::from_bytes(b"bad\xff"), f.path("src/docs/bad-link")).unwrap();
    fails(["pack", p(&f.path("src")), "-o", p(&pack)], &["a.pack", "docs/bad-link", "UTF-8"]);
    assert_eq!(std::fs::read(&pack).unwrap(), before);
    let mut names: Vec<_> = std::fs::read_dir(f.tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert_eq!(names, ["a.pack", "src"]);
}

#[test]
fn unpack_refuses_to_overwrite_without_force() {
    let f = Fixture::new();
    let pack = f.pack("a.pack", &[]);
    let out = f.path("out");
    ok(["unpack", p(&pack), p(&out)]);
    let mode = |path: &str| std::fs::metadata(out.join(path)).unwrap().mode() & 0o7777;
    assert_eq!(mode("setuid"), 0o750, "set-user-ID cleared without --same-permissions");
    assert_eq!(mode("docs/b.txt"), 0o600);
    chmod(&out.join("ro"), 0o755); // so that the test may write in it
    std::fs::write(out.join("ro/inside.txt"), b"changed").unwrap();
    std::fs::write(out.join("extra"), b"mine").unwrap();
    fails(["unpack", p(&pack), p(&out)], &["already exist", "--force"]);
    assert_eq!(std::fs::read(out.join("ro/inside.txt")).unwrap(), b"changed", "nothing overwritten");

    // Into a symlink to a directory: through it.
    let linked = f.path("linked");
    symlink(f.path("target-dir"), &linked).unwrap();
    std::fs::create_dir(f.path("target-dir")).unwrap();
    ok(["unpack", p(&pack), p(&linked)]);
    assert_eq!(std::fs::read(f.path("target-dir/docs/a.txt")).unwrap(), b"hello\n");

    // Into a directory holding only other names and the same directories: fine.
    let other = f.path("other");
    std::fs::create_dir_all(other.join("docs/sub")).unwrap();
    std::fs::write(other.join("docs/mine.txt"), b"mine").unwrap();
    ok(["unpack", p(&pack), p(&other)]);
    assert_eq!(std::fs::read(other.join("docs/mine.txt")).unwrap(), b"mine");
    assert_eq!(std::fs::read(other.join("docs/a.txt")).unwrap(), b"hello\n");

    // A fifo in the way is in the way, like a file, and --force replaces it.
    std::fs::remove_file(out.join("empty")).unwrap();
    rustix::fs::mknodat(CWD, out.join("empty"), rustix::fs::FileType::Fifo, 0o644.into(), 0).unwrap();
    fails(["unpack", p(&pack), p(&out)], &["already exist", "--force"]);

    // --force replaces files and restores their metadata; a directory
    // that exists keeps its own.
    ok(["unpack", "--force", p(&pack), p(&out)]);
    assert!(std::fs::metadata(out.join("empty")).unwrap().is_file());
    assert_eq!(mode("empty"), 0o444);
    assert_eq!(std::fs::read(out.join("ro/inside.txt")).unwrap(), b"in a read-only dir");
    assert_eq!(std::fs::read(out.join("extra")).unwrap(), b"mine", "names not in the pack stay");
    assert_eq!(mode("ro"), 0o755);

    // A directory in the way of a file stays, even with --force.
    let third = f.path("third");
    std::fs::create_dir_all(third.join("run.sh")).unwrap();
    fails(["unpack", "--force", p(&pack), p(&third)], &["run.sh", "a directory is in the way"]);
    fails(["unpack", p(&pack), p(&f.path("src/run.sh"))], &["run.sh", "not a directory"]);
}

#[test]
fn unpack_never_writes_outside_its_directory() {
    let f = Fixture::new();
    let pack = f.pack("a.pack", &[]);
    let outside = f.path("outside");
    std::fs::create_dir(&outside).unwrap();
    // The destination already holds symlinks where the pack has a
    // directory and a file: they must be replaced, never followed.
    let out = f.path("out");
    std::fs::create_dir(&out).unwrap();
    symlink(&outside, out.join("docs")).unwrap();
    symlink(outside.join("victim"), out.join("run.sh")).unwrap();
    fails(["unpack", p(&pack), p(&out)], &["already exist"]);
    ok(["unpack", "--force", p(&pack), p(&out)]);
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0, "nothing written outside");
    assert!(std::fs::symlink_metadata(out.join("docs")).unwrap().is_dir());
    assert_eq!(std::fs::read(out.join("docs/a.txt")).unwrap(), b"hello\n");
    assert!(std::fs::symlink_metadata(out.join("run.sh")).unwrap().is_file());

    // A symlink with an absolute target is not made: it could lead other
    // tools out of the tree. The rest is extracted, and the run fails.
    symlink("/etc/passwd", f.path("src/abs")).unwrap();
    let abs = f.pack("abs.pack", &[]);
    let r = packfs(["unpack", p(&abs), p(&f.path("out2"))]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("abs: symlink to absolute path \"/etc/passwd\" left out"), "{r:?}");
    let last = r.stderr.lines().last().unwrap();
    assert!(last.starts_with("packfs: ") && last.contains("--absolute-symlinks"), "{r:?}");
    assert!(std::fs::symlink_metadata(f.path("out2/abs")).is_err());
    assert_eq!(std::fs::read(f.path("out2/docs/a.txt")).unwrap(), b"hello\n");
    // Asked for, it is made — a symlink, nothing followed — in its place.
    symlink("/nonexistent/absolute", f.path("src/docs/sub/abs2")).unwrap();
    let abs = f.pack("abs.pack", &[]);
    ok(["unpack", "--absolute-symlinks", "-p", p(&abs), p(&f.path("out3"))]);
    assert_eq!(std::fs::read_link(f.path("out3/abs")).unwrap(), Path::new("/etc/passwd"));
    assert_eq!(std::fs::read_link(f.path("out3/docs/sub/abs2")).unwrap(), Path::new("/nonexistent/absolute"));
    let (want, got) = (snapshot(&f.path("src")), snapshot(&f.path("out3")));
    assert_eq!(want, got, "the whole tree, absolute symlinks and their mtimes included");
}

/// Unpacking into a tree that exists changes only what it makes. A pack
/// holding `.ssh/` at 0777 once made a home's 0700 `.ssh` world-writable,
/// and its new files 0666 under umask 022. Now, as tar does for a user: a
/// directory that exists keeps its mode and times unless `--overwrite-dir`,
/// and modes are masked by the umask unless `-p`.
#[test]
fn unpack_changes_only_what_it_makes() {
    const PACKED: i64 = 1_600_000_000;
    const OLD: i64 = 1_000_000_000;
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    for dir in [".ssh", ".cache", "bin"] {
        std::fs::create_dir_all(src.join(dir)).unwrap();
    }
    for (file, mode) in [(".ssh/authorized_keys", 0o666), ("bin/tool", 0o777), ("notes", 0o666)] {
        std::fs::write(src.join(file), file).unwrap();
        chmod(&src.join(file), mode);
        set_mtime(&src.join(file), PACKED, 0);
    }
    for dir in [".ssh", ".cache", "bin", ""] {
        chmod(&src.join(dir), 0o777);
        set_mtime(&src.join(dir), PACKED, 0);
    }
    let pack = tmp.path().join("home.pack");
    ok(["pack", p(&src), "-o", p(&pack)]);

    let home = tmp.path().join("home");
    for dir in [".ssh", ".cache"] {
        std::fs::create_dir_all(home.join(dir)).unwrap();
        chmod(&home.join(dir), 0o700);
        set_mtime(&home.join(dir), OLD, 0);
    }
    chmod(&home, 0o750);
    let mode = |path: &Path| std::fs::symlink_metadata(path).unwrap().mode() & 0o7777;
    let mtime = |path: &Path| std::fs::symlink_metadata(path).unwrap().mtime();
    let started = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    ok(["unpack", p(&pack), p(&home)]); // umask 022
    assert_eq!((mode(&home), mode(&home.join(".ssh")), mode(&home.join(".cache"))), (0o750, 0o700, 0o700));
    assert_eq!(mtime(&home.join(".cache")), OLD, "nothing added: untouched");
    let ssh = mtime(&home.join(".ssh"));
    assert!(ssh >= started, "the time a key was added to it, not the pack's: {ssh}");
    for (path, want) in [(".ssh/authorized_keys", 0o644), ("notes", 0o644), ("bin", 0o755), ("bin/tool", 0o755)] {
        assert_eq!((mode(&home.join(path)), mtime(&home.join(path))), (want, PACKED), "{path}");
    }

    // It is the umask, not a fixed mask; DIR made here is made like the rest.
    let fresh = tmp.path().join("fresh");
    let r = packfs_umask(0o027, ["unpack", p(&pack), p(&fresh)]);
    assert_eq!(r.code, 0, "{r:?}");
    for (path, want) in [("", 0o750), (".ssh", 0o750), ("notes", 0o640), ("bin/tool", 0o750)] {
        assert_eq!((mode(&fresh.join(path)), mtime(&fresh.join(path))), (want, PACKED), "{path:?}");
    }

    // -p: the pack's modes as they are.
    let kept = tmp.path().join("kept");
    ok(["unpack", "-p", p(&pack), p(&kept)]);
    for path in ["", ".ssh", ".ssh/authorized_keys", "notes", "bin/tool"] {
        let want = if path.ends_with("keys") || path == "notes" { 0o666 } else { 0o777 };
        assert_eq!(mode(&kept.join(path)), want, "{path:?}");
    }

    // --overwrite-dir: directories that exist, DIR too, take the pack's
    // metadata (masked, unless -p, like the rest).
    ok(["unpack", "--force", "--overwrite-dir", p(&pack), p(&home)]);
    for dir in ["", ".ssh", ".cache"] {
        assert_eq!((mode(&home.join(dir)), mtime(&home.join(dir))), (0o755, PACKED), "{dir:?}");
    }
    ok(["unpack", "--force", "--overwrite-dir", "-p", p(&pack), p(&home)]);
    assert_eq!(mode(&home.join(".ssh")), 0o777);
}

/// The bytes `r` gives, which must all be zero.
fn count_zeros(mut r: impl std::io::Read) -> u64 {
    let (mut buf, zeros) = (vec![1u8; 1 << 20], vec![0u8; 1 << 20]);
    let mut n = 0;
    loop {
        let k = r.read(&mut buf).unwrap();
        if k == 0 {
            return n;
        }
        assert!(buf[..k] == zeros[..k], "a byte that is not zero in {n}..{}", n + k as u64);
        n += k as u64;
    }
}

/// A pack of a few KB can declare hundreds of MiB (a compressed pack may
/// declare 32,768 times its size): `cat`, `unpack` and `verify` read it in
/// bounded pieces, not whole, and still give every byte. They once held a
/// whole decoded file (cat, unpack: 1.2 GB resident for 1 GiB of zeros) or
/// the reader's 128 MiB chunk cache (verify). 256 MiB, not 1 GiB, keeps the
/// test to a few seconds (unpack writes it all to disk) and is still four
/// times the bound.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
#[test]
fn a_compression_bomb_is_read_in_bounded_memory() {
    const SIZE: u64 = 256 << 20;
    const PEAK: u64 = 64 << 20;
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::File::create(src.join("zeros")).unwrap().set_len(SIZE).unwrap(); // sparse: not on disk
    let pack = tmp.path().join("bomb.pack");
    ok(["pack", p(&src), "-o", p(&pack), "--compress", "zstd:1", "--chunk-size", "1048576"]);
    let len = std::fs::metadata(&pack).unwrap().len();
    assert!(len < SIZE / 10_000, "a small pack: {len} bytes");

    let spawn = |args: &[&str], stdout: std::process::Stdio| {
        Command::new(env!("CARGO_BIN_EXE_packfs")).args(args).stdout(stdout).spawn().unwrap()
    };
    let mut cat = spawn(&["cat", p(&pack), "zeros"], std::process::Stdio::piped());
    assert_eq!(count_zeros(cat.stdout.take().unwrap()), SIZE, "cat gives every byte");
    let (code, cat_peak) = wait_peak_rss(cat);
    assert_eq!(code, 0);

    let (code, verify_peak) = wait_peak_rss(spawn(&["verify", p(&pack)], std::process::Stdio::null()));
    assert_eq!(code, 0);

    let out = tmp.path().join("out");
    let (code, unpack_peak) = wait_peak_rss(spawn(&["unpack", p(&pack), p(&out)], std::process::Stdio::null()));
    assert_eq!(code, 0);
    assert_eq!(count_zeros(std::fs::File::open(out.join("zeros")).unwrap()), SIZE, "unpack writes every byte");

    // The same bomb but its last byte: diff reads both whole files.
    let other = tmp.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let last = std::fs::File::create(other.join("zeros")).unwrap();
    last.set_len(SIZE - 1).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&last, b"!", SIZE - 1).unwrap();
    let pack2 = tmp.path().join("other.pack");
    ok(["pack", p(&other), "-o", p(&pack2), "--compress", "zstd:1", "--chunk-size", "1048576"]);
    let (code, diff_peak) = wait_peak_rss(spawn(&["diff", p(&pack), p(&pack2)], std::process::Stdio::null()));
    assert_eq!(code, 1, "the last byte differs");
    let (code, same_peak) = wait_peak_rss(spawn(&["diff", p(&pack), p(&pack)], std::process::Stdio::null()));
    assert_eq!(code, 0);

    let mib = |b: u64| b >> 20;
    eprintln!(
        "peak RSS: cat {} MiB, verify {} MiB, unpack {} MiB, diff {} and {} MiB",
        mib(cat_peak),
        mib(verify_peak),
        mib(unpack_peak),
        mib(diff_peak),
        mib(same_peak)
    );
    let all = [("cat", cat_peak), ("verify", verify_peak), ("unpack", unpack_peak), ("diff", diff_peak)];
    for (cmd, peak) in all.into_iter().chain([("diff of the same", same_peak)]) {
        assert!(peak < PEAK, "{cmd}: {} MiB resident at peak", mib(peak));
    }
}

#[test]
fn diff_lists_added_removed_and_changed() {
    let f = Fixture::new();
    let a = f.pack("a.pack", &[]);
    let r = packfs(["diff", p(&a), p(&a)]);
    assert_eq!((r.code, r.stdout.as_str()), (0, ""), "{r:?}");

    let src = f.path("src");
    std::fs::write(src.join("docs/b.txt"), b"other\n").unwrap(); // content
    chmod(&src.join("run.sh"), 0o700); // mode
    std::fs::remove_file(src.join("link")).unwrap();
    symlink("docs/b.txt", src.join("link")).unwrap(); // target
    std::fs::remove_file(src.join("empty")).unwrap();
    std::fs::create_dir(src.join("empty")).unwrap(); // kind
    std::fs::remove_file(src.join("setuid")).unwrap(); // removed
    std::fs::write(src.join("docs/new.txt"), b"new").unwrap(); // added
    chmod(&src.join("ro"), 0o755);
    std::fs::remove_dir_all(src.join("docs/sub")).unwrap(); // removed, whole
    set_mtime(&src.join("hard.txt"), 1, 0); // times are not compared
    let b = f.pack("b.pack", &[]);
    let r = packfs(["diff", p(&a), p(&b)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(
        r.stdout.lines().collect::<Vec<_>>(),
        [
            "~ docs/b.txt: content",
            "+ docs/new.txt",
            "- docs/sub/",
            "- docs/sub/deep/",
            "- docs/sub/deep/big.bin",
            "- docs/sub/notes.tmp",
            "~ empty/: kind, mode",
            "~ link: target",
            "~ ro/: mode",
            "~ run.sh: mode",
            "- setuid",
        ]
    );
    let r = packfs(["diff", p(&b), p(&a)]);
    assert!(r.stdout.contains("+ setuid\n") && r.stdout.contains("- docs/new.txt\n"), "{r:?}");
}

#[test]
fn every_subcommand_has_help() {
    let top = ok(["--help"]);
    for cmd in ["pack", "ls", "cat", "stat", "info", "verify", "unpack", "diff"] {
        assert!(top.contains(&format!("  {cmd} ")), "{cmd} listed: {top}");
        let help = ok([cmd, "--help"]);
        assert!(help.contains(&format!("Usage: packfs {cmd}")), "{help}");
    }
    assert!(ok(["pack", "--help"]).contains("--exclude <GLOB>"));
    let unpack = ok(["unpack", "--help"]);
    for flag in ["--force", "--overwrite-dir", "--preserve-permissions", "umask"] {
        assert!(unpack.contains(flag), "{flag} in {unpack}");
    }
}

#[test]
fn pack_refuses_what_it_cannot_hold_unless_excluded() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    std::fs::create_dir_all(src.join("sub")).unwrap();
    std::fs::write(src.join("kept"), b"kept").unwrap();
    rustix::fs::mknodat(CWD, src.join("sub/fifo"), rustix::fs::FileType::Fifo, 0o644.into(), 0).unwrap();
    let out = tmp.path().join("a.pack");
    fails(["pack", p(&src), "-o", p(&out)], &["sub/fifo", "a fifo"]);
    assert!(!out.exists(), "nothing published");
    std::fs::remove_file(src.join("sub/fifo")).unwrap();
    std::fs::write(src.join("sub").join(OsStr::from_bytes(b"caf\xe9")), b"x").unwrap();
    fails(["pack", p(&src), "-o", p(&out)], &["not UTF-8"]);
    ok(["pack", p(&src), "-o", p(&out), "--exclude", "caf*"]);
    assert_eq!(ok(["ls", "-R", p(&out)]).lines().collect::<Vec<_>>(), ["kept", "sub"]);
}

/// A reader that goes away is not an error, and never a panic.
#[test]
fn output_to_a_closed_pipe_ends_quietly() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("f"), b"f").unwrap();
    let pack = tmp.path().join("a.pack");
    ok(["pack", p(&src), "-o", p(&pack)]);
    for args in [vec!["info", p(&pack)], vec!["verify", p(&pack)], vec!["stat", p(&pack), "f"]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_packfs"))
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take()); // the reader is gone before anything is written
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stderr.is_empty(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    // Damage found is still damage, however little of the list was read.
    let bytes = std::fs::read(&pack).unwrap();
    let at = bytes.windows(1).position(|w| w == b"f").unwrap();
    let mut damaged = bytes.clone();
    damaged[at] ^= 1;
    std::fs::write(&pack, &damaged).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_packfs"))
        .args(["verify", p(&pack)])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("damaged entries: 1"));
}

/// A pack that is a chain of 20,000 directories (a valid pack of a few
/// MB): the walks of `ls -R`, `info` and `unpack`'s check hold one path,
/// not one per level (each level's path was kept: 400 MB here, its depth
/// squared), and `diff`, which must hold every path, refuses paths no
/// guest could reach.
#[test]
fn a_deep_tree_is_walked_in_bounded_memory() {
    use packfs_core::{FileSystem, MemFs, OpenOptions};
    const DEPTH: usize = 20_000;
    let tmp = tempfile::tempdir().unwrap();
    let fs = MemFs::new();
    let mut dir = fs.root();
    for _ in 0..DEPTH {
        dir = fs.mkdir(dir, "a", 0o755).unwrap();
    }
    fs.close(fs.open(dir, "f", &OpenOptions::create()).unwrap());
    let pack = tmp.path().join("deep.pack");
    packfs_core::pack::write_pack(&fs.snapshot(), std::fs::File::create(&pack).unwrap()).unwrap();

    let spawn = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_packfs"))
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let out = tmp.path().join("out");
    // `ls -R` prints every path (its depth squared: 400 MB), holding one.
    for args in [&["ls", "-R", p(&pack)][..], &["ls", "-lR", p(&pack)], &["info", p(&pack)], &["verify", p(&pack)]] {
        let (code, peak) = wait_peak_rss(spawn(args));
        assert_eq!(code, 0, "{args:?}");
        assert!(peak < 64 << 20, "{args:?}: {} MiB resident at peak", peak >> 20);
    }
    let diff = packfs(["diff", p(&pack), p(&pack)]);
    assert_eq!(diff.code, 2, "{diff:?}");
    assert!(diff.stderr.contains("a path longer than 4096 bytes"), "{diff:?}");
    // unpack checks the whole tree before it writes: a missing DIR is
    // walked through without a host path being made.
    std::fs::write(&out, b"a file where DIR would be").unwrap();
    let (code, peak) = wait_peak_rss(spawn(&["unpack", p(&pack), p(&out)]));
    assert_eq!(code, 2, "DIR is a file");
    assert!(peak < 64 << 20, "unpack: {} MiB resident at peak", peak >> 20);
}

/// Packs of a few KB whose index is one zstd frame declaring a 2 TiB
/// window or a 1 TiB content size over 1 GiB, or 64 GiB, of RLE blocks
/// (`fuzzing::window_bomb`: 33 KB and 2 MB): `info` and `ls` refuse them as
/// corrupt, holding a few MiB. The pure-Rust decoder kept the declared
/// window whole before it yielded a byte: on 65991d3 `info` on the first
/// peaked at 1,066 MB, and the 64 GiB one made `ls` abort.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
#[test]
fn a_frame_declaring_a_huge_window_is_refused_in_bounded_memory() {
    use packfs_core::pack::fuzzing::{Head, window_bomb};
    use std::io::Read;
    let f = Fixture::new();
    let base = std::fs::read(f.pack("base.pack", &["--compress", "zstd"])).unwrap();
    let bomb = f.path("bomb.pack");
    let huge = Head::window(31 << 3 | 7);
    for (head, zeros) in [(huge, 1 << 30), (Head::single(1 << 40), 1 << 30), (huge, 64 << 30)] {
        std::fs::write(&bomb, window_bomb(&base, head, zeros)).unwrap();
        for cmd in ["info", "ls"] {
            let mut child = Command::new(env!("CARGO_BIN_EXE_packfs"))
                .args([cmd, p(&bomb)])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let mut stderr = String::new();
            child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
            let (code, peak) = wait_peak_rss(child);
            assert_eq!(code, 2, "{cmd} {head:?}: {stderr}");
            assert!(stderr.contains("corrupt pack"), "{cmd} {head:?}: {stderr}");
            assert!(peak < 64 << 20, "{cmd} {head:?}: {} MiB resident at peak", peak >> 20);
        }
    }
}

/// A pack pinned by the digest `pack` and `info` print: every command that
/// takes a PACK opens only that pack, and says why it refuses another.
#[test]
fn a_pinned_pack_opens_only_as_itself() {
    let f = Fixture::new();
    let pack = f.pack("a.pack", &[]);
    let said = ok(["pack", p(&f.path("src")), "-o", p(&f.path("b.pack"))]);
    let digest = said.lines().find_map(|l| l.trim().strip_prefix("digest: ")).unwrap().split(' ').next().unwrap();
    assert!(digest.starts_with("blake3:") && digest.len() == 71, "{said}");
    let info = ok(["info", p(&pack)]);
    assert!(info.contains(&format!("digest:   {digest}")), "the same tree, the same digest: {info}");
    let pinned = format!("{}@{digest}", p(&pack));
    assert_eq!(ok(["cat", &pinned, "docs/a.txt"]), ok(["cat", p(&pack), "docs/a.txt"]));
    assert!(ok(["verify", &pinned]).contains("checked by BLAKE3 digest"));
    assert!(ok(["ls", &pinned]).contains("docs"));
    ok(["stat", &pinned, "docs"]);
    ok(["diff", &pinned, p(&f.path("b.pack"))]);
    ok(["unpack", &pinned, p(&f.path("out"))]);
    // Another pack under this pin, a pin that is no digest, a pack that
    // has no digests: each refused, in one line that says so.
    let other = f.pack("other.pack", &["--exclude", "docs"]);
    for cmd in ["cat", "ls", "info", "stat"] {
        let args: Vec<String> = [cmd.to_owned(), format!("{}@{digest}", p(&other))]
            .into_iter()
            .chain((cmd == "cat" || cmd == "stat").then(|| "run.sh".to_owned()))
            .collect();
        fails(&args, &["not the pinned pack", digest]);
    }
    fails(["ls", &format!("{}@blake3:00", p(&pack))], &["is not a digest"]);
    let old = f.pack("old.pack", &["--no-digests"]);
    assert!(ok(["info", p(&old)]).contains("digest:   none"));
    fails(["ls", &format!("{}@{digest}", p(&old))], &["no extent digests"]);
}
