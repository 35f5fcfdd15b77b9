//! Preview1 on its own, through raw calls into a byte-array memory. The
//! behaviour against wasmtime's own preview1 is tested by the host (the
//! guest tests and the randomized differential test).

use std::sync::Arc;

use proptest::prelude::*;

use super::abi::{Errno, oflags, rights};
use super::calls::{self, FUNCTIONS, ValType};
use super::io::{Bytes, Capture, Platform};
use super::*;
use crate::{MemFs, Timestamp};

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

#[test]
fn files_are_written_read_and_sought_through_every_iovec() {
    let (mut w, _, _) = wasi();
    let mut m = Mem::new();
    let fd = open(&mut w, &mut m, "f", oflags::CREAT, rights::FD_READ | rights::FD_WRITE).unwrap();
    assert_eq!(fd, 4);
    assert_eq!(write(&mut w, &mut m, fd, &[b"hello ", b"", b"world"]), Ok(11));
    w.fd_tell(&mut m.bytes[..], fd, OUT).unwrap();
    assert_eq!(m.u64(OUT), 11);
    w.fd_seek(&mut m.bytes[..], fd, 0, 0, OUT).unwrap();
    assert_eq!(read(&mut w, &mut m, fd, &[3, 100]), Ok(b"hello world".to_vec()));
    assert_eq!(read(&mut w, &mut m, fd, &[10]), Ok(vec![]), "at the end");
    assert_eq!(w.fd_seek(&mut m.bytes[..], fd, -1, 0, OUT), Err(Errno::INVAL));
    assert_eq!(w.fd_seek(&mut m.bytes[..], fd, -20, 1, OUT), Err(Errno::INVAL));
    assert_eq!(w.fd_seek(&mut m.bytes[..], fd, 0, 3, OUT), Err(Errno::INVAL), "no such whence");
    assert_eq!(w.fd_seek(&mut m.bytes[..], fd, 0, 256, OUT), Err(Errno::OVERFLOW), "not a u8");
    w.fd_seek(&mut m.bytes[..], fd, -5, 2, OUT).unwrap();
    assert_eq!(read(&mut w, &mut m, fd, &[5]), Ok(b"world".to_vec()));
    // Stdio: no seeking, and pwrite is SPIPE.
    assert_eq!(w.fd_seek(&mut m.bytes[..], 1, 0, 0, OUT), Err(Errno::SPIPE));
    assert_eq!(w.fd_tell(&mut m.bytes[..], 0, OUT), Err(Errno::SPIPE));
    assert_eq!(w.fd_seek(&mut m.bytes[..], ROOT, 0, 0, OUT), Err(Errno::BADF));
}

/// The iovec records are read once, when the call begins (as wasmtime
/// reads them): a read whose first buffer lies over the second record
/// still fills the buffer the second record named then.
#[test]
fn a_read_over_its_own_iovec_array_goes_where_the_array_first_said() {
    let (mut w, _, _) = wasi();
    let mut m = Mem::new();
    let (b, _) = m.put(&[0; 8]);
    let (c, _) = m.put(&[0; 8]);
    // The file's first 8 bytes are a record naming `c`.
    let data: Vec<u8> = [c.to_le_bytes(), 8u32.to_le_bytes()].concat().into_iter().chain(*b"rest-8by").collect();
    let fd = open(&mut w, &mut m, "f", oflags::CREAT, rights::FD_READ | rights::FD_WRITE).unwrap();
    assert_eq!(write(&mut w, &mut m, fd, &[&data]), Ok(16));
    w.fd_seek(&mut m.bytes[..], fd, 0, 0, OUT).unwrap();
    // Record 0 names the 8 bytes of record 1; record 1 names `b`.
    let (iovs, _) = m.iovec(&[(0, 0), (b, 8)]);
    m.bytes[iovs as usize..iovs as usize + 4].copy_from_slice(&(iovs + 8).to_le_bytes());
    m.bytes[iovs as usize + 4..iovs as usize + 8].copy_from_slice(&8u32.to_le_bytes());
    w.fd_read(&mut m.bytes[..], fd, iovs, 2, OUT).unwrap();
    assert_eq!(m.u32(OUT), 16);
    assert_eq!(m.at(iovs + 8, 8), &data[..8]);
    assert_eq!(m.at(b, 8), b"rest-8by");
    assert_eq!(m.at(c, 8), &[0; 8], "not where the overwritten record names");
}

