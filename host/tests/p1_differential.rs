//! PackFS's preview1 against wasmtime's native preview1, call by call.
//!
//! proptest generates scripts of preview1 calls — on valid and invalid
//! descriptors, with odd flags, zero lengths, paths that escape or loop —
//! and each script becomes a guest: a core module whose `_start` makes the
//! calls in order, storing each errno and each call's outputs in its own
//! place in memory. The guest runs on PackFS (a `MemFs`) and on wasmtime's
//! native preview1 (a temporary directory holding the same tree); the host
//! then reads both memories and compares every call's errno and outputs,
//! then the trees left.
//!
//! Outputs are compared where both sides define them alike: inode numbers,
//! times and directory sizes differ by design, and a directory's order is
//! the real filesystem's (so listings compare as sets). A script may end
//! with one call passing a pointer outside memory, or an argument that is
//! no value of its type (flag bits or an enum tag the witx does not
//! define): PackFS must answer `EFAULT`, or `EINVAL`/`EOVERFLOW` (its
//! documented differences: wasmtime traps), unless both refuse the call
//! first for something else; the comparison stops there.

mod support;

use std::fmt::Write as _;
use std::sync::{Arc, OnceLock};

use packfs_core::wasi::Access;
use packfs_core::wasi::p1::Wasi;
use packfs_core::{FileSystem, MemFs, OpenOptions};
use packfs_host::p1::HostPlatform;
use proptest::prelude::*;
use support::trees::{tree_of, tree_of_dir};
use wasmtime::{Engine, Instance, Linker, Module, Store};
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::{FsPerms, WasiCtx};

/// Memory layout of the generated guest (one 64 KiB page).
const PATHS: u32 = 0; // path strings, one per 64 bytes
const DATA: u32 = 4096; // bytes that writes write
const OUTS: u32 = 8192; // 64 bytes of outputs per call
const IOVS: u32 = 20480; // 16 bytes of iovecs per call
const ERRNOS: u32 = 24576; // an i32 per call
const COUNT: u32 = 24572; // calls completed
const BAD: u32 = 0xffff_ff00; // outside memory
const MAX_CALLS: usize = 60;

const PATH_POOL: &[&str] = &[
    "d", "d/f", "g", "l", "loop", "e", "new", "d/new", "d/../g", "..", "/etc", "", ".", "d/./f", "e/../d", "none/x",
    "e/..", "l/../g", "d/f/x", "dangling",
];

fn path_ptr(i: usize) -> u32 {
    PATHS + 64 * i as u32
}

/// One preview1 call, with the output each one compares.
#[derive(Debug, Clone)]
enum Call {
    Open { dir: u32, follow: bool, path: usize, oflags: u16, rights: u64, fdflags: u16 },
    Write { fd: u32, len: u32, iovs: u8, at: Option<u64> },
    Read { fd: u32, len: u32, iovs: u8, at: Option<u64> },
    Seek { fd: u32, offset: i64, whence: i32 },
    Tell { fd: u32 },
    Close { fd: u32 },
    Renumber { from: u32, to: u32 },
    Filestat { fd: u32 },
    Fdstat { fd: u32 },
    SetFlags { fd: u32, flags: u16 },
    SetSize { fd: u32, size: u64 },
    Sync { fd: u32, data: bool },
    Advise { fd: u32, advice: i32 },
    Allocate { fd: u32 },
    Prestat { fd: u32 },
    PrestatName { fd: u32, len: u32 },
    Readdir { fd: u32, len: u32, cookie: u64 },
    Mkdir { fd: u32, path: usize },
    Rmdir { fd: u32, path: usize },
    Unlink { fd: u32, path: usize },
    PathStat { fd: u32, follow: bool, path: usize },
    Rename { fd: u32, path: usize, to_fd: u32, to: usize },
    Link { fd: u32, path: usize, to_fd: u32, to: usize },
    Symlink { target: usize, fd: u32, path: usize },
    Readlink { fd: u32, path: usize, len: u32 },
    SetTimes { fd: u32, fst: u16 },
    PathSetTimes { fd: u32, follow: bool, path: usize, fst: u16 },
    Sizes { env: bool },
    ClockTime { id: i32 },
    ClockRes { id: i32 },
    Raise { sig: i32 },
    Shutdown { fd: u32, how: i32 },
    Accept { fd: u32 },
    Yield,
}

