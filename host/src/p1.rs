//! WASI preview1 for core modules (the `wasm32-wasip1` target, wasi-libc
//! C, most real-world WASI binaries), served by PackFS's own
//! implementation ([`packfs_core::wasi::p1`]) and linked into wasmtime's
//! core-module [`Linker`]: no adapter, no conversion to a component.
//!
//! - [`add_to_linker`]: every `wasi_snapshot_preview1` function, over the
//!   guest's exported `memory` and a [`Wasi`] the store data lends;
//! - [`P1State`]: a [`Runner`](crate::Runner)'s store data for a module;
//! - [`HostPlatform`]: this process's clocks, randomness and sleep;
//! - [`Inherit`]: this process's stdin, stdout or stderr.

use std::io::Write;
use std::time::{Duration, Instant};

use packfs_core::Timestamp;
use packfs_core::deadline;
use packfs_core::wasi::p1::calls::Outcome;
use packfs_core::wasi::p1::{Errno, Exit, Input, Output, Platform};
use rustix::event::{PollFd, PollFlags, Timespec};
use wasmtime::{Caller, Extern, Linker, Trap};

// PackFS's preview1 state and its builder, for a host with its own
// linker (core's WASI model is plumbing): shown here, their one path.
#[doc(inline)]
pub use packfs_core::wasi::p1::{Wasi, WasiBuilder};

use crate::limits::Limiter;

/// A p1 module's store data, as a [`Runner`](crate::Runner) makes it.
pub struct P1State<T = ()> {
    /// The guest's preview1 state.
    pub wasi: Wasi,
    /// The embedder's data ([`Sandbox::with_data`](crate::Sandbox::with_data)),
    /// for its host functions.
    pub data: T,
    pub(crate) limiter: Limiter,
}

impl<T> P1State<T> {
    pub(crate) fn new(wasi: Wasi, data: T) -> Self {
        P1State { wasi, data, limiter: Limiter::default() }
    }
}

/// The import module of every preview1 function.
pub const MODULE: &str = "wasi_snapshot_preview1";

/// Adds every `wasi_snapshot_preview1` function to `linker`, served by the
/// [`Wasi`] that `get` lends from the store's data.
///
/// The functions are synchronous: only stdin, stdout, `poll_oneoff`'s
/// clocks and a read waiting for a remote pack's bytes block the calling
/// thread, and each of those waits ends at the
/// [`Deadline`](deadline::Deadline) set for the thread, if any; past it
/// every call traps with [`Trap::Interrupt`], as epoch interruption does
/// (the [`Runner`](crate::Runner)'s timeout sets both). They serve sync
/// and async stores alike. `proc_exit(n)` ends the call with an [`Exit`]
/// error (downcast it to find the status); a module without a `memory`
/// export traps on its first call.
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
                // Past the guest's deadline no call runs, nor returns: a
                // call a wait of which the deadline cut short would show
                // the guest a failure that is not its own.
                if deadline::expired() {
                    return Err(Trap::Interrupt.into());
                }
                let (bytes, data) = memory.data_and_store_mut(&mut caller);
                let r = get(data).$name(bytes, $($arg),*).into_wasm().map_err(wasmtime::Error::new);
                if deadline::expired() {
                    return Err(Trap::Interrupt.into());
                }
                r
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
        std::thread::sleep(deadline::cut(Duration::from_nanos(nanos)));
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
    /// Reads the process's fd 0 itself, unbuffered: a read under a
    /// deadline first waits for input with `poll(2)`, no longer than the
    /// deadline leaves (then `EINTR`, and the call traps), which a buffer
    /// of std's would hide from it.
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        let stdin = rustix::stdio::stdin();
        if let Some(left) = deadline::remaining() {
            ready_by_deadline(stdin, PollFlags::IN, left)?;
        }
        loop {
            match rustix::io::read(stdin, &mut *buf) {
                Err(rustix::io::Errno::INTR) => continue,
                r => return r.map_err(|e| io_errno(&e.into())),
            }
        }
    }

    fn is_terminal(&self) -> bool {
        std::io::IsTerminal::is_terminal(&std::io::stdin())
    }
}

/// What a pipe takes whole without blocking once `poll(2)` says it has
/// room (POSIX `PIPE_BUF`; 4096 on Linux).
const PIPE_BUF: usize = 4096;

/// Waits for `fd` to be ready for `events`, no longer than the deadline
/// leaves; `EINTR` once it has passed.
fn ready_by_deadline(fd: impl rustix::fd::AsFd, events: PollFlags, left: Duration) -> Result<(), Errno> {
    let mut fds = [PollFd::new(&fd, events)];
    let timeout = Timespec::try_from(left).unwrap_or(Timespec { tv_sec: i64::MAX, tv_nsec: 0 });
    match rustix::event::poll(&mut fds, Some(&timeout)) {
        Ok(0) => Err(Errno::INTR),
        Ok(_) => Ok(()),
        Err(e) => Err(io_errno(&e.into())),
    }
}

impl Output for Inherit {
    /// Under a deadline, a write waits for room with `poll(2)` and writes
    /// at most `PIPE_BUF` at a time, so that a reader that stops reading
    /// (a full pipe) cannot hold the guest past it.
    fn write(&mut self, data: &[u8]) -> Result<(), Errno> {
        if deadline::remaining().is_some() {
            let fd = if let Inherit::Stderr = self { rustix::stdio::stderr() } else { rustix::stdio::stdout() };
            let mut rest = data;
            while !rest.is_empty() {
                ready_by_deadline(fd, PollFlags::OUT, deadline::remaining().unwrap_or_default())?;
                match rustix::io::write(fd, &rest[..rest.len().min(PIPE_BUF)]) {
                    Ok(n) => rest = &rest[n..],
                    Err(rustix::io::Errno::INTR) => {}
                    Err(e) => return Err(io_errno(&e.into())),
                }
            }
            return Ok(());
        }
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