/// An input that says it read 2^32 + 3 bytes into any buffer: `nread`
/// was that count cut to 32 bits (3) when the memory lends its bytes; it
/// is now held to the buffer's length.
#[test]
fn an_input_claiming_more_than_its_buffer_counts_the_buffer() {
    struct Liar;
    impl super::io::Input for Liar {
        fn read(&mut self, buf: &mut [u8]) -> std::result::Result<usize, Errno> {
            buf.fill(b'x');
            Ok((1 << 32) + 3)
        }
    }
    let mut w = Wasi::builder(Box::new(Fixed(0))).stdin(Box::new(Liar)).build().unwrap();
    let mut m = Mem::new();
    assert_eq!(read(&mut w, &mut m, 0, &[8]), Ok(b"xxxxxxxx".to_vec()));
}

#[test]
fn append_mode_writes_at_the_end_and_moves_there() {
    let (mut w, _, _) = wasi();
    let mut m = Mem::new();
    let fd = open(&mut w, &mut m, "f", oflags::CREAT, rights::FD_WRITE).unwrap();
    write(&mut w, &mut m, fd, &[b"abc"]).unwrap();
    w.fd_fdstat_set_flags(&mut m.bytes[..], fd, i32::from(abi::fdflags::APPEND)).unwrap();
    w.fd_seek(&mut m.bytes[..], fd, 0, 0, OUT).unwrap();
    write(&mut w, &mut m, fd, &[b"de"]).unwrap();
    w.fd_tell(&mut m.bytes[..], fd, OUT).unwrap();
    assert_eq!(m.u64(OUT), 5);
    assert_eq!(w.fd_fdstat_set_flags(&mut m.bytes[..], fd, i32::from(abi::fdflags::SYNC)), Err(Errno::INVAL));
    // Read on a write-only descriptor, write on a read-only one.
    assert_eq!(read(&mut w, &mut m, fd, &[4]), Err(Errno::BADF));
    let r = open(&mut w, &mut m, "f", 0, rights::FD_READ).unwrap();
    assert_eq!(write(&mut w, &mut m, r, &[b"x"]), Err(Errno::BADF));
    assert_eq!(write(&mut w, &mut m, r, &[]), Err(Errno::BADF), "even with nothing to write");
    assert_eq!(read(&mut w, &mut m, r, &[10]), Ok(b"abcde".to_vec()));
}

#[test]
fn stdio_reads_the_input_and_writes_the_output() {
    let (mut w, _, out) = wasi();
    let mut m = Mem::new();
    assert_eq!(write(&mut w, &mut m, 1, &[b"to ", b"stdout"]), Ok(9));
    assert_eq!(out.contents(), b"to stdout");
    assert_eq!(read(&mut w, &mut m, 0, &[0, 3, 10]), Ok(b"inp".to_vec()), "one read, into the first buffer");
    assert_eq!(read(&mut w, &mut m, 0, &[10]), Ok(b"ut".to_vec()));
    assert_eq!(write(&mut w, &mut m, 0, &[b"x"]), Err(Errno::BADF));
    assert_eq!(read(&mut w, &mut m, 1, &[1]), Err(Errno::BADF));
    assert_eq!(write(&mut w, &mut m, 77, &[]), Err(Errno::BADF), "a zero-length write to a bad fd");
}

#[test]
fn descriptors_are_numbered_as_wasmtime_numbers_them() {
    let (mut w, _, _) = wasi();
    let mut m = Mem::new();
    let fds: Vec<u32> =
        (0..3).map(|i| open(&mut w, &mut m, &format!("f{i}"), oflags::CREAT, rights::FD_WRITE).unwrap()).collect();
    assert_eq!(fds, [4, 5, 6]);
    w.fd_close(&mut m.bytes[..], 4).unwrap();
    w.fd_close(&mut m.bytes[..], 5).unwrap();
    assert_eq!(w.fd_close(&mut m.bytes[..], 5), Err(Errno::BADF));
    // The highest freed number first.
    assert_eq!(open(&mut w, &mut m, "f0", 0, rights::FD_READ), Ok(5));
    assert_eq!(open(&mut w, &mut m, "f0", 0, rights::FD_READ), Ok(4));
    assert_eq!(open(&mut w, &mut m, "f0", 0, rights::FD_READ), Ok(7));
    assert_eq!(w.fd_renumber(&mut m.bytes[..], 7, 9), Err(Errno::BADF), "the target must be open");
    w.fd_renumber(&mut m.bytes[..], 7, 4).unwrap();
    assert_eq!(w.fd_tell(&mut m.bytes[..], 7, OUT), Err(Errno::BADF));
    w.fd_tell(&mut m.bytes[..], 4, OUT).unwrap();
    assert_eq!(open(&mut w, &mut m, "f0", 0, rights::FD_READ), Ok(7));
    w.fd_renumber(&mut m.bytes[..], 4, 4).unwrap();
}