fn fd() -> impl Strategy<Value = u32> {
    prop_oneof![8 => 0u32..9, 1 => Just(99u32), 1 => Just(u32::MAX)]
}

fn path() -> impl Strategy<Value = usize> {
    0..PATH_POOL.len()
}

fn call() -> impl Strategy<Value = Call> {
    let rights = prop_oneof![Just(0u64), Just(2), Just(64), Just(66)];
    let fdflags = prop_oneof![Just(0u16), Just(1), Just(4)];
    let at = proptest::option::of(0u64..20);
    prop_oneof![
        4 => (fd(), any::<bool>(), path(), 0u16..16, rights, fdflags).prop_map(|(dir, follow, path, oflags, rights, fdflags)| Call::Open { dir, follow, path, oflags, rights, fdflags }),
        3 => (fd(), 0u32..16, 0u8..3, at.clone()).prop_map(|(fd, len, iovs, at)| Call::Write { fd, len, iovs, at }),
        3 => (fd(), 0u32..40, 0u8..3, at).prop_map(|(fd, len, iovs, at)| Call::Read { fd, len, iovs, at }),
        2 => (fd(), -5i64..20, 0i32..3).prop_map(|(fd, offset, whence)| Call::Seek { fd, offset, whence }),
        1 => fd().prop_map(|fd| Call::Tell { fd }),
        2 => fd().prop_map(|fd| Call::Close { fd }),
        1 => (fd(), fd()).prop_map(|(from, to)| Call::Renumber { from, to }),
        2 => fd().prop_map(|fd| Call::Filestat { fd }),
        2 => fd().prop_map(|fd| Call::Fdstat { fd }),
        1 => (fd(), prop_oneof![Just(0u16), Just(1), Just(4), Just(2)]).prop_map(|(fd, flags)| Call::SetFlags { fd, flags }),
        1 => (fd(), 0u64..20).prop_map(|(fd, size)| Call::SetSize { fd, size }),
        1 => (fd(), any::<bool>()).prop_map(|(fd, data)| Call::Sync { fd, data }),
        1 => (fd(), 0i32..6).prop_map(|(fd, advice)| Call::Advise { fd, advice }),
        1 => fd().prop_map(|fd| Call::Allocate { fd }),
        1 => fd().prop_map(|fd| Call::Prestat { fd }),
        1 => (fd(), 0u32..4).prop_map(|(fd, len)| Call::PrestatName { fd, len }),
        2 => (fd(), prop_oneof![Just(0u32), Just(10), Just(24), Just(30), Just(400)], 0u64..3).prop_map(|(fd, len, cookie)| Call::Readdir { fd, len, cookie }),
        2 => (fd(), path()).prop_map(|(fd, path)| Call::Mkdir { fd, path }),
        1 => (fd(), path()).prop_map(|(fd, path)| Call::Rmdir { fd, path }),
        1 => (fd(), path()).prop_map(|(fd, path)| Call::Unlink { fd, path }),
        2 => (fd(), any::<bool>(), path()).prop_map(|(fd, follow, path)| Call::PathStat { fd, follow, path }),
        1 => (fd(), path(), fd(), path()).prop_map(|(fd, path, to_fd, to)| Call::Rename { fd, path, to_fd, to }),
        1 => (fd(), path(), fd(), path()).prop_map(|(fd, path, to_fd, to)| Call::Link { fd, path, to_fd, to }),
        1 => (path(), fd(), path()).prop_map(|(target, fd, path)| Call::Symlink { target, fd, path }),
        1 => (fd(), path(), 0u32..8).prop_map(|(fd, path, len)| Call::Readlink { fd, path, len }),
        1 => (fd(), 0u16..16).prop_map(|(fd, fst)| Call::SetTimes { fd, fst }),
        1 => (fd(), any::<bool>(), path(), 0u16..16).prop_map(|(fd, follow, path, fst)| Call::PathSetTimes { fd, follow, path, fst }),
        1 => any::<bool>().prop_map(|env| Call::Sizes { env }),
        1 => (0i32..4).prop_map(|id| Call::ClockTime { id }),
        1 => (0i32..4).prop_map(|id| Call::ClockRes { id }),
        1 => (0i32..31).prop_map(|sig| Call::Raise { sig }),
        1 => (fd(), 0i32..4).prop_map(|(fd, how)| Call::Shutdown { fd, how }),
        1 => fd().prop_map(|fd| Call::Accept { fd }),
        1 => Just(Call::Yield),
    ]
}

