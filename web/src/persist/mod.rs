//! Fetched extents kept across page loads, so that a later load reads
//! them without fetching: in the Origin Private File System where the
//! pack is read in a dedicated Worker ([`files`]: synchronous, so a
//! guest's blocking read finds them too), else in the Cache API
//! ([`cache_api`]: asynchronous, so only the async methods do).
//!
//! Both keep an extent where [`address`] says: a pack without digests'
//! under the directory of its URL (its BLAKE3 hash), so packs there (versions of one, say)
//! share what they hold alike and no other site's pack can plant content
//! under a key this pack reads; a pack with digests' in one space for
//! every site, under its digest, which found bytes must hash to.

mod address;
mod cache_api;
mod files;

use std::cell::RefCell;
use std::ops::Range;
use std::rc::Rc;

/// The pack whose extents are kept: the one a URL opens (`fetch.rs`).
type LazyPack = packfs_core::pack::PackFs<packfs_core::pack::Partial>;
use address::Scope;
use cache_api::CacheApi;
use files::Files;

/// Empties the OPFS store this worker holds, if any, to give the origin's
/// space to a write that must land; whether it held anything.
pub(crate) fn give_back() -> bool {
    files::give_back()
}

/// Bytes the OPFS store keeps unless a pack's `cacheSize` says otherwise.
pub(crate) const DEFAULT_CACHE_SIZE: u64 = 256 << 20;

/// Where one pack's fetched extents are kept.
pub(crate) enum Persist {
    /// In OPFS, shared by this worker's packs, under the pack's scope.
    Files(Rc<RefCell<Files>>, Scope),
    /// In the Cache API.
    CacheApi(CacheApi),
}

impl Persist {
    /// The store for the pack at `url`, holding at most `bound` bytes: OPFS
    /// where the worker has a store to itself, else the Cache API where
    /// there is one.
    pub(crate) async fn open(url: &str, bound: u64) -> Option<Persist> {
        let scope = address::scope(url);
        if let Some(files) = files::shared(bound).await {
            return Some(Persist::Files(files, scope));
        }
        CacheApi::open(scope, bound).await.map(Persist::CacheApi)
    }

    /// Stores into `pack` what the store holds of `wants`; returns what is
    /// left to fetch.
    pub(crate) async fn restore(&self, pack: &LazyPack, wants: Vec<Range<u64>>) -> Vec<Range<u64>> {
        match self {
            Persist::Files(..) => self.restore_now(pack, wants),
            Persist::CacheApi(c) => c.restore(pack, wants).await,
        }
    }

    /// As [`restore`](Self::restore), at once: what the Cache API holds is
    /// out of reach of a blocking read.
    pub(crate) fn restore_now(&self, pack: &LazyPack, wants: Vec<Range<u64>>) -> Vec<Range<u64>> {
        match self {
            Persist::Files(files, scope) => files.borrow_mut().restore(*scope, pack, wants),
            Persist::CacheApi(_) => wants,
        }
    }

    /// A promise that resolves once what [`keep`](Self::keep) was given
    /// so far is stored, or failed to be: at once in OPFS, written before
    /// `keep` returns; the Cache API's writes go on in the background.
    pub(crate) fn settled(&self) -> js_sys::Promise {
        match self {
            Persist::Files(..) => js_sys::Promise::resolve(&wasm_bindgen::JsValue::UNDEFINED),
            Persist::CacheApi(c) => c.settled(),
        }
    }

    /// Keeps the extents lying in `bytes`, fetched from `offset` (and
    /// stored into `pack`, so checked).
    pub(crate) fn keep(&self, pack: &LazyPack, offset: u64, bytes: &[u8]) {
        match self {
            Persist::Files(files, scope) => files.borrow_mut().keep(*scope, pack, offset, bytes),
            Persist::CacheApi(c) => c.keep(pack, offset, bytes),
        }
    }
}
