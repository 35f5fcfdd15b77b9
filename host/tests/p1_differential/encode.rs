//! A script as a guest: each call encoded as WebAssembly text.

use crate::script::*;
use std::fmt::Write as _;

/// The wasm text of call `i`'s cookie, from `calls`, the calls before it.
pub(crate) fn cookie_expr(cookie: Cookie, calls: &[(Call, Bad)]) -> String {
    match cookie {
        Cookie::Is(c) => format!("(i64.const {c})"),
        Cookie::Seen { back, entry } => {
            let earlier: Vec<usize> =
                (0..calls.len()).filter(|&j| matches!(calls[j].0, Call::Readdir { .. })).rev().collect();
            match earlier.get(back % earlier.len().max(1)) {
                Some(&j) => format!(
                    "(call $cookie (i32.const {}) (i32.load (i32.const {})) (i32.const {}))",
                    dirent_buf(j),
                    outs(j),
                    entry as i32
                ),
                None => "(i64.const 0)".to_owned(),
            }
        }
    }
}

/// The call's import, its wasm text arguments, and what must be stored
/// before it (iovecs, subscriptions, a cookie). Call `i`'s outputs go to
/// its own 64 bytes at `OUTS + 64 i`, and what does not fit to its scratch
/// space.
pub(crate) fn encode(call: &Call, i: usize, bad: Bad, before: &[(Call, Bad)]) -> (&'static str, String, String) {
    let out = if bad == Bad::Output { BAD } else { outs(i) };
    let iov = IOVS + 16 * i as u32;
    let input = |p: u32| if bad == Bad::Input { BAD } else { p };
    let p = |path: &str| {
        let (at, len) = path_at(path);
        (input(at), len)
    };
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
            let buf = if write { DATA } else { outs(i) + 8 };
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
        Call::SetRights { fd, base, inheriting } => (
            "fd_fdstat_set_rights",
            format!("{} {} {}", i32s(&[fd as i64]), i64c(base as i64), i64c(inheriting as i64)),
        ),
        Call::SetSize { fd, size } => ("fd_filestat_set_size", format!("{} {}", i32s(&[fd as i64]), i64c(size as i64))),
        Call::Sync { fd, data } => (if data { "fd_datasync" } else { "fd_sync" }, i32s(&[fd as i64])),
        Call::Advise { fd, advice } => {
            ("fd_advise", format!("{} {} {} {}", i32s(&[fd as i64]), i64c(0), i64c(10), i32s(&[advice as i64])))
        }
        Call::Allocate { fd } => ("fd_allocate", format!("{} {} {}", i32s(&[fd as i64]), i64c(0), i64c(10))),
        Call::Prestat { fd } => ("fd_prestat_get", i32s(&[fd as i64, out as i64])),
        Call::PrestatName { fd, len } => ("fd_prestat_dir_name", i32s(&[fd as i64, out as i64, len as i64])),
        Call::Readdir { fd, len, cookie } => {
            // The cookie, where the host finds it too: 8 bytes after `*used`.
            let setup = format!("(i64.store (i32.const {}) {})", outs(i) + 8, cookie_expr(cookie, before));
            let args = format!(
                "{} (i64.load (i32.const {})) {}",
                i32s(&[fd as i64, input(dirent_buf(i)) as i64, len as i64]),
                outs(i) + 8,
                i32s(&[out as i64])
            );
            return ("fd_readdir", args, setup);
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
            let ((pp, pl), (tp, tl)) = (p(path), path_at(to));
            match call {
                Call::Rename { .. } => {
                    ("path_rename", i32s(&[fd as i64, pp as i64, pl as i64, to_fd as i64, tp as i64, tl as i64]))
                }
                _ => {
                    // The old name's errno, unfollowed, at the outputs
                    // (`deliberate` asks whether it is missing).
                    let (op, ol) = path_at(path);
                    let stat = format!(
                        "(i32.store (i32.const {}) (call $path_filestat_get {}))",
                        outs(i),
                        i32s(&[fd as i64, 0, op as i64, ol as i64, scratch(i) as i64])
                    );
                    let args = i32s(&[fd as i64, 0, pp as i64, pl as i64, to_fd as i64, tp as i64, tl as i64]);
                    return ("path_link", args, stat);
                }
            }
        }
        Call::Symlink { target, fd, path } => {
            let ((tp, tl), (pp, pl)) = (p(target), path_at(path));
            ("path_symlink", i32s(&[tp as i64, tl as i64, fd as i64, pp as i64, pl as i64]))
        }
        Call::Readlink { fd, path, len } => {
            let (pp, pl) = p(path);
            let buf = outs(i) + 8;
            ("path_readlink", i32s(&[fd as i64, pp as i64, pl as i64, buf as i64, len as i64, out as i64]))
        }
        Call::SetTimes { fd, fst, times } => {
            let (atim, mtim) = TIMES[times];
            (
                "fd_filestat_set_times",
                format!("{} {} {} {}", i32s(&[fd as i64]), i64c(atim as i64), i64c(mtim as i64), i32s(&[fst as i64])),
            )
        }
        Call::PathSetTimes { fd, follow, path, fst, times } => {
            let (pp, pl) = p(path);
            let (atim, mtim) = TIMES[times];
            (
                "path_filestat_set_times",
                format!(
                    "{} {} {} {}",
                    i32s(&[fd as i64, f(follow), pp as i64, pl as i64]),
                    i64c(atim as i64),
                    i64c(mtim as i64),
                    i32s(&[fst as i64])
                ),
            )
        }
        Call::Sizes { env } => {
            (if env { "environ_sizes_get" } else { "args_sizes_get" }, i32s(&[out as i64, out as i64 + 4]))
        }
        Call::Strings { env } => {
            // The pointers to the outputs, the strings to scratch space.
            let ptrs = input(outs(i));
            let buf = if bad == Bad::Output { BAD } else { scratch(i) };
            (if env { "environ_get" } else { "args_get" }, i32s(&[ptrs as i64, buf as i64]))
        }
        Call::ClockTime { id } => {
            ("clock_time_get", format!("{} {} {}", i32s(&[id as i64]), i64c(1), i32s(&[out as i64])))
        }
        Call::ClockRes { id } => ("clock_res_get", i32s(&[id as i64, out as i64])),
        Call::Poll { n, ref subs } => {
            // Subscriptions at the scratch space, events 256 bytes on.
            let mut setup = String::new();
            for (k, s) in subs.iter().enumerate() {
                let at = scratch(i) + 48 * k as u32;
                let _ = write!(setup, "(i64.store (i32.const {at}) (i64.const {}))", s.userdata as i64);
                let (tag, union) = match s.kind {
                    SubKind::Clock { id, timeout, flags } => (
                        0,
                        format!(
                            "(i32.store (i32.const {}) (i32.const {id})) (i64.store (i32.const {}) (i64.const {}))\
                             (i32.store16 (i32.const {}) (i32.const {flags}))",
                            at + 16,
                            at + 24,
                            timeout as i64,
                            at + 40
                        ),
                    ),
                    SubKind::Fd { read, fd } => {
                        (if read { 1 } else { 2 }, format!("(i32.store (i32.const {}) (i32.const {fd}))", at + 16))
                    }
                    SubKind::Tag(tag) => (tag, String::new()),
                };
                let _ = write!(setup, "(i32.store8 (i32.const {}) (i32.const {tag})) {union}", at + 8);
            }
            let args = i32s(&[input(scratch(i)) as i64, scratch(i) as i64 + 256, n as i64, out as i64]);
            return ("poll_oneoff", args, setup);
        }
        Call::Random { len } => ("random_get", i32s(&[input(scratch(i)) as i64, len as i64])),
        Call::Exit { code } => ("proc_exit", i32s(&[code as i64])),
        Call::Raise { sig } => ("proc_raise", i32s(&[sig as i64])),
        Call::Shutdown { fd, how } => ("sock_shutdown", i32s(&[fd as i64, how as i64])),
        Call::Accept { fd } => ("sock_accept", i32s(&[fd as i64, 0, out as i64])),
        Call::Recv { fd, flags } => {
            ("sock_recv", i32s(&[fd as i64, input(iov) as i64, 1, flags as i64, out as i64, out as i64 + 4]))
        }
        Call::Send { fd, flags } => ("sock_send", i32s(&[fd as i64, input(iov) as i64, 1, flags as i64, out as i64])),
        Call::Yield => ("sched_yield", String::new()),
    };
    (name, args, String::new())
}