/// Calls with an argument the witx does not define: flag bits, an enum
/// tag, a value too wide for its type. wasmtime traps on each; PackFS
/// answers `EINVAL` or `EOVERFLOW`.
fn invalid_call() -> impl Strategy<Value = Call> {
    prop_oneof![
        (fd(), 16u16..20).prop_map(|(dir, oflags)| Call::Open {
            dir,
            follow: false,
            path: 0,
            oflags,
            rights: 0,
            fdflags: 0
        }),
        fd().prop_map(|dir| Call::Open { dir, follow: false, path: 0, oflags: 0, rights: 1 << 40, fdflags: 0 }),
        fd().prop_map(|dir| Call::Open { dir, follow: false, path: 0, oflags: 0, rights: 0, fdflags: 0x20 }),
        (fd(), 3i32..300).prop_map(|(fd, whence)| Call::Seek { fd, offset: 0, whence }),
        fd().prop_map(|fd| Call::SetFlags { fd, flags: 0x40 }),
        (fd(), 6i32..9).prop_map(|(fd, advice)| Call::Advise { fd, advice }),
        (fd(), 16u16..40).prop_map(|(fd, fst)| Call::SetTimes { fd, fst }),
        prop_oneof![Just(-1i32), 4i32..9].prop_map(|id| Call::ClockTime { id }),
        (31i32..40).prop_map(|sig| Call::Raise { sig }),
        (fd(), 4i32..300).prop_map(|(fd, how)| Call::Shutdown { fd, how }),
    ]
}

/// What is wrong with a call, if anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bad {
    /// Nothing.
    No,
    /// Its first pointer argument (a path, the iovecs, a buffer) points
    /// outside memory.
    Input,
    /// Its last, where the result goes, does.
    Output,
    /// An argument is not a value of its type ([`invalid_call`]).
    Arg,
}

