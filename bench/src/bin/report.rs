//! Turns the criterion results of `cargo bench -p packfs-bench --bench core`
//! into the Markdown tables of BENCH.md: absolute times, and every figure as
//! a ratio against a baseline measured in the same run.
//!
//! ```sh
//! cargo run -p packfs-bench --release --bin report [-- <criterion dir>] [--write]
//! ```
//!
//! With `--write` (which `bench/rerun.sh` passes right after the run) the
//! tables become bench/core-results.md's measured block, stamped with this
//! checkout: only when every benchmark's results are there, and only
//! right after they were measured, which the caller vouches for.
//!
//! The criterion directory defaults to `$CARGO_TARGET_DIR/criterion`, else
//! `target/criterion` of this workspace. Times are criterion's median per
//! iteration (one iteration = one whole phase), with its 95% confidence
//! interval.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use packfs_bench::results::{Results, criterion_median, fmt_ns, fmt_time};

/// One benchmark's median time per iteration, in nanoseconds.
#[derive(Clone, Copy)]
struct Est {
    median: f64,
    lo: f64,
    hi: f64,
    written: SystemTime,
}

const MEM: &str = "packfs_mem";
const BASELINES: [&str; 4] = ["btreemap", "vfs_memoryfs", "std_tmp", "std_shm"];
const SMALL_FILES: f64 = 20_000.0;
const DIRS: f64 = 4_000.0;
const CONC_OPS: f64 = 8.0 * 4_000.0 * 3.0;
const SCALE_N: [u64; 4] = [15_625, 62_500, 250_000, 1_000_000];
/// Operations per iteration of the scaling series (`SCALE_K` in benches/core.rs).
const SCALE_K: u64 = 4_096;

fn describe(backend: &str) -> &'static str {
    match backend {
        MEM => "**PackFS `MemFs`**",
        "btreemap" => "`BTreeMap<String, Vec<u8>>`",
        "vfs_memoryfs" => "vfs 0.12 `MemoryFS`",
        "std_tmp" => "`std::fs`, temp dir (ext4, disk)",
        "std_shm" => "`std::fs`, `/dev/shm` (tmpfs)",
        _ => "?",
    }
}

fn load(root: &Path, id: &str) -> Option<Est> {
    let path = root.join(id).join("new/estimates.json");
    let json = std::fs::read_to_string(&path).ok()?;
    let written = std::fs::metadata(&path).and_then(|m| m.modified()).ok()?;
    let [lo, median, hi] = criterion_median(&json)?;
    Some(Est { median, lo, hi, written })
}

fn fmt_ratio(r: f64) -> String {
    if r >= 10.0 { format!("{r:.1}x") } else { format!("{r:.2}x") }
}

struct Report {
    root: PathBuf,
    out: String,
    missing: Vec<String>,
    seen: Vec<SystemTime>,
    /// (target, baseline, required, measured, met)
    targets: Vec<(String, String, String, String, bool)>,
}

impl Report {
    fn get(&mut self, id: &str) -> Option<Est> {
        let e = load(&self.root, id);
        match e {
            Some(e) => self.seen.push(e.written),
            None => self.missing.push(id.to_string()),
        }
        e
    }

    /// One table: every backend's time for `phase` and MemFs's speed-up
    /// against it (baseline time / MemFs time).
    fn phase_table(&mut self, title: &str, group: &str, phase: &str, ops: f64, bytes: Option<f64>) {
        let mem = self.get(&format!("{group}/{phase}/{MEM}"));
        let _ = writeln!(self.out, "\n#### {title}\n");
        let rate = if bytes.is_some() { "throughput" } else { "per op" };
        let _ = writeln!(self.out, "| backend | median time | 95% CI | {rate} | MemFs speed-up (baseline ÷ MemFs) |");
        let _ = writeln!(self.out, "|---|---:|---:|---:|---:|");
        for b in std::iter::once(MEM).chain(BASELINES) {
            if group == "dirs" && b == "std_tmp" {
                continue; // not measured: see the `directories` benchmark
            }
            let Some(e) = (if b == MEM { mem } else { self.get(&format!("{group}/{phase}/{b}")) }) else { continue };
            let rate = match bytes {
                Some(by) => format!("{:.0} MiB/s", by / (1 << 20) as f64 / (e.median / 1e9)),
                None => fmt_ns(e.median / ops),
            };
            let ratio = match mem {
                Some(m) if b != MEM => fmt_ratio(e.median / m.median),
                _ => "—".into(),
            };
            let _ = writeln!(
                self.out,
                "| {} | {} | {} – {} | {rate} | {ratio} |",
                describe(b),
                fmt_ns(e.median),
                fmt_ns(e.lo),
                fmt_ns(e.hi)
            );
        }
    }

