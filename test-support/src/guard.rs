//! Guards against a test that would hang.

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
