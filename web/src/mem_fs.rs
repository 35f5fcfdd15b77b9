//! The `MemFs` class: a writable in-memory filesystem.

use std::sync::Arc;

use packfs_core::MemFs as CoreMemFs;
use wasm_bindgen::prelude::*;

use crate::arg;
use crate::clock::clock;
use crate::error::{JsResult, to_js, type_error};
use crate::inner::Inner;
use crate::methods::fs_methods;
use crate::objects;
use crate::ops::Backend;
use crate::options::quota;
use crate::pack::Pack;

/// A writable in-memory filesystem.
#[wasm_bindgen]
#[derive(Clone)]
pub struct MemFs {
    pub(crate) inner: Inner,
    pub(crate) mem: Arc<CoreMemFs>,
}

#[wasm_bindgen]
impl MemFs {
    /// An empty filesystem, with optional quotas; over a pack when
    /// `options.lower` names one (an overlay, as Rust's
    /// `MemFs::builder().lower(..)`).
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_optional_param_type = "MemFsOptions")] options: Option<JsValue>,
    ) -> JsResult<MemFs> {
        // A misspelt `lower` would make an empty tree where an overlay was
        // meant: a plain object (what it inherits is Object's), every key
        // one of these.
        if let Some(o) = options.as_ref().filter(|o| o.is_object()) {
            let o: &js_sys::Object = o.unchecked_ref();
            let proto = js_sys::Object::get_prototype_of(o);
            if !(proto.is_null() || proto == js_sys::Object::get_prototype_of(&js_sys::Object::new())) {
                return Err(type_error("options must be a plain object"));
            }
            for key in js_sys::Object::keys(o).iter().filter_map(|k| k.as_string()) {
                if !["maxBytes", "maxInodes", "lower"].contains(&key.as_str()) {
                    return Err(type_error(&format!("options has no option {key:?} (maxBytes, maxInodes, lower)")));
                }
            }
        }
        let builder = CoreMemFs::builder().quota(quota(&options)?).clock(clock());
        let lower = arg::field(&options, "lower")?;
        if lower.is_undefined() || lower.is_null() {
            let mem = Arc::new(builder.build());
            return Ok(MemFs { inner: Inner { backend: Backend::Mem(mem.clone()), remote: None }, mem });
        }
        let lower: Pack = arg::shared(&lower, "options.lower", "Pack")?;
        let mem = Arc::new(builder.lower(lower.pack.clone()).build().map_err(|e| to_js(&e, None))?);
        Ok(MemFs { inner: Inner { backend: Backend::Mem(mem.clone()), remote: lower.inner.remote.clone() }, mem })
    }

    /// Opens the durable tree `name` (made empty when missing), with
    /// optional quotas: every change is in the Origin Private File System
    /// before the call that made it returns, and the tree is there again
    /// when the name is opened after a reload or a crash. In a dedicated
    /// Worker only (`unsupported` elsewhere); one worker at a time (`busy`
    /// while another, in any tab, has it open: until its `MemFs`, and every
    /// preview1 guest given it, are freed or the worker ends). A change
    /// the origin's quota has no room for is `insufficient-space`.
    #[wasm_bindgen(js_name = openJournal, unchecked_return_type = "Promise<MemFs>")]
    pub fn open_journal(
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "FsOptions")] options: Option<JsValue>,
    ) -> js_sys::Promise {
        wasm_bindgen_futures::future_to_promise(async move {
            let name = crate::arg::string(&name, "name")?;
            let mem = Arc::new(crate::journal::open(&name, quota(&options)?).await?);
            Ok(MemFs { inner: Inner { backend: Backend::Mem(mem.clone()), remote: None }, mem }.into())
        })
    }

    /// Bytes and inodes in use.
    #[wasm_bindgen(unchecked_return_type = "Usage")]
    pub fn usage(&self) -> JsValue {
        objects::usage(&self.mem.usage())
    }
}

fs_methods!(MemFs);
