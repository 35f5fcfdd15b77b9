//! The README's demo guest (`guest-tests/src/bin/demo.rs`) as a WASI 0.3
//! command, through `wasi:filesystem@0.3.0`: counts the lines, words and
//! bytes of every `*.txt` file under a directory, prints a report and
//! writes it to a file (whose directory must exist). Both paths are
//! absolute, under the guest's preopens.
//!
//! ```text
//! p3_demo DATA_DIR REPORT
//! ```

use packfs_guests_p3::exports::wasi::cli::run::Guest;
use packfs_guests_p3::{Descriptor, DescriptorFlags as F, DescriptorType, OpenFlags as O, list, open, read_from, wasi, write_at};

struct Run;
packfs_guests_p3::export!(Run);

impl Guest for Run {
    async fn run() -> Result<(), ()> {
        let args: Vec<String> = std::env::args().collect();
        let (Some(data), Some(report)) = (args.get(1), args.get(2)) else {
            eprintln!("usage: p3_demo DATA_DIR REPORT");
            return Err(());
        };
        let done = match demo(data, report).await {
            Ok(text) => {
                print!("{text}");
                println!("report written to {report}");
                Ok(())
            }
            Err(e) => {
                eprintln!("p3_demo: {e}");
                Err(())
            }
        };
        // std flushes stdout when `main` returns, which never runs here.
        let _ = std::io::Write::flush(&mut std::io::stdout());
        done
    }
}

async fn demo(data: &str, report_path: &str) -> Result<String, String> {
    let (root, at, rel) = within(data)?;
    let mut files = Vec::new();
    let mut dirs = vec![rel];
    while let Some(dir) = dirs.pop() {
        let d = open(&root, &dir, O::DIRECTORY, F::READ).await.map_err(|e| format!("{}: {e:?}", shown(&at, &dir)))?;
        for (name, ty) in list(&d).await.map_err(|e| format!("{}: {e:?}", shown(&at, &dir)))? {
            let child = if dir == "." { name.clone() } else { format!("{dir}/{name}") };
            match ty {
                DescriptorType::Directory => dirs.push(child),
                _ if name.ends_with(".txt") => files.push(child),
                _ => {}
            }
        }
    }
    files.sort();
    let mut report = format!("{:>7} {:>7} {:>9}  file\n", "lines", "words", "bytes");
    let (mut lines, mut words, mut bytes) = (0, 0, 0);
    for file in &files {
        let path = shown(&at, file);
        let f = open(&root, file, O::empty(), F::READ).await.map_err(|e| format!("{path}: {e:?}"))?;
        let data = read_from(&f, 0, 64 << 10).await.map_err(|e| format!("{path}: {e:?}"))?;
        let text = String::from_utf8(data).map_err(|e| format!("{path}: {e}"))?;
        let (l, w, b) = (text.lines().count(), text.split_whitespace().count(), text.len());
        report += &format!("{l:>7} {w:>7} {b:>9}  {path}\n");
        (lines, words, bytes) = (lines + l, words + w, bytes + b);
    }
    report += &format!("{lines:>7} {words:>7} {bytes:>9}  total ({} files)\n", files.len());
    let (out, _, rel) = within(report_path)?;
    let f = open(&out, &rel, O::CREATE | O::TRUNCATE, F::WRITE).await.map_err(|e| format!("{report_path}: {e:?}"))?;
    write_at(&f, Some(0), report.as_bytes(), 4096).await.map_err(|e| format!("{report_path}: {e:?}"))?;
    Ok(report)
}

/// The preopen holding the absolute `path` (the deepest), its own path,
/// and `path` relative to it.
fn within(path: &str) -> Result<(Descriptor, String, String), String> {
    let under = |p: &str| p == "/" || path == p || path.starts_with(&format!("{}/", p.trim_end_matches('/')));
    let (dir, at) = wasi::filesystem::preopens::get_directories()
        .into_iter()
        .filter(|(_, p)| under(p))
        .max_by_key(|(_, p)| p.len())
        .ok_or_else(|| format!("{path}: under no preopen"))?;
    let rel = path[at.len().min(path.len())..].trim_start_matches('/');
    Ok((dir, at, if rel.is_empty() { ".".to_owned() } else { rel.to_owned() }))
}

/// `rel` under the preopen at `at`, as the guest names it.
fn shown(at: &str, rel: &str) -> String {
    match rel {
        "." => at.to_owned(),
        _ => format!("{}/{rel}", at.trim_end_matches('/')),
    }
}

/// The work is `run`, which `wasi:cli/run@0.3.0` exports; the standard
/// library still wants a `main`.
fn main() {
    unreachable!("run through wasi:cli/run@0.3.0")
}
