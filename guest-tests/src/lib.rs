//! Transcript helpers for guest programs: one line per operation, with its
//! result or its error kind and errno, so two runs can be compared line by
//! line. Nothing printed may depend on the backend (no inode numbers, no
//! directory sizes, no wall-clock times, no directory order).

use std::fmt::Debug;
use std::io;

/// Prints `label: ok <value>` or `label: err <kind> (errno <n>)`.
pub fn show<T: Debug>(label: &str, r: io::Result<T>) {
    match r {
        Ok(v) => println!("{label}: ok {v:?}"),
        Err(e) => println!("{label}: err {}", describe(&e)),
    }
}

/// Prints `label: ok` or the error, dropping the success value.
pub fn step<T>(label: &str, r: io::Result<T>) {
    show(label, r.map(|_| ()));
}

/// An error as the transcript shows it.
pub fn describe(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => format!("{:?} (errno {n})", e.kind()),
        None => format!("{:?}", e.kind()),
    }
}

/// A deterministic byte pattern for large-file checks.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3] ^ seed).collect()
}

/// FNV-1a, to print a short digest of large contents.
pub fn digest(data: &[u8]) -> String {
    let h = data.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    format!("{:016x}/{}", h, data.len())
}

/// `symlink(2)` from wasi-libc, which every Rust WASI target links:
/// `std::os::wasi::fs::symlink_path` is still unstable.
pub fn symlink(target: &str, path: &str) -> io::Result<()> {
    use std::ffi::{CString, c_char, c_int};
    unsafe extern "C" {
        #[link_name = "symlink"]
        fn libc_symlink(target: *const c_char, path: *const c_char) -> c_int;
    }
    let target = CString::new(target)?;
    let path = CString::new(path)?;
    // SAFETY: both arguments are valid NUL-terminated strings that outlive
    // the call; wasi-libc's symlink only reads them.
    let rc = unsafe { libc_symlink(target.as_ptr(), path.as_ptr()) };
    if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}
