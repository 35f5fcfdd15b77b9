//! A store: the artifact written to a temporary file, loaded from it,
//! published under its key without replacing anything, then pinned.

use std::fs::File;
use std::io::{self, Write};

use rustix::fs::Mode;
use sha2::{Digest, Sha256};
use wasmtime::Engine;

use super::code::{deserialize, from_memory};
use super::dir::Inner;
use super::evict::evict;
use super::layout::{self, Digest32, Pin};
use crate::load::guest::{CacheStatus, Code, Form, LoadError, precompile};
use crate::load::identity::{self, FileId};

/// Compiles `wasm` and stores it under `key`, the caller holding the
/// key's lock; `replacing` when something untrusted is there. The guest
/// is loaded from the artifact's file, so that its code is in the page
/// cache, shared, rather than on this process's heap.
pub(super) fn store(
    cache: &Inner,
    engine: &Engine,
    kind: Form,
    wasm: &[u8],
    key: &str,
    replacing: bool,
) -> Result<(Code, CacheStatus), LoadError> {
    let bytes = precompile(engine, kind, wasm)?;
    let (tmp, file, sha256) = match write_tmp(cache, &bytes) {
        Ok(written) => written,
        Err(e) => {
            return Ok((
                from_memory(engine, kind, &bytes).map_err(LoadError::Compile)?,
                CacheStatus::StoreFailed(e.into()),
            ));
        }
    };
    let mapped = file.try_clone().map_err(wasmtime::Error::from).and_then(|f| deserialize(engine, f, kind));
    let guest = match mapped {
        Ok(guest) => guest,
        // A filesystem that maps nothing executable (noexec), say.
        Err(_) => from_memory(engine, kind, &bytes).map_err(LoadError::Compile)?,
    };
    drop(bytes);
    let status = match publish(cache, key, kind, &tmp, &file, sha256, replacing) {
        Ok(()) if replacing => CacheStatus::Replaced,
        Ok(()) => CacheStatus::Stored,
        Err(e) => {
            cache.remove(&tmp);
            CacheStatus::StoreFailed(e.into())
        }
    };
    evict(cache);
    Ok((guest, status))
}

/// Writes `bytes` to a new temporary file, `0400` when done, hashing them
/// meanwhile.
fn write_tmp(cache: &Inner, bytes: &[u8]) -> io::Result<(String, File, Digest32)> {
    let (tmp, mut file) = cache.create_tmp()?;
    let written = std::thread::scope(|s| {
        let hashing = s.spawn(|| Sha256::digest(bytes).into());
        file.write_all(bytes)?;
        rustix::fs::fchmod(&file, Mode::RUSR)?;
        // Without a boot id a lost writeback would go unseen: write it now.
        if identity::boot_id().is_none() {
            file.sync_all()?;
        }
        Ok::<Digest32, io::Error>(hashing.join().expect("hashing"))
    });
    match written {
        Ok(sha256) => Ok((tmp, file, sha256)),
        Err(e) => {
            cache.remove(&tmp);
            Err(e)
        }
    }
}

/// Renames `tmp` to the key's artifact and pins it.
fn publish(
    cache: &Inner,
    key: &str,
    kind: Form,
    tmp: &str,
    file: &File,
    sha256: Digest32,
    replacing: bool,
) -> io::Result<()> {
    let (artifact, pin) = (layout::artifact(key), layout::pin(key));
    if replacing {
        // Only unlinked: a process that has it mapped keeps its copy.
        cache.remove(&pin);
        cache.remove(&artifact);
    }
    cache.publish(tmp, &artifact)?;
    // After the rename, which sets the ctime.
    let id = FileId::of(&rustix::fs::fstat(file)?);
    let pin_record = Pin {
        key: key.to_owned(),
        kind,
        dev: id.dev,
        ino: id.ino,
        size: id.size,
        ctime: id.ctime,
        pinned: identity::now(),
        boot: identity::boot_id().map(str::to_owned),
        sha256,
    };
    cache.write_record(&pin, &pin_record.format())
}
