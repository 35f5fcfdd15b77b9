//! `wasi:filesystem` 0.2 served from PackFS.
//!
//! wasmtime-wasi has no pluggable filesystem, so PackFS brings its own
//! implementation of the two filesystem interfaces and links everything else
//! (io, clocks, random, cli, sockets) from wasmtime-wasi, one interface at a
//! time. Both share one [`ResourceTable`]: streams PackFS creates are
//! wasmtime-wasi's `DynInputStream`/`DynOutputStream`, polled and read by its
//! `wasi:io` implementation.
//!
//! Over the version-neutral [`filesystem`](crate::filesystem) context
//! (the preopens, the model's descriptors, listings), this is only 0.2's
//! adapter:
//!
//! - `bindings`: `bindgen!` over the 0.2 WIT, descriptors as the model's
//!   [`Descriptor`](packfs_core::wasi::Descriptor), and [`FsError`];
//! - `types`: `wasi:filesystem/types` and `preopens` over the model;
//! - `convert`: 0.2's values from the model's and back;
//! - `streams`: file streams as wasmtime-wasi's `wasi:io` streams;
//! - `io`: wasmtime-wasi's synchronous `wasi:io/streams`, with its
//!   blocking methods not entering tokio when the stream is ready.
//!
//! Deliberate differences from wasmtime-wasi, each where it falls short of
//! the WASI spec or POSIX:
//!
//! - `read-via-stream`/`write-via-stream`/`append-via-stream` on a
//!   descriptor lacking the access fail at once with `bad-descriptor`;
//!   wasmtime-wasi opens the stream and fails its first use (wasi-libc p2
//!   then reports `EIO` instead of `EBADF`);
//! - the sync `descriptor-flags` are accepted instead of refused with
//!   `unsupported`: `file-integrity-sync` and `data-integrity-sync` make a
//!   `sync` follow every write; `requested-write-sync` (reads) needs
//!   nothing, as reads never see unsynced data;
//! - `link-at` follows a symlink in `old-path` when asked, as
//!   `linkat(AT_SYMLINK_FOLLOW)`, instead of refusing with `invalid`;
//! - a directory opened with `mutate-directory` under a writable preopen
//!   reports it in `get-flags`;
//! - `set-times` on a preopen sets the directory's times, as `futimens`
//!   does; wasmtime-wasi holds a preopen open with `O_PATH`, on which
//!   `futimens` fails, and answers `bad-descriptor`.
//!
//! Nothing here returns `unsupported` of its own accord: only a backend
//! that cannot do an operation does.

pub mod bindings;
mod convert;
mod io;
mod state;
mod streams;
mod types;

use wasmtime::component::{HasData, Linker, ResourceTable};
use wasmtime_wasi::WasiView;

pub use bindings::FsError;
pub use state::{GuestState, MAX_RESOURCES};

use crate::filesystem::{PackFsFilesystem, PackFsView};

/// `HasData` for wasmtime-wasi's `wasi:io`, whose host state is the table.
struct HasTable;

impl HasData for HasTable {
    type Data<'a> = &'a mut ResourceTable;
}

/// Adds `wasi:filesystem/types` and `wasi:filesystem/preopens`, served by
/// PackFS, to `linker` — and nothing else.
///
/// For plugin hosts that build their own WASI linker: link every other
/// interface yourself (wasmtime-wasi's per-interface `add_to_linker`
/// functions, sync or async) but **not** wasmtime-wasi's filesystem, then
/// call this. The filesystem functions are synchronous (PackFS never blocks
/// on the host), so they serve sync and async stores alike.
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
/// let engine = wasmtime::Engine::default();
/// let mut linker = Linker::<Plugin>::new(&engine);
/// packfs_host::p2::add_filesystem_to_linker(&mut linker)?;
/// # Ok::<(), wasmtime::Error>(())
/// ```
pub fn add_filesystem_to_linker<T: PackFsView + 'static>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    bindings::types::add_to_linker::<T, PackFsFilesystem>(linker, T::packfs)?;
    bindings::preopens::add_to_linker::<T, PackFsFilesystem>(linker, T::packfs)?;
    Ok(())
}

