//! The guest workload of `bench/benches/virt.rs`: a tree read as a
//! program reads its standard library, each phase timed inside the guest
//! with `std::time::Instant` (the WASI monotonic clock).
//!
//! ```text
//! tree_walk PHASES ROOT [WRITE_DIR]
//!
//! PHASES  comma-separated, in this order:
//!   none   nothing (what starting costs)
//!   stat   walk ROOT: list every directory, the metadata of every entry
//!   read   every regular file under 1 MiB read whole
//!   bulk   every regular file of 1 MiB or more read in 1 MiB reads
//!   write  1,000 files of 4 KiB created in WRITE_DIR, then read back
//! ```
//!
//! Prints `phase NAME NANOSECONDS OPS BYTES` per phase, then `digest HEX`
//! (FNV-1a over the paths and bytes read, so that two runs can be checked
//! to have read the same tree) and `done`. The walk before `read` or
//! `bulk`, when `stat` is not asked for, is untimed.
//!
//! Not compared with the oracle (`host/tests/guests.rs` lists it as a tool).

use std::fs::{self, File};
use std::io::Read;
use std::process::ExitCode;
use std::time::Instant;

/// Files of this size or more are `bulk`'s.
const BIG: u64 = 1 << 20;

struct Walk {
    files: Vec<(String, u64)>,
    entries: u64,
}

fn walk(root: &str) -> std::io::Result<Walk> {
    let mut out = Walk { files: Vec::new(), entries: 0 };
    let mut dirs = vec![root.to_string()];
    while let Some(dir) = dirs.pop() {
        let mut names: Vec<String> =
            fs::read_dir(&dir)?.map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned())).collect::<Result<_, _>>()?;
        names.sort();
        for name in names {
            let path = format!("{dir}/{name}");
            let meta = fs::symlink_metadata(&path)?;
            out.entries += 1;
            if meta.is_dir() {
                dirs.push(path);
            } else if meta.is_file() {
                out.files.push((path, meta.len()));
            }
        }
    }
    Ok(out)
}

fn fnv(h: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(h, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(phases), Some(root)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: tree_walk PHASES ROOT [WRITE_DIR]");
        return ExitCode::from(2);
    };
    match run(phases, root, args.get(3).map(String::as_str)) {
        Ok(digest) => {
            println!("digest {digest:016x}");
            println!("done");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("tree_walk: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(phases: &str, root: &str, write_dir: Option<&str>) -> Result<u64, String> {
    let mut digest = 0xcbf2_9ce4_8422_2325_u64;
    let mut tree = None;
    let mut buf = vec![0; 1 << 20];
    for phase in phases.split(',') {
        if matches!(phase, "read" | "bulk") && tree.is_none() {
            // Untimed: the walk is `stat`'s.
            tree = Some(walk(root).map_err(|e| format!("walking {root}: {e}"))?);
        }
        let start = Instant::now();
        let (ops, bytes) = match phase {
            "none" => (0, 0),
            "stat" => {
                let w = walk(root).map_err(|e| format!("walking {root}: {e}"))?;
                let ops = w.entries;
                tree = Some(w);
                (ops, 0)
            }
            "read" | "bulk" => reads(phase, tree.as_ref().ok_or("no tree")?, &mut buf, &mut digest)?,
            "write" => {
                let dir = write_dir.ok_or("write needs a WRITE_DIR")?;
                let data = vec![0x5a; 4096];
                for i in 0..1000 {
                    fs::write(format!("{dir}/w{i:04}"), &data).map_err(|e| format!("write {i}: {e}"))?;
                }
                for i in 0..1000 {
                    let got = fs::read(format!("{dir}/w{i:04}")).map_err(|e| format!("read back {i}: {e}"))?;
                    if got != data {
                        return Err(format!("w{i:04}: not what was written"));
                    }
                }
                (2000, 8 << 20)
            }
            other => return Err(format!("unknown phase {other}")),
        };
        println!("phase {phase} {} {ops} {bytes}", start.elapsed().as_nanos());
    }
    Ok(digest)
}

/// `read` or `bulk`: the files of its size, read through; (files, bytes).
fn reads(phase: &str, tree: &Walk, buf: &mut [u8], digest: &mut u64) -> Result<(u64, u64), String> {
    let (mut ops, mut bytes) = (0, 0);
    for (path, len) in &tree.files {
        if (*len >= BIG) != (phase == "bulk") {
            continue;
        }
        let mut f = File::open(path).map_err(|e| format!("{path}: {e}"))?;
        *digest = fnv(*digest, path.as_bytes());
        loop {
            let n = f.read(buf).map_err(|e| format!("{path}: {e}"))?;
            if n == 0 {
                break;
            }
            *digest = fnv(*digest, &buf[..n]);
            bytes += n as u64;
        }
        ops += 1;
    }
    Ok((ops, bytes))
}
