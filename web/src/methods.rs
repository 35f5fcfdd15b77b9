//! [`fs_methods!`]: the path methods every class (`MemFs`, `Pack`,
//! `Overlay`) has, written once. wasm-bindgen has no inheritance, so this
//! stamps the same `#[wasm_bindgen]` methods onto each class, each a call
//! of its [`Inner`](crate::inner::Inner) (a field `inner`).

/// The path methods of class `$class`, which has a field `inner: Inner`
/// and is `Clone`.
macro_rules! fs_methods {
    ($class:ident) => {
        #[::wasm_bindgen::prelude::wasm_bindgen]
        impl $class {
            /// A second handle on the same filesystem, for [`crate::arg::shared`]
            /// to take over.
            #[doc(hidden)]
            #[wasm_bindgen(js_name = __share, skip_typescript)]
            pub fn share(&self) -> $class {
                self.clone()
            }

            /// A file's content. Fetches it first when it is still on the
            /// network (a pack opened by URL).
            #[wasm_bindgen(js_name = readFile, unchecked_return_type = "Promise<Uint8Array>")]
            pub fn read_file(
                &self,
                #[wasm_bindgen(unchecked_param_type = "string")] path: ::wasm_bindgen::JsValue,
            ) -> ::js_sys::Promise {
                self.inner.read_file(path)
            }

            /// A file's content, now; `would-block` when it is still on the
            /// network.
            #[wasm_bindgen(js_name = readFileSync)]
            pub fn read_file_sync(
                &self,
                #[wasm_bindgen(unchecked_param_type = "string")] path: ::wasm_bindgen::JsValue,
            ) -> $crate::error::JsResult<Vec<u8>> {
                self.inner.read_file_sync(&path)
            }

            /// Replaces (or creates) a file, atomically. A string is written
            /// as UTF-8. `read-only` on a pack.
            #[wasm_bindgen(js_name = writeFile, unchecked_return_type = "Promise<void>")]
            pub fn write_file(
                &self,
                #[wasm_bindgen(unchecked_param_type = "string")] path: ::wasm_bindgen::JsValue,
                #[wasm_bindgen(unchecked_param_type = "ArrayBufferView | ArrayBuffer | string")]
                data: ::wasm_bindgen::JsValue,
            ) -> ::js_sys::Promise {
                self.inner.write_file(path, data)
            }

            /// `writeFile`, now.
            #[wasm_bindgen(js_name = writeFileSync)]
            pub fn write_file_sync(
                &self,
                #[wasm_bindgen(unchecked_param_type = "string")] path: ::wasm_bindgen::JsValue,
                #[wasm_bindgen(unchecked_param_type = "ArrayBufferView | ArrayBuffer | string")]
                data: ::wasm_bindgen::JsValue,
            ) -> $crate::error::JsResult<()> {
                self.inner.write_file_sync(&path, &data)
            }

            /// Cuts a file to `len` bytes, or extends it with zeros.
            #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
            pub fn truncate(
                &self,
                #[wasm_bindgen(unchecked_param_type = "string")] path: ::wasm_bindgen::JsValue,
                #[wasm_bindgen(unchecked_param_type = "number")] len: ::wasm_bindgen::JsValue,
            ) -> ::js_sys::Promise {
                self.inner.truncate(path, len)
            }

            /// `truncate`, now; `would-block` when it needs bytes of an
            /// overlay's pack still on the network.
            #[wasm_bindgen(js_name = truncateSync)]
            pub fn truncate_sync(
                &self,
                #[wasm_bindgen(unchecked_param_type = "string")] path: ::wasm_bindgen::JsValue,
                #[wasm_bindgen(unchecked_param_type = "number")] len: ::wasm_bindgen::JsValue,
            ) -> $crate::error::JsResult<()> {
                self.inner.truncate_sync(&path, &len)
            }

            /// Creates a directory (`{ recursive: true }`: and its parents).
            pub fn mkdir(
                &self,
                #[wasm_bindgen(unchecked_param_type = "string")] path: ::wasm_bindgen::JsValue,
                #[wasm_bindgen(unchecked_optional_param_type = "MkdirOptions")] options: Option<
                    ::wasm_bindgen::JsValue,
                >,
            ) -> $crate::error::JsResult<()> {
                self.inner.mkdir(&path, &options)
            }

            /// A directory's entries, in name order.
            #[wasm_bindgen(unchecked_return_type = "DirEntry[]")]
            pub fn readdir(
                &self,
                #[wasm_bindgen(unchecked_param_type = "string")] path: ::wasm_bindgen::JsValue,
            ) -> $crate::error::JsResult<::js_sys::Array> {
                self.inner.readdir(&path)
            }

            /// Metadata, following symlinks.
            #[wasm_bindgen(unchecked_return_type = "Stats")]
            pub fn stat(
                &self,
                #[wasm_bindgen(unchecked_param_type = "string")] path: ::wasm_bindgen::JsValue,
            ) -> $crate::error::JsResult<::wasm_bindgen::JsValue> {
                self.inner.stat(&path, true)
            }

            /// Metadata of a symlink itself.
            #[wasm_bindgen(unchecked_return_type = "Stats")]
            pub fn lstat(
                &self,
                #[wasm_bindgen(unchecked_param_type = "string")] path: ::wasm_bindgen::JsValue,
            ) -> $crate::error::JsResult<::wasm_bindgen::JsValue> {
                self.inner.stat(&path, false)
            }

            /// True when `path` names something (following symlinks).
            pub fn exists(
                &self,
                #[wasm_bindgen(unchecked_param_type = "string")] path: ::wasm_bindgen::JsValue,
            ) -> $crate::error::JsResult<bool> {
                self.inner.exists(&path)
            }

            /// Removes a file or symlink.
            pub fn unlink(
                &self,
                #[wasm_bindgen(unchecked_param_type = "string")] path: ::wasm_bindgen::JsValue,
            ) -> $crate::error::JsResult<()> {
                self.inner.unlink(&path)
            }

            /// Removes an empty directory.
            pub fn rmdir(
                &self,
                #[wasm_bindgen(unchecked_param_type = "string")] path: ::wasm_bindgen::JsValue,
            ) -> $crate::error::JsResult<()> {
                self.inner.rmdir(&path)
            }

            /// Moves `from` to `to`, replacing a file or empty directory there.
            pub fn rename(
                &self,
                #[wasm_bindgen(unchecked_param_type = "string")] from: ::wasm_bindgen::JsValue,
                #[wasm_bindgen(unchecked_param_type = "string")] to: ::wasm_bindgen::JsValue,
            ) -> $crate::error::JsResult<()> {
                self.inner.rename(&from, &to)
            }

            /// Creates a symlink at `path` pointing at `target`, which is
            /// relative to the symlink's directory (an absolute target is
            /// `not-permitted`: no path leaves the root).
            pub fn symlink(
                &self,
                #[wasm_bindgen(unchecked_param_type = "string")] target: ::wasm_bindgen::JsValue,
                #[wasm_bindgen(unchecked_param_type = "string")] path: ::wasm_bindgen::JsValue,
            ) -> $crate::error::JsResult<()> {
                self.inner.symlink(&target, &path)
            }

            /// A symlink's target.
            pub fn readlink(
                &self,
                #[wasm_bindgen(unchecked_param_type = "string")] path: ::wasm_bindgen::JsValue,
            ) -> $crate::error::JsResult<String> {
                self.inner.readlink(&path)
            }

            /// The whole tree as a new pack (deduplicated, checksummed;
            /// compressed if asked).
            #[wasm_bindgen(unchecked_return_type = "Promise<Uint8Array>")]
            pub fn compact(
                &self,
                #[wasm_bindgen(unchecked_optional_param_type = "CompactOptions")] options: Option<
                    ::wasm_bindgen::JsValue,
                >,
            ) -> ::js_sys::Promise {
                self.inner.compact(options)
            }
        }
    };
}

pub(crate) use fs_methods;