/// The call's import, its wasm text arguments, and what must be stored
/// before it (a read's or write's iovecs). Call `i`'s outputs go to its
/// own 64 bytes at `OUTS + 64 i`.
fn encode(call: &Call, i: usize, bad: Bad) -> (&'static str, String, String) {
    let out = if bad == Bad::Output { BAD } else { OUTS + 64 * i as u32 };
    let iov = IOVS + 16 * i as u32;
    let input = |p: u32| if bad == Bad::Input { BAD } else { p };
    let p = |k: usize| (input(path_ptr(k)), PATH_POOL[k].len());
    let q = |k: usize| (path_ptr(k), PATH_POOL[k].len());
    let i32s = |v: &[i64]| v.iter().map(|x| format!("(i32.const {x})")).collect::<Vec<_>>().join(" ");
    let i64c = |x: i64| format!("(i64.const {x})");
    let f = |x: bool| x as i64;
    let (name, args) = match *call {
        Call::Open { dir, follow, path, oflags, rights, fdflags } => {
            let (pp, pl) = p(path);
            let args = format!(
                "{} {} {} {} {}",
                i32s(&[dir as i64, f(follow), pp as i64, pl as i64, oflags as i64]),
                i64c(rights as i64),
                i64c(rights as i64),
                i32s(&[fdflags as i64]),
                i32s(&[out as i64])
            );
            ("path_open", args)
        }
        Call::Write { fd, len, iovs, at } | Call::Read { fd, len, iovs, at } => {
            let write = matches!(call, Call::Write { .. });
            let buf = if write { DATA } else { OUTS + 64 * i as u32 + 8 };
            // The iovecs: none, one, or an empty one then one.
            let setup = format!(
                "(i32.store (i32.const {iov}) (i32.const {buf})) (i32.store (i32.const {}) (i32.const {}))\
                 (i32.store (i32.const {}) (i32.const {buf})) (i32.store (i32.const {}) (i32.const {len}))",
                iov + 4,
                if iovs == 2 { 0 } else { len },
                iov + 8,
                iov + 12,
            );
            let name = match (write, at.is_some()) {
                (true, false) => "fd_write",
                (true, true) => "fd_pwrite",
                (false, false) => "fd_read",
                (false, true) => "fd_pread",
            };
            let head = i32s(&[fd as i64, input(iov) as i64, iovs as i64]);
            let args = match at {
                Some(at) => format!("{head} {} {}", i64c(at as i64), i32s(&[out as i64])),
                None => format!("{head} {}", i32s(&[out as i64])),
            };
            return (name, args, setup);
        }
        Call::Seek { fd, offset, whence } => {
            ("fd_seek", format!("{} {} {}", i32s(&[fd as i64]), i64c(offset), i32s(&[whence as i64, out as i64])))
        }
        Call::Tell { fd } => ("fd_tell", i32s(&[fd as i64, out as i64])),
        Call::Close { fd } => ("fd_close", i32s(&[fd as i64])),
        Call::Renumber { from, to } => ("fd_renumber", i32s(&[from as i64, to as i64])),
        Call::Filestat { fd } => ("fd_filestat_get", i32s(&[fd as i64, out as i64])),
        Call::Fdstat { fd } => ("fd_fdstat_get", i32s(&[fd as i64, out as i64])),
        Call::SetFlags { fd, flags } => ("fd_fdstat_set_flags", i32s(&[fd as i64, flags as i64])),
        Call::SetSize { fd, size } => ("fd_filestat_set_size", format!("{} {}", i32s(&[fd as i64]), i64c(size as i64))),
        Call::Sync { fd, data } => (if data { "fd_datasync" } else { "fd_sync" }, i32s(&[fd as i64])),
        Call::Advise { fd, advice } => {
            ("fd_advise", format!("{} {} {} {}", i32s(&[fd as i64]), i64c(0), i64c(10), i32s(&[advice as i64])))
        }
        Call::Allocate { fd } => ("fd_allocate", format!("{} {} {}", i32s(&[fd as i64]), i64c(0), i64c(10))),
        Call::Prestat { fd } => ("fd_prestat_get", i32s(&[fd as i64, out as i64])),
        Call::PrestatName { fd, len } => ("fd_prestat_dir_name", i32s(&[fd as i64, out as i64, len as i64])),
        Call::Readdir { fd, len, cookie } => {
            // Its own buffer: up to 400 bytes at 32 KiB + 512 i.
            (
                "fd_readdir",
                format!(
                    "{} {} {}",
                    i32s(&[fd as i64, input(32768 + 512 * i as u32) as i64, len as i64]),
                    i64c(cookie as i64),
                    i32s(&[out as i64])
                ),
            )
        }
        Call::Mkdir { fd, path } => {
            let (pp, pl) = p(path);
            ("path_create_directory", i32s(&[fd as i64, pp as i64, pl as i64]))
        }
        Call::Rmdir { fd, path } => {
            let (pp, pl) = p(path);
            ("path_remove_directory", i32s(&[fd as i64, pp as i64, pl as i64]))
        }
        Call::Unlink { fd, path } => {
            let (pp, pl) = p(path);
            ("path_unlink_file", i32s(&[fd as i64, pp as i64, pl as i64]))
        }
        Call::PathStat { fd, follow, path } => {
            let (pp, pl) = p(path);
            ("path_filestat_get", i32s(&[fd as i64, f(follow), pp as i64, pl as i64, out as i64]))
        }
        Call::Rename { fd, path, to_fd, to } | Call::Link { fd, path, to_fd, to } => {
            let ((pp, pl), (tp, tl)) = (p(path), q(to));
            match call {
                Call::Rename { .. } => {
                    ("path_rename", i32s(&[fd as i64, pp as i64, pl as i64, to_fd as i64, tp as i64, tl as i64]))
                }
                _ => ("path_link", i32s(&[fd as i64, 0, pp as i64, pl as i64, to_fd as i64, tp as i64, tl as i64])),
            }
        }
        Call::Symlink { target, fd, path } => {
            let ((tp, tl), (pp, pl)) = (p(target), q(path));
            ("path_symlink", i32s(&[tp as i64, tl as i64, fd as i64, pp as i64, pl as i64]))
        }
        Call::Readlink { fd, path, len } => {
            let (pp, pl) = p(path);
            let buf = OUTS + 64 * i as u32 + 8;
            ("path_readlink", i32s(&[fd as i64, pp as i64, pl as i64, buf as i64, len as i64, out as i64]))
        }
        Call::SetTimes { fd, fst } => (
            "fd_filestat_set_times",
            format!("{} {} {} {}", i32s(&[fd as i64]), i64c(5_000_000_000), i64c(6_000_000_000), i32s(&[fst as i64])),
        ),
        Call::PathSetTimes { fd, follow, path, fst } => {
            let (pp, pl) = p(path);
            (
                "path_filestat_set_times",
                format!(
                    "{} {} {} {}",
                    i32s(&[fd as i64, f(follow), pp as i64, pl as i64]),
                    i64c(5_000_000_000),
                    i64c(6_000_000_000),
                    i32s(&[fst as i64])
                ),
            )
        }
        Call::Sizes { env } => {
            (if env { "environ_sizes_get" } else { "args_sizes_get" }, i32s(&[out as i64, out as i64 + 4]))
        }
        Call::ClockTime { id } => {
            ("clock_time_get", format!("{} {} {}", i32s(&[id as i64]), i64c(1), i32s(&[out as i64])))
        }
        Call::ClockRes { id } => ("clock_res_get", i32s(&[id as i64, out as i64])),
        Call::Raise { sig } => ("proc_raise", i32s(&[sig as i64])),
        Call::Shutdown { fd, how } => ("sock_shutdown", i32s(&[fd as i64, how as i64])),
        Call::Accept { fd } => ("sock_accept", i32s(&[fd as i64, 0, out as i64])),
        Call::Yield => ("sched_yield", String::new()),
    };
    (name, args, String::new())
}

