//! The guest workload of `bench/benches/guest.rs`: small-file metadata
//! operations and bulk I/O through `std::fs`, each phase timed inside the
//! guest with `std::time::Instant` (the WASI monotonic clock), so the
//! numbers exclude instantiation and the host's setup.
//!
//! ```text
//! bench_workload PHASES N [ROOT [BIG_MIB]]
//!
//! PHASES  comma-separated, run in this order:
//!   create   N files of 128 bytes in ROOT/d (ROOT/d is created, untimed)
//!   read     read them all back (open, read to the end, close)
//!   stat     the metadata of each
//!   readdir  list ROOT/d (must hold exactly N entries)
//!   unlink   remove them all
//!   mkdir    N/5 directories in ROOT/m (ROOT/m is created, untimed)
//!   rmdir    remove them
//!   writeP   ROOT/big: 64 MiB in writes of P (4k, 64k or 1m) bytes
//!   readP    ROOT/big read back in reads of P bytes
//! or `all` (every phase) or `ro` (read,stat,readdir and the reads: on a
//! tree prepared by the host, e.g. a read-only pack, with the files
//! `create` and `write64k` would have made).
//! N       number of small files
//! ROOT    default /work
//! BIG_MIB the big file's size in MiB, default 64
//! ```
//!
//! Prints `phase NAME NANOSECONDS OPS` per phase, then `done`. Contents are
//! checked (sizes and each file's leading index; the big file after its
//! read, untimed). Small file `i` is `d/fNNNNN` (five digits) holding its
//! index in five ASCII digits then `.` up to 128 bytes; 64 KiB chunk `k`
//! of `big` starts with `k` as 8 little-endian bytes, the rest `0xa5`,
//! whatever the piece size it was written in.
//!
//! Not compared with the oracle (`host/tests/guests.rs` lists it as a tool).

use std::fs::{self, File};
use std::io::{Read, Write};
use std::process::ExitCode;
use std::time::Instant;

#[path = "../workload.rs"]
mod workload;
use workload::{SMALL, pattern, piece, small};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(phases), Some(n)) = (args.get(1), args.get(2).and_then(|n| n.parse::<usize>().ok())) else {
        eprintln!("usage: bench_workload PHASES N [ROOT]");
        return ExitCode::from(2);
    };
    let root = args.get(3).map_or("/work", String::as_str);
    let big = match workload::big(args.get(4)) {
        Ok(big) => big,
        Err(e) => {
            eprintln!("bench_workload: {e}");
            return ExitCode::from(2);
        }
    };
    for phase in workload::phases(phases) {
        match run(phase, n, root, big) {
            Ok((ns, ops)) => println!("phase {phase} {ns} {ops}"),
            Err(e) => {
                eprintln!("bench_workload: {phase}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    println!("done");
    ExitCode::SUCCESS
}

type Result<T> = std::result::Result<T, String>;

fn path(root: &str, i: usize) -> String {
    format!("{root}/d/f{i:05}")
}

/// The `mkdir` phase's directories: one per five small files.
fn dirs(root: &str, n: usize) -> Vec<String> {
    (0..n / 5).map(|i| format!("{root}/m/d{i:05}")).collect()
}

/// Runs one phase; returns its time in nanoseconds and its operation count.
fn run(phase: &str, n: usize, root: &str, big_len: usize) -> Result<(u128, usize)> {
    let err = |what: &str, e: std::io::Error| format!("{what}: {e}");
    // Paths are made before the clock starts: formatting is not the host's work.
    let paths: Vec<String> = (0..n).map(|i| path(root, i)).collect();
    let big = format!("{root}/big");
    let start;
    let ops = match phase {
        "create" => {
            fs::create_dir_all(format!("{root}/d")).map_err(|e| err("mkdir", e))?;
            let contents: Vec<[u8; SMALL]> = (0..n).map(small).collect();
            start = Instant::now();
            for (p, c) in paths.iter().zip(&contents) {
                fs::write(p, c).map_err(|e| err(p, e))?;
            }
            n
        }
        "read" => {
            let mut buf = Vec::with_capacity(SMALL);
            start = Instant::now();
            for (i, p) in paths.iter().enumerate() {
                buf.clear();
                File::open(p).and_then(|mut f| f.read_to_end(&mut buf)).map_err(|e| err(p, e))?;
                if buf.len() != SMALL || buf[..5] != small(i)[..5] {
                    return Err(format!("{p}: wrong contents ({} bytes)", buf.len()));
                }
            }
            n
        }
        "stat" => {
            start = Instant::now();
            for p in &paths {
                let m = fs::metadata(p).map_err(|e| err(p, e))?;
                if m.len() != SMALL as u64 || !m.is_file() {
                    return Err(format!("{p}: wrong metadata"));
                }
            }
            n
        }
        "readdir" => {
            let dir = format!("{root}/d");
            start = Instant::now();
            let mut count = 0;
            for entry in fs::read_dir(&dir).map_err(|e| err(&dir, e))? {
                entry.map_err(|e| err(&dir, e))?;
                count += 1;
            }
            if count != n {
                return Err(format!("{dir}: {count} entries, expected {n}"));
            }
            n
        }
        "unlink" => {
            start = Instant::now();
            for p in &paths {
                fs::remove_file(p).map_err(|e| err(p, e))?;
            }
            n
        }
        "mkdir" => {
            fs::create_dir_all(format!("{root}/m")).map_err(|e| err("mkdir", e))?;
            let dirs = dirs(root, n);
            start = Instant::now();
            for d in &dirs {
                fs::create_dir(d).map_err(|e| err(d, e))?;
            }
            dirs.len()
        }
        "rmdir" => {
            let dirs = dirs(root, n);
            start = Instant::now();
            for d in &dirs {
                fs::remove_dir(d).map_err(|e| err(d, e))?;
            }
            dirs.len()
        }
        p if p.starts_with("write") => {
            let piece = piece(&p[5..])?;
            fs::create_dir_all(root).map_err(|e| err("mkdir", e))?;
            let data = pattern(big_len);
            start = Instant::now();
            let mut f = File::create(&big).map_err(|e| err(&big, e))?;
            for part in data.chunks(piece) {
                f.write_all(part).map_err(|e| err(&big, e))?;
            }
            drop(f);
            big_len / piece
        }
        p if p.starts_with("read") => {
            let piece = piece(&p[4..])?;
            let mut data = vec![0u8; big_len + 1];
            start = Instant::now();
            let mut f = File::open(&big).map_err(|e| err(&big, e))?;
            let mut at = 0;
            loop {
                let end = (at + piece).min(data.len());
                let n = f.read(&mut data[at..end]).map_err(|e| err(&big, e))?;
                if n == 0 {
                    break;
                }
                at += n;
            }
            let elapsed = start.elapsed();
            if at != big_len || data[..big_len] != pattern(big_len)[..] {
                return Err(format!("{big}: wrong contents ({at} bytes)"));
            }
            return Ok((elapsed.as_nanos(), big_len / piece));
        }
        other => return Err(format!("unknown phase {other:?}")),
    };
    Ok((start.elapsed().as_nanos(), ops))
}
