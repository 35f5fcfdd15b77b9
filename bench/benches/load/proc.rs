//! Whole-process measurement: every row of the startup table is a fresh
//! child process (this benchmark's own binary, `--child KIND ARGS`),
//! timed from spawn to exit, with its own CPU time and peak RSS.
//!
//! A child's peak RSS (`ru_maxrss`) starts at the peak of the process it
//! was spawned from: Linux's `exec` carries the old address space's high
//! water mark over, and a spawned child's old address space is its
//! parent's. The benchmark's own peak (it compiles the large module) would
//! then hide every child's. So each child is spawned by a small spawner
//! process (`--child spawn REPORT PROGRAM ARGS`), whose own peak is a few
//! MiB: it times the child, waits for it and writes what it cost to REPORT.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What one child cost.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Run {
    pub(crate) wall: Duration,
    /// User plus system time.
    pub(crate) cpu: Duration,
    /// Peak resident set, bytes.
    pub(crate) maxrss: u64,
}

/// This binary as a child of kind `kind`.
pub(crate) fn child(kind: &str) -> Command {
    let mut c = Command::new(std::env::current_exe().expect("the bench binary"));
    c.arg("--child").arg(kind);
    c
}

/// `cmd` (its program, arguments, environment and directory) run by a
/// spawner that writes its cost to `report`; the spawner's standard I/O
/// is the child's.
pub(crate) fn spawner(cmd: &Command, report: &Path) -> Command {
    let mut s = child("spawn");
    s.arg(report).arg(cmd.get_program()).args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => s.env(k, v),
            None => s.env_remove(k),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        s.current_dir(dir);
    }
    s
}

/// The spawner: `REPORT PROGRAM ARGS...`.
pub(crate) fn spawn(args: &[String]) -> bool {
    let [report, program, rest @ ..] = args else { return false };
    let began = Instant::now();
    let run = wait(Command::new(program).args(rest).spawn().expect("spawning a child"), began, program);
    let line = format!("{} {} {}\n", run.wall.as_nanos(), run.cpu.as_nanos(), run.maxrss);
    std::fs::write(report, line).expect("writing the report");
    true
}

/// What the spawner wrote to `report`.
pub(crate) fn report(report: &Path) -> Run {
    let text = std::fs::read_to_string(report).expect("the spawner's report");
    let n: Vec<u64> = text.split_whitespace().map(|w| w.parse().expect("a number")).collect();
    Run { wall: Duration::from_nanos(n[0]), cpu: Duration::from_nanos(n[1]), maxrss: n[2] }
}

/// Runs `cmd` to its exit, which must be a success, with no input or
/// output.
pub(crate) fn measure(cmd: &Command) -> Run {
    let report = tempfile::NamedTempFile::new().expect("a report file");
    let mut s = spawner(cmd, report.path());
    let status = s.stdin(Stdio::null()).stdout(Stdio::null()).status().expect("spawning the spawner");
    assert!(status.success(), "{cmd:?}: {status}");
    self::report(report.path())
}

/// Waits for `child`, spawned at `began`: `wait4(2)` gives this child's
/// own peak RSS, which `getrusage(RUSAGE_CHILDREN)` does not (it is the
/// largest of every child so far).
#[allow(unsafe_code, reason = "wait4(2), for one child's rusage, which std does not give")]
pub(crate) fn wait(child: Child, began: Instant, what: &str) -> Run {
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 only writes the two out-pointers.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child, not yet waited for (`Child` is not
    // waited on again: it is dropped, which does not reap).
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    let wall = began.elapsed();
    assert_eq!(r, pid, "wait4: {}", std::io::Error::last_os_error());
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "{what} failed: status {status:#x}");
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Run { wall, cpu: tv(ru.ru_utime) + tv(ru.ru_stime), maxrss: ru.ru_maxrss as u64 * 1024 }
}

/// The median of `v` (the mean of the middle two for an even count).
pub(crate) fn median(v: &[Duration]) -> Duration {
    let mut v = v.to_vec();
    v.sort_unstable();
    let m = v.len() / 2;
    if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2 }
}

/// The medians of a row's runs: wall, CPU, peak RSS.
pub(crate) fn medians(runs: &[Run]) -> Run {
    let mut rss: Vec<u64> = runs.iter().map(|r| r.maxrss).collect();
    rss.sort_unstable();
    Run {
        wall: median(&runs.iter().map(|r| r.wall).collect::<Vec<_>>()),
        cpu: median(&runs.iter().map(|r| r.cpu).collect::<Vec<_>>()),
        maxrss: rss[rss.len() / 2],
    }
}

/// This process's `VmRSS`, `RssAnon`, `RssFile` and `RssShmem`, bytes.
pub(crate) fn rss() -> [u64; 4] {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    ["VmRSS:", "RssAnon:", "RssFile:", "RssShmem:"].map(|key| {
        let line = status.lines().find(|l| l.starts_with(key)).unwrap_or_else(|| panic!("no {key}"));
        let kb: u64 = line[key.len()..].trim().trim_end_matches("kB").trim().parse().expect("a size in kB");
        kb * 1024
    })
}

/// Where a child's time goes: it marks the end of each phase, and writes
/// the marks to `$LOAD_SPLIT` (when set) as it ends.
pub(crate) struct Split {
    last: Instant,
    marks: Vec<(&'static str, Duration)>,
}

impl Split {
    pub(crate) fn new() -> Split {
        Split { last: Instant::now(), marks: Vec::new() }
    }

    pub(crate) fn mark(&mut self, phase: &'static str) {
        let now = Instant::now();
        self.marks.push((phase, now - self.last));
        self.last = now;
    }

    pub(crate) fn write(self) {
        if let Some(path) = std::env::var_os("LOAD_SPLIT") {
            let text: String = self.marks.iter().map(|(p, d)| format!("{p}\t{}\n", d.as_nanos())).collect();
            std::fs::write(path, text).expect("writing the split");
        }
    }
}

/// The phases a child wrote to `path`.
pub(crate) fn read_split(path: &Path) -> Vec<(String, Duration)> {
    let text = std::fs::read_to_string(path).expect("the child's split");
    text.lines()
        .map(|l| {
            let (phase, ns) = l.split_once('\t').expect("phase\tns");
            (phase.to_owned(), Duration::from_nanos(ns.parse().expect("ns")))
        })
        .collect()
}

/// A duration as milliseconds, or seconds from 100 ms.
pub(crate) fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms < 100.0 { format!("{ms:.2} ms") } else { format!("{:.2} s", ms / 1e3) }
}