/// The signature of every import the guests use.
const IMPORTS: &[(&str, &str)] = &[
    ("path_open", "i32 i32 i32 i32 i32 i64 i64 i32 i32"),
    ("fd_write", "i32 i32 i32 i32"),
    ("fd_pwrite", "i32 i32 i32 i64 i32"),
    ("fd_read", "i32 i32 i32 i32"),
    ("fd_pread", "i32 i32 i32 i64 i32"),
    ("fd_seek", "i32 i64 i32 i32"),
    ("fd_tell", "i32 i32"),
    ("fd_close", "i32"),
    ("fd_renumber", "i32 i32"),
    ("fd_filestat_get", "i32 i32"),
    ("fd_fdstat_get", "i32 i32"),
    ("fd_fdstat_set_flags", "i32 i32"),
    ("fd_filestat_set_size", "i32 i64"),
    ("fd_sync", "i32"),
    ("fd_datasync", "i32"),
    ("fd_advise", "i32 i64 i64 i32"),
    ("fd_allocate", "i32 i64 i64"),
    ("fd_prestat_get", "i32 i32"),
    ("fd_prestat_dir_name", "i32 i32 i32"),
    ("fd_readdir", "i32 i32 i32 i64 i32"),
    ("path_create_directory", "i32 i32 i32"),
    ("path_remove_directory", "i32 i32 i32"),
    ("path_unlink_file", "i32 i32 i32"),
    ("path_filestat_get", "i32 i32 i32 i32 i32"),
    ("path_rename", "i32 i32 i32 i32 i32 i32"),
    ("path_link", "i32 i32 i32 i32 i32 i32 i32"),
    ("path_symlink", "i32 i32 i32 i32 i32"),
    ("path_readlink", "i32 i32 i32 i32 i32 i32"),
    ("fd_filestat_set_times", "i32 i64 i64 i32"),
    ("path_filestat_set_times", "i32 i32 i32 i32 i64 i64 i32"),
    ("args_sizes_get", "i32 i32"),
    ("environ_sizes_get", "i32 i32"),
    ("clock_time_get", "i32 i64 i32"),
    ("clock_res_get", "i32 i32"),
    ("proc_raise", "i32"),
    ("sock_shutdown", "i32 i32"),
    ("sock_accept", "i32 i32 i32"),
    ("sched_yield", ""),
];

