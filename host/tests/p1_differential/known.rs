//! The differences from wasmtime that PackFS documents, and those this
//! test found that it does not (bugs to mend).

use crate::{encode::*, script::*};

/// Differences this test found that the module doc of
/// `packfs_core::wasi::p1` does not list (issue 23, item 8): each a bug to
/// mend, or a difference to document. Unless `PACKFS_DIFF_KNOWN` is set,
/// the test does not generate those that change the tree on one side only,
/// and lets the others pass (both sides refuse the call, or change
/// nothing):
///
/// - `poll_oneoff` with a descriptor ready also reports a clock due at
///   once (wasmtime does not: its zero-length sleep yields once first);
/// - the errnos this returns the story of, for `ours` where the
///   `reference` answered `theirs`.
pub(crate) fn known(call: &Call, ours: u32, theirs: u32, reference: Side) -> Option<&'static str> {
    let fd_sub = |subs: &[Sub]| subs.iter().any(|s| matches!(s.kind, SubKind::Fd { .. }));
    let found = match *call {
        _ if known_included() => return None,
        Call::PathSetTimes { follow: true, fst: 0, .. } if ours == 0 && [32, 44].contains(&theirs) => {
            "path_filestat_set_times changing neither time, following: wasmtime resolves the last \
             symlink (ENOENT, ELOOP), PackFS stops at the parent"
        }
        Call::Poll { ref subs, .. } if ours == 8 && [0, 28].contains(&theirs) && fd_sub(subs) => {
            "poll_oneoff: a subscription to read a file open only for writing, or to write one open \
             only for reading, is EBADF (wasmtime takes it, ready)"
        }
        Call::Link { .. } if ours == 44 && [54, 63].contains(&theirs) => {
            "path_link of a missing name to a bad one: PackFS answers for the old path first (as \
             Linux does), wasmtime for the new one (ENOTDIR, EPERM)"
        }
        Call::Open { oflags, .. } if reference == Side::Linux && oflags & 1 != 0 && theirs == 31 && ours != 0 => {
            "path_open with O_CREAT of a path ending in / (or of a symlink to one): Linux answers \
             EISDIR whatever the name is; PackFS ENOTDIR for a file, ELOOP for a loop, ENOENT for a \
             dangling symlink, EEXIST with O_EXCL for a directory"
        }
        Call::Unlink { path, .. } if reference == Side::Linux && path.ends_with('/') && theirs == 54 && ours != 0 => {
            "path_unlink_file of a symlink's name ending in /: Linux does not follow the symlink \
             (ENOTDIR), PackFS does (EISDIR, ELOOP, ENOENT)"
        }
        _ => return None,
    };
    Some(found)
}

/// Calls where PackFS answers as Linux does and wasmtime does not, and
/// that change nothing, so the comparison goes on after them:
///
/// - opening a symlink with `O_DIRECTORY` and without following it:
///   Linux checks `O_DIRECTORY` first (`ENOTDIR`), wasmtime (cap-std) the
///   symlink (`ELOOP`): a symlink of the seed, or one a script made
///   (`ours` `ENOTDIR`, `theirs` `ELOOP`).
///
/// - a path ending in `/` through a symlink that leads out of the
///   preopen ([`LEAVING`]): PackFS refuses it as leaving (`EPERM`) for
///   every call, whatever else is wrong with it; wasmtime answers so to
///   most, but `path_create_directory` `EEXIST`, `path_rename` `ENOTDIR`
///   and `path_open` with `O_CREAT` `EISDIR` (cap-std looks at the `/`
///   first), and `path_filestat_get` without following stats the symlink
///   itself. Where wasmtime answers `EPERM`, PackFS must too.
///
/// Other paths ending in `/` are left out of the pool, since wasmtime
/// answers several of them unlike Linux, and some of those change the
/// tree; they are compared with Linux instead
/// ([`paths_ending_in_slash_answer_as_linux`]).
pub(crate) fn deliberate(call: &Call, ours: u32, theirs: u32) -> bool {
    let leaving = call.paths().iter().any(|p| LEAVING.contains(p));
    if leaving && ours == 63 && (theirs != 0 || matches!(call, Call::PathStat { follow: false, .. })) {
        return true;
    }
    matches!(*call, Call::Open { follow: false, oflags, path, .. }
        if oflags & 2 != 0 && (["l", "ld", "loop", "dangling"].contains(&path) || (ours, theirs) == (54, 32)))
}
