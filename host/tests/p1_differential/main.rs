//! PackFS's preview1 against wasmtime's native preview1, call by call, and
//! its paths ending in `/` against Linux's.
//!
//! proptest generates scripts of preview1 calls — every function of
//! `wasi_snapshot_preview1`, on valid and invalid descriptors, with odd
//! flags, zero lengths, paths that escape or loop — and each script becomes
//! a guest: a core module whose `_start` makes the calls in order, storing
//! each errno and each call's outputs in its own place in memory. The guest
//! runs on PackFS (a `MemFs`) and on wasmtime's native preview1 (a
//! temporary directory holding the same tree); the host then reads both
//! memories and compares every call's errno and outputs, then the trees
//! left.
//!
//! Outputs are compared where both sides define them alike:
//!
//! - inode numbers and directory sizes differ by design; times only where
//!   the script set them explicitly (they are before 2000, every other time
//!   is "now"), and access times not at all (PackFS reads are `noatime`,
//!   Linux's `relatime` is not);
//! - `random_get`: whether the bytes were written, and nothing past them;
//!   `args_get`/`environ_get`: the pointers and strings;
//! - `poll_oneoff`: clocks due at once (timeout 0, an absolute time past)
//!   or not for an hour, one relative clock alone of up to 100 µs, one
//!   descriptor at most (wasmtime's file streams are ready a moment after
//!   its stdio, so with two only one may be), subscriptions the witx does
//!   not define (`EINVAL` on both sides); `nevents` and each event's
//!   userdata, error, type, `nbytes` and flags;
//! - `proc_exit` ends a script: both sides exit with its status;
//! - `fd_readdir` resumes from cookies the guest was given, the `d_next` of
//!   an entry of an earlier call's buffer (read by the guest at run time),
//!   as well as from 0–2. A directory's order is the real filesystem's, so
//!   listings compare as sets, and a resumed one through what each side
//!   listed before: on each side, every position names one entry until the
//!   tree changes (PackFS resumes after the last name listed, wasmtime
//!   skips, which agree without a change between), and once both sides
//!   have listed every position of a directory the two sets must agree.
//!
//! The trees left compare by path: what each entry is and holds, its owner
//! permission bits, its link count and explicitly set mtime, and which paths
//! are one inode (hard links, not copies: the partition of paths into
//! inodes, not the numbers).
//!
//! A script may end with one call passing a pointer outside memory, or an
//! argument that is no value of its type (flag bits or an enum tag the witx
//! does not define): PackFS must answer `EFAULT`, or `EINVAL`/`EOVERFLOW`
//! (its documented differences: wasmtime traps), unless both refuse the
//! call first for something else. The comparison of calls stops there, but
//! the trees are still compared: PackFS's after the call, which changed
//! nothing, with wasmtime's before it (the guest calls back to the host
//! just before its last call, and the host keeps the tree then).
//!
//! Paths ending in `/` are compared with Linux, not wasmtime (whose
//! answers differ from Linux's there, and change the tree: `rmdir("d/")`
//! is `EINVAL`): a second test runs scripts of path calls, with and
//! without a trailing `/`, on PackFS and through the same `*at` system
//! calls on a temporary directory. Those through a symlink that leads out
//! of the preopen ([`LEAVING`]) are compared with wasmtime, which refuses
//! them as leaving (the Linux side is not sandboxed).
//!
//! The differences PackFS documents are let pass ([`known`]); one that
//! would change a call's outputs is not generated, unless
//! `PACKFS_DIFF_KNOWN=1`, to check a change to it.
//!
//! Each run is 96 scripts against wasmtime and 64 against Linux. The soak
//! mode runs more: `PACKFS_DIFF_CASES=N` runs N scripts in each test, and
//! `PACKFS_SOAK=1` 20,000 (`PACKFS_SOAK=1 cargo test -p packfs-host --test
//! p1_differential`, some 30 minutes in a debug build on two cores).
//! `P1_DIFF_SURVEY=1` prints each failing script and goes on, to list
//! many differences in one run; `P1_DIFF_DEBUG=1` prints wasmtime's traps.

mod compare;
mod encode;
mod known;
mod script;
mod sides;
mod slash;

use crate::{compare::*, encode::*, known::*, script::*, sides::*};
use packfs_core::MemFs;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::sync::Arc;
use wasmtime::Module;

