//! The results files' tool.
//!
//! `stale` lists the results files (`bench/*-results.md`,
//! `web/BENCH-web*.md`) whose measured code, the paths their stamps name,
//! has changed since the commit they were measured at; the test command
//! runs it. It reports, it does not fail: a figure goes stale with every
//! change to what it measures, and is refreshed by rerunning its benchmark
//! (`bench/rerun.sh` reruns them all).
//!
//! `write` is how a benchmark written in shell writes its results file:
//! the Markdown on standard input becomes the file's measured block,
//! stamped (see `packfs_bench::results`).
//!
//! ```sh
//! cargo run -p packfs-bench --bin results -- stale
//! … | cargo run -p packfs-bench --bin results -- write NAME [--variant V] --command CMD --code PATH…
//! ```

use std::io::Read as _;
use std::path::Path;
use std::process::{Command, ExitCode};

use packfs_bench::results::{Results, Stamp, root};

const USAGE: &str = "usage: results stale | results write NAME [--variant V] --command CMD --code PATH...";

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).current_dir(root()).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Why a results file's figures are stale, or `None` if they are current.
fn staleness(text: &str) -> Option<String> {
    let stamps = Stamp::all(text);
    if stamps.is_empty() {
        return Some("no stamp: never measured by a stamping benchmark".into());
    }
    let why: Vec<String> = stamps.iter().filter_map(stale).collect();
    (!why.is_empty()).then(|| why.join("; "))
}

/// Why the figures under `stamp` are stale.
fn stale(stamp: &Stamp) -> Option<String> {
    let short = &stamp.commit[..stamp.commit.len().min(10)];
    if git(&["cat-file", "-e", &format!("{}^{{commit}}", stamp.commit)]).is_none() {
        return Some(format!("measured at {short}, a commit this clone does not have"));
    }
    let mut diff = vec!["diff", "--name-only", stamp.commit.as_str(), "--"];
    diff.extend(stamp.code.iter().map(String::as_str));
    let Some(changed) = git(&diff) else {
        return Some(format!("measured at {short}; `git diff` of its code failed, so it may be stale"));
    };
    let changed: Vec<&str> = changed.lines().collect();
    match (changed.len(), stamp.dirty) {
        (0, false) => None,
        (0, true) => Some(format!("measured at {short} with uncommitted changes to its code")),
        (n, _) => {
            let shown = changed[..n.min(4)].join(", ");
            let more = if n > 4 { format!(" and {} more", n - 4) } else { String::new() };
            Some(format!("measured at {short} on {}; changed since: {shown}{more}", stamp.date))
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("stale") if args.len() == 1 => stale_files(),
        Some("write") => write(&args[1..]),
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// `write NAME [--variant V] --command CMD --code PATH...`, the block from
/// standard input.
fn write(args: &[String]) -> ExitCode {
    let (mut variant, mut command, mut code) = (None, None, Vec::new());
    let Some((name, mut rest)) = args.split_first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    while let Some((flag, tail)) = rest.split_first() {
        match (flag.as_str(), tail.split_first()) {
            ("--variant", Some((v, t))) if variant.is_none() => (variant, rest) = (Some(v.clone()), t),
            ("--command", Some((c, t))) if command.is_none() => (command, rest) = (Some(c.clone()), t),
            ("--code", Some(_)) if code.is_empty() => {
                // Paths, up to the next flag.
                let n = tail.iter().take_while(|a| !a.starts_with("--")).count();
                (code, rest) = (tail[..n].to_vec(), &tail[n..]);
            }
            _ => {
                eprintln!("{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    // Both name a file and a block's markers: letters, digits and dashes.
    let valid = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    let ok = valid(name) && variant.as_deref().is_none_or(valid);
    let (true, Some(command), false) = (ok, command, code.is_empty()) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let mut md = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut md) {
        eprintln!("results: reading the block from standard input: {e}");
        return ExitCode::FAILURE;
    }
    let code: Vec<&str> = code.iter().map(String::as_str).collect();
    let mut results = Results::new(name, &command, &code);
    if let Some(v) = variant {
        results = results.variant(&v);
    }
    results.push(&md);
    match results.write() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("results: writing bench/{name}-results.md: {e}");
            ExitCode::FAILURE
        }
    }
}

fn stale_files() -> ExitCode {
    let root = root();
    let mut files = Vec::new();
    for (dir, prefix, suffix) in [("bench", "", "-results.md"), ("web", "BENCH-web", ".md")] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else { continue };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(prefix) && name.ends_with(suffix) {
                files.push(Path::new(dir).join(name));
            }
        }
    }
    files.sort();
    if git(&["rev-parse", "HEAD"]).is_none() {
        eprintln!("stale: not in a git checkout; cannot tell which figures are stale");
        return ExitCode::SUCCESS;
    }
    let mut stale = 0;
    for file in &files {
        let text = match std::fs::read_to_string(root.join(file)) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("stale: {}: {e}", file.display());
                return ExitCode::FAILURE;
            }
        };
        if let Some(why) = staleness(&text) {
            println!("  {}: {why}", file.display());
            stale += 1;
        }
    }
    println!(
        "{stale} of {} results files are stale (rerun their benchmarks, or all of them: bench/rerun.sh)",
        files.len()
    );
    ExitCode::SUCCESS
}