/// The signature of every import the guests use: all of preview1.
pub(crate) const IMPORTS: &[(&str, &str)] = &[
    ("args_get", "i32 i32"),
    ("args_sizes_get", "i32 i32"),
    ("environ_get", "i32 i32"),
    ("environ_sizes_get", "i32 i32"),
    ("clock_res_get", "i32 i32"),
    ("clock_time_get", "i32 i64 i32"),
    ("fd_advise", "i32 i64 i64 i32"),
    ("fd_allocate", "i32 i64 i64"),
    ("fd_close", "i32"),
    ("fd_datasync", "i32"),
    ("fd_fdstat_get", "i32 i32"),
    ("fd_fdstat_set_flags", "i32 i32"),
    ("fd_fdstat_set_rights", "i32 i64 i64"),
    ("fd_filestat_get", "i32 i32"),
    ("fd_filestat_set_size", "i32 i64"),
    ("fd_filestat_set_times", "i32 i64 i64 i32"),
    ("fd_pread", "i32 i32 i32 i64 i32"),
    ("fd_prestat_get", "i32 i32"),
    ("fd_prestat_dir_name", "i32 i32 i32"),
    ("fd_pwrite", "i32 i32 i32 i64 i32"),
    ("fd_read", "i32 i32 i32 i32"),
    ("fd_readdir", "i32 i32 i32 i64 i32"),
    ("fd_renumber", "i32 i32"),
    ("fd_seek", "i32 i64 i32 i32"),
    ("fd_sync", "i32"),
    ("fd_tell", "i32 i32"),
    ("fd_write", "i32 i32 i32 i32"),
    ("path_create_directory", "i32 i32 i32"),
    ("path_filestat_get", "i32 i32 i32 i32 i32"),
    ("path_filestat_set_times", "i32 i32 i32 i32 i64 i64 i32"),
    ("path_link", "i32 i32 i32 i32 i32 i32 i32"),
    ("path_open", "i32 i32 i32 i32 i32 i64 i64 i32 i32"),
    ("path_readlink", "i32 i32 i32 i32 i32 i32"),
    ("path_remove_directory", "i32 i32 i32"),
    ("path_rename", "i32 i32 i32 i32 i32 i32"),
    ("path_symlink", "i32 i32 i32 i32 i32"),
    ("path_unlink_file", "i32 i32 i32"),
    ("poll_oneoff", "i32 i32 i32 i32"),
    ("proc_exit", "i32"),
    ("proc_raise", "i32"),
    ("sched_yield", ""),
    ("random_get", "i32 i32"),
    ("sock_accept", "i32 i32 i32"),
    ("sock_recv", "i32 i32 i32 i32 i32 i32"),
    ("sock_send", "i32 i32 i32 i32 i32"),
    ("sock_shutdown", "i32 i32"),
];

