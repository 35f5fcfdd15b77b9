//! Results files: each benchmark rewrites the measured block of its own
//! `bench/NAME-results.md`, stamped with the commit, machine and date it
//! ran on and the paths of the code it measured, so that
//! `cargo run -p packfs-bench --bin stale` can list every file whose code
//! has changed since. The prose around the block (method, analysis) is
//! written by hand; the block is only ever written here.
//!
//! The stamp is one Markdown paragraph, the same from the JavaScript
//! benchmarks (`web/bench/stamp.mjs`):
//!
//! ```text
//! Measured at commit `<40 hex>` on 2026-12-07 21:40 UTC, by `<command>`, on
//! <machine>. Measured code: `core/src`, `bench/benches/journal.rs`.
//! ```

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// The Markdown the benchmark printed with [`outln!`](crate::outln), for
/// its results file.
static PRINTED: Mutex<String> = Mutex::new(String::new());

/// `println!`, also keeping the line for the results file (see [`Results::printed`]).
#[macro_export]
macro_rules! outln {
    () => { $crate::results::print_line("") };
    ($($t:tt)*) => { $crate::results::print_line(&format!($($t)*)) };
}

/// Prints `line` and keeps it for the results file.
pub fn print_line(line: &str) {
    println!("{line}");
    let mut printed = PRINTED.lock().unwrap_or_else(|e| e.into_inner());
    printed.push_str(line);
    printed.push('\n');
}

/// Whether this is a whole measuring run, in a release build: `cargo
/// bench` passes `--bench`, and nothing else may change what is measured
/// (a filter, or any of criterion's flags that list, test, shorten or
/// compare); only such a run rewrites a results file.
pub fn whole_run() -> bool {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let harmless = |a: &String| a == "--bench" || a == "--noplot" || a.starts_with("--color");
    !cfg!(debug_assertions) && args.iter().any(|a| a == "--bench") && args.iter().all(harmless)
}

/// The workspace's root (this crate's parent directory).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("bench/ has a parent").to_path_buf()
}

/// What a criterion benchmark calls after its groups ran (criterion's
/// own main is `benches(); final_summary()`): on a whole run, writes the
/// medians measured since `since` into `bench/{name}-results.md`.
pub fn criterion_done(name: &str, code: &[&str], since: SystemTime) {
    if whole_run() {
        let mut results = Results::new(name, &format!("cargo bench -p packfs-bench --bench {name}"), code);
        if results.criterion(since) == 0 {
            eprintln!(
                "bench/{name}-results.md left as it was: no criterion results of this run under {}",
                criterion_dir().display()
            );
            return;
        }
        results.write().unwrap_or_else(|e| panic!("writing bench/{name}-results.md: {e}"));
    }
}

/// What a benchmark that prints its tables with [`outln!`](crate::outln)
/// calls at its end: on a whole run, writes them into
/// `bench/{name}-results.md` (in `variant`'s block, if given).
pub fn printed_done(name: &str, command: &str, code: &[&str], variant: Option<&str>) {
    if whole_run() {
        let mut results = Results::new(name, command, code);
        if let Some(v) = variant {
            results = results.variant(v);
        }
        results.printed();
        results.write().unwrap_or_else(|e| panic!("writing bench/{name}-results.md: {e}"));
    }
}

/// What one run of a benchmark writes into its results file.
pub struct Results {
    file: PathBuf,
    variant: String,
    command: String,
    code: Vec<String>,
    body: String,
}

impl Results {
    /// The results of `bench/{name}-results.md`, measured by `command`, on
    /// the code under `code` (paths from the workspace root).
    pub fn new(name: &str, command: &str, code: &[&str]) -> Self {
        Self {
            file: root().join("bench").join(format!("{name}-results.md")),
            variant: String::new(),
            command: command.to_string(),
            code: code.iter().map(|c| c.to_string()).collect(),
            body: String::new(),
        }
    }

    /// A block of its own in the file, for a run of one `variant` (a
    /// codec, a part) that others complete.
    pub fn variant(mut self, variant: &str) -> Self {
        self.variant = format!(" {variant}");
        self
    }

    /// Adds what the benchmark printed with [`outln!`](crate::outln).
    pub fn printed(&mut self) {
        let printed = std::mem::take(&mut *PRINTED.lock().unwrap_or_else(|e| e.into_inner()));
        self.push(&printed);
    }

    /// Adds Markdown to the block (a line, a table).
    pub fn push(&mut self, md: &str) {
        self.body.push_str(md);
        if !md.ends_with('\n') {
            self.body.push('\n');
        }
    }

