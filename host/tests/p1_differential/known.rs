//! The differences from wasmtime that PackFS documents (the module doc of
//! `packfs_core::wasi::p1`). Those that change a call's outputs are not
//! generated unless `PACKFS_DIFF_KNOWN` is set ([`known_included`]): a
//! clock due at once beside a ready descriptor in `poll_oneoff`, which
//! PackFS reports too (wasmtime's zero-length sleep yields once first).

use crate::{compare::u32_at, script::*};

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
///   every call, whatever else is wrong with it (but `path_link`'s
///   missing old name, below); wasmtime answers so to
///   most, but `path_create_directory` `EEXIST`, `path_rename` `ENOTDIR`
///   and `path_open` with `O_CREAT` `EISDIR` (cap-std looks at the `/`
///   first), and `path_filestat_get` without following stats the symlink
///   itself. Where wasmtime answers `EPERM`, PackFS must too.
///
/// - `path_filestat_set_times` changing neither time, following: PackFS
///   walks to the last name's directory and stops, as Linux's `utimensat`
///   (which looks at nothing), wasmtime resolves the last symlink too
///   (`ENOENT`, `ELOOP`);
///
/// - `path_link` of a missing name to a bad one: PackFS answers for the
///   old path first, as Linux does, wasmtime for the new one (`ENOTDIR`,
///   `EPERM`, leaving), where the guest's `path_filestat_get` of the old
///   name just before found nothing.
///
/// Other paths ending in `/` are left out of the pool, since wasmtime
/// answers several of them unlike Linux, and some of those change the
/// tree; they are compared with Linux instead
/// ([`paths_ending_in_slash_answer_as_linux`]).
pub(crate) fn deliberate(call: &Call, i: usize, ours: u32, theirs: u32, memory: &[u8]) -> bool {
    let leaving = call.paths().iter().any(|p| LEAVING.contains(p));
    if leaving && ours == 63 && (theirs != 0 || matches!(call, Call::PathStat { follow: false, .. })) {
        return true;
    }
    match *call {
        Call::Open { follow: false, oflags, path, .. } => {
            oflags & 2 != 0 && ours == 54 && (["l", "ld", "loop", "dangling"].contains(&path) || theirs == 32)
        }
        Call::PathSetTimes { follow: true, fst: 0, .. } => ours == 0 && [32, 44].contains(&theirs),
        // Only where the old name is missing: the guest stats it just
        // before (`ENOENT` at the call's outputs).
        Call::Link { .. } => ours == 44 && [54, 63].contains(&theirs) && u32_at(memory, outs(i)) == 44,
        _ => false,
    }
}
