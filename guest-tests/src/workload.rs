//! What the guest workload of `bench/benches/guest.rs` is made of, shared
//! by its p1/p2 guest (`src/bin/bench_workload.rs`) and its WASI 0.3 guest
//! (`p3/src/bin/p3_bench_workload.rs`), which include this file as a
//! module: the phases, the files' contents and the piece sizes.

pub const SMALL: usize = 128;
pub const CHUNK: usize = 64 << 10;
/// The big file's default size.
pub const BIG_DEFAULT: usize = 64 << 20;
pub const ALL: &[&str] = &[
    "create", "read", "stat", "readdir", "unlink", "mkdir", "rmdir", "write4k", "read4k", "write64k", "read64k",
    "write1m", "read1m",
];
pub const RO: &[&str] = &["read", "stat", "readdir", "read4k", "read64k", "read1m"];

/// The PHASES argument as a list.
pub fn phases(arg: &str) -> Vec<&str> {
    match arg {
        "all" => ALL.to_vec(),
        "ro" => RO.to_vec(),
        list => list.split(',').collect(),
    }
}

/// The BIG_MIB argument in bytes (default [`BIG_DEFAULT`]).
pub fn big(arg: Option<&String>) -> Result<usize, String> {
    match arg.map(|m| m.parse::<usize>()) {
        None => Ok(BIG_DEFAULT),
        Some(Ok(mib)) if mib > 0 => Ok(mib << 20),
        Some(_) => Err("BIG_MIB must be a positive number".into()),
    }
}

/// A piece size: `4k`, `64k` or `1m`.
pub fn piece(s: &str) -> Result<usize, String> {
    match s {
        "4k" => Ok(4 << 10),
        "64k" => Ok(64 << 10),
        "1m" => Ok(1 << 20),
        _ => Err(format!("unknown piece size {s:?}")),
    }
}

/// The big file's bytes.
pub fn pattern(big: usize) -> Vec<u8> {
    let mut data = vec![0xa5u8; big];
    for (k, chunk) in data.chunks_mut(CHUNK).enumerate() {
        chunk[..8].copy_from_slice(&(k as u64).to_le_bytes());
    }
    data
}

/// Small file `i`'s contents.
pub fn small(i: usize) -> [u8; SMALL] {
    let mut buf = [b'.'; SMALL];
    buf[..5].copy_from_slice(format!("{i:05}").as_bytes());
    buf
}