/// Adds all of `wasi:cli/imports` to `linker`: wasmtime-wasi's synchronous
/// io, clocks, random, cli and sockets, and PackFS's filesystem. The
/// streams' blocking methods skip tokio when the stream is ready (`io.rs`).
///
/// The store's data must lend both views over one shared `ResourceTable`.
/// Preopens configured on the `WasiCtx` are ignored: the filesystem is
/// PackFS's, configured with [`PackFsCtx`](crate::filesystem::PackFsCtx).
pub fn add_to_linker_sync<T: WasiView + PackFsView + 'static>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    use wasmtime_wasi::p2::bindings::sync;
    let l = linker;
    wasmtime_wasi::p2::bindings::io::error::add_to_linker::<T, HasTable>(l, |t| t.ctx().table)?;
    sync::io::poll::add_to_linker::<T, HasTable>(l, |t| t.ctx().table)?;
    sync::io::streams::add_to_linker::<T, HasTable>(l, |t| t.ctx().table)?;
    io::add_fast_paths(l)?;
    add_nonblocking(l)?;
    sync::sockets::tcp::add_to_linker::<T, WasiSockets>(l, T::sockets)?;
    sync::sockets::udp::add_to_linker::<T, WasiSockets>(l, T::sockets)?;
    sync::sockets::udp_create_socket::add_to_linker::<T, WasiSockets>(l, T::sockets)?;
    add_filesystem_to_linker(l)
}

/// As [`add_to_linker_sync`], with wasmtime-wasi's async io and sockets, for
/// stores of an engine with async support.
pub fn add_to_linker_async<T: WasiView + PackFsView + 'static>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    use wasmtime_wasi::p2::bindings::{io, sockets};
    let l = linker;
    io::error::add_to_linker::<T, HasTable>(l, |t| t.ctx().table)?;
    io::poll::add_to_linker::<T, HasTable>(l, |t| t.ctx().table)?;
    io::streams::add_to_linker::<T, HasTable>(l, |t| t.ctx().table)?;
    add_nonblocking(l)?;
    sockets::tcp::add_to_linker::<T, WasiSockets>(l, T::sockets)?;
    sockets::udp::add_to_linker::<T, WasiSockets>(l, T::sockets)?;
    sockets::udp_create_socket::add_to_linker::<T, WasiSockets>(l, T::sockets)?;
    add_filesystem_to_linker(l)
}

use wasmtime_wasi::cli::{WasiCli, WasiCliView as _};
use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView as _};
use wasmtime_wasi::random::{WasiRandom, WasiRandomView as _};
use wasmtime_wasi::sockets::{WasiSockets, WasiSocketsView as _};

/// The interfaces whose wasmtime-wasi bindings are the same for sync and
/// async stores (wasmtime-wasi's own `add_nonblocking_to_linker`, minus
/// its filesystem).
fn add_nonblocking<T: WasiView + 'static>(l: &mut Linker<T>) -> wasmtime::Result<()> {
    use wasmtime_wasi::p2::bindings::{cli, clocks, random, sockets};
    clocks::wall_clock::add_to_linker::<T, WasiClocks>(l, T::clocks)?;
    clocks::monotonic_clock::add_to_linker::<T, WasiClocks>(l, T::clocks)?;
    random::random::add_to_linker::<T, WasiRandom>(l, T::random)?;
    random::insecure::add_to_linker::<T, WasiRandom>(l, T::random)?;
    random::insecure_seed::add_to_linker::<T, WasiRandom>(l, T::random)?;
    cli::exit::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::environment::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::stdin::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::stdout::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::stderr::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::terminal_input::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::terminal_output::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::terminal_stdin::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::terminal_stdout::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::terminal_stderr::add_to_linker::<T, WasiCli>(l, T::cli)?;
    sockets::tcp_create_socket::add_to_linker::<T, WasiSockets>(l, T::sockets)?;
    sockets::instance_network::add_to_linker::<T, WasiSockets>(l, T::sockets)?;
    sockets::network::add_to_linker::<T, WasiSockets>(l, &Default::default(), T::sockets)?;
    sockets::ip_name_lookup::add_to_linker::<T, WasiSockets>(l, T::sockets)?;
    Ok(())
}