#[test]
fn a_guest_cannot_hold_more_descriptors_than_allowed() {
    let fs = Arc::new(MemFs::new());
    let mut w = Wasi::builder(Box::new(Fixed(0))).preopen("/", fs, Access::ReadWrite).max_fds(6).build().unwrap();
    let mut m = Mem::new();
    assert_eq!(open(&mut w, &mut m, "a", oflags::CREAT, rights::FD_WRITE), Ok(4));
    assert_eq!(open(&mut w, &mut m, "b", oflags::CREAT, rights::FD_WRITE), Ok(5));
    assert_eq!(open(&mut w, &mut m, "c", oflags::CREAT, rights::FD_WRITE), Err(Errno::MFILE));
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

#[test]
fn listings_resume_at_their_cookies_whatever_the_buffer() {
    let (mut w, fs, _) = wasi();
    let mut m = Mem::new();
    for i in 0..300 {
        crate::FileSystem::mkdir(&*fs, fs.root(), &format!("d{i:03}"), 0o755).unwrap();
    }
    let mut want: Vec<String> = vec![".".into(), "..".into()];
    want.extend((0..300).map(|i| format!("d{i:03}")));
    for len in [30, 31, 64, 100, 4096, 60_000] {
        let got = list(&mut w, &mut m, ROOT, len);
        let names: Vec<&str> = got.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(names, want, "buffer {len}");
        let cookies: Vec<u64> = got.iter().map(|(c, _)| *c).collect();
        assert_eq!(cookies, (1..=302).collect::<Vec<u64>>(), "buffer {len}");
    }
    // A cookie not from the last call still finds its place (a seekdir).
    let (buf, _) = m.put(&[0; 100]);
    w.fd_readdir(&mut m.bytes[..], ROOT, buf, 100, 250, OUT).unwrap();
    assert_eq!(m.at(buf + 24, 4), b"d248");
    w.fd_readdir(&mut m.bytes[..], ROOT, buf, 100, 9999, OUT).unwrap();
    assert_eq!(m.u32(OUT), 0, "past the end");
    // A buffer too small for one header is filled with what fits.
    w.fd_readdir(&mut m.bytes[..], ROOT, buf, 10, 0, OUT).unwrap();
    assert_eq!(m.u32(OUT), 10);
    w.fd_readdir(&mut m.bytes[..], ROOT, buf, 0, 0, OUT).unwrap();
    assert_eq!(m.u32(OUT), 0);
}

#[test]
fn args_and_environment_are_laid_out_as_c_expects() {
    let (mut w, _, _) = wasi();
    let mut m = Mem::new();
    w.args_sizes_get(&mut m.bytes[..], 0, 4).unwrap();
    assert_eq!((m.u32(0), m.u32(4)), (2, 9));
    w.args_get(&mut m.bytes[..], 100, 200).unwrap();
    assert_eq!((m.u32(100), m.u32(104)), (200, 205));
    assert_eq!(m.at(200, 9), b"prog\0a b\0");
    w.environ_sizes_get(&mut m.bytes[..], 0, 4).unwrap();
    assert_eq!((m.u32(0), m.u32(4)), (1, 4));
    w.environ_get(&mut m.bytes[..], 100, 200).unwrap();
    assert_eq!(m.at(200, 4), b"K=V\0");
    assert_eq!(w.args_get(&mut m.bytes[..], 100, 65_535), Err(Errno::FAULT));
}

#[test]
fn clocks_random_and_poll() {
    let (mut w, _, _) = wasi();
    let mut m = Mem::new();
    w.clock_time_get(&mut m.bytes[..], 0, 0, OUT).unwrap();
    assert_eq!(m.u64(OUT), 1_700_000_000_000_000_005);
    assert_eq!(w.clock_time_get(&mut m.bytes[..], 2, 0, OUT), Err(Errno::BADF), "CPU time");
    assert_eq!(w.clock_time_get(&mut m.bytes[..], 4, 0, OUT), Err(Errno::INVAL));
    w.random_get(&mut m.bytes[..], 64, 5).unwrap();
    assert_eq!(m.at(64, 5), [0xa5; 5]);
    // A relative monotonic sleep of 1 ms, then a poll of a clock and stdout.
    let mut sub = [0u8; 96];
    sub[0..8].copy_from_slice(&7u64.to_le_bytes());
    sub[16..20].copy_from_slice(&1u32.to_le_bytes());
    sub[24..32].copy_from_slice(&1_000_000u64.to_le_bytes());
    let (subs, _) = m.put(&sub);
    let (events, _) = m.put(&[0; 64]);
    w.poll_oneoff(&mut m.bytes[..], subs, events, 1, OUT).unwrap();
    assert_eq!((m.u32(OUT), m.u64(events)), (1, 7));
    sub[48..56].copy_from_slice(&9u64.to_le_bytes());
    sub[56] = abi::eventtype::FD_WRITE;
    sub[64..68].copy_from_slice(&1u32.to_le_bytes());
    let (subs, _) = m.put(&sub);
    w.poll_oneoff(&mut m.bytes[..], subs, events, 2, OUT).unwrap();
    assert_eq!(m.u32(OUT), 1, "stdout is ready, the clock not yet");
    assert_eq!((m.u64(events), m.bytes[events as usize + 10]), (9, abi::eventtype::FD_WRITE));
    assert_eq!(w.poll_oneoff(&mut m.bytes[..], subs, events, 0, OUT), Err(Errno::INVAL));
}

#[test]
fn proc_exit_is_an_exit_and_sockets_are_not_sockets() {
    let (mut w, _, _) = wasi();
    let mut m = Mem::new();
    assert_eq!(w.proc_exit(&mut m.bytes[..], 300), Exit(300));
    assert_eq!(w.sock_shutdown(&mut m.bytes[..], 1, 1), Err(Errno::NOTSOCK));
    assert_eq!(w.sock_shutdown(&mut m.bytes[..], 99, 1), Err(Errno::BADF));
    assert_eq!(w.sock_shutdown(&mut m.bytes[..], 1, 4), Err(Errno::INVAL));
    assert_eq!(w.proc_raise(&mut m.bytes[..], 31), Err(Errno::INVAL));
    assert_eq!(w.proc_raise(&mut m.bytes[..], 6), Err(Errno::NOTSUP));
}

#[test]
fn every_function_is_in_the_table_once() {
    let mut names: Vec<&str> = FUNCTIONS.iter().map(|(n, _)| *n).collect();
    assert_eq!(names.len(), 46, "wasi_snapshot_preview1 has 46 functions");
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 46);
    let (mut w, _, _) = wasi();
    let mut m = Mem::new();
    assert_eq!(calls::call(&mut w, &mut m.bytes[..], "fd_close", &[99]), Some(Ok(Some(8))));
    assert_eq!(calls::call(&mut w, &mut m.bytes[..], "fd_close", &[]), None, "too few arguments");
    assert_eq!(calls::call(&mut w, &mut m.bytes[..], "fd_closed", &[1]), None);
    assert_eq!(calls::call(&mut w, &mut m.bytes[..], "proc_exit", &[3]), Some(Err(Exit(3))));
}