/// The guest for a script: its calls in order, each errno stored at
/// `ERRNOS + 4 i` and the count of calls done at `COUNT`.
fn guest(calls: &[(Call, Bad)]) -> String {
    let mut w = String::from("(module\n");
    for (name, params) in IMPORTS {
        let _ = writeln!(
            w,
            "  (import \"wasi_snapshot_preview1\" \"{name}\" (func ${name} (param {params}) (result i32)))"
        );
    }
    let _ = writeln!(w, "  (memory (export \"memory\") 1)");
    for (k, p) in PATH_POOL.iter().enumerate() {
        let _ = writeln!(w, "  (data (i32.const {}) \"{p}\")", path_ptr(k));
    }
    let _ = writeln!(w, "  (data (i32.const {DATA}) \"0123456789abcdef\")");
    let _ = writeln!(w, "  (func (export \"_start\")");
    for (i, (call, bad)) in calls.iter().enumerate() {
        let (name, args, setup) = encode(call, i, *bad);
        let _ = writeln!(w, "    {setup}");
        let _ = writeln!(w, "    (i32.store (i32.const {}) (call ${name} {args}))", ERRNOS + 4 * i as u32);
        let _ = writeln!(w, "    (i32.store (i32.const {COUNT}) (i32.const {}))", i + 1);
    }
    w.push_str("  ))\n");
    w
}

/// The tree both sides start with, under `/`.
fn seed(fs: &MemFs) {
    let d = fs.mkdir(fs.root(), "d", 0o755).unwrap();
    let f = fs.open(d, "f", &OpenOptions::create()).unwrap();
    fs.write_at(f, 0, b"hello").unwrap();
    fs.close(f);
    let g = fs.open(fs.root(), "g", &OpenOptions::create()).unwrap();
    fs.close(g);
    fs.mkdir(fs.root(), "e", 0o755).unwrap();
    fs.symlink(fs.root(), "l", "g").unwrap();
    fs.symlink(fs.root(), "loop", "loop").unwrap();
    fs.symlink(fs.root(), "dangling", "nowhere").unwrap();
}

fn seed_dir(dir: &std::path::Path) {
    std::fs::create_dir(dir.join("d")).unwrap();
    std::fs::write(dir.join("d/f"), b"hello").unwrap();
    std::fs::write(dir.join("g"), b"").unwrap();
    std::fs::create_dir(dir.join("e")).unwrap();
    std::os::unix::fs::symlink("g", dir.join("l")).unwrap();
    std::os::unix::fs::symlink("loop", dir.join("loop")).unwrap();
    std::os::unix::fs::symlink("nowhere", dir.join("dangling")).unwrap();
}

fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(Engine::default)
}

/// A run's memory, and whether `_start` trapped.
struct Ran {
    memory: Vec<u8>,
    trapped: bool,
}

fn memory_of<T: 'static>(store: &mut Store<T>, instance: &Instance, trapped: bool) -> Ran {
    let memory = instance.get_memory(&mut *store, "memory").unwrap().data(&*store).to_vec();
    Ran { memory, trapped }
}

fn run_packfs(module: &Module, fs: Arc<MemFs>, ro: Arc<MemFs>) -> Ran {
    struct S {
        wasi: Wasi,
    }
    let mut linker = Linker::<S>::new(engine());
    packfs_host::p1::add_to_linker(&mut linker, |s| &mut s.wasi).unwrap();
    let wasi = Wasi::builder(Box::new(HostPlatform::default()))
        .arg("guest")
        .preopen("/", fs, Access::ReadWrite)
        .preopen("/ro", ro, Access::ReadOnly)
        .build()
        .unwrap();
    let mut store = Store::new(engine(), S { wasi });
    let instance = linker.instantiate(&mut store, module).unwrap();
    let r = instance.get_typed_func::<(), ()>(&mut store, "_start").unwrap().call(&mut store, ());
    memory_of(&mut store, &instance, r.is_err())
}

