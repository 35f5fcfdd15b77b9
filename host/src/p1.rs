//! WASI preview1 for core modules (the `wasm32-wasip1` target, wasi-libc
//! C, most real-world WASI binaries), served by PackFS's own
//! implementation ([`packfs_core::wasi::p1`]) and linked into wasmtime's
//! core-module [`Linker`]: no adapter, no conversion to a component.
//!
//! - [`add_to_linker`]: every `wasi_snapshot_preview1` function, over the
//!   guest's exported `memory` and a [`Wasi`] the store data lends;
//! - [`HostPlatform`]: this process's clocks, randomness and sleep;
//! - [`Inherit`]: this process's stdin, stdout or stderr.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use packfs_core::Timestamp;
use packfs_core::wasi::p1::calls::Outcome;
use packfs_core::wasi::p1::{Errno, Exit, Input, Output, Platform, Wasi};
use wasmtime::{Caller, Extern, Linker};

/// The import module of every preview1 function.
pub const MODULE: &str = "wasi_snapshot_preview1";

/// Adds every `wasi_snapshot_preview1` function to `linker`, served by the
/// [`Wasi`] that `get` lends from the store's data.
///
/// The functions are synchronous: PackFS never waits on the host, only
/// stdin and `poll_oneoff`'s clocks block the calling thread. They serve
/// sync and async stores alike. `proc_exit(n)` ends the call with an
/// [`Exit`] error (downcast it to find the status); a module without a
/// `memory` export traps on its first call.
///
/// ```
/// use packfs_core::wasi::p1::Wasi;
///
/// struct Plugin { wasi: Wasi }
///
/// let engine = wasmtime::Engine::default();
/// let mut linker = wasmtime::Linker::<Plugin>::new(&engine);
/// packfs_host::p1::add_to_linker(&mut linker, |p| &mut p.wasi)?;
/// # Ok::<(), wasmtime::Error>(())
/// ```
pub fn add_to_linker<T: 'static>(
    linker: &mut Linker<T>,
    get: impl Fn(&mut T) -> &mut Wasi + Copy + Send + Sync + 'static,
) -> wasmtime::Result<()> {
    macro_rules! link {
        ($($name:ident($($arg:ident: $ty:ty),* $(,)?);)*) => {
            $(linker.func_wrap(MODULE, stringify!($name), move |mut caller: Caller<'_, T>, $($arg: $ty),*| {
                let memory = match caller.get_export("memory") {
                    Some(Extern::Memory(m)) => m,
                    _ => return Err(wasmtime::Error::msg("a preview1 module must export its memory as `memory`")),
                };
                let (bytes, data) = memory.data_and_store_mut(&mut caller);
                get(data).$name(bytes, $($arg),*).into_wasm().map_err(wasmtime::Error::new)
            })?;)*
        };
    }
    packfs_core::for_each_p1_function!(link);
    Ok(())
}

/// The exit status in a guest's error, if it called `proc_exit`.
pub fn exit_status(e: &wasmtime::Error) -> Option<u32> {
    e.downcast_ref::<Exit>().map(|exit| exit.0)
}

/// This process's clocks, randomness (the OS's) and sleep.
#[derive(Debug)]
pub struct HostPlatform {
    start: Instant,
}

impl Default for HostPlatform {
    fn default() -> Self {
        HostPlatform { start: Instant::now() }
    }
}

impl Platform for HostPlatform {
    fn wall_clock(&self) -> Timestamp {
        Timestamp::now()
    }

    fn monotonic_clock(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn random(&mut self, buf: &mut [u8]) {
        // The OS's generator fails only where there is none at all; a
        // guest must then not get predictable bytes as if they were random.
        getrandom::fill(buf).expect("the OS random number generator failed");
    }

    fn sleep(&mut self, nanos: u64) {
        std::thread::sleep(Duration::from_nanos(nanos));
    }
}

/// One of this process's own stdio streams, for a guest's.
#[derive(Debug, Clone, Copy)]
pub enum Inherit {
    /// This process's stdin.
    Stdin,
    /// This process's stdout.
    Stdout,
    /// This process's stderr.
    Stderr,
}

fn io_errno(e: &std::io::Error) -> Errno {
    match e.kind() {
        std::io::ErrorKind::BrokenPipe => Errno::PIPE,
        std::io::ErrorKind::Interrupted => Errno::INTR,
        std::io::ErrorKind::WouldBlock => Errno::AGAIN,
        _ => Errno::IO,
    }
}

impl Input for Inherit {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        std::io::stdin().lock().read(buf).map_err(|e| io_errno(&e))
    }

    fn is_terminal(&self) -> bool {
        std::io::IsTerminal::is_terminal(&std::io::stdin())
    }
}

impl Output for Inherit {
    fn write(&mut self, data: &[u8]) -> Result<(), Errno> {
        let r = match self {
            Inherit::Stderr => std::io::stderr().lock().write_all(data),
            _ => {
                let mut out = std::io::stdout().lock();
                out.write_all(data).and_then(|()| out.flush())
            }
        };
        r.map_err(|e| io_errno(&e))
    }

    fn is_terminal(&self) -> bool {
        match self {
            Inherit::Stderr => std::io::IsTerminal::is_terminal(&std::io::stderr()),
            _ => std::io::IsTerminal::is_terminal(&std::io::stdout()),
        }
    }
}