/// `$cookie(buf, used, n)`: the `d_next` of whole entry `n` of the dirents
/// at `buf` (`used` bytes), or of the last whole one; 0 if none is whole.
pub(crate) const COOKIE_FN: &str = r#"
  (func $cookie (param $buf i32) (param $used i32) (param $n i32) (result i64)
    (local $at i32) (local $k i32) (local $end i32) (local $last i64)
    (block $done
      (loop $next
        (br_if $done (i32.gt_u (i32.add (local.get $at) (i32.const 24)) (local.get $used)))
        (local.set $end (i32.add (i32.add (local.get $at) (i32.const 24))
          (i32.load (i32.add (local.get $buf) (i32.add (local.get $at) (i32.const 16))))))
        (br_if $done (i32.gt_u (local.get $end) (local.get $used)))
        (local.set $last (i64.load (i32.add (local.get $buf) (local.get $at))))
        (br_if $done (i32.eq (local.get $k) (local.get $n)))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (local.set $at (local.get $end))
        (br $next)))
    (local.get $last))
"#;

/// Which comparison a guest is built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// With wasmtime.
    Wasmtime,
    /// With Linux: every descriptor `path_open` gives is asked its
    /// filestat (into the call's scratch space) and closed at once.
    Linux,
}

/// The guest for a script: its calls in order, each errno stored at
/// `ERRNOS + 4 i` and the count of calls done at `COUNT`. Before a last
/// call that is bad, it calls `diff.checkpoint`, where the host keeps the
/// tree.
pub(crate) fn guest(calls: &[(Call, Bad)], side: Side) -> String {
    let mut w = String::from("(module\n");
    for (name, params) in IMPORTS {
        let result = if *name == "proc_exit" { "" } else { " (result i32)" };
        let _ = writeln!(w, "  (import \"wasi_snapshot_preview1\" \"{name}\" (func ${name} (param {params}){result}))");
    }
    let _ = writeln!(w, "  (import \"diff\" \"checkpoint\" (func $checkpoint))");
    let _ = writeln!(w, "  (memory (export \"memory\") 2)");
    for p in pooled_paths() {
        let _ = writeln!(w, "  (data (i32.const {}) \"{p}\")", path_at(p).0);
    }
    let _ = writeln!(w, "  (data (i32.const {DATA}) \"0123456789abcdef\")");
    w.push_str(COOKIE_FN);
    let _ = writeln!(w, "  (func (export \"_start\")");
    for (i, (call, bad)) in calls.iter().enumerate() {
        let (name, args, setup) = encode(call, i, *bad, &calls[..i]);
        let errno = ERRNOS + 4 * i as u32;
        if *bad != Bad::No {
            let _ = writeln!(w, "    (call $checkpoint)");
        }
        let _ = writeln!(w, "    {setup}");
        if name == "proc_exit" {
            let _ = writeln!(w, "    (call ${name} {args})");
        } else {
            let _ = writeln!(w, "    (i32.store (i32.const {errno}) (call ${name} {args}))");
        }
        if side == Side::Linux && name == "path_open" {
            let fd = format!("(i32.load (i32.const {}))", outs(i));
            let _ = writeln!(
                w,
                "    (if (i32.eqz (i32.load (i32.const {errno}))) (then (drop (call $fd_filestat_get {fd} (i32.const {}))) (drop (call $fd_close {fd}))))",
                scratch(i)
            );
        }
        let _ = writeln!(w, "    (i32.store (i32.const {COUNT}) (i32.const {}))", i + 1);
    }
    w.push_str("  ))\n");
    w
}
