//! The scripts of the differential tests of `wasi:filesystem` 0.3
//! (`p3_differential.rs`, against wasmtime-wasi) and 0.2 (`p2_scripts.rs`,
//! the reference for the jco adapter): the calls, in the language of the
//! script guests (`guest-tests/p3/src/bin/p3_script.rs`,
//! `guest-tests/src/bin/p2_script.rs`), how proptest generates them, and
//! the tree they start on.

#![allow(dead_code)] // each test file uses its own part

use std::fmt;
use std::path::Path;

use packfs_core::{FileSystem, MemFs, OpenOptions};
use proptest::prelude::*;
use proptest::sample::select;

/// Calls per script, at most.
pub(crate) const MAX_CALLS: usize = 60;

/// Descriptor slots: 0 is `/`, 1 is `/ro`, 2–7 what a script opens.
pub(crate) const SLOTS: u8 = 8;

/// Paths, over the names of the starting tree ([`seed`]) and a few new
/// ones, so that calls collide; with `.`, `..`, empty, absolute, through
/// symlinks, escaping, and ending in `/`.
pub(crate) const PATHS: &[&str] = &[
    "d",
    "d/f",
    "f",
    "g",
    "h",
    "l",
    "ld",
    "ld/f",
    "loop",
    "dangling",
    "e",
    "new",
    "d/new",
    "x",
    "big",
    "esc",
    "abs",
    ".",
    "..",
    "",
    "/etc",
    "/d",
    "d/../g",
    "e/..",
    "e/.",
    "d/./f",
    "l/../g",
    "none/x",
    "d/f/x",
    "esc/y",
    "abs/f",
    "../d",
    "d/",
    "e/",
    "new/",
    "l/",
    "ld/",
    "g/",
    "dangling/",
    "d/f/",
    "e/new/",
    "esc/",
    "abs/",
    "up/",
    "chain/",
    "deep/",
    "up//",
    "e/../up/",
];

/// Paths ending in `/` through a symlink that leads out of the preopen,
/// whose last names no call of a script can make anything but that
/// symlink (no path names them without the `/`): `remove-directory-at`
/// takes these, which both sides refuse as leaving (wasmtime-wasi answers
/// `invalid` to the others, which Linux and PackFS remove).
pub(crate) const LEAVING: &[&str] = &["up/", "chain/", "deep/", "up//", "e/../up/"];

/// Symlink targets: names that exist or not, escapes, absolute paths.
pub(crate) const TARGETS: &[&str] =
    &["g", "d", "f", "nowhere", "..", "../x", "../../x", "/etc", "/d", ".", "d/f", "loop", "e/../d", "new", ""];

/// Times `set-times` sets (`SECS.NANOS`, before 2000, one with nanoseconds
/// past a second), `now`, or `-` (no change).
pub(crate) const TIMES: &[&str] = &["-", "now", "0.0", "5.0", "1.1", "7.123456789", "86400.999999999", "3.1500000000"];

/// Times before this (2000-01-01, in seconds) were set by a script.
pub(crate) const EXPLICIT_BEFORE: i64 = 946_684_800;

