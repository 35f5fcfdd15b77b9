//! The guest workload of `bench/benches/guest.rs`: small-file metadata
//! operations and bulk I/O through `std::fs`, each phase timed inside the
//! guest with `std::time::Instant` (the WASI monotonic clock), so the
//! numbers exclude instantiation and the host's setup.
//!
//! ```text
//! bench_workload PHASES N [ROOT]
//!
//! PHASES  comma-separated, run in this order:
//!   create   N files of 128 bytes in ROOT/d (ROOT/d is created, untimed)
//!   read     read them all back (open, read to the end, close)
//!   stat     the metadata of each
//!   readdir  list ROOT/d (must hold exactly N entries)
//!   unlink   remove them all
//!   write    ROOT/big: 64 MiB in 64 KiB writes (ROOT is created, untimed)
//!   bigread  ROOT/big read back in 64 KiB reads
//! or `all` (every phase) or `ro` (read,stat,readdir,bigread: on a tree
//! prepared by the host, e.g. a read-only pack, with the files `create`
//! and `write` would have made).
//! N       number of small files
//! ROOT    default /work
//! ```
//!
//! Prints `phase NAME NANOSECONDS OPS` per phase, then `done`. Contents are
//! checked (sizes and each file's leading index), not timed separately.
//! Small file `i` is `d/fNNNNN` (five digits) holding its index in five
//! ASCII digits then `.` up to 128 bytes; 64 KiB chunk `k` of `big` starts
//! with `k` as 8 little-endian bytes, the rest `0xa5`.
//!
//! Not compared with the oracle (`host/tests/guests.rs` lists it as a tool).

use std::fs::{self, File};
use std::io::{Read, Write};
use std::process::ExitCode;
use std::time::Instant;

const SMALL: usize = 128;
const CHUNK: usize = 64 << 10;
const BIG: usize = 64 << 20;
const ALL: &[&str] = &["create", "read", "stat", "readdir", "unlink", "write", "bigread"];
const RO: &[&str] = &["read", "stat", "readdir", "bigread"];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(phases), Some(n)) = (args.get(1), args.get(2).and_then(|n| n.parse::<usize>().ok())) else {
        eprintln!("usage: bench_workload PHASES N [ROOT]");
        return ExitCode::from(2);
    };
    let root = args.get(3).map_or("/work", String::as_str);
    let phases: Vec<&str> = match phases.as_str() {
        "all" => ALL.to_vec(),
        "ro" => RO.to_vec(),
        list => list.split(',').collect(),
    };
    for phase in phases {
        match run(phase, n, root) {
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

fn small(i: usize) -> [u8; SMALL] {
    let mut buf = [b'.'; SMALL];
    buf[..5].copy_from_slice(format!("{i:05}").as_bytes());
    buf
}

/// Runs one phase; returns its time in nanoseconds and its operation count.
fn run(phase: &str, n: usize, root: &str) -> Result<(u128, usize)> {
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
        "write" => {
            fs::create_dir_all(root).map_err(|e| err("mkdir", e))?;
            let mut chunk = vec![0xa5u8; CHUNK];
            start = Instant::now();
            let mut f = File::create(&big).map_err(|e| err(&big, e))?;
            for k in 0..BIG / CHUNK {
                chunk[..8].copy_from_slice(&(k as u64).to_le_bytes());
                f.write_all(&chunk).map_err(|e| err(&big, e))?;
            }
            drop(f);
            BIG / CHUNK
        }
        "bigread" => {
            let mut chunk = vec![0u8; CHUNK];
            start = Instant::now();
            let mut f = File::open(&big).map_err(|e| err(&big, e))?;
            for k in 0..BIG / CHUNK {
                f.read_exact(&mut chunk).map_err(|e| err(&big, e))?;
                if chunk[..8] != (k as u64).to_le_bytes() || chunk[CHUNK - 1] != 0xa5 {
                    return Err(format!("{big}: chunk {k} has wrong contents"));
                }
            }
            if f.read(&mut chunk).map_err(|e| err(&big, e))? != 0 {
                return Err(format!("{big}: longer than {BIG} bytes"));
            }
            BIG / CHUNK
        }
        other => return Err(format!("unknown phase {other:?}")),
    };
    Ok((start.elapsed().as_nanos(), ops))
}
