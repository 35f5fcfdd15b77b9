//! Preview1 on its own, through raw calls into a byte-array memory, by
//! its public API alone (what a descriptor holds inside is tested beside
//! it, in `src/wasi/p1/tests.rs`). The
//! behaviour against wasmtime's own preview1 is tested by the host (the
//! guest tests and the randomized differential test).
//!
//! - `per_call`: each call's behaviour: files, stdio, descriptors, listings,
//!   arguments, clocks, exit, the function table;
//! - `hostile`: any arguments at all, and results at the top of memory;
//! - `state`: what calls leave behind: inode numbers, a write as one
//!   change.
//!
//! Here: the fixtures they share.

mod hostile;
mod per_call;
mod state;

use std::sync::Arc;

use proptest::prelude::*;

use packfs_core::wasi::Access;
use packfs_core::wasi::p1::abi::{Errno, oflags, rights};
use packfs_core::wasi::p1::calls::{self, FUNCTIONS, ValType};
use packfs_core::wasi::p1::io::{Bytes, Capture, Platform};
use packfs_core::wasi::p1::*;
use packfs_core::{FileSystem, MemFs, Timestamp};

struct Fixed(u64);

impl Platform for Fixed {
    fn wall_clock(&self) -> Timestamp {
        Timestamp::new(1_700_000_000, 5)
    }
    fn monotonic_clock(&self) -> u64 {
        self.0
    }
    fn random(&mut self, buf: &mut [u8]) {
        buf.fill(0xa5);
    }
    fn sleep(&mut self, nanos: u64) {
        self.0 += nanos;
    }
}

const ROOT: u32 = 3;

fn wasi() -> (Wasi, Arc<MemFs>, Capture) {
    let fs = Arc::new(MemFs::new());
    let out = Capture::new(1 << 20);
    let wasi = Wasi::builder(Box::new(Fixed(0)))
        .args(["prog", "a b"])
        .env("K", "V")
        .stdin(Box::new(Bytes::new("input")))
        .stdout(Box::new(out.clone()))
        .preopen("/", fs.clone(), Access::ReadWrite)
        .build()
        .unwrap();
    (wasi, fs, out)
}

/// A guest memory with a bump allocator for arguments.
struct Mem {
    bytes: Vec<u8>,
    next: u32,
}

impl Mem {
    fn new() -> Self {
        Mem { bytes: vec![0; 1 << 16], next: 1024 }
    }
    fn put(&mut self, data: &[u8]) -> (u32, u32) {
        let at = self.next;
        self.bytes[at as usize..at as usize + data.len()].copy_from_slice(data);
        let len = u32::try_from(data.len()).unwrap();
        self.next += len.next_multiple_of(8).max(8);
        (at, len)
    }
    fn iovec(&mut self, bufs: &[(u32, u32)]) -> (u32, u32) {
        let rec: Vec<u8> = bufs.iter().flat_map(|&(p, l)| [p.to_le_bytes(), l.to_le_bytes()].concat()).collect();
        (self.put(&rec).0, u32::try_from(bufs.len()).unwrap())
    }
    fn u32(&self, at: u32) -> u32 {
        u32::from_le_bytes(self.bytes[at as usize..at as usize + 4].try_into().unwrap())
    }
    fn u64(&self, at: u32) -> u64 {
        u64::from_le_bytes(self.bytes[at as usize..at as usize + 8].try_into().unwrap())
    }
    fn at(&self, at: u32, len: u32) -> &[u8] {
        &self.bytes[at as usize..(at + len) as usize]
    }
}

const OUT: u32 = 0;

fn open(w: &mut Wasi, m: &mut Mem, path: &str, o: u16, base: u64) -> Result<u32> {
    let (p, l) = m.put(path.as_bytes());
    w.path_open(&mut m.bytes[..], ROOT, 1, p, l, i32::from(o), base as i64, 0, 0, OUT)?;
    Ok(m.u32(OUT))
}

fn write(w: &mut Wasi, m: &mut Mem, fd: u32, data: &[&[u8]]) -> Result<u32> {
    let bufs: Vec<(u32, u32)> = data.iter().map(|d| m.put(d)).collect();
    let (iovs, n) = m.iovec(&bufs);
    w.fd_write(&mut m.bytes[..], fd, iovs, n, OUT)?;
    Ok(m.u32(OUT))
}

fn read(w: &mut Wasi, m: &mut Mem, fd: u32, lens: &[u32]) -> Result<Vec<u8>> {
    let bufs: Vec<(u32, u32)> = lens.iter().map(|&l| m.put(&vec![0; l as usize])).collect();
    let (iovs, n) = m.iovec(&bufs);
    w.fd_read(&mut m.bytes[..], fd, iovs, n, OUT)?;
    let mut got = m.u32(OUT) as usize;
    let mut out = Vec::new();
    for (p, l) in bufs {
        let take = got.min(l as usize);
        out.extend_from_slice(m.at(p, u32::try_from(take).unwrap()));
        got -= take;
    }
    Ok(out)
}

/// Reads a whole listing with buffers of `len` bytes, resuming each call
/// at the last entry read whole, as wasi-libc does.
fn list(w: &mut Wasi, m: &mut Mem, fd: u32, len: u32) -> Vec<(u64, String)> {
    let (buf, _) = m.put(&vec![0; len as usize]);
    let mut cookie = 0;
    let mut out = Vec::new();
    loop {
        w.fd_readdir(&mut m.bytes[..], fd, buf, len, cookie, OUT).unwrap();
        let used = m.u32(OUT);
        let mut at = 0;
        let mut progressed = false;
        while at + 24 <= used {
            let next = m.u64(buf + at);
            let namlen = m.u32(buf + at + 16);
            if at + 24 + namlen > used {
                break;
            }
            let name = String::from_utf8(m.at(buf + at + 24, namlen).to_vec()).unwrap();
            out.push((next, name));
            cookie = next;
            progressed = true;
            at += 24 + namlen;
        }
        if used < len {
            return out;
        }
        assert!(progressed, "a buffer of {len} bytes holds no whole entry");
    }
}