fn run_native(module: &Module, root: &std::path::Path, ro: &std::path::Path) -> Ran {
    let mut linker = Linker::<WasiP1Ctx>::new(engine());
    wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |s| s).unwrap();
    let mut b = WasiCtx::builder();
    b.args(&["guest"]).allow_blocking_current_thread(true);
    b.preopened_dir(root, "/", FsPerms::ReadWrite).unwrap();
    b.preopened_dir(ro, "/ro", FsPerms::ReadOnly).unwrap();
    let mut store = Store::new(engine(), b.build_p1());
    let instance = linker.instantiate(&mut store, module).unwrap();
    let r = instance.get_typed_func::<(), ()>(&mut store, "_start").unwrap().call(&mut store, ());
    if let Err(e) = &r
        && std::env::var_os("P1_DIFF_DEBUG").is_some()
    {
        eprintln!("native trapped: {e:?}");
    }
    memory_of(&mut store, &instance, r.is_err())
}

fn u32_at(m: &[u8], at: u32) -> u32 {
    u32::from_le_bytes(m[at as usize..at as usize + 4].try_into().unwrap())
}

/// What one call output that both sides must agree on.
fn output(call: &Call, i: usize, m: &[u8]) -> String {
    let out = (OUTS + 64 * i as u32) as usize;
    let bytes = |a: usize, n: usize| m[out + a..out + a + n].to_vec();
    match *call {
        Call::Open { .. } | Call::Tell { .. } | Call::Seek { .. } => format!("{:?}", bytes(0, 8)),
        Call::Write { .. } => format!("{}", u32_at(m, out as u32)),
        Call::Read { .. } => {
            let n = u32_at(m, out as u32) as usize;
            format!("{n} {:?}", String::from_utf8_lossy(&m[out + 8..out + 8 + n.min(56)]))
        }
        // filetype, nlink; a regular file's size.
        Call::Filestat { .. } | Call::PathStat { .. } => {
            let ty = m[out + 16];
            let size = if ty == 4 { u64::from_le_bytes(bytes(32, 8).try_into().unwrap()) } else { 0 };
            format!("type {ty} nlink {:?} size {size}", bytes(24, 8))
        }
        Call::Fdstat { .. } => format!("{:?}", bytes(0, 24)),
        Call::Prestat { .. } => format!("{:?}", bytes(0, 8)),
        Call::PrestatName { len, .. } => format!("{:?}", bytes(0, len as usize)),
        Call::Readlink { .. } => {
            let n = u32_at(m, out as u32) as usize;
            format!("{n} {:?}", String::from_utf8_lossy(&m[out + 8..out + 8 + n.min(56)]))
        }
        Call::Sizes { .. } => format!("{:?}", bytes(0, 8)),
        Call::Readdir { len, .. } => {
            let used = u32_at(m, out as u32);
            // Whole entries, as a set: the order is the filesystem's.
            let buf = 32768 + 512 * i;
            let mut names = Vec::new();
            let mut at = 0usize;
            while at + 24 <= used as usize {
                let namlen = u32_at(m, (buf + at + 16) as u32) as usize;
                if at + 24 + namlen > used as usize {
                    break;
                }
                let name = String::from_utf8_lossy(&m[buf + at + 24..buf + at + 24 + namlen]).into_owned();
                names.push(format!("{name}:{}", m[buf + at + 20]));
                at += 24 + namlen;
            }
            names.sort();
            if used < len { format!("{used} {names:?}") } else { format!("{used} (full)") }
        }
        _ => String::new(),
    }
}

