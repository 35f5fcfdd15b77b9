//! A load through the cache: a hit, or one store per key at a time.

use rustix::fs::FlockOperation;
use wasmtime::Engine;

use super::check::{Trust, trusted};
use super::code::deserialize;
use super::dir::GuestCache;
use super::layout::{self, Digest32};
use super::store;
use crate::load::guest::{CacheStatus, Code, Form, LoadError};

/// The guest the cache holds under `key`, if it is there and trusted.
pub(crate) fn hit(cache: &GuestCache, engine: &Engine, key: &str) -> Option<Code> {
    match trusted(&cache.inner, key) {
        Trust::Trusted(file, kind) => deserialize(engine, file, kind).ok(),
        Trust::Absent | Trust::Untrusted => None,
    }
}

/// `wasm` (a `kind`, whose SHA-256 is `digest`) from the cache, else
/// compiled and stored.
pub(crate) fn get_or_store(
    cache: &GuestCache,
    engine: &Engine,
    kind: Form,
    wasm: &[u8],
    digest: &Digest32,
) -> Result<(Code, CacheStatus), LoadError> {
    let key = layout::key(engine, digest);
    if let Some(guest) = hit(cache, engine, &key) {
        return Ok((guest, CacheStatus::Hit));
    }
    // One store of a key at a time, in every process: the others wait for
    // it and hit. Without the lock (it could not be made) each compiles,
    // and only one publishes.
    let lock = cache.inner.open_lock(&layout::lock(&key));
    let _held = lock.as_ref().ok().filter(|f| rustix::fs::flock(f, FlockOperation::LockExclusive).is_ok());
    let replacing = match trusted(&cache.inner, &key) {
        Trust::Absent => false,
        Trust::Untrusted => true,
        Trust::Trusted(file, kind) => match deserialize(engine, file, kind) {
            Ok(guest) => return Ok((guest, CacheStatus::Hit)),
            Err(_) => true,
        },
    };
    store::store(&cache.inner, engine, kind, wasm, &key, replacing)
}