    /// Records a target "MemFs is at least `min`x as fast as `baseline`".
    fn target(&mut self, what: &str, group: &str, phase: &str, baseline: &str, min: f64) {
        let (Some(m), Some(b)) = (
            load(&self.root, &format!("{group}/{phase}/{MEM}")),
            load(&self.root, &format!("{group}/{phase}/{baseline}")),
        ) else {
            return;
        };
        let r = b.median / m.median;
        let required = if min >= 1.0 {
            format!(">= {min}x")
        } else {
            format!(">= {min:.2}x (MemFs within {:.0}x of it)", 1.0 / min)
        };
        self.targets.push((what.into(), describe(baseline).into(), required, fmt_ratio(r), r >= min));
    }

    fn scale_table(&mut self, op: &str, what: &str) {
        let _ = writeln!(self.out, "\n#### scale: {what}, per operation, in a directory of N files\n");
        let _ = writeln!(
            self.out,
            "| N | MemFs per op | ÷ at N/4 | 4x the ops at 4x N (target <= 5x) | BTreeMap per op | ÷ at N/4 | MemFs ÷ BTreeMap |"
        );
        let _ = writeln!(self.out, "|---:|---:|---:|---:|---:|---:|---:|");
        let mut prev: (Option<Est>, Option<Est>) = (None, None);
        let k = SCALE_K as f64;
        for n in SCALE_N {
            let m = self.get(&format!("scale/{op}_{MEM}/{n}"));
            let b = self.get(&format!("scale/{op}_btreemap/{n}"));
            let step = |cur: Option<Est>, prev: Option<Est>| match (cur, prev) {
                (Some(c), Some(p)) => fmt_ratio(c.median / p.median),
                _ => "—".into(),
            };
            let per_op = |e: Option<Est>| e.map_or("—".into(), |e| fmt_ns(e.median / k));
            let four = match (m, prev.0) {
                (Some(c), Some(p)) => fmt_ratio(4.0 * c.median / p.median),
                _ => "—".into(),
            };
            let _ = writeln!(
                self.out,
                "| {n} | {} | {} | {four} | {} | {} | {} |",
                per_op(m),
                step(m, prev.0),
                per_op(b),
                step(b, prev.1),
                match (m, b) {
                    (Some(m), Some(b)) => fmt_ratio(m.median / b.median),
                    _ => "—".into(),
                }
            );
            if let (Some(c), Some(p)) = (m, prev.0) {
                let r = 4.0 * c.median / p.median;
                self.targets.push((
                    format!("scale {op}: N = {} -> {n}", n / 4),
                    "MemFs at N/4".into(),
                    "<= 5x for 4x the ops".into(),
                    fmt_ratio(r),
                    r <= 5.0,
                ));
            }
            prev = (m, b);
        }
    }
}

