//! The error of a filesystem host function, in every version: a code the
//! guest sees, or a trap.

use packfs_core::Code;
use wasmtime::component::ResourceTableError;

/// The error of a `wasi:filesystem/types` function: `C`, the version's
/// `error-code`, returned to the guest; or a trap (a host bug or a bad
/// resource handle) that ends it. Each version names its own
/// (`p2::FsError`, `p3::FsError`); host functions end in `?` or `.into()`.
#[derive(Debug)]
pub enum TrappableError<C> {
    /// Returned to the guest.
    Code(C),
    /// Traps the guest.
    Trap(wasmtime::Error),
}

impl<C> TrappableError<C> {
    /// The code to give the guest, or the trap: what the bindings'
    /// `convert-error-code` asks.
    pub fn into_code(self) -> wasmtime::Result<C> {
        match self {
            TrappableError::Code(c) => Ok(c),
            TrappableError::Trap(e) => Err(e),
        }
    }
}

impl<C: From<Code>> From<packfs_core::Error> for TrappableError<C> {
    fn from(e: packfs_core::Error) -> Self {
        TrappableError::Code(e.code().into())
    }
}

impl<C> From<ResourceTableError> for TrappableError<C> {
    fn from(e: ResourceTableError) -> Self {
        TrappableError::Trap(e.into())
    }
}
