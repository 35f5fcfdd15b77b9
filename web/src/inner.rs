//! [`Inner`], what every class holds, and the path methods behind each
//! class's: arguments checked ([`arg`]), the operation run ([`ops`]), a
//! lazy pack's missing bytes fetched first where the method is async,
//! errors and results converted for JavaScript.

use std::rc::Rc;

use js_sys::{Array, Uint8Array};
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::future_to_promise;

use crate::error::{JsResult, to_js, would_block};
use crate::fetch::Remote;
use crate::ops::{self, Backend};
use crate::options::{length, opt_bool, pack_options};
use crate::{arg, objects};

/// What every class holds: the filesystem, and the remote pack whose bytes
/// it may still need (the pack itself, or an overlay's lower).
#[derive(Clone)]
pub(crate) struct Inner {
    /// The filesystem the methods work on.
    pub(crate) backend: Backend,
    /// The pack over HTTP whose bytes the filesystem reads, if any.
    pub(crate) remote: Option<Rc<Remote>>,
}

impl Inner {
    fn fs(&self) -> &dyn packfs_core::FileSystem {
        self.backend.fs()
    }

    /// Runs a synchronous operation that may read pack content: a read of
    /// content not fetched yet is `would-block` (use the async method).
    fn now<T>(&self, path: Option<&str>, op: impl FnOnce() -> packfs_core::Result<T>) -> JsResult<T> {
        op().map_err(|e| match &self.remote {
            Some(r) if r.pack.has_wanted() => {
                r.pack.take_wanted();
                would_block(path)
            }
            _ => to_js(&e, path),
        })
    }

    /// Runs an operation that may read pack content, fetching what it needs.
    async fn fetching<T>(&self, path: Option<&str>, op: impl FnMut() -> packfs_core::Result<T>) -> JsResult<T> {
        match &self.remote {
            None => self.now(path, op),
            Some(r) => r.run(op).await.map_err(|e| to_js(&e, path)),
        }
    }

    /// Fetches every byte of the remote pack not here yet (nothing to do
    /// without one).
    pub(crate) async fn load_all(&self) -> JsResult<()> {
        if let Some(r) = &self.remote {
            r.load_all().await.map_err(|e| to_js(&e, None))?;
        }
        Ok(())
    }

    pub(crate) fn read_file(&self, path: JsValue) -> js_sys::Promise {
        let this = self.clone();
        future_to_promise(async move {
            let path = arg::string(&path, "path")?;
            let bytes = this.fetching(Some(&path), || ops::read_file(this.fs(), &path)).await?;
            Ok(Uint8Array::from(&bytes[..]).into())
        })
    }

    pub(crate) fn read_file_sync(&self, path: &JsValue) -> JsResult<Vec<u8>> {
        let path = arg::string(path, "path")?;
        self.now(Some(&path), || ops::read_file(self.fs(), &path))
    }

    pub(crate) fn write_file(&self, path: JsValue, data: JsValue) -> js_sys::Promise {
        let this = self.clone();
        future_to_promise(async move {
            let (path, data) = (arg::string(&path, "path")?, arg::data(&data, "data")?);
            this.fetching(Some(&path), || ops::write_file(&this.backend, &path, &data)).await?;
            Ok(JsValue::UNDEFINED)
        })
    }

    pub(crate) fn write_file_sync(&self, path: &JsValue, data: &JsValue) -> JsResult<()> {
        let (path, data) = (arg::string(path, "path")?, arg::data(data, "data")?);
        self.now(Some(&path), || ops::write_file(&self.backend, &path, &data))
    }

    pub(crate) fn truncate(&self, path: JsValue, len: JsValue) -> js_sys::Promise {
        let this = self.clone();
        future_to_promise(async move {
            let (path, len) = (arg::string(&path, "path")?, length(&len)?);
            this.fetching(Some(&path), || ops::truncate(this.fs(), &path, len)).await?;
            Ok(JsValue::UNDEFINED)
        })
    }

    pub(crate) fn truncate_sync(&self, path: &JsValue, len: &JsValue) -> JsResult<()> {
        let (path, len) = (arg::string(path, "path")?, length(len)?);
        self.now(Some(&path), || ops::truncate(self.fs(), &path, len))
    }

    pub(crate) fn mkdir(&self, path: &JsValue, options: &Option<JsValue>) -> JsResult<()> {
        let path = arg::string(path, "path")?;
        let recursive = opt_bool(options, "recursive")?.unwrap_or(false);
        ops::mkdir(self.fs(), &path, recursive).map_err(|e| to_js(&e, Some(&path)))
    }

    pub(crate) fn readdir(&self, path: &JsValue) -> JsResult<Array> {
        let path = arg::string(path, "path")?;
        let entries = ops::readdir(self.fs(), &path).map_err(|e| to_js(&e, Some(&path)))?;
        Ok(objects::entries(&entries))
    }

    pub(crate) fn stat(&self, path: &JsValue, follow: bool) -> JsResult<JsValue> {
        let path = arg::string(path, "path")?;
        ops::stat(self.fs(), &path, follow).map(|md| objects::stats(&md)).map_err(|e| to_js(&e, Some(&path)))
    }

    pub(crate) fn exists(&self, path: &JsValue) -> JsResult<bool> {
        Ok(ops::lookup(self.fs(), &arg::string(path, "path")?, true).is_ok())
    }

    pub(crate) fn unlink(&self, path: &JsValue) -> JsResult<()> {
        let path = arg::string(path, "path")?;
        ops::unlink(self.fs(), &path).map_err(|e| to_js(&e, Some(&path)))
    }

    pub(crate) fn rmdir(&self, path: &JsValue) -> JsResult<()> {
        let path = arg::string(path, "path")?;
        ops::rmdir(self.fs(), &path).map_err(|e| to_js(&e, Some(&path)))
    }

    pub(crate) fn rename(&self, from: &JsValue, to: &JsValue) -> JsResult<()> {
        let (from, to) = (arg::string(from, "from")?, arg::string(to, "to")?);
        ops::rename(self.fs(), &from, &to).map_err(|e| to_js(&e, Some(&format!("{from} -> {to}"))))
    }

    pub(crate) fn symlink(&self, target: &JsValue, path: &JsValue) -> JsResult<()> {
        let (target, path) = (arg::string(target, "target")?, arg::string(path, "path")?);
        ops::symlink(self.fs(), &target, &path).map_err(|e| to_js(&e, Some(&path)))
    }

    pub(crate) fn readlink(&self, path: &JsValue) -> JsResult<String> {
        let path = arg::string(path, "path")?;
        ops::readlink(self.fs(), &path).map_err(|e| to_js(&e, Some(&path)))
    }

    pub(crate) fn compact(&self, options: Option<JsValue>) -> js_sys::Promise {
        let this = self.clone();
        future_to_promise(async move {
            let packing = pack_options(&options)?;
            this.load_all().await?;
            let bytes = this.fetching(None, || ops::compact(&this.backend, &packing)).await?;
            Ok(Uint8Array::from(&bytes[..]).into())
        })
    }
}
