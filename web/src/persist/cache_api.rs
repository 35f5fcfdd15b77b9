//! Fetched extents kept across page loads in the Cache API, which a page
//! and a worker have, asynchronously only.
//!
//! An extent (a blob, or a chunk) is stored as a response under
//! `/.packfs-cache/SCOPE/CHECKSUM-LEN` of the page's origin (SCOPE: 32
//! hex digits of the BLAKE3 of the pack's directory), or `/.packfs-cache/blake3/DIGEST-LEN` for a pack with
//! digests (see [`Address`]). What is found is stored into the pack only if
//! it is the extent and passes the pack's own check ([`PackFs::store`]),
//! so a damaged or planted entry is refetched, never served.

use std::ops::Range;

use js_sys::{Reflect, Uint8Array};
use packfs_core::pack::{MERGE_GAP, merge_ranges};
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Cache, CacheStorage, Response};

/// The pack whose extents are kept: the one a URL opens (`fetch.rs`).
type LazyPack = packfs_core::pack::PackFs<packfs_core::pack::Partial>;
use super::address::{Address, Scope};

/// The Cache API store, and this pack's scope in it.
pub(crate) struct CacheApi {
    cache: Cache,
    scope: Scope,
}

/// Where in the page's origin the entries are.
const ROOT: &str = "/.packfs-cache";

impl CacheApi {
    /// Opens the store for `scope`, if the page has the Cache API.
    pub(crate) async fn open(scope: Scope) -> Option<CacheApi> {
        let storage: CacheStorage = Reflect::get(&js_sys::global(), &"caches".into()).ok()?.dyn_into().ok()?;
        let cache: Cache = JsFuture::from(storage.open("packfs")).await.ok()?.dyn_into().ok()?;
        Some(CacheApi { cache, scope })
    }

    /// Stores into `pack` what the store holds of `wants`; returns what is
    /// left to fetch, as ranges.
    pub(crate) async fn restore(&self, pack: &LazyPack, wants: Vec<Range<u64>>) -> Vec<Range<u64>> {
        // Every lookup at once, then each answer in turn.
        let mut asked = Vec::new();
        for w in &wants {
            for k in pack.extents_within(w.clone()) {
                let Some((r, a)) = Address::of(pack, k, self.scope) else { continue };
                if !r.is_empty() {
                    asked.push((r, a, JsFuture::from(self.cache.match_with_str(&a.url(ROOT)))));
                }
            }
        }
        let mut left = Vec::new();
        for (r, a, found) in asked {
            if !self.restored(pack, &r, &a, found).await {
                left.push(r);
            }
        }
        merge_ranges(left, MERGE_GAP, u64::MAX).into_iter().map(|m| m.range).collect()
    }

    /// Whether `found` held extent `r`'s right bytes, now stored.
    async fn restored(&self, pack: &LazyPack, r: &Range<u64>, a: &Address, found: JsFuture) -> bool {
        let Ok(resp) = found.await.and_then(|v| v.dyn_into::<Response>()) else { return false };
        let Ok(body) = resp.array_buffer() else { return false };
        let Ok(buf) = JsFuture::from(body).await else { return false };
        let bytes = Uint8Array::new(&buf).to_vec();
        a.holds(pack, &bytes) && pack.store(r.start, &bytes).is_ok()
    }

    /// Keeps the extents lying in `bytes`, fetched from `offset` (and
    /// stored into `pack`, so checked). Writes go on in the background; a
    /// full store only costs the next load a fetch.
    pub(crate) fn keep(&self, pack: &LazyPack, offset: u64, bytes: &[u8]) {
        let end = offset + bytes.len() as u64;
        for k in pack.extents_within(offset..end) {
            let Some((r, a)) = Address::of(pack, k, self.scope) else { continue };
            let mut part = bytes[(r.start - offset) as usize..(r.end - offset) as usize].to_vec();
            // Bytes of an extent already here were not checked by `store`.
            if part.is_empty() || !a.holds(pack, &part) {
                continue;
            }
            let Ok(resp) = Response::new_with_opt_u8_array(Some(&mut part)) else { continue };
            let put = JsFuture::from(self.cache.put_with_str(&a.url(ROOT), &resp));
            wasm_bindgen_futures::spawn_local(async move {
                let _ = put.await;
            });
        }
    }
}
