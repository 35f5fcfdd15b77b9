//! The deserializations that run compiled code: an artifact's, mapped from
//! its file, or a store's, from memory.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::path::Path;

use rustix::fs::StatVfsMountFlags;
use wasmtime::component::Component;
use wasmtime::{Engine, Module};

use crate::load::guest::{Code, Form};

/// Loads the artifact `file`: mapped, or read whole from its descriptor
/// on a filesystem mounted noexec (and a component where there is no
/// /proc).
pub(super) fn deserialize(engine: &Engine, file: File, kind: Form) -> wasmtime::Result<Code> {
    let noexec = rustix::fs::fstatvfs(&file).is_ok_and(|v| v.f_flag.contains(StatVfsMountFlags::NOEXEC));
    // No /proc: no second name for the open file.
    let reachable = kind == Form::Module || Path::new("/proc/self/fd").is_dir();
    if noexec || !reachable {
        // A filesystem mounted noexec maps nothing executable: the same
        // bytes, read from the same descriptor, run from the heap.
        let mut bytes = Vec::new();
        (&file).seek(SeekFrom::Start(0))?;
        (&file).read_to_end(&mut bytes)?;
        return from_memory(engine, kind, &bytes);
    }
    mapped(engine, file, kind)
}

/// Maps the artifact `file` and makes its code executable.
///
/// wasmtime runs the machine code in an artifact as it finds it; it
/// checks only the ELF header and the `.wasmtime.engine` section (its
/// version, target, flags and features against the engine's). Everything
/// else is what `check::trusted` or the store vouches for: see the SAFETY
/// comments and the module doc of [`crate::load`].
#[allow(unsafe_code, reason = "running the code the cache compiled: see SAFETY")]
fn mapped(engine: &Engine, file: File, kind: Form) -> wasmtime::Result<Code> {
    match kind {
        // SAFETY: `file` is either the temporary file a store has just
        // written from `Engine::precompile_*` output, or an artifact that
        // `check::trusted` held against its pin: (a) it is in a directory only
        // this user can write to, reached by name without following
        // symlinks from a descriptor opened when the directory passed its
        // checks; (b) it is a regular file of this user's, 0400, one link,
        // published by a rename that replaces nothing and never opened for
        // writing again (eviction only unlinks, so a mapping stays whole);
        // (c) its device, inode, size and ctime are those the store pinned
        // after publishing it, so it was not written, truncated, replaced
        // or renamed over since, and no write within the ctime tick slipped
        // by (a pin within the racy window is checked by hash); (d) in a
        // later boot its bytes were hashed once against the pin's SHA-256;
        // (e) wasmtime checks that it was compiled by this version for this
        // engine's configuration. Not covered: a process of this user
        // writing into the cache in place (it can run code as this user
        // anyway) and media corruption within one boot.
        Form::Module => unsafe { Module::deserialize_open_file(engine, file) }.map(Code::Module),
        Form::Component => {
            // There is no `Component::deserialize_open_file`: the same
            // open file, reached again through /proc (a magic link to the
            // inode, not a path lookup in the cache).
            let path = format!("/proc/self/fd/{}", file.as_raw_fd());
            // SAFETY: as for a module; the path names `file` itself, held
            // open across the call.
            let component = unsafe { Component::deserialize_file(engine, &path) };
            drop(file);
            component.map(Code::Component)
        }
    }
}

/// Loads compiled code from memory: a store's, when its file could not be
/// written or mapped, or an artifact's read whole from its descriptor.
#[allow(unsafe_code, reason = "running code just compiled: see SAFETY")]
pub(super) fn from_memory(engine: &Engine, kind: Form, bytes: &[u8]) -> wasmtime::Result<Code> {
    match kind {
        // SAFETY: `bytes` is either `Engine::precompile_module` output of
        // this engine, made in this process and held in its memory since,
        // or the bytes of an artifact read from the descriptor `deserialize`
        // was given, which its SAFETY comment vouches for.
        Form::Module => unsafe { Module::deserialize(engine, bytes) }.map(Code::Module),
        // SAFETY: as for a module (`precompile_component` output, or an
        // artifact's bytes).
        Form::Component => unsafe { Component::deserialize(engine, bytes) }.map(Code::Component),
    }
}