    /// Adds a table per criterion group of this run: the median time per
    /// iteration and its 95% interval of every benchmark whose
    /// `target/criterion/**/new/estimates.json` was written after `since`;
    /// returns how many.
    pub fn criterion(&mut self, since: SystemTime) -> usize {
        let dir = criterion_dir();
        let Ok(groups) = std::fs::read_dir(&dir) else { return 0 };
        let mut found = 0;
        let mut groups: Vec<PathBuf> = groups.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
        groups.sort();
        for group in groups {
            let mut rows = Vec::new();
            collect_estimates(&group, &group, since, &mut rows);
            if rows.is_empty() {
                continue;
            }
            found += rows.len();
            rows.sort_by_key(|a| natural(&a.0));
            let name = group.file_name().unwrap_or_default().to_string_lossy().into_owned();
            let _ = writeln!(self.body, "\n`{name}`: criterion's median per iteration [95% interval]\n");
            let _ = writeln!(self.body, "| benchmark | median | interval |\n|---|--:|--:|");
            for (id, [lo, median, hi]) in rows {
                let _ = writeln!(self.body, "| {id} | {} | {}–{} |", fmt_ns(median), fmt_ns(lo), fmt_ns(hi));
            }
        }
        found
    }

    /// Rewrites the block of the results file (appending one if it has
    /// none), stamped.
    pub fn write(self) -> std::io::Result<()> {
        let invalid = |what: String| Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, what));
        if self.body.trim().is_empty() {
            return invalid("nothing measured to write".into());
        }
        // The block's markers must be the only ones: no comment opens or
        // closes inside what is written between them.
        for text in [&self.command, &self.body, &self.variant].into_iter().chain(&self.code) {
            if text.contains("<!--") || text.contains("-->") {
                return invalid(format!("an HTML comment in what the block holds: {text:.60}"));
            }
        }
        // The measured code: relative paths inside this checkout.
        let inside = |c: &str| {
            let p = Path::new(c);
            !c.is_empty()
                && p.components().all(|k| matches!(k, std::path::Component::Normal(_)))
                && root().join(p).exists()
        };
        if let Some(c) = self.code.iter().find(|c| !inside(c)) {
            return invalid(format!("measured code `{c}`: not a path inside this checkout"));
        }
        let stamp = Stamp::now(&self.command, &self.code);
        // What the stamp says must read back as written: no command or
        // path that could pass for another stamp's parts.
        if Stamp::parse(&format!("{}\n", stamp.render())).as_ref() != Some(&stamp) {
            return invalid(format!("the stamp would not read back: {:.80}", stamp.render()));
        }
        let stamp = stamp.render();
        let (begin, end) =
            (format!("<!-- measured{}: begin -->", self.variant), format!("<!-- measured{}: end -->", self.variant));
        let title = if self.variant.is_empty() { "This run".to_string() } else { format!("This run:{}", self.variant) };
        let block = format!(
            "{begin}\n<!-- Written by the benchmark: edits here are lost. -->\n\n## {title}\n\n{stamp}\n\n{}\n{end}\n",
            self.body.trim()
        );
        let old = match std::fs::read_to_string(&self.file) {
            Ok(old) => old,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e),
        };
        // One begin marker and one end after it, or none: else the file
        // is left for a person to mend.
        let new = match (old.matches(&begin).count(), old.matches(&end).count()) {
            (1, 1) => {
                let b = old.find(&begin).unwrap_or(0);
                let Some(e) = old[b..].find(&end).map(|e| b + e) else {
                    return invalid(format!("{}: its end marker comes before its begin", self.file.display()));
                };
                format!("{}{block}{}", &old[..b], old[e + end.len()..].trim_start_matches('\n'))
            }
            (0, 0) if old.is_empty() => block,
            (0, 0) => format!("{}\n\n{block}", old.trim_end()),
            (b, e) => return invalid(format!("{}: {b} begin and {e} end markers of {begin}", self.file.display())),
        };
        std::fs::write(&self.file, new)?;
        eprintln!("wrote {}", self.file.display());
        Ok(())
    }
}

const STAMP: &str = "Measured at commit `";

/// Where a results file says it was measured.
#[derive(Debug, PartialEq)]
pub struct Stamp {
    /// The commit checked out (40 hex digits).
    pub commit: String,
    /// Whether the measured code had uncommitted changes.
    pub dirty: bool,
    /// When, to the minute.
    pub date: String,
    /// The command that measured it.
    pub command: String,
    /// CPU, cores, memory, kernel.
    pub machine: String,
    /// The measured code's paths, from the workspace root.
    pub code: Vec<String>,
}