/// Calls where PackFS answers as Linux does and wasmtime does not, and
/// that change nothing, so the comparison goes on after them:
///
/// - opening a symlink with `O_DIRECTORY` and without following it:
///   Linux checks `O_DIRECTORY` first (`ENOTDIR`), wasmtime (cap-std) the
///   symlink (`ELOOP`).
///
/// Paths ending in `/` are left out of the pool, since wasmtime answers
/// several of them unlike Linux, and some of those change the tree:
/// `stat("l/")` without following, `l` a symlink to a file, succeeds
/// (Linux: `ENOTDIR`); `rmdir("d/")` is `EINVAL` (Linux: `ENOTEMPTY`, or
/// the directory goes).
fn deliberate(call: &Call) -> bool {
    matches!(*call, Call::Open { follow: false, oflags, path, .. }
        if oflags & 2 != 0 && ["l", "loop", "dangling"].contains(&PATH_POOL[path]))
}

fn script() -> impl Strategy<Value = Vec<(Call, Bad)>> {
    let tail = proptest::option::weighted(
        0.3,
        prop_oneof![
            (call(), prop_oneof![Just(Bad::Input), Just(Bad::Output)]),
            invalid_call().prop_map(|c| (c, Bad::Arg)),
        ],
    );
    (proptest::collection::vec(call(), 1..MAX_CALLS), tail).prop_map(|(calls, tail)| {
        let mut v: Vec<(Call, Bad)> = calls.into_iter().map(|c| (c, Bad::No)).collect();
        v.extend(tail);
        v
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn packfs_preview1_answers_as_wasmtime_native(calls in script()) {
        let wat = guest(&calls);
        let module = Module::new(engine(), wat::parse_str(&wat).unwrap()).unwrap();
        let (fs, ro) = (Arc::new(MemFs::new()), Arc::new(MemFs::new()));
        seed(&fs);
        seed(&ro);
        let (root_dir, ro_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        seed_dir(root_dir.path());
        seed_dir(ro_dir.path());
        let ours = run_packfs(&module, fs.clone(), ro);
        let native = run_native(&module, root_dir.path(), ro_dir.path());

        prop_assert!(!ours.trapped, "PackFS trapped");
        let done = u32_at(&ours.memory, COUNT) as usize;
        prop_assert_eq!(done, calls.len());
        let native_done = u32_at(&native.memory, COUNT) as usize;
        let ends_bad = calls.last().is_some_and(|(_, b)| *b != Bad::No);
        let compared = if ends_bad { calls.len() - 1 } else { calls.len() };
        prop_assert!(native_done >= compared, "native stopped at call {native_done}: {:?}", calls.get(native_done));
        for (i, (call, _)) in calls.iter().take(compared).enumerate() {
            if deliberate(call) {
                continue;
            }
            let (a, b) = (u32_at(&ours.memory, ERRNOS + 4 * i as u32), u32_at(&native.memory, ERRNOS + 4 * i as u32));
            prop_assert_eq!(a, b, "call {} {:?}: errno", i, call);
            if a == 0 {
                prop_assert_eq!(output(call, i, &ours.memory), output(call, i, &native.memory), "call {} {:?}: output", i, call);
            }
        }
        if let Some((call, Bad::Arg)) = calls.last() {
            let i = calls.len() - 1;
            let ours = u32_at(&ours.memory, ERRNOS + 4 * i as u32);
            prop_assert!(ours == 28 || ours == 61, "an invalid argument: {} for {:?}", ours, call);
            prop_assert!(native.trapped && native_done == i, "wasmtime traps on {:?}", call);
        } else if ends_bad {
            let i = calls.len() - 1;
            // EFAULT, unless both refused the call for something checked
            // before the pointer.
            let ours = u32_at(&ours.memory, ERRNOS + 4 * i as u32);
            let theirs = (native_done == calls.len()).then(|| u32_at(&native.memory, ERRNOS + 4 * i as u32));
            prop_assert!(ours == 21 || Some(ours) == theirs, "a bad pointer: {} (wasmtime: {:?}) for {:?}", ours, theirs, calls[i]);
        } else {
            prop_assert!(!native.trapped);
            prop_assert_eq!(tree_of(&*fs), tree_of_dir(root_dir.path()));
        }
    }
}