fn main() {
    let write = std::env::args().any(|a| a == "--write");
    let root = std::env::args().skip(1).find(|a| a != "--write").map(PathBuf::from).unwrap_or_else(|| {
        std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
            .join("criterion")
    });
    let mut r = Report { root, out: String::new(), missing: Vec::new(), seen: Vec::new(), targets: Vec::new() };

    let _ = writeln!(r.out, "### Small files: 20,000 files of 128 bytes in one directory");
    for (title, phase) in [
        ("create (create + write 128 B + close)", "create"),
        ("read (open + read to EOF + close)", "read"),
        ("stat (metadata by name)", "stat"),
        ("readdir (list all 20,000 entries)", "readdir"),
        ("unlink", "unlink"),
    ] {
        r.phase_table(title, "small", phase, SMALL_FILES, None);
    }
    let _ = writeln!(r.out, "\n### Directories: 4,000 in one directory");
    r.phase_table("mkdir", "dirs", "mkdir", DIRS, None);
    r.phase_table("rmdir", "dirs", "rmdir", DIRS, None);
    let _ = writeln!(r.out, "\n### Sequential I/O in 64 KiB writes and reads");
    for mib in [1u32, 16, 64] {
        let bytes = Some(f64::from(mib) * (1 << 20) as f64);
        r.phase_table(&format!("write {mib} MiB to a new file"), "seq", &format!("write_{mib}MiB"), 1.0, bytes);
        r.phase_table(&format!("read {mib} MiB"), "seq", &format!("read_{mib}MiB"), 1.0, bytes);
    }
    let _ = writeln!(r.out, "\n### Concurrency: 8 threads x 4,000 x (create+write+close, open+read+close, unlink)");
    r.phase_table("mixed (per op = one of the 96,000 operations)", "concurrent", "mixed", CONC_OPS, None);
    let _ = writeln!(r.out, "\n### Scaling series (4,096 consecutive operations in a directory of N files)");
    for (op, what) in [("create", "create + write 128 B + close"), ("stat", "lookup + metadata"), ("unlink", "unlink")]
    {
        r.scale_table(op, what);
    }

    // Targets, in the order of the issue.
    let mut targets = std::mem::take(&mut r.targets);
    for (what, phase, min) in
        [("create", "create", 30.0), ("read", "read", 25.0), ("stat", "stat", 12.0), ("unlink", "unlink", 30.0)]
    {
        for host in ["std_tmp", "std_shm"] {
            r.target(what, "small", phase, host, min);
        }
    }
    for host in ["std_tmp", "std_shm"] {
        r.target("concurrent mixed", "concurrent", "mixed", host, 25.0);
    }
    for host in ["std_tmp", "std_shm"] {
        r.target("64 MiB sequential write", "seq", "write_64MiB", host, 1.0);
    }
    for (group, phase) in [
        ("small", "create"),
        ("small", "read"),
        ("small", "stat"),
        ("small", "readdir"),
        ("small", "unlink"),
        ("dirs", "mkdir"),
        ("dirs", "rmdir"),
        ("seq", "write_1MiB"),
        ("seq", "read_1MiB"),
        ("seq", "write_16MiB"),
        ("seq", "read_16MiB"),
        ("seq", "write_64MiB"),
        ("seq", "read_64MiB"),
        ("concurrent", "mixed"),
    ] {
        r.target(&format!("{group}/{phase}"), group, phase, "vfs_memoryfs", 1.0);
    }
    for phase in ["create", "read", "stat"] {
        r.target(phase, "small", phase, "btreemap", 1.0 / 3.0);
    }
    let mut all = std::mem::take(&mut r.targets);
    all.append(&mut targets);

    let mut head = String::new();
    if let (Some(first), Some(last)) = (r.seen.iter().min(), r.seen.iter().max()) {
        let span = last.duration_since(*first).map(|d| d.as_secs()).unwrap_or(0);
        let _ = writeln!(
            head,
            "Results in `{}`: {} benchmarks, written {} – {} ({} min {} s apart).\n",
            r.root.display(),
            r.seen.len(),
            fmt_time(*first),
            fmt_time(*last),
            span / 60,
            span % 60
        );
    }
    let _ = writeln!(head, "### Targets (MemFs speed-up = baseline median ÷ MemFs median)\n");
    let _ = writeln!(head, "| target | baseline | required | measured | met |");
    let _ = writeln!(head, "|---|---|---|---:|:---:|");
    for (what, base, req, got, met) in &all {
        let _ = writeln!(head, "| {what} | {base} | {req} | {got} | {} |", if *met { "yes" } else { "**no**" });
    }
    let met = all.iter().filter(|t| t.4).count();
    let _ = writeln!(head, "\n{met} of {} targets met.\n", all.len());
    print!("{head}{}", r.out);
    if !write {
        return;
    }
    if !r.missing.is_empty() || r.seen.is_empty() {
        eprintln!("bench/core-results.md left as it was: results missing");
        std::process::exit(1);
    }
    let mut results = Results::new(
        "core",
        "cargo bench -p packfs-bench --bench core && cargo run -p packfs-bench --release --bin report",
        &["bench/benches/core", "bench/src/bin/report.rs", "core/src"],
    );
    results.push(&head);
    results.push(&r.out);
    results.write().unwrap_or_else(|e| panic!("writing bench/core-results.md: {e}"));
    if !r.missing.is_empty() {
        eprintln!("missing results (not run, or filtered out): {}", r.missing.join(", "));
    }
}
