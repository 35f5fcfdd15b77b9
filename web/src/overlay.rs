//! The `Overlay` class: a writable in-memory filesystem over a `Pack`.

use std::sync::Arc;

use packfs_core::MemFs as CoreMemFs;
use wasm_bindgen::prelude::*;

use crate::clock::clock;
use crate::error::{JsResult, to_js};
use crate::inner::Inner;
use crate::methods::fs_methods;
use crate::ops::Backend;
use crate::options::quota;
use crate::pack::Pack;
use crate::{arg, objects};

/// A writable in-memory filesystem over a pack: reads see the pack until a
/// path is changed; changes stay here (the pack is never modified).
///
/// @deprecated `new MemFs({ lower: pack })` makes the same, as Rust's
/// `MemFs::builder().lower(..)` does; this class stays for the code
/// written against it.
#[wasm_bindgen]
#[derive(Clone)]
pub struct Overlay {
    pub(crate) inner: Inner,
    pub(crate) mem: Arc<CoreMemFs>,
    lower: Pack,
}

#[wasm_bindgen]
impl Overlay {
    /// An empty upper over `lower`, with optional quotas on what the upper
    /// holds.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "Pack")] lower: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "FsOptions")] options: Option<JsValue>,
    ) -> JsResult<Overlay> {
        let lower: Pack = arg::shared(&lower, "lower", "Pack")?;
        let mem = CoreMemFs::builder()
            .lower(lower.pack.clone())
            .quota(quota(&options)?)
            .clock(clock())
            .build()
            .map_err(|e| to_js(&e, None))?;
        let mem = Arc::new(mem);
        let inner = Inner { backend: Backend::Mem(mem.clone()), remote: lower.inner.remote.clone() };
        Ok(Overlay { inner, mem, lower })
    }

    /// Bytes and inodes the upper holds (what the pack holds is free).
    #[wasm_bindgen(unchecked_return_type = "Usage")]
    pub fn usage(&self) -> JsValue {
        objects::usage(&self.mem.usage())
    }

    /// Verifies the pack under the overlay.
    #[wasm_bindgen(unchecked_return_type = "Promise<VerifyReport>")]
    pub fn verify(&self) -> js_sys::Promise {
        self.lower.verify()
    }
}

fs_methods!(Overlay);
