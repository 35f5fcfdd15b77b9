//! The `Pack` class: a read-only pack, from bytes or from a URL by HTTP
//! Range requests ([`fetch`](crate::fetch)).

use std::rc::Rc;
use std::sync::Arc;

use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::error::{JsResult, to_js};
use crate::fetch::{LazyPack, Remote};
use crate::inner::Inner;
use crate::methods::fs_methods;
use crate::ops::Backend;
use crate::options::{opt_bool, opt_u64, read_options};
use crate::persist::DEFAULT_CACHE_SIZE;
use crate::{arg, objects};

/// A read-only pack.
#[wasm_bindgen]
#[derive(Clone)]
pub struct Pack {
    pub(crate) inner: Inner,
    pub(crate) pack: Arc<LazyPack>,
}

#[wasm_bindgen]
impl Pack {
    /// Opens the pack in `bytes` (copied; any `ArrayBufferView` or an
    /// `ArrayBuffer`). Checks the header, trailer and index; throws `io` for
    /// a damaged pack, `unsupported` for an unknown version.
    #[wasm_bindgen(js_name = fromBytes)]
    pub fn from_bytes(
        #[wasm_bindgen(unchecked_param_type = "Uint8Array")] bytes: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "PackOptions")] options: Option<JsValue>,
    ) -> JsResult<Pack> {
        let bytes = arg::binary(&bytes, "bytes")?;
        let pack = crate::fetch::complete(bytes, read_options(&options, false)?).map_err(|e| to_js(&e, None))?;
        let pack = Arc::new(pack);
        Ok(Pack { inner: Inner { backend: Backend::Pack(pack.clone()), remote: None }, pack })
    }

    /// Opens the pack at `url` with HTTP Range requests: the header, index
    /// and trailer now (kilobytes, whatever the pack's size), each file's
    /// bytes on its first read.
    #[wasm_bindgen(js_name = fromUrl, unchecked_return_type = "Promise<Pack>")]
    pub fn from_url(
        #[wasm_bindgen(unchecked_param_type = "string")] url: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "PackOptions")] options: Option<JsValue>,
    ) -> js_sys::Promise {
        future_to_promise(async move {
            let url = arg::string(&url, "url")?;
            let opts = read_options(&options, true)?;
            let bound = opt_u64(&options, "cacheSize")?.unwrap_or(DEFAULT_CACHE_SIZE);
            let persist = opt_bool(&options, "persist")?.unwrap_or(true).then_some(bound);
            // A remote failure names the URL already.
            let named =
                |e: &packfs_core::Error| (!matches!(e, packfs_core::Error::Remote { .. })).then_some(url.as_str());
            let remote = Remote::open(url.clone(), opts, persist).await.map_err(|e| to_js(&e, named(&e)))?;
            let pack = remote.pack.clone();
            Ok(Pack { inner: Inner { backend: Backend::Pack(pack.clone()), remote: Some(Rc::new(remote)) }, pack }
                .into())
        })
    }

    /// How this thread reads a pack's bytes where a read must wait for them
    /// and there is no synchronous `XMLHttpRequest` (Node, Deno, Bun), and
    /// how it reads a `file:` URL anywhere: `get(url, range, limit)`, with
    /// `range` a `Range` header's value and `limit` the most body bytes
    /// worth receiving, the range's length (or undefined; a longer body
    /// is refused), returns `{ status, contentRange,
    /// validator, body }` once it has them, or throws. `init()` installs
    /// one in those runtimes, and the runner's worker one that asks the
    /// runner's thread; `null` removes it.
    #[wasm_bindgen(js_name = setBlockingGet)]
    pub fn set_blocking_get(#[wasm_bindgen(unchecked_param_type = "BlockingGet | null")] get: JsValue) -> JsResult<()> {
        if get.is_null() || get.is_undefined() {
            crate::fetch::set_blocking_get(None);
        } else {
            let f = get.dyn_into().map_err(|_| crate::error::type_error("get must be a function or null"))?;
            crate::fetch::set_blocking_get(Some(f));
        }
        Ok(())
    }

    /// Header and trailer facts.
    #[wasm_bindgen(unchecked_return_type = "PackInfo")]
    pub fn info(&self) -> JsValue {
        let content = self.pack.content_stats().unwrap_or_default();
        objects::pack_info(&self.pack.info(), &content)
    }

    /// Checks every checksum (fetching the whole pack first if it came
    /// from a URL). The first 1000 damaged files are listed, the rest
    /// counted in `unlisted`; a damaged index rejects.
    #[wasm_bindgen(unchecked_return_type = "Promise<VerifyReport>")]
    pub fn verify(&self) -> js_sys::Promise {
        let this = self.clone();
        future_to_promise(async move {
            this.inner.load_all().await?;
            let r = this.pack.verify().map_err(|e| to_js(&e, None))?;
            Ok(objects::report(&r))
        })
    }

    /// Fetches every byte not fetched yet.
    #[wasm_bindgen(js_name = loadAll, unchecked_return_type = "Promise<void>")]
    pub fn load_all(&self) -> js_sys::Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            inner.load_all().await?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Resolves once every chunk this pack fetched so far is where it is
    /// kept across page loads (see `persist` in `PackOptions`): on a page
    /// the Cache API stores them in the background; a Worker's OPFS store
    /// before a read returns, and a pack that keeps nothing resolves at
    /// once. A chunk the store could not keep (it is full) is not waited
    /// for again: the next load fetches it.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn persisted(&self) -> js_sys::Promise {
        self.inner.remote.as_ref().map_or_else(|| js_sys::Promise::resolve(&JsValue::UNDEFINED), |r| r.persisted())
    }

    /// True once every byte is here.
    #[wasm_bindgen(getter, js_name = isComplete)]
    pub fn is_complete(&self) -> bool {
        self.pack.is_complete()
    }

    /// Bytes received from the network so far (0 for `fromBytes`).
    #[wasm_bindgen(getter, js_name = bytesFetched)]
    pub fn bytes_fetched(&self) -> f64 {
        self.inner.remote.as_ref().map_or(0.0, |r| r.bytes_fetched() as f64)
    }

    /// HTTP requests made so far (0 for `fromBytes`).
    #[wasm_bindgen(getter)]
    pub fn requests(&self) -> u32 {
        self.inner.remote.as_ref().map_or(0, |r| r.requests())
    }

    /// The pack digest, `blake3:` and 64 hex digits, which `digest` in
    /// `PackOptions` pins it by; undefined for a pack written without
    /// digests.
    #[wasm_bindgen(getter)]
    pub fn digest(&self) -> Option<String> {
        self.pack.digest().map(|d| d.to_string())
    }

    /// The URL it was opened from, if any.
    #[wasm_bindgen(getter)]
    pub fn url(&self) -> Option<String> {
        self.inner.remote.as_ref().map(|r| r.url().to_owned())
    }
}

fs_methods!(Pack);