impl Stamp {
    /// This checkout and machine, now.
    pub fn now(command: &str, code: &[String]) -> Self {
        let git = |args: &[&str]| {
            Command::new("git")
                .args(args)
                .current_dir(root())
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        };
        let commit = git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into());
        let mut status = vec!["status", "--porcelain", "--"];
        status.extend(code.iter().map(String::as_str));
        let dirty = git(&status).is_none_or(|s| !s.is_empty());
        Self {
            commit,
            dirty,
            date: fmt_time(SystemTime::now()),
            command: command.into(),
            machine: machine(),
            code: code.to_vec(),
        }
    }

    /// The stamp's paragraph.
    pub fn render(&self) -> String {
        let dirty = if self.dirty { " (with uncommitted changes to the measured code)" } else { "" };
        let code: Vec<String> = self.code.iter().map(|c| format!("`{c}`")).collect();
        format!(
            "Measured at commit `{}`{dirty} on {}, by `{}`, on {}. Measured code: {}.",
            self.commit,
            self.date,
            self.command,
            self.machine,
            code.join(", ")
        )
    }

    /// Every stamp in `text` (a results file).
    pub fn all(text: &str) -> Vec<Self> {
        text.match_indices(STAMP).filter_map(|(at, _)| Self::parse(&text[at..])).collect()
    }

    /// The first stamp in `text`, if any.
    pub fn parse(text: &str) -> Option<Self> {
        let at = text.find(STAMP)?;
        let rest = &text[at + STAMP.len()..];
        let (commit, rest) = rest.split_once('`')?;
        let dirty = rest.starts_with(" (with uncommitted");
        let (_, rest) = rest.split_once(" on ")?;
        let (date, rest) = rest.split_once(", by `")?;
        let (command, rest) = rest.split_once("`, on ")?;
        let (machine, rest) = rest.split_once(". Measured code: ")?;
        let (code, _) = rest.split_once(".\n").or_else(|| rest.split_once('.'))?;
        let code = code.split(", ").map(|c| c.trim().trim_matches('`').to_string()).filter(|c| !c.is_empty()).collect();
        Some(Self {
            commit: commit.into(),
            dirty,
            date: date.into(),
            command: command.into(),
            machine: machine.trim().replace('\n', " "),
            code,
        })
    }
}

/// CPU model, cores, memory and kernel, from `/proc` (where there is one).
fn machine() -> String {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let cpu = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, m)| m.trim().to_string()))
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let mem_kib: u64 = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|r| r.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    let kernel = read("/proc/sys/kernel/osrelease");
    format!(
        "{cpu} ({cores} cores, {:.0} GiB, {} {})",
        mem_kib as f64 / (1u64 << 20) as f64,
        std::env::consts::OS,
        kernel.trim()
    )
}

/// Where criterion writes: `CRITERION_HOME`, else the target directory's
/// `criterion` (one set in a cargo config file is not seen: a run whose
/// results are not found here writes nothing).
fn criterion_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(home);
    }
    ["CARGO_TARGET_DIR", "CARGO_BUILD_TARGET_DIR"]
        .iter()
        .find_map(std::env::var_os)
        .map_or_else(|| root().join("target"), PathBuf::from)
        .join("criterion")
}

/// Every `…/new/estimates.json` under `dir` written after `since`: its
/// benchmark id (the path below `group`) and median's [lower, point, upper].
fn collect_estimates(group: &Path, dir: &Path, since: SystemTime, out: &mut Vec<(String, [f64; 3])>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.file_name().is_some_and(|n| n == "new") {
            let file = path.join("estimates.json");
            let fresh = std::fs::metadata(&file).and_then(|m| m.modified()).is_ok_and(|t| t >= since);
            if let (true, Ok(json)) = (fresh, std::fs::read_to_string(&file))
                && let Some(median) = criterion_median(&json)
            {
                let id = dir.strip_prefix(group).unwrap_or(dir).to_string_lossy().into_owned();
                out.push((id, median));
            }
        } else if path.is_dir() && path.file_name().is_some_and(|n| n != "report" && n != "base" && n != "change") {
            collect_estimates(group, &path, since, out);
        }
    }
}

/// `id` as a sort key in which runs of digits compare as numbers
/// (`mount/500` before `mount/2000`).
fn natural(id: &str) -> Vec<(String, u64)> {
    let mut key = Vec::new();
    let mut rest = id;
    while !rest.is_empty() {
        let text = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let digits = rest[text..].find(|c: char| !c.is_ascii_digit()).map_or(rest.len(), |d| text + d);
        key.push((rest[..text].to_string(), rest[text..digits].parse().unwrap_or(0)));
        rest = &rest[digits..];
    }
    key
}

/// The median's lower bound, point estimate and upper bound in criterion's
/// `estimates.json` (the one reader of it: `report` reads it here too).
pub fn criterion_median(json: &str) -> Option<[f64; 3]> {
    let after = |from: usize, key: &str| -> Option<(f64, usize)> {
        let pat = format!("\"{key}\":");
        let at = from + json[from..].find(&pat)? + pat.len();
        let end = json[at..].find([',', '}']).map(|e| at + e)?;
        Some((json[at..end].trim().parse().ok()?, end))
    };
    let m = json.find("\"median\":")?;
    let (lo, at) = after(m, "lower_bound")?;
    let (hi, at) = after(at, "upper_bound")?;
    let (point, _) = after(at, "point_estimate")?;
    Some([lo, point, hi])
}

