//! [`load`] and [`load_file`]: a guest from bytes or from a file, through
//! the cache when there is one.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use rustix::fs::FileType;
use sha2::{Digest, Sha256};
use wasmtime::Engine;

use crate::load::guest::{CacheStatus, Guest, Kind, LoadError, compile};
use crate::load::guest_cache::{self, Digest32, GuestCache};
use crate::load::identity::FileId;

/// Compiles `wasm`, a core module or a component, through `cache` when
/// there is one. A hit hashes `wasm` (SHA-256, for its key) and maps the
/// artifact; [`load_file`] does not read the module at all.
pub fn load(engine: &Engine, wasm: &[u8], cache: Option<&GuestCache>) -> Result<(Guest, CacheStatus), LoadError> {
    let kind = Kind::of(wasm)?;
    match cache {
        None => Ok((compile(engine, kind, wasm)?, CacheStatus::Off)),
        Some(cache) => guest_cache::get_or_store(cache, engine, kind, wasm, &Sha256::digest(wasm).into()),
    }
}

/// Loads the module or component at `path`, through `cache` when there is
/// one. When the cache has seen this file as it is now (same device,
/// inode, size, mtime and ctime) and holds its compiled code, the file is
/// only opened and `fstat`ed, not read; otherwise it is read and hashed
/// as [`load`] does, and its identity recorded for the next time, unless
/// it changed within the cache's racy window. Only a regular file has an
/// identity that stands for its content: a pipe or a device is read.
pub fn load_file(engine: &Engine, path: &Path, cache: Option<&GuestCache>) -> Result<(Guest, CacheStatus), LoadError> {
    let file = File::open(path).map_err(LoadError::Io)?;
    let Some(cache) = cache else { return load(engine, &read(&file)?, None) };
    let st = rustix::fs::fstat(&file).map_err(|e| LoadError::Io(e.into()))?;
    let id = (FileType::from_raw_mode(st.st_mode) == FileType::RegularFile).then(|| FileId::of(&st));
    if let Some(id) = &id
        && let Some(digest) = guest_cache::digest_of(cache, id)
        && let Some(guest) = guest_cache::hit(cache, engine, &guest_cache::key(engine, &digest))
    {
        return Ok((guest, CacheStatus::Hit));
    }
    let wasm = read(&file)?;
    let digest: Digest32 = Sha256::digest(&wasm).into();
    let loaded = guest_cache::get_or_store(cache, engine, Kind::of(&wasm)?, &wasm, &digest)?;
    // What was read is what the identity names only if it did not change
    // meanwhile.
    if let Some(id) = &id
        && rustix::fs::fstat(&file).is_ok_and(|st| FileId::of(&st) == *id)
    {
        guest_cache::record(cache, id, &digest);
    }
    Ok(loaded)
}

fn read(mut file: &File) -> Result<Vec<u8>, LoadError> {
    let mut wasm = Vec::new();
    file.read_to_end(&mut wasm).map_err(LoadError::Io)?;
    Ok(wasm)
}
