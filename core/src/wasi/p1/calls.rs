//! The list of preview1 functions and their wasm signatures, written once:
//! [`for_each_p1_function!`](crate::for_each_p1_function) hands it to a
//! binding's macro (the host's wasmtime linker), and [`FUNCTIONS`] and
//! [`call`] serve bindings that look functions up by name (a browser
//! Worker's imports).

use super::{Errno, Exit, Memory, Wasi};

/// Calls `$m!` with every `wasi_snapshot_preview1` function, as
/// `name(arg: type, ...);` where each type is the Rust type of the
/// [`Wasi`] method's argument: `u32` and `i32` are wasm `i32`, `u64` and
/// `i64` wasm `i64`. Every function returns an errno (wasm `i32`), but
/// `proc_exit`, which returns [`Exit`].
#[doc(hidden)]
#[macro_export]
macro_rules! for_each_p1_function {
    ($m:ident) => {
        $m! {
            args_get(argv: u32, argv_buf: u32);
            args_sizes_get(argc: u32, argv_buf_size: u32);
            environ_get(environ: u32, environ_buf: u32);
            environ_sizes_get(count: u32, buf_size: u32);
            clock_res_get(id: i32, resolution: u32);
            clock_time_get(id: i32, precision: u64, time: u32);
            fd_advise(fd: u32, offset: u64, len: u64, advice: i32);
            fd_allocate(fd: u32, offset: u64, len: u64);
            fd_close(fd: u32);
            fd_datasync(fd: u32);
            fd_fdstat_get(fd: u32, stat: u32);
            fd_fdstat_set_flags(fd: u32, flags: i32);
            fd_fdstat_set_rights(fd: u32, base: i64, inheriting: i64);
            fd_filestat_get(fd: u32, stat: u32);
            fd_filestat_set_size(fd: u32, size: u64);
            fd_filestat_set_times(fd: u32, atim: u64, mtim: u64, flags: i32);
            fd_pread(fd: u32, iovs: u32, iovs_len: u32, offset: u64, nread: u32);
            fd_prestat_get(fd: u32, prestat: u32);
            fd_prestat_dir_name(fd: u32, path: u32, path_len: u32);
            fd_pwrite(fd: u32, iovs: u32, iovs_len: u32, offset: u64, nwritten: u32);
            fd_read(fd: u32, iovs: u32, iovs_len: u32, nread: u32);
            fd_readdir(fd: u32, buf: u32, buf_len: u32, cookie: u64, used: u32);
            fd_renumber(fd: u32, to: u32);
            fd_seek(fd: u32, offset: i64, whence: i32, newoffset: u32);
            fd_sync(fd: u32);
            fd_tell(fd: u32, offset: u32);
            fd_write(fd: u32, iovs: u32, iovs_len: u32, nwritten: u32);
            path_create_directory(fd: u32, path: u32, path_len: u32);
            path_filestat_get(fd: u32, flags: i32, path: u32, path_len: u32, stat: u32);
            path_filestat_set_times(fd: u32, flags: i32, path: u32, path_len: u32, atim: u64, mtim: u64, fst_flags: i32);
            path_link(old_fd: u32, old_flags: i32, old_path: u32, old_len: u32, new_fd: u32, new_path: u32, new_len: u32);
            path_open(fd: u32, dirflags: i32, path: u32, path_len: u32, oflags: i32, rights_base: i64, rights_inheriting: i64, fdflags: i32, opened: u32);
            path_readlink(fd: u32, path: u32, path_len: u32, buf: u32, buf_len: u32, used: u32);
            path_remove_directory(fd: u32, path: u32, path_len: u32);
            path_rename(fd: u32, old_path: u32, old_len: u32, new_fd: u32, new_path: u32, new_len: u32);
            path_symlink(old_path: u32, old_len: u32, fd: u32, new_path: u32, new_len: u32);
            path_unlink_file(fd: u32, path: u32, path_len: u32);
            poll_oneoff(subs: u32, events: u32, nsubscriptions: u32, nevents: u32);
            proc_exit(code: u32);
            proc_raise(sig: i32);
            sched_yield();
            random_get(buf: u32, buf_len: u32);
            sock_accept(fd: u32, flags: i32, opened: u32);
            sock_recv(fd: u32, iovs: u32, iovs_len: u32, flags: i32, nread: u32, oflags: u32);
            sock_send(fd: u32, iovs: u32, iovs_len: u32, flags: i32, nwritten: u32);
            sock_shutdown(fd: u32, how: i32);
        }
    };
}

/// A wasm value type of a preview1 parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValType {
    /// `i32`.
    I32,
    /// `i64`.
    I64,
}

/// A preview1 argument as its wasm value (`i64` holds either type) and as
/// the Rust type the [`Wasi`] method takes.
pub trait Arg: Sized {
    /// Its wasm type.
    const TYPE: ValType;
    /// From the wasm value (an `i32` argument's low 32 bits).
    fn from_wasm(v: i64) -> Self;
}