/// Arguments a hostile guest might pass: pointers and lengths at and past
/// the end of memory, and the extremes.
fn hostile_arg(ty: ValType) -> impl Strategy<Value = i64> {
    let edges = prop_oneof![
        Just(0i64),
        Just(1),
        Just(3),
        Just(4),
        Just(65_535),
        Just(65_536),
        Just(65_530),
        Just(u32::MAX as i64),
        Just(i32::MAX as i64),
        Just(-1),
        Just(i64::MIN),
        Just(i64::MAX),
        0i64..70_000,
        any::<u32>().prop_map(i64::from),
    ];
    match ty {
        ValType::I32 => edges.prop_map(|v| v & 0xffff_ffff).boxed(), // its low 32 bits
        ValType::I64 => edges.boxed(),
    }
}

fn hostile_call() -> impl Strategy<Value = (usize, Vec<i64>)> {
    (0..FUNCTIONS.len()).prop_flat_map(|i| {
        let args: Vec<_> = FUNCTIONS[i].1.iter().map(|&t| hostile_arg(t)).collect();
        (Just(i), args)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any sequence of calls with any arguments gets errnos: no panic, no
    /// write outside memory (the memory is exactly 64 KiB), and the tree
    /// stays consistent.
    #[test]
    fn hostile_calls_get_errnos(calls in proptest::collection::vec(hostile_call(), 1..40)) {
        let (mut w, fs, _) = wasi();
        let mut m = Mem::new();
        // A few real files and names in memory for the calls to find.
        open(&mut w, &mut m, "f", oflags::CREAT, rights::FD_READ | rights::FD_WRITE).unwrap();
        m.bytes[0..1].copy_from_slice(b"f");
        for (i, args) in calls {
            let name = FUNCTIONS[i].0;
            if name == "poll_oneoff" && args[2] & 0xffff_ffff > 8 {
                continue; // sleeps are the platform's; this one's clock only counts.
            }
            let r = calls::call(&mut w, &mut m.bytes[..], name, &args);
            prop_assert!(r.is_some(), "{name}");
            if let Some(Ok(Some(errno))) = r {
                prop_assert!((0..=76).contains(&errno), "{name}: errno {errno}");
            }
        }
        prop_assert_eq!(m.bytes.len(), 1 << 16);
        prop_assert_eq!(fs.snapshot().check_consistency(), Ok(()));
    }
}

/// A 4 GiB memory of which only the top 64 KiB is backed: the highest
/// addresses a wasm32 guest has, where `ptr + len` is 2^32.
struct Top(Vec<u8>);

impl Top {
    const BASE: u64 = (1 << 32) - (1 << 16);
    fn new() -> Self {
        Top(vec![0; 1 << 16])
    }
    fn at(&self, ptr: u64, len: usize) -> &[u8] {
        &self.0[usize::try_from(ptr - Self::BASE).unwrap()..][..len]
    }
}

impl Memory for Top {
    fn size(&self) -> u64 {
        1 << 32
    }
    fn read(&self, ptr: u32, buf: &mut [u8]) {
        buf.copy_from_slice(&self.0[usize::try_from(u64::from(ptr) - Self::BASE).unwrap()..][..buf.len()]);
    }
    fn write(&mut self, ptr: u32, data: &[u8]) {
        self.0[usize::try_from(u64::from(ptr) - Self::BASE).unwrap()..][..data.len()].copy_from_slice(data);
    }
}

#[test]
fn results_ending_at_the_top_of_a_4_gib_memory_are_written_whole() {
    let (mut w, fs, _) = wasi();
    let top = |len: u64| u32::try_from((1u64 << 32) - len).unwrap();
    let mut m = Top::new();
    // Arguments: "prog\0a b\0", its last NUL the last byte of memory.
    w.args_get(&mut m, top(64), top(9)).unwrap();
    assert_eq!(m.at(u64::from(top(9)), 9), b"prog\0a b\0");
    w.environ_get(&mut m, top(64), top(4)).unwrap();
    assert_eq!(m.at(u64::from(top(4)), 4), b"K=V\0");
    // A listing filling a buffer that ends there.
    crate::FileSystem::mkdir(&*fs, fs.root(), "d", 0o755).unwrap();
    w.fd_readdir(&mut m, ROOT, top(100), 100, 0, top(200)).unwrap();
    assert_eq!(m.at(u64::from(top(200)), 4), 76u32.to_le_bytes(), "., .. and d: 24 + 1 + 24 + 2 + 24 + 1");
    w.fd_readdir(&mut m, ROOT, top(50), 50, 0, top(200)).unwrap();
    assert_eq!(m.at(u64::from(top(200)), 4), 50u32.to_le_bytes());
    // Random bytes, and a read of a file, into the last bytes.
    w.random_get(&mut m, top(16), 16).unwrap();
    assert_eq!(m.at(u64::from(top(16)), 16), [0xa5; 16]);
    let f = crate::FileSystem::open(&*fs, fs.root(), "f", &crate::OpenOptions::create()).unwrap();
    crate::FileSystem::write_at(&*fs, f, 0, b"the end").unwrap();
    m.write(top(300), b"f");
    w.path_open(&mut m, ROOT, 0, top(300), 1, 0, rights::FD_READ as i64, 0, 0, top(296)).unwrap();
    let fd = u32::from_le_bytes(m.at(u64::from(top(296)), 4).try_into().unwrap());
    let iov = [top(7).to_le_bytes(), 7u32.to_le_bytes()].concat();
    m.write(top(316), &iov);
    w.fd_read(&mut m, fd, top(316), 1, top(320)).unwrap();
    assert_eq!(m.at(u64::from(top(7)), 7), b"the end");
    // One byte more is outside memory.
    assert_eq!(w.args_get(&mut m, top(64), top(8)), Err(Errno::FAULT));
}

/// The fd_filestat_get `ino` of `path` under the first preopen.
fn ino_of(w: &mut Wasi, path: &str) -> u64 {
    let mut m = Mem::new();
    let (p, l) = m.put(path.as_bytes());
    w.path_filestat_get(&mut m.bytes[..], ROOT, 0, p, l, 512).unwrap();
    m.u64(512 + 8)
}

#[test]
fn inode_numbers_come_from_what_the_guest_sees_not_from_host_addresses() {
    // The same tree in two allocations, each a guest's own: the numbers
    // cannot depend on where the host keeps them.
    let guest = |fs: Arc<MemFs>, also: Option<Arc<MemFs>>| {
        let mut b = Wasi::builder(Box::new(Fixed(0))).preopen("/", fs.clone(), Access::ReadWrite);
        if let Some(other) = also {
            b = b.preopen("/other", other, Access::ReadWrite);
        }
        b.preopen("/again", fs, Access::ReadWrite).build().unwrap()
    };
    let tree = || {
        let fs = Arc::new(MemFs::new());
        crate::FileSystem::mkdir(&*fs, fs.root(), "d", 0o755).unwrap();
        fs
    };
    let (mut a, mut b) = (guest(tree(), None), guest(tree(), Some(tree())));
    assert_eq!(ino_of(&mut a, "."), ino_of(&mut b, "."));
    assert_eq!(ino_of(&mut a, "d"), ino_of(&mut b, "d"));
    assert_ne!(ino_of(&mut a, "."), ino_of(&mut a, "d"));
    // One filesystem preopened twice is one device; another is another.
    let stat_root = |w: &mut Wasi, fd: u32| {
        let mut m = Mem::new();
        w.fd_filestat_get(&mut m.bytes[..], fd, 512).unwrap();
        m.u64(512 + 8)
    };
    assert_eq!(stat_root(&mut a, 3), stat_root(&mut a, 4));
    assert_eq!(stat_root(&mut b, 3), stat_root(&mut b, 5));
    assert_ne!(stat_root(&mut b, 3), stat_root(&mut b, 4));
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

#[test]
fn listings_hold_one_name_per_descriptor_whatever_the_buffers() {
    // A hostile guest: many descriptors on a big directory, each listed
    // with a buffer that holds all of it. Before, each kept every name it
    // was given (2,000 descriptors on 20,000 entries: 690 MB).
    let fs = Arc::new(MemFs::new());
    let big = crate::FileSystem::mkdir(&*fs, fs.root(), "big", 0o755).unwrap();
    for i in 0..5_000 {
        crate::FileSystem::mkdir(&*fs, big, &format!("entry-with-a-longish-name-{i:05}"), 0o755).unwrap();
    }
    let mut w = Wasi::builder(Box::new(Fixed(0))).preopen("/", fs, Access::ReadWrite).build().unwrap();
    let mut m = Mem { bytes: vec![0; 1 << 20], next: 1024 };
    let (buf, _) = m.put(&vec![0; 600_000]);
    let mut fds = Vec::new();
    for _ in 0..200 {
        let fd = open(&mut w, &mut m, "big", oflags::DIRECTORY, rights::FD_READDIR).unwrap();
        w.fd_readdir(&mut m.bytes[..], fd, buf, 600_000, 0, OUT).unwrap();
        assert!(m.u32(OUT) < 600_000, "the whole directory in one call");
        fds.push(fd);
    }
    assert_eq!(names_held(&w), 200);
    // Listing on from where a call ended still resumes after its name.
    let got = list(&mut w, &mut m, fds[0], 4096);
    assert_eq!(got.len(), 5_002);
    assert_eq!(names_held(&w), 200);
}

/// A guest memory that lends no slices: its bytes reach the host copied,
/// a MiB at a time, as the browser's do.
struct Copied<'a>(&'a mut [u8]);

impl Memory for Copied<'_> {
    fn size(&self) -> u64 {
        self.0.size()
    }
    fn read(&self, ptr: u32, buf: &mut [u8]) {
        self.0.read(ptr, buf);
    }
    fn write(&mut self, ptr: u32, data: &[u8]) {
        self.0.write(ptr, data);
    }
}

/// A journal that counts the records it is given.
#[derive(Default)]
struct Counted(std::sync::atomic::AtomicU64);

impl crate::mem::Log for Counted {
    fn record(&self, _: &crate::mem::Op<'_>, _: Timestamp) -> crate::Result<u64> {
        Ok(self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1)
    }
    fn durable(&self, _: u64) -> crate::Result<()> {
        Ok(())
    }
    fn durable_before_visible(&self) -> bool {
        true
    }
}

/// One write is one change, however many iovecs it names and however its
/// bytes reach the host: under a 2 MiB quota a write of 3 MiB + 5 is
/// refused whole (EDQUOT, nothing written), one that fits lands whole, and
/// a journaled tree records it once. Through a memory that lends no slices
/// the bytes came a MiB at a time, each piece its own change: the write
/// was cut short at the quota (1 MiB written, "ok"), and a journal took a
/// record (and a flush) per MiB.
#[test]
fn a_write_is_one_change_whatever_its_iovecs_and_memory() {
    let quota = crate::mem::Limits { max_bytes: Some(2 << 20), max_inodes: None };
    let journal = Arc::new(Counted::default());
    let trees = [
        Arc::new(MemFs::with_options(quota, crate::system_clock())),
        Arc::new(MemFs::journaled(
            crate::mem::Tree::new(Timestamp::new(0, 0), quota),
            journal.clone(),
            crate::system_clock(),
        )),
    ];
    for (journaled, fs) in trees.into_iter().enumerate() {
        for (lend, split) in [(true, false), (true, true), (false, false), (false, true)] {
            let mut w = Wasi::builder(Box::new(Fixed(0))).preopen("/", fs.clone(), Access::ReadWrite).build().unwrap();
            let mut m = Mem { bytes: vec![0; 8 << 20], next: 1024 };
            let name = format!("f-{lend}-{split}");
            let fd = open(&mut w, &mut m, &name, oflags::CREAT, rights::FD_WRITE | rights::FD_FILESTAT_GET).unwrap();
            let mut write = |m: &mut Mem, len: usize| {
                let data: Vec<u8> = (0..len).map(|i| u8::try_from(i % 251).unwrap()).collect();
                let parts: Vec<&[u8]> = if split { data.chunks(len / 3 + 1).collect() } else { vec![&data] };
                let bufs: Vec<(u32, u32)> = parts.iter().map(|d| m.put(d)).collect();
                let (iovs, n) = m.iovec(&bufs);
                let before = journal.0.load(std::sync::atomic::Ordering::Relaxed);
                let r = match lend {
                    true => w.fd_write(&mut m.bytes[..], fd, iovs, n, OUT),
                    false => w.fd_write(&mut Copied(&mut m.bytes[..]), fd, iovs, n, OUT),
                };
                let records = journal.0.load(std::sync::atomic::Ordering::Relaxed) - before;
                (r.map(|()| m.u32(OUT)), data, records)
            };
            let (r, _, records) = write(&mut m, (3 << 20) + 5);
            assert_eq!(r, Err(Errno::DQUOT), "lend {lend}, split {split}");
            assert_eq!(records, 0);
            let ino = fs.lookup(fs.root(), &name).unwrap();
            assert_eq!(fs.metadata(ino).unwrap().size, 0, "lend {lend}, split {split}: nothing written");
            m.next = 1024;
            let (r, data, records) = write(&mut m, (1 << 20) + 7);
            assert_eq!(r, Ok((1 << 20) + 7), "lend {lend}, split {split}");
            let mut back = vec![0; data.len()];
            fs.read_at(ino, 0, &mut back).unwrap();
            assert!(back == data, "lend {lend}, split {split}: the bytes");
            if journaled == 1 {
                assert_eq!(records, 1, "lend {lend}, split {split}: one record");
            }
            fs.unlink(fs.root(), &name).unwrap();
        }
    }
}
