//! What a guest's descriptors hold inside, which no call shows: the one
//! test of preview1 that needs private state (the rest, by the public API
//! alone, are `core/tests/p1/`).

use std::sync::Arc;

use super::abi::{oflags, rights};
use super::io::Platform;
use super::{Entry, Wasi};
use crate::wasi::Access;
use crate::{FileSystem, MemFs, Timestamp};

struct Still;

impl Platform for Still {
    fn wall_clock(&self) -> Timestamp {
        Timestamp::new(0, 0)
    }
    fn monotonic_clock(&self) -> u64 {
        0
    }
    fn random(&mut self, buf: &mut [u8]) {
        buf.fill(0);
    }
    fn sleep(&mut self, _: u64) {}
}

/// The names a guest's descriptors keep for resuming their listings.
fn names_held(w: &Wasi) -> usize {
    w.fds
        .slots
        .iter()
        .flatten()
        .map(|e| if let Entry::Dir(d) = e { usize::from(d.listing.last.is_some()) } else { 0 })
        .sum()
}

fn u32_at(mem: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(mem[at..at + 4].try_into().unwrap())
}

#[test]
fn listings_hold_one_name_per_descriptor_whatever_the_buffers() {
    // A hostile guest: many descriptors on a big directory, each listed
    // with a buffer that holds all of it. Before, each kept every name it
    // was given (2,000 descriptors on 20,000 entries: 690 MB).
    let fs = Arc::new(MemFs::new());
    let big = fs.mkdir(fs.root(), "big", 0o755).unwrap();
    for i in 0..5_000 {
        fs.mkdir(big, &format!("entry-with-a-longish-name-{i:05}"), 0o755).unwrap();
    }
    let mut w = Wasi::builder(Box::new(Still)).preopen("/", fs, Access::ReadWrite).build().unwrap();
    // Memory: the result at 0, the path at 8, the listing buffer from 64.
    const BUF: u32 = 64;
    const LEN: u32 = 600_000;
    let mut mem = vec![0_u8; (BUF + LEN) as usize];
    mem[8..11].copy_from_slice(b"big");
    let mut fds = Vec::new();
    for _ in 0..200 {
        let dir = i32::from(oflags::DIRECTORY);
        w.path_open(&mut mem[..], 3, 1, 8, 3, dir, rights::FD_READDIR as i64, 0, 0, 0).unwrap();
        let fd = u32_at(&mem, 0);
        w.fd_readdir(&mut mem[..], fd, BUF, LEN, 0, 0).unwrap();
        assert!(u32_at(&mem, 0) < LEN, "the whole directory in one call");
        fds.push(fd);
    }
    assert_eq!(names_held(&w), 200);
    // Listing on from where a call ended, with small buffers, gives every
    // entry once and still keeps one name: the last entry given.
    let (mut cookie, mut listed) = (0, 0);
    loop {
        w.fd_readdir(&mut mem[..], fds[0], BUF, 4096, cookie, 0).unwrap();
        let used = u32_at(&mem, 0);
        let (mut at, mut last) = (BUF as usize, None);
        while at + 24 <= (BUF + used) as usize {
            let namlen = u32_at(&mem, at + 16) as usize;
            if at + 24 + namlen > (BUF + used) as usize {
                break;
            }
            last = Some(u64::from_le_bytes(mem[at..at + 8].try_into().unwrap()));
            listed += 1;
            at += 24 + namlen;
        }
        cookie = last.expect("a 4 KiB buffer holds a whole entry");
        if used < 4096 {
            break;
        }
    }
    assert_eq!(listed, 5_002, "the entries, `.` and `..`");
    assert_eq!(names_held(&w), 200);
}
