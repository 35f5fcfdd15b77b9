//! Guards against a test that would hang, and what a child process held.

/// Kills process `pid` (SIGKILL) if it still runs after `after`: a guard
/// against a test hanging for ever when what it tests (a deadline) fails.
/// The test then sees a child killed, not exited, and fails on that; no
/// time is asserted.
pub fn kill_after(pid: u32, after: std::time::Duration) {
    std::thread::spawn(move || {
        std::thread::sleep(after);
        if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    });
}

/// Waits for `child` and returns its exit code and peak resident set
/// (`ru_maxrss`), from `wait4`: std's `wait` does not give it, and reading
/// `/proc/PID/status` before the child exits races with the exit. Linux
/// only (the layout of `struct rusage` is Linux's).
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
#[allow(unsafe_code, reason = "wait4(2) for the child's peak RSS, which std and rustix do not give")]
pub fn wait_peak_rss(child: std::process::Child) -> (i32, u64) {
    use std::ffi::c_long;
    use std::os::unix::process::ExitStatusExt;
    /// Linux's `struct rusage`: two `timeval`s, then fourteen `long`s, the
    /// first `ru_maxrss` in KiB.
    #[repr(C)]
    struct Rusage {
        times: [c_long; 4],
        maxrss: c_long,
        rest: [c_long; 13],
    }
    unsafe extern "C" {
        fn wait4(pid: i32, status: *mut i32, options: i32, rusage: *mut Rusage) -> i32;
    }
    let pid = i32::try_from(child.id()).unwrap();
    let (mut status, mut usage) = (0, Rusage { times: [0; 4], maxrss: 0, rest: [0; 13] });
    // SAFETY: both pointers are to live values of the types wait4 writes.
    let waited = unsafe { wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    let code = std::process::ExitStatus::from_raw(status).code().expect("exits, not killed");
    (code, u64::try_from(usage.maxrss).unwrap() * 1024)
}
