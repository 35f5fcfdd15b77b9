//! `wasi:filesystem@0.3.0` served from PackFS, for async components
//! (WASI 0.3, the component model's native `stream`s and `future`s).
//!
//! The same model serves all three versions
//! ([`packfs_core::wasi::descriptor`]: every permission check, mount
//! crossing and error), and the same version-neutral
//! [`filesystem`](crate::filesystem) context serves 0.2 and 0.3 (one
//! [`PackFsCtx`](crate::filesystem::PackFsCtx), one recent name, one count
//! of listings); this module is only 0.3's adapter:
//!
//! - `bindings`: `bindgen!` over the 0.3.0 WIT, descriptors as the
//!   model's [`Descriptor`](packfs_core::wasi::Descriptor), the
//!   `async func`s as concurrent host functions, and [`FsError`];
//! - `types`: `wasi:filesystem/types` and `preopens` over the model;
//! - `convert`: 0.3's values from the model's and back;
//! - `streams`: file and directory streams, which move bytes straight
//!   between the backend and the guest's buffer;
//! - `offload`: a stream's reads and writes that may wait on the network,
//!   on the blocking pool, a few of a guest's at once.
//!
//! Everything else (cli, clocks, random, sockets) is wasmtime-wasi's p3,
//! and [`add_to_linker`] links WASI 0.2 beside it, as `wasmtime run` does:
//! components built with `wasm32-wasip2`'s standard library import
//! `wasi:cli@0.2` and `wasi:filesystem@0.3.0` together. Both need an engine
//! with the component model's concurrency
//! ([`Config::concurrency_support`](wasmtime::Config::concurrency_support)),
//! which a [`Runner`](crate::Runner) makes beside its engine of the others.
//!
//! Deliberate differences from wasmtime-wasi's p3, beside those of 0.2
//! ([`crate::p2`]):
//!
//! - a stream on a descriptor that cannot be read or written ends at once
//!   with `bad-descriptor` on its future (wasmtime-wasi: `not-permitted`
//!   for a write, `is-directory` for reading a directory, where PackFS
//!   says `is-directory` too);
//! - a time before 1970 is `invalid`: PackFS keeps times from the epoch on.

pub mod bindings;
mod convert;
mod offload;
mod streams;
mod types;

use wasmtime::component::Linker;
use wasmtime_wasi::WasiView;

pub use bindings::FsError;

use crate::filesystem::{PackFsFilesystem, PackFsView};

/// Adds `wasi:filesystem/types@0.3.0` and `wasi:filesystem/preopens@0.3.0`,
/// served by PackFS, to `linker` — and nothing else. The linker's engine
/// must support the component model's concurrency.
///
/// ```
/// use packfs_host::filesystem::{PackFsCtx, PackFsCtxView, PackFsView};
/// use wasmtime::component::{Linker, ResourceTable};
///
/// struct Plugin { fs: PackFsCtx, table: ResourceTable }
/// impl PackFsView for Plugin {
///     fn packfs(&mut self) -> PackFsCtxView<'_> {
///         PackFsCtxView { ctx: &mut self.fs, table: &mut self.table }
///     }
/// }
///
/// let mut config = wasmtime::Config::new();
/// config.concurrency_support(true);
/// let engine = wasmtime::Engine::new(&config)?;
/// let mut linker = Linker::<Plugin>::new(&engine);
/// packfs_host::p3::add_filesystem_to_linker(&mut linker)?;
/// # Ok::<(), wasmtime::Error>(())
/// ```
pub fn add_filesystem_to_linker<T: PackFsView + 'static>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    bindings::types::add_to_linker::<T, PackFsFilesystem>(linker, T::packfs)?;
    bindings::preopens::add_to_linker::<T, PackFsFilesystem>(linker, T::packfs)?;
    Ok(())
}

/// Adds WASI 0.3 and 0.2 (`wasi:cli/imports` of both): wasmtime-wasi's p3
/// cli, clocks, random and sockets, its async 0.2 interfaces
/// ([`crate::p2::add_to_linker_async`]), and PackFS's filesystem of
/// each version. Preopens configured on the `WasiCtx` are ignored: the
/// filesystem is PackFS's, configured with
/// [`PackFsCtx`](crate::filesystem::PackFsCtx).
pub fn add_to_linker<T: WasiView + PackFsView + 'static>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    use wasmtime_wasi::p3;
    p3::cli::add_to_linker(linker)?;
    p3::clocks::add_to_linker(linker)?;
    p3::random::add_to_linker(linker)?;
    p3::sockets::add_to_linker(linker)?;
    add_filesystem_to_linker(linker)?;
    crate::p2::add_to_linker_async(linker)
}
