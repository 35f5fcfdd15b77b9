//! The README's demo guest: counts the lines, words and bytes of every
//! `*.txt` file under a directory (default `/data`), prints a report and
//! writes it to a file (default `/out/report.txt`, its directory created
//! when missing).
//!
//! ```text
//! demo [DATA_DIR [REPORT]]
//! ```
//!
//! Not compared with the oracle (`host/tests/guests.rs` lists it as a tool).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let data = PathBuf::from(args.get(1).map_or("/data", String::as_str));
    let report_path = PathBuf::from(args.get(2).map_or("/out/report.txt", String::as_str));
    match run(&data, &report_path) {
        Ok(report) => {
            print!("{report}");
            println!("report written to {}", report_path.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("demo: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(data: &Path, report_path: &Path) -> Result<String, String> {
    let mut files = Vec::new();
    collect(data, &mut files).map_err(|e| format!("{}: {e}", data.display()))?;
    files.sort();
    let mut report = format!("{:>7} {:>7} {:>9}  file\n", "lines", "words", "bytes");
    let (mut lines, mut words, mut bytes) = (0, 0, 0);
    for path in &files {
        let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let (l, w, b) = (text.lines().count(), text.split_whitespace().count(), text.len());
        report += &format!("{l:>7} {w:>7} {b:>9}  {}\n", path.display());
        (lines, words, bytes) = (lines + l, words + w, bytes + b);
    }
    report += &format!("{lines:>7} {words:>7} {bytes:>9}  total ({} files)\n", files.len());
    if let Some(dir) = report_path.parent() {
        fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    fs::write(report_path, &report).map_err(|e| format!("{}: {e}", report_path.display()))?;
    Ok(report)
}

/// Every `*.txt` file below `dir`, recursively.
fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            collect(&path, out)?;
        } else if path.extension().is_some_and(|x| x == "txt") {
            out.push(path);
        }
    }
    Ok(())
}