/// A time in nanoseconds, to three significant digits.
pub fn fmt_ns(ns: f64) -> String {
    let (v, unit) = match ns {
        n if n >= 1e9 => (n / 1e9, "s"),
        n if n >= 1e6 => (n / 1e6, "ms"),
        n if n >= 1e3 => (n / 1e3, "µs"),
        n => (n, "ns"),
    };
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$} {unit}")
}

/// UTC date and time of `t`, to the minute.
pub fn fmt_time(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil from days (H. Hinnant).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02} UTC", rem / 3600, rem % 3600 / 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_in_ids_sort_as_numbers() {
        let mut ids = ["mount/32000", "mount/500", "resolve/2000", "mount/2000", "a1b10", "a1b9"];
        ids.sort_by_key(|id| natural(id));
        assert_eq!(ids, ["a1b9", "a1b10", "mount/500", "mount/2000", "mount/32000", "resolve/2000"]);
    }

    #[test]
    fn a_stamp_reads_back_as_written() {
        let code = vec!["core/src".to_string(), "bench/benches/journal.rs".to_string()];
        let mut stamp = Stamp::now("cargo bench -p packfs-bench --bench journal", &code);
        stamp.commit = "0123456789abcdef0123456789abcdef01234567".into();
        for dirty in [false, true] {
            stamp.dirty = dirty;
            let text = format!("# Title\n\nprose\n\n{}\n\n| a |\n", stamp.render());
            assert_eq!(Stamp::parse(&text).as_ref(), Some(&stamp));
        }
        assert_eq!(Stamp::parse("# no stamp here\n"), None);
    }

    #[test]
    fn the_measured_block_is_replaced_and_the_prose_kept() {
        let dir = tempfile_dir();
        let file = dir.join("x-results.md");
        let old = "<!-- measured: begin -->\nold\n<!-- measured: end -->";
        std::fs::write(&file, format!("# X\n\nprose\n\n{old}\n\nafter\n")).unwrap();
        let mut r = Results::new("x", "cmd", &["core/src"]);
        r.file = file.clone();
        r.push("| new |");
        r.write().unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.starts_with("# X\n\nprose\n\n"));
        assert!(text.contains("| new |") && !text.contains("old"));
        assert!(text.trim_end().ends_with("after"));
        assert_eq!(Stamp::parse(&text).unwrap().code, ["core/src"]);
        // Markers in what is written, paths that are not, nothing to
        // write, and markers out of order in the file are refused, the
        // file left as it was.
        let refused = |mut r: Results, target: &Path| {
            r.file = target.to_path_buf();
            r.write().is_err()
        };
        let with = |command: &str, code: &str, body: &str| {
            let mut r = Results::new("x", command, &[code]);
            r.push(body);
            r
        };
        assert!(refused(with("cmd <!-- measured: end -->", "core/src", "| b |"), &file));
        assert!(refused(with("cmd", "core/src", "| b | -->"), &file));
        assert!(refused(with("cmd", "no/such/path", "| b |"), &file));
        assert!(refused(with("cmd", "/etc", "| b |"), &file));
        assert!(refused(with("cmd", "../main/core", "| b |"), &file));
        assert!(refused(with("x`, on m. Measured code: `README.md`. y", "core/src", "| b |"), &file));
        assert!(refused(with("cmd", "core/src", " \n"), &file));
        let swapped = dir.join("swapped-results.md");
        let out_of_order = "<!-- measured: end -->\n<!-- measured: begin -->\n";
        std::fs::write(&swapped, out_of_order).unwrap();
        assert!(refused(with("cmd", "core/src", "| d |"), &swapped));
        assert_eq!(std::fs::read_to_string(&swapped).unwrap(), out_of_order);
        std::fs::write(&swapped, format!("{out_of_order}<!-- measured: end -->\n")).unwrap();
        assert!(refused(with("cmd", "core/src", "| d |"), &swapped));
        assert!(std::fs::read_to_string(&file).unwrap().contains("| new |"), "the refused writes left it");

        // A variant's block is its own: both stay, each with its stamp.
        let mut lz4 = Results::new("x", "cmd lz4", &["host/src"]).variant("lz4");
        lz4.file = file.clone();
        lz4.push("| lz4 |");
        lz4.write().unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains("| new |") && text.contains("| lz4 |"));
        let codes: Vec<_> = Stamp::all(&text).into_iter().map(|s| s.code).collect();
        assert_eq!(codes, [vec!["core/src".to_string()], vec!["host/src".to_string()]]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn tempfile_dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("packfs-results-test-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