/// Runs `calls` on PackFS and on wasmtime, and compares.
fn against_wasmtime(calls: &[(Call, Bad)]) -> Result<(), TestCaseError> {
    let wat = guest(calls, Side::Wasmtime);
    let module = Module::new(engine(), wat::parse_str(&wat).unwrap()).unwrap();
    let (fs, ro) = (Arc::new(MemFs::new()), Arc::new(MemFs::new()));
    seed(&fs);
    seed(&ro);
    let (root_dir, ro_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    seed_dir(root_dir.path());
    seed_dir(ro_dir.path());
    let ours = run_packfs(&module, fs.clone(), ro.clone());
    let native = run_native(&module, root_dir.path(), ro_dir.path());

    let exit = match calls.last() {
        Some((Call::Exit { code }, _)) => Some(*code),
        _ => None,
    };
    let ends_bad = calls.last().is_some_and(|(_, b)| *b != Bad::No);
    let compared = if ends_bad || exit.is_some() { calls.len() - 1 } else { calls.len() };
    prop_assert_eq!(&ours.end, &exit.map_or(End::Returned, End::Exit), "PackFS's end");
    let done = u32_at(&ours.memory, COUNT) as usize;
    prop_assert_eq!(done, calls.len() - usize::from(exit.is_some()));
    let native_done = u32_at(&native.memory, COUNT) as usize;
    prop_assert!(native_done >= compared, "native stopped at call {native_done}: {:?}", calls.get(native_done));
    let mut listings = Listings::default();
    for (i, (call, _)) in calls.iter().take(compared).enumerate() {
        let (a, b) = (u32_at(&ours.memory, ERRNOS + 4 * i as u32), u32_at(&native.memory, ERRNOS + 4 * i as u32));
        if deliberate(call, i, a, b, &ours.memory) {
            continue;
        }
        prop_assert_eq!(a, b, "call {} {:?}: errno", i, call);
        if a == 0 {
            prop_assert_eq!(
                output(call, i, &ours.memory),
                output(call, i, &native.memory),
                "call {} {:?}: output",
                i,
                call
            );
        }
        listings
            .after(call, i, a, [&ours.memory, &native.memory])
            .map_err(|e| TestCaseError::fail(format!("call {i} {call:?}: {e}")))?;
    }
    let i = calls.len() - 1;
    if let Some(code) = exit {
        prop_assert_eq!(&native.end, &End::Exit(code), "wasmtime's end");
    } else if let Some((call, Bad::Arg)) = calls.last() {
        let ours = u32_at(&ours.memory, ERRNOS + 4 * i as u32);
        prop_assert!(ours == 28 || ours == 61, "an invalid argument: {} for {:?}", ours, call);
        prop_assert!(matches!(native.end, End::Trap(_)) && native_done == i, "wasmtime traps on {:?}", call);
    } else if ends_bad {
        // EFAULT, unless both refused the call for something checked
        // before the pointer (each for its own reason where PackFS's
        // differs by design).
        let errno = u32_at(&ours.memory, ERRNOS + 4 * i as u32);
        let theirs = (native_done == calls.len()).then(|| u32_at(&native.memory, ERRNOS + 4 * i as u32));
        let deliberate = theirs.is_some_and(|t| deliberate(&calls[i].0, i, errno, t, &ours.memory));
        prop_assert!(
            errno == 21 || Some(errno) == theirs || deliberate,
            "a bad pointer: {} (wasmtime: {:?}) for {:?}",
            errno,
            theirs,
            calls[i]
        );
    } else {
        prop_assert_eq!(&native.end, &End::Returned, "wasmtime's end");
    }
    // The trees, whatever the last call did: where wasmtime trapped on a
    // bad last call (maybe after doing what it asked), PackFS's, which it
    // left as it was, against wasmtime's before it.
    let reference = match native.end {
        End::Trap(_) => native.checkpoint.expect("the guest called diff.checkpoint"),
        _ => final_of_dir(root_dir.path()),
    };
    same_tree(&final_of(&*fs), &reference, "/")?;
    same_tree(&final_of(&*ro), &final_of_dir(ro_dir.path()), "/ro")?;
    Ok(())
}

/// Every preview1 call that takes a path, on each path ending in `/`
/// through a symlink that leads out of the preopen (issue 38, item 5):
/// where wasmtime refuses it as leaving (`EPERM`), PackFS must too
/// ([`deliberate`] lets pass only PackFS's `EPERM` where wasmtime refuses
/// for something else or stats the symlink, and `path_link`'s `ENOENT` of
/// a missing old name). PackFS answered
/// `path_remove_directory("up/")` `ENOTDIR`, `path_symlink` and
/// `path_link`'s new name `EEXIST`, and `path_filestat_set_times`
/// changing neither time `0`.
#[test]
fn leaving_with_a_slash_answers_as_wasmtime_native() {
    for &path in LEAVING {
        let mut calls = Vec::new();
        for follow in [false, true] {
            for oflags in [0, 1, 2, 1 | 4, 8] {
                calls.push(Call::Open { dir: 3, follow, path, oflags, rights: 66, fdflags: 0 });
            }
            calls.push(Call::PathStat { fd: 3, follow, path });
            for fst in [0, 1 | 8] {
                calls.push(Call::PathSetTimes { fd: 3, follow, path, fst, times: 0 });
            }
        }
        calls.extend([
            Call::Mkdir { fd: 3, path },
            Call::Rmdir { fd: 3, path },
            Call::Unlink { fd: 3, path },
            Call::Readlink { fd: 3, path, len: 8 },
            Call::Symlink { target: "g", fd: 3, path },
            Call::Rename { fd: 3, path, to_fd: 3, to: "new" },
            Call::Rename { fd: 3, path: "g", to_fd: 3, to: path },
            Call::Rename { fd: 3, path: "e", to_fd: 3, to: path },
            Call::Link { fd: 3, path, to_fd: 3, to: "new" },
            Call::Link { fd: 3, path: "g", to_fd: 3, to: path },
        ]);
        let calls: Vec<(Call, Bad)> = calls.into_iter().map(|c| (c, Bad::No)).collect();
        if let Err(e) = against_wasmtime(&calls) {
            panic!("{path}: {e}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(96), ..ProptestConfig::default() })]

    #[test]
    fn packfs_preview1_answers_as_wasmtime_native(calls in script()) {
        survey(against_wasmtime(&calls))?;
    }
}