impl Arg for u32 {
    const TYPE: ValType = ValType::I32;
    #[allow(
        clippy::cast_possible_truncation,
        reason = "an i32 argument is its low 32 bits: the rest is dropped by design"
    )]
    fn from_wasm(v: i64) -> Self {
        v as u32
    }
}

impl Arg for i32 {
    const TYPE: ValType = ValType::I32;
    #[allow(
        clippy::cast_possible_truncation,
        reason = "an i32 argument is its low 32 bits: the rest is dropped by design"
    )]
    fn from_wasm(v: i64) -> Self {
        v as i32
    }
}

impl Arg for u64 {
    const TYPE: ValType = ValType::I64;
    fn from_wasm(v: i64) -> Self {
        v as u64
    }
}

impl Arg for i64 {
    const TYPE: ValType = ValType::I64;
    fn from_wasm(v: i64) -> Self {
        v
    }
}

/// What a preview1 function returns, as a binding passes it on: its wasm
/// result (an `i32` errno, or nothing for `proc_exit`) or the exit that
/// ends the guest.
pub trait Outcome {
    /// The wasm result: `i32`, or `()` for `proc_exit`.
    type Wasm: WasmResult;
    /// The wasm result, or the exit.
    fn into_wasm(self) -> Result<Self::Wasm, Exit>;
}

impl Outcome for super::Result {
    type Wasm = i32;
    fn into_wasm(self) -> Result<i32, Exit> {
        Ok(i32::from(self.err().unwrap_or(Errno::SUCCESS).0))
    }
}

impl Outcome for Exit {
    type Wasm = ();
    fn into_wasm(self) -> Result<(), Exit> {
        Err(self)
    }
}

/// A wasm result as a value, if it has one.
pub trait WasmResult {
    /// The `i32`, or `None` for `()`.
    fn value(self) -> Option<i32>;
}

impl WasmResult for i32 {
    fn value(self) -> Option<i32> {
        Some(self)
    }
}

impl WasmResult for () {
    fn value(self) -> Option<i32> {
        None
    }
}

macro_rules! table {
    ($($name:ident($($arg:ident: $ty:ty),* $(,)?);)*) => {
        /// Every preview1 function: its import name and parameter types.
        /// Each returns an `i32` errno (but `proc_exit`, which returns
        /// nothing).
        pub const FUNCTIONS: &[(&str, &[ValType])] = &[
            $((stringify!($name), &[$(<$ty as Arg>::TYPE),*]),)*
        ];

        /// Calls the preview1 function `name` with `args` (each the wasm
        /// value, `i32`s widened): the errno (`None` for `proc_exit`'s
        /// nothing), or the exit. `None` for a
        /// name that is no preview1 function or the wrong number of
        /// arguments.
        pub fn call<M: Memory + ?Sized>(
            wasi: &mut Wasi,
            mem: &mut M,
            name: &str,
            args: &[i64],
        ) -> Option<Result<Option<i32>, Exit>> {
            match name {
                $(stringify!($name) => {
                    let mut args = args.iter().copied();
                    $(let $arg = <$ty as Arg>::from_wasm(args.next()?);)*
                    if args.next().is_some() {
                        return None;
                    }
                    Some(Outcome::into_wasm(wasi.$name(mem, $($arg),*)).map(WasmResult::value))
                })*
                _ => None,
            }
        }
    };
}

crate::for_each_p1_function!(table);

/// Runs one preview1 call, `call` (its [`Outcome`] as a wasm value:
/// `into_wasm` then [`WasmResult::value`]), for an embedder whose
/// filesystems may lack bytes that it fetches between calls
/// ([`until_loaded`](crate::pack::until_loaded), failing on an errno).
///
/// Every function keeps one rule: a call that needs bytes not here fails
/// and changes nothing the guest can see. Reads check for every byte they
/// need before one reaches the guest
/// ([`FileSystem::loaded`](crate::FileSystem::loaded)); changes work on an
/// unpublished copy (an overlay's copy-up included). So after a failed
/// call `fetch` brings what it wanted (what the sources wanted since the
/// embedder last cleared them), and if anything new came (true) the call
/// runs again whole. A call that succeeded is never run twice.
pub fn loading(
    call: impl FnMut() -> Result<Option<i32>, Exit>,
    mut fetch: impl FnMut() -> bool,
) -> Result<Option<i32>, Exit> {
    let failed = |outcome: &Result<Option<i32>, Exit>| matches!(outcome, Ok(Some(errno)) if *errno != 0);
    let Ok(outcome) = crate::pack::until_loaded(call, failed, || Ok::<_, std::convert::Infallible>(fetch()));
    outcome
}
