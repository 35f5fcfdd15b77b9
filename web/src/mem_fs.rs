//! The `MemFs` class: a writable in-memory filesystem.

use std::sync::Arc;

use packfs_core::MemFs as CoreMemFs;
use wasm_bindgen::prelude::*;

use crate::clock::clock;
use crate::error::JsResult;
use crate::inner::Inner;
use crate::methods::fs_methods;
use crate::objects;
use crate::ops::Backend;
use crate::options::limits;

/// A writable in-memory filesystem.
#[wasm_bindgen]
#[derive(Clone)]
pub struct MemFs {
    pub(crate) inner: Inner,
    pub(crate) mem: Arc<CoreMemFs>,
}

#[wasm_bindgen]
impl MemFs {
    /// An empty filesystem, with optional quotas.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_optional_param_type = "FsOptions")] options: Option<JsValue>,
    ) -> JsResult<MemFs> {
        let mem = Arc::new(CoreMemFs::with_options(limits(&options)?, clock()));
        Ok(MemFs { inner: Inner { backend: Backend::Mem(mem.clone()), remote: None }, mem })
    }

    /// Bytes and inodes in use.
    #[wasm_bindgen(unchecked_return_type = "Usage")]
    pub fn usage(&self) -> JsValue {
        objects::usage(&self.mem.usage())
    }
}

fs_methods!(MemFs);
