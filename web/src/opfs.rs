//! Files of the Origin Private File System that are read and written at
//! once: a `FileSystemSyncAccessHandle`, which only a dedicated Worker has.
//! Opening one is asynchronous and takes an exclusive lock on the file
//! until it is closed (dropped here), by this worker or when it ends; a
//! second opener, in this tab or another, is [`OpfsError::InUse`].
//!
//! Under the origin's root every file is `packfs/DIR/NAME`.

// Offsets and lengths are JavaScript numbers: a silent truncation reads or
// writes the wrong bytes.
#![warn(clippy::cast_possible_truncation)]

use js_sys::Reflect;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    FileSystemDirectoryHandle, FileSystemFileHandle, FileSystemGetDirectoryOptions, FileSystemGetFileOptions,
    FileSystemReadWriteOptions, FileSystemSyncAccessHandle, StorageManager,
};

/// Why an OPFS file could not be opened, read or written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OpfsError {
    /// No OPFS, or not its synchronous files: not a dedicated Worker.
    Unsupported,
    /// Another handle (another worker or tab) has the file open.
    InUse,
    /// The origin's storage quota is used up.
    NoSpace,
    /// Anything else, as the browser said it.
    Other(String),
}

impl OpfsError {
    fn from_js(e: &JsValue) -> OpfsError {
        let (name, message) = match e.dyn_ref::<js_sys::Error>() {
            Some(e) => (String::from(e.name()), String::from(e.message())),
            None => (String::new(), format!("{e:?}")),
        };
        match name.as_str() {
            "NoModificationAllowedError" => OpfsError::InUse,
            "QuotaExceededError" => OpfsError::NoSpace,
            "SecurityError" | "NotSupportedError" => OpfsError::Unsupported,
            _ => OpfsError::Other(if name.is_empty() { message } else { format!("{name}: {message}") }),
        }
    }
}

impl std::fmt::Display for OpfsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpfsError::Unsupported => f.write_str(
                "the Origin Private File System's synchronous files are only in a dedicated Worker (runP1 runs there)",
            ),
            OpfsError::InUse => f.write_str("it is open in another worker or tab"),
            OpfsError::NoSpace => f.write_str("the origin's storage quota is used up"),
            OpfsError::Other(m) => f.write_str(m),
        }
    }
}

type Result<T> = std::result::Result<T, OpfsError>;

async fn wait(p: js_sys::Promise) -> Result<JsValue> {
    JsFuture::from(p).await.map_err(|e| OpfsError::from_js(&e))
}

/// The directory `packfs/DIR`, made if missing.
async fn directory(dir: &str) -> Result<FileSystemDirectoryHandle> {
    let navigator = Reflect::get(&js_sys::global(), &"navigator".into()).map_err(|_| OpfsError::Unsupported)?;
    let storage = Reflect::get(&navigator, &"storage".into()).map_err(|_| OpfsError::Unsupported)?;
    let storage: StorageManager = storage.dyn_into().map_err(|_| OpfsError::Unsupported)?;
    let mut at: FileSystemDirectoryHandle = wait(storage.get_directory()).await?.unchecked_into();
    let create = FileSystemGetDirectoryOptions::new();
    create.set_create(true);
    for part in ["packfs", dir] {
        at = wait(at.get_directory_handle_with_options(part, &create)).await?.unchecked_into();
    }
    Ok(at)
}

/// A file open for synchronous reads and writes, closed when dropped.
pub(crate) struct SyncFile(FileSystemSyncAccessHandle);

impl SyncFile {
    /// Opens `packfs/DIR/NAME`, created empty when missing.
    pub(crate) async fn open(dir: &str, name: &str) -> Result<SyncFile> {
        // Only a dedicated worker has the class: nothing is made elsewhere.
        if !Reflect::has(&js_sys::global(), &"FileSystemSyncAccessHandle".into()).unwrap_or(false) {
            return Err(OpfsError::Unsupported);
        }
        let dir = directory(dir).await?;
        let create = FileSystemGetFileOptions::new();
        create.set_create(true);
        let file: FileSystemFileHandle = wait(dir.get_file_handle_with_options(name, &create)).await?.unchecked_into();
        Ok(SyncFile(wait(file.create_sync_access_handle()).await?.unchecked_into()))
    }

    /// The file's length.
    pub(crate) fn size(&self) -> Result<u64> {
        let n = self.0.get_size().map_err(|e| OpfsError::from_js(&e))?;
        Ok(whole(n))
    }

    /// Reads into `buf` from `at`; the bytes read (fewer at the end).
    pub(crate) fn read_at(&self, at: u64, buf: &mut [u8]) -> Result<usize> {
        let opts = FileSystemReadWriteOptions::new();
        opts.set_at(at as f64);
        let n = self.0.read_with_u8_array_and_options(buf, &opts).map_err(|e| OpfsError::from_js(&e))?;
        Ok(usize::try_from(whole(n)).unwrap_or(usize::MAX).min(buf.len()))
    }

    /// Writes all of `data` at `at`.
    pub(crate) fn write_all_at(&self, at: u64, data: &[u8]) -> Result<()> {
        let opts = FileSystemReadWriteOptions::new();
        opts.set_at(at as f64);
        let n = self.0.write_with_u8_array_and_options(data, &opts).map_err(|e| OpfsError::from_js(&e))?;
        if whole(n) != data.len() as u64 {
            // Chromium writes all or throws; anything else is the quota.
            return Err(OpfsError::NoSpace);
        }
        Ok(())
    }

    /// Cuts (or extends with zeros) the file to `len`.
    pub(crate) fn truncate(&self, len: u64) -> Result<()> {
        self.0.truncate_with_f64(len as f64).map_err(|e| OpfsError::from_js(&e))
    }

    /// Returns once what was written is on disk.
    pub(crate) fn flush(&self) -> Result<()> {
        self.0.flush().map_err(|e| OpfsError::from_js(&e))
    }
}

impl Drop for SyncFile {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// A byte count or offset from JavaScript: a whole number below 2^53.
fn whole(n: f64) -> u64 {
    #[allow(clippy::cast_possible_truncation, reason = "an integer below 2^53, which u64 holds exactly")]
    let n = n.max(0.0) as u64;
    n
}
