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

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use js_sys::{Array, Promise, Reflect, Uint8Array};
use packfs_core::pack::{MERGE_GAP, merge_ranges};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{Cache, CacheStorage, Request, Response};

/// The pack whose extents are kept: the one a URL opens (`fetch.rs`).
type LazyPack = packfs_core::pack::PackFs<packfs_core::pack::Partial>;
use super::address::{Address, Scope};

/// The Cache API store, and this pack's scope in it.
pub(crate) struct CacheApi {
    cache: Cache,
    scope: Scope,
    ledger: Rc<RefCell<Ledger>>,
    /// Settles once every change begun so far has (each a put or a
    /// delete, going on in the background): what [`settled`](Self::settled)
    /// hands out.
    changes: RefCell<Promise>,
}

/// What the store holds, oldest first, and the most it may: the Cache API
/// tells no sizes, so the store keeps its own account, in an entry of its
/// own ([`LEDGER`]), and lets the oldest go past its bound. An entry the
/// ledger does not name (one a page closed before it saved the ledger,
/// another tab's) is let go at open: the bound holds whatever raced.
struct Ledger {
    entries: VecDeque<(String, u64)>,
    total: u64,
    bound: u64,
}

/// Where in the page's origin the entries are.
const ROOT: &str = "/.packfs-cache";
/// The ledger's own entry.
const LEDGER: &str = "/.packfs-cache/ledger";

impl CacheApi {
    /// Opens the store for `scope`, if the page has the Cache API, holding
    /// at most `bound` bytes of entries.
    pub(crate) async fn open(scope: Scope, bound: u64) -> Option<CacheApi> {
        let storage: CacheStorage = Reflect::get(&js_sys::global(), &"caches".into()).ok()?.dyn_into().ok()?;
        let cache: Cache = JsFuture::from(storage.open("packfs")).await.ok()?.dyn_into().ok()?;
        let ledger_url = absolute(LEDGER)?;
        let entries = read_ledger(&cache, &ledger_url).await;
        let total = entries.iter().map(|(_, len)| len).sum();
        let ledger = Ledger { entries, total, bound };
        // What the ledger does not name goes: it was never counted.
        let named: std::collections::HashSet<&str> = ledger.entries.iter().map(|(u, _)| u.as_str()).collect();
        if let Ok(keys) = JsFuture::from(cache.keys()).await.map(|k| Array::from(&k)) {
            for key in keys.iter() {
                let Ok(req) = key.dyn_into::<Request>() else { continue };
                let url = req.url();
                if url != ledger_url && !named.contains(url.as_str()) {
                    let _ = JsFuture::from(cache.delete_with_str(&url)).await;
                }
            }
        }
        let changes = RefCell::new(Promise::resolve(&JsValue::UNDEFINED));
        let this = CacheApi { cache, scope, ledger: Rc::new(RefCell::new(ledger)), changes };
        this.settle();
        Some(this)
    }

    /// Counts `change` (a put or a delete) among those [`settled`](Self::settled)
    /// waits for. Its failure is dropped: a full store only costs the next
    /// load a fetch. The chain resolves to undefined, and holds the one
    /// before only until that settles: an `all_settled` of the two would
    /// resolve to an array holding the one before's result, and so on back
    /// to the first, kept for the pack's lifetime.
    fn begun(&self, change: Promise) {
        let mut changes = self.changes.borrow_mut();
        let before = JsFuture::from(changes.clone());
        let change = JsFuture::from(change);
        *changes = wasm_bindgen_futures::future_to_promise(async move {
            let _ = before.await;
            let _ = change.await;
            Ok(JsValue::UNDEFINED)
        });
    }

    /// A promise that resolves once every change begun so far has
    /// settled, whether or not it was kept.
    pub(crate) fn settled(&self) -> Promise {
        self.changes.borrow().clone()
    }

    /// Lets the oldest entries go while the store holds more than its
    /// bound, and saves the ledger.
    fn settle(&self) {
        let mut ledger = self.ledger.borrow_mut();
        while ledger.total > ledger.bound {
            let Some((url, len)) = ledger.entries.pop_front() else { break };
            ledger.total -= len;
            self.begun(self.cache.delete_with_str(&url));
        }
        let pairs: Array = ledger.entries.iter().map(|(u, l)| Array::of2(&u.into(), &(*l as f64).into())).collect();
        let Ok(text) = js_sys::JSON::stringify(&pairs) else { return };
        let Some(url) = absolute(LEDGER) else { return };
        let Ok(resp) = Response::new_with_opt_str(text.as_string().as_deref()) else { return };
        self.begun(self.cache.put_with_str(&url, &resp));
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
            let Some(url) = absolute(&a.url(ROOT)) else { continue };
            let len = part.len() as u64;
            {
                let mut ledger = self.ledger.borrow_mut();
                // One larger than the whole bound is not kept at all.
                if len > ledger.bound || ledger.entries.iter().any(|(u, _)| *u == url) {
                    continue;
                }
                ledger.total += len;
                ledger.entries.push_back((url.clone(), len));
            }
            let Ok(resp) = Response::new_with_opt_u8_array(Some(&mut part)) else { continue };
            self.begun(self.cache.put_with_str(&url, &resp));
        }
        self.settle();
    }
}

/// The ledger's entries, as it saved them (none if it cannot be read).
async fn read_ledger(cache: &Cache, url: &str) -> VecDeque<(String, u64)> {
    let mut entries = VecDeque::new();
    let Ok(found) = JsFuture::from(cache.match_with_str(url)).await else { return entries };
    let Ok(resp) = found.dyn_into::<Response>() else { return entries };
    let Ok(text) = resp.text() else { return entries };
    let Some(text) = JsFuture::from(text).await.ok().and_then(|t| t.as_string()) else { return entries };
    let Ok(parsed) = js_sys::JSON::parse(&text) else { return entries };
    for pair in Array::from(&parsed).iter() {
        let pair = Array::from(&pair);
        if let (Some(url), Some(len)) = (pair.get(0).as_string(), pair.get(1).as_f64()) {
            #[allow(clippy::cast_possible_truncation, reason = "a whole length the ledger wrote")]
            entries.push_back((url, len as u64));
        }
    }
    entries
}

/// `path` of the page's origin, as the Cache API names what it keeps.
fn absolute(path: &str) -> Option<String> {
    Request::new_with_str(path).ok().map(|r| r.url())
}
