//! A WASI 0.3 command for `packfs run`'s tests (`host/cli/tests`), not a
//! transcript: its arguments are commands, run in order on the preopen
//! `/`, each printing what it read. A failed command says why on stderr
//! and exits 1.
//!
//! `write PATH TEXT` · `cat PATH` · `ls PATH` · `sleep SECONDS` (on 0.3's
//! monotonic clock) · `grow MIB` (of linear memory)

use packfs_guests_p3::exports::wasi::cli::run::Guest;
use packfs_guests_p3::{DescriptorFlags as F, ErrorCode, OpenFlags as O, list, open, preopen, read_from, wasi, write_at};

struct Run;
packfs_guests_p3::export!(Run);

impl Guest for Run {
    async fn run() -> Result<(), ()> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let root = preopen("/");
        let mut rest = args.iter().map(String::as_str);
        while let Some(command) = rest.next() {
            let mut arg = || rest.next().unwrap_or_else(|| panic!("{command}: an argument is missing"));
            let done: Result<(), ErrorCode> = match command {
                "write" => {
                    let (path, text) = (rel(arg()), arg());
                    match open(&root, path, O::CREATE | O::TRUNCATE, F::WRITE).await {
                        Ok(f) => write_at(&f, Some(0), text.as_bytes(), 4096).await.map(|_| ()),
                        Err(e) => Err(e),
                    }
                }
                "cat" => match open(&root, rel(arg()), O::empty(), F::READ).await {
                    Ok(f) => read_from(&f, 0, 65536).await.map(|d| print!("{}", String::from_utf8_lossy(&d))),
                    Err(e) => Err(e),
                },
                "ls" => match open(&root, rel(arg()), O::DIRECTORY, F::READ).await {
                    Ok(d) => list(&d).await.map(|l| l.iter().for_each(|(n, _)| println!("{n}"))),
                    Err(e) => Err(e),
                },
                "sleep" => {
                    let secs: u64 = arg().parse().expect("sleep SECONDS");
                    wasi::clocks::monotonic_clock::wait_for(secs * 1_000_000_000).await;
                    Ok(())
                }
                "grow" => {
                    let mib: usize = arg().parse().expect("grow MIB");
                    let v = vec![1u8; mib << 20];
                    println!("grew {}", v.iter().map(|&b| usize::from(b)).sum::<usize>() >> 20);
                    Ok(())
                }
                other => panic!("unknown command {other}"),
            };
            if let Err(e) = done {
                eprintln!("{command}: {e:?}");
                flush();
                std::process::exit(1);
            }
        }
        flush();
        Ok(())
    }
}

/// std flushes stdout when `main` returns, which never runs here.
fn flush() {
    let _ = std::io::Write::flush(&mut std::io::stdout());
}

/// A guest path, relative to the preopen `/`.
fn rel(path: &str) -> &str {
    match path.trim_start_matches('/') {
        "" => ".",
        p => p,
    }
}

/// The work is `run`, which `wasi:cli/run@0.3.0` exports; the standard
/// library still wants a `main`.
fn main() {
    unreachable!("run through wasi:cli/run@0.3.0")
}