/// One call of the script: a line of `p3_script`'s language.
#[derive(Clone)]
pub(crate) enum Op {
    Open { slot: u8, fd: u8, follow: bool, open: u8, flags: u8, path: &'static str },
    Mkdir { fd: u8, path: &'static str },
    Unlink { fd: u8, path: &'static str },
    Rmdir { fd: u8, path: &'static str },
    Readlink { fd: u8, path: &'static str },
    Stat { fd: u8 },
    StatAt { fd: u8, follow: bool, path: &'static str },
    SetSize { fd: u8, size: u64 },
    Times { fd: u8, atime: &'static str, mtime: &'static str },
    TimesAt { fd: u8, follow: bool, path: &'static str, atime: &'static str, mtime: &'static str },
    Write { fd: u8, at: Option<u64>, len: usize, seed: u8, piece: usize },
    Read { fd: u8, at: u64, limit: usize, piece: usize },
    List { fd: u8, limit: usize },
    Rename { fd: u8, path: &'static str, to_fd: u8, to: &'static str },
    Link { fd: u8, path: &'static str, to_fd: u8, to: &'static str },
    Symlink { fd: u8, target: &'static str, path: &'static str },
    Same { fd: u8, other: u8 },
    Hash { fd: u8, other: u8 },
    HashAt { fd: u8, follow: bool, path: &'static str, other: u8 },
    Flags { fd: u8 },
    Type { fd: u8 },
    Sync { fd: u8, data: bool },
    Advise { fd: u8 },
    Drop { slot: u8 },
}

pub(crate) fn follows(f: bool) -> &'static str {
    if f { "f" } else { "n" }
}

/// Flag bits as letters: bit `k` is `letters[k]`; `-` for none.
pub(crate) fn letters(bits: u8, letters: &str) -> String {
    let s: String = letters.chars().enumerate().filter(|(k, _)| bits & (1 << k) != 0).map(|(_, c)| c).collect();
    if s.is_empty() { "-".into() } else { s }
}

impl fmt::Display for Op {
    fn fmt(&self, w: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Op::Open { slot, fd, follow, open, flags, path } => {
                write!(
                    w,
                    "open|{slot}|{fd}|{}|{}|{}|{path}",
                    follows(follow),
                    letters(open, "cdet"),
                    letters(flags, "rwm")
                )
            }
            Op::Mkdir { fd, path } => write!(w, "mkdir|{fd}|{path}"),
            Op::Unlink { fd, path } => write!(w, "unlink|{fd}|{path}"),
            Op::Rmdir { fd, path } => write!(w, "rmdir|{fd}|{path}"),
            Op::Readlink { fd, path } => write!(w, "readlink|{fd}|{path}"),
            Op::Stat { fd } => write!(w, "stat|{fd}"),
            Op::StatAt { fd, follow, path } => write!(w, "statat|{fd}|{}|{path}", follows(follow)),
            Op::SetSize { fd, size } => write!(w, "size|{fd}|{size}"),
            Op::Times { fd, atime, mtime } => write!(w, "times|{fd}|{atime}|{mtime}"),
            Op::TimesAt { fd, follow, path, atime, mtime } => {
                write!(w, "timesat|{fd}|{}|{path}|{atime}|{mtime}", follows(follow))
            }
            Op::Write { fd, at: Some(at), len, seed, piece } => write!(w, "write|{fd}|{at}|{len}|{seed}|{piece}"),
            Op::Write { fd, at: None, len, seed, piece } => write!(w, "append|{fd}|{len}|{seed}|{piece}"),
            Op::Read { fd, at, limit, piece } => write!(w, "read|{fd}|{at}|{limit}|{piece}"),
            Op::List { fd, limit } => write!(w, "list|{fd}|{limit}"),
            Op::Rename { fd, path, to_fd, to } => write!(w, "rename|{fd}|{path}|{to_fd}|{to}"),
            Op::Link { fd, path, to_fd, to } => write!(w, "link|{fd}|{path}|{to_fd}|{to}"),
            Op::Symlink { fd, target, path } => write!(w, "symlink|{fd}|{target}|{path}"),
            Op::Same { fd, other } => write!(w, "same|{fd}|{other}"),
            Op::Hash { fd, other } => write!(w, "hash|{fd}|{other}"),
            Op::HashAt { fd, follow, path, other } => write!(w, "hashat|{fd}|{}|{path}|{other}", follows(follow)),
            Op::Flags { fd } => write!(w, "flags|{fd}"),
            Op::Type { fd } => write!(w, "type|{fd}"),
            Op::Sync { fd, data: false } => write!(w, "sync|{fd}"),
            Op::Sync { fd, data: true } => write!(w, "syncdata|{fd}"),
            Op::Advise { fd } => write!(w, "advise|{fd}"),
            Op::Drop { slot } => write!(w, "drop|{slot}"),
        }
    }
}

/// A script prints as its lines, as the guest takes them.
impl fmt::Debug for Op {
    fn fmt(&self, w: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(w, "{self}")
    }
}

/// A descriptor slot: most often the root, so that paths are walked.
pub(crate) fn fd() -> impl Strategy<Value = u8> {
    prop_oneof![6 => Just(0u8), 1 => Just(1u8), 3 => 2u8..5, 1 => 5u8..SLOTS]
}

/// A slot for a call on a file: most often one a script opened into.
pub(crate) fn file_fd() -> impl Strategy<Value = u8> {
    prop_oneof![1 => Just(0u8), 1 => Just(1u8), 8 => 2u8..5, 1 => 5u8..SLOTS]
}

/// A slot to open into (never a preopen's).
pub(crate) fn slot() -> impl Strategy<Value = u8> {
    prop_oneof![6 => 2u8..5, 1 => 5u8..SLOTS]
}

pub(crate) fn path() -> impl Strategy<Value = &'static str> {
    select(PATHS)
}

/// What an `open-at` opens: most often a file that is or may be made, or
/// a directory; else any path.
pub(crate) fn open_path() -> impl Strategy<Value = &'static str> {
    const NAMES: &[&str] = &["d/f", "g", "h", "big", "new", "x", "d/new", "l", "ld/f", "f", "d", "e"];
    prop_oneof![3 => select(NAMES), 2 => path()]
}

/// `open-flags` bits (create, directory, exclusive, truncate): most often
/// one a program passes, else any of the sixteen.
pub(crate) fn open_flags() -> impl Strategy<Value = u8> {
    prop_oneof![4 => select(&[0u8, 1, 1 | 8, 1 | 4, 8, 2][..]), 1 => 0u8..16]
}

/// `descriptor-flags` bits (read, write, mutate-directory): most often
/// read, write or both, else any of the eight.
pub(crate) fn descriptor_flags() -> impl Strategy<Value = u8> {
    prop_oneof![4 => select(&[1u8, 3, 2, 1 | 4][..]), 1 => 0u8..8]
}

pub(crate) fn time() -> impl Strategy<Value = &'static str> {
    select(TIMES)
}

/// Bytes to write: around 0, a page, 64 KiB, and now and then 1 MiB.
pub(crate) fn length() -> impl Strategy<Value = usize> {
    prop_oneof![
        3 => Just(0usize), 3 => Just(1), 3 => 2usize..20, 1 => Just(4095), 1 => Just(4096), 1 => Just(4097),
        1 => Just(65536), 1 => Just(65537), 1 => Just(1 << 20),
    ]
}

/// Stream pieces; a piece is at least a sixteenth of the data, so that a
/// megabyte is not written a byte at a time.
pub(crate) fn piece(len: usize) -> impl Strategy<Value = usize> {
    prop_oneof![Just(1usize), Just(7), Just(4096), Just(65536), Just(1 << 20)].prop_map(move |p| p.max(len / 16))
}

/// Where a write starts: within, at or past the end of the files a script
/// makes (never far: the trees are compared byte for byte).
pub(crate) fn write_offset() -> impl Strategy<Value = u64> {
    prop_oneof![3 => Just(0u64), 2 => 1u64..10, 1 => Just(4095), 1 => Just(4096), 1 => Just(69_999), 1 => Just(1 << 20)]
}

/// Offsets no file reaches: 2^40, and those past what `off_t` holds
/// (`invalid`, as Linux's `pread`, `pwrite` and `ftruncate` answer).
pub(crate) fn far() -> impl Strategy<Value = u64> {
    prop_oneof![Just(1u64 << 40), Just(1 << 63), Just(u64::MAX)]
}

/// Where a read starts: as a write's, or far past any end. Not just below
/// `i64::MAX`: Linux refuses a read whose end passes it, so there the
/// answer depends on how many bytes a host asks for at once (wasmtime-wasi
/// 8 KiB, PackFS what the guest's buffer holds).
pub(crate) fn read_offset() -> impl Strategy<Value = u64> {
    prop_oneof![6 => write_offset(), 1 => far()]
}

pub(crate) fn op() -> impl Strategy<Value = Op> {
    // Not 2^40: the trees are compared byte for byte.
    let far_write = prop_oneof![Just(i64::MAX as u64), Just(1 << 63), Just(u64::MAX)];
    let at = prop_oneof![12 => write_offset(), 1 => far_write];
    let write = (file_fd(), proptest::option::weighted(0.7, at), length(), any::<u8>())
        .prop_flat_map(|(fd, at, len, seed)| piece(len).prop_map(move |piece| Op::Write { fd, at, len, seed, piece }));
    // Reads a byte at a time only with a limit (a megabyte file would take
    // a million reads).
    let read = (file_fd(), read_offset(), prop_oneof![Just(0usize), Just(1), Just(100), Just(5000)], any::<bool>())
        .prop_flat_map(|(fd, at, limit, small)| {
            let pieces = if small && limit > 0 { vec![1usize, 7, 100] } else { vec![4096, 65536, 1 << 20] };
            select(pieces).prop_map(move |piece| Op::Read { fd, at, limit, piece })
        });
    prop_oneof![
        8 => (slot(), fd(), any::<bool>(), open_flags(), descriptor_flags(), open_path())
            .prop_map(|(slot, fd, follow, open, flags, path)| Op::Open { slot, fd, follow, open, flags, path }),
        3 => (fd(), path()).prop_map(|(fd, path)| Op::Mkdir { fd, path }),
        2 => (fd(), path()).prop_map(|(fd, path)| Op::Unlink { fd, path }),
        2 => (fd(), prop_oneof![8 => path().prop_filter("a trailing /", |p| !p.ends_with('/')), 1 => select(LEAVING)])
            .prop_map(|(fd, path)| Op::Rmdir { fd, path }),
        1 => (fd(), path()).prop_map(|(fd, path)| Op::Readlink { fd, path }),
        3 => file_fd().prop_map(|fd| Op::Stat { fd }),
        3 => (fd(), any::<bool>(), path()).prop_map(|(fd, follow, path)| Op::StatAt { fd, follow, path }),
        2 => (file_fd(), prop_oneof![8 => prop_oneof![Just(0u64), Just(1), Just(5), Just(4097), Just(100_000)], 1 => prop_oneof![Just(i64::MAX as u64 + 1), Just(u64::MAX)]])
            .prop_map(|(fd, size)| Op::SetSize { fd, size }),
        2 => (slot(), time(), time()).prop_map(|(fd, atime, mtime)| Op::Times { fd, atime, mtime }),
        2 => (fd(), any::<bool>(), path(), time(), time())
            .prop_map(|(fd, follow, path, atime, mtime)| Op::TimesAt { fd, follow, path, atime, mtime }),
        6 => write,
        5 => read,
        3 => (fd(), prop_oneof![3 => Just(0usize), 1 => 1usize..4]).prop_map(|(fd, limit)| Op::List { fd, limit }),
        2 => (fd(), path(), fd(), path()).prop_map(|(fd, path, to_fd, to)| Op::Rename { fd, path, to_fd, to }),
        2 => (fd(), path(), fd(), path()).prop_map(|(fd, path, to_fd, to)| Op::Link { fd, path, to_fd, to }),
        2 => (fd(), select(TARGETS), path()).prop_map(|(fd, target, path)| Op::Symlink { fd, target, path }),
        1 => (file_fd(), file_fd()).prop_map(|(fd, other)| Op::Same { fd, other }),
        1 => (file_fd(), file_fd()).prop_map(|(fd, other)| Op::Hash { fd, other }),
        1 => (fd(), any::<bool>(), path(), file_fd()).prop_map(|(fd, follow, path, other)| Op::HashAt { fd, follow, path, other }),
        1 => file_fd().prop_map(|fd| Op::Flags { fd }),
        1 => file_fd().prop_map(|fd| Op::Type { fd }),
        1 => (file_fd(), any::<bool>()).prop_map(|(fd, data)| Op::Sync { fd, data }),
        1 => file_fd().prop_map(|fd| Op::Advise { fd }),
        1 => slot().prop_map(|slot| Op::Drop { slot }),
    ]
}

/// What every script starts with, so that its calls on slots find
/// something there: `d/f` open for reading and writing in slot 2, `big`
/// for reading in 3, a new file `new` for writing in 4, directory `d` in 5.
pub(crate) fn prelude() -> Vec<Op> {
    let open = |slot, open, flags, path| Op::Open { slot, fd: 0, follow: false, open, flags, path };
    vec![open(2, 0, 3, "d/f"), open(3, 0, 1, "big"), open(4, 1, 2, "new"), open(5, 2, 1 | 4, "d")]
}

pub(crate) fn script() -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(op(), 1..MAX_CALLS).prop_map(|ops| prelude().into_iter().chain(ops).collect())
}

/// `big`'s bytes.
pub(crate) fn big() -> Vec<u8> {
    (0..70_000u32).map(|i| (i * 7 % 251) as u8).collect()
}

/// The tree both sides start with, in `/` and in `/ro`: `h` is a hard
/// link to `d/f`; `esc`, `abs`, `up`, `chain` (to `up`) and `deep`
/// (through `e`) are symlinks out of the tree.
pub(crate) fn seed(fs: &MemFs) {
    let d = fs.mkdir(fs.root(), "d", 0o755).unwrap();
    let f = fs.open(d, "f", &OpenOptions::create()).unwrap();
    fs.write_at(f, 0, b"hello").unwrap();
    fs.close(f);
    fs.link(f, fs.root(), "h").unwrap();
    let g = fs.open(fs.root(), "g", &OpenOptions::create()).unwrap();
    fs.close(g);
    let b = fs.open(fs.root(), "big", &OpenOptions::create()).unwrap();
    fs.write_at(b, 0, &big()).unwrap();
    fs.close(b);
    fs.mkdir(fs.root(), "e", 0o755).unwrap();
    for (name, target) in LINKS {
        fs.symlink(fs.root(), name, target).unwrap();
    }
}

pub(crate) const LINKS: &[(&str, &str)] = &[
    ("l", "g"),
    ("ld", "d"),
    ("loop", "loop"),
    ("dangling", "nowhere"),
    ("esc", "../x"),
    ("abs", "/d"),
    ("up", ".."),
    ("chain", "up"),
    ("deep", "e/../.."),
];

pub(crate) fn seed_dir(dir: &Path) {
    std::fs::create_dir(dir.join("d")).unwrap();
    std::fs::write(dir.join("d/f"), b"hello").unwrap();
    std::fs::hard_link(dir.join("d/f"), dir.join("h")).unwrap();
    std::fs::write(dir.join("g"), b"").unwrap();
    std::fs::write(dir.join("big"), big()).unwrap();
    std::fs::create_dir(dir.join("e")).unwrap();
    for (name, target) in LINKS {
        std::os::unix::fs::symlink(target, dir.join(name)).unwrap();
    }
}
