//! Each call's behaviour, through raw calls.

use super::*;

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
    impl packfs_core::wasi::p1::io::Input for Liar {
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

#[test]
fn listings_resume_at_their_cookies_whatever_the_buffer() {
    let (mut w, fs, _) = wasi();
    let mut m = Mem::new();
    for i in 0..300 {
        packfs_core::FileSystem::mkdir(&*fs, fs.root(), &format!("d{i:03}"), 0o755).unwrap();
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

/// A regular file is ready for reading and writing whatever it was opened
/// for, as `poll(2)` on Linux (and wasmtime) says: the read or write then
/// refuses. A read subscription at the end of the file reports a hangup.
#[test]
fn a_file_polls_ready_whatever_it_was_opened_for() {
    let (mut w, _, _) = wasi();
    let mut m = Mem::new();
    let wo = open(&mut w, &mut m, "w", oflags::CREAT, rights::FD_WRITE).unwrap();
    assert_eq!(write(&mut w, &mut m, wo, &[b"abc"]), Ok(3));
    let ro = open(&mut w, &mut m, "w", 0, rights::FD_READ).unwrap();
    // `wo` is at its end (a hangup), `ro` at its start.
    for (fd, kind, flags) in [(wo, abi::eventtype::FD_READ, 1), (ro, abi::eventtype::FD_WRITE, 0)] {
        let mut sub = [0u8; 48];
        sub[0..8].copy_from_slice(&u64::from(fd).to_le_bytes());
        sub[8] = kind;
        sub[16..20].copy_from_slice(&fd.to_le_bytes());
        let (subs, _) = m.put(&sub);
        let (events, _) = m.put(&[0xff; 32]);
        w.poll_oneoff(&mut m.bytes[..], subs, events, 1, OUT).unwrap();
        assert_eq!(m.u32(OUT), 1, "fd {fd} ready");
        let error = u16::from_le_bytes([m.bytes[events as usize + 8], m.bytes[events as usize + 9]]);
        let got_flags = u16::from_le_bytes([m.bytes[events as usize + 24], m.bytes[events as usize + 25]]);
        assert_eq!((m.u64(events), error, m.bytes[events as usize + 10], got_flags), (u64::from(fd), 0, kind, flags));
    }
    assert_eq!(read(&mut w, &mut m, wo, &[3]), Err(Errno::BADF), "the read itself refuses");
    assert_eq!(write(&mut w, &mut m, ro, &[b"x"]), Err(Errno::BADF), "and the write");
}

/// A path ending in `/` where Linux looks no further than the name:
/// `open(O_CREAT)` is `EISDIR` before the name is looked up, and
/// `unlink` refuses the name for what it is itself, a symlink unfollowed.
#[test]
fn a_slash_refuses_create_and_unlink_for_the_name_itself() {
    let (mut w, fs, _) = wasi();
    let mut m = Mem::new();
    fs.mkdir(fs.root(), "d", 0o755).unwrap();
    let f = fs.open(fs.root(), "f", &packfs_core::OpenOptions::create()).unwrap();
    fs.close(f);
    fs.symlink(fs.root(), "ld", "d").unwrap();
    fs.symlink(fs.root(), "loop", "loop").unwrap();
    fs.symlink(fs.root(), "dangling", "none").unwrap();
    for path in ["d/", "f/", "ld/", "loop/", "dangling/", "none/"] {
        for o in [oflags::CREAT, oflags::CREAT | oflags::EXCL] {
            assert_eq!(open(&mut w, &mut m, path, o, rights::FD_READ), Err(Errno::ISDIR), "open({path}, {o})");
        }
    }
    assert_eq!(open(&mut w, &mut m, "none/x/", oflags::CREAT, rights::FD_READ), Err(Errno::NOENT), "the walk first");
    // A symlink's target ending in `/.` is walked into, as the path's own.
    for (target, errno) in [("f/.", Errno::NOTDIR), ("d/.", Errno::ISDIR), ("none/.", Errno::NOENT)] {
        fs.symlink(fs.root(), "dot", target).unwrap();
        assert_eq!(open(&mut w, &mut m, "dot", oflags::CREAT, rights::FD_READ), Err(errno), "dot -> {target}");
        fs.unlink(fs.root(), "dot").unwrap();
    }
    let mut unlink = |path: &str| {
        let (p, l) = m.put(path.as_bytes());
        w.path_unlink_file(&mut m.bytes[..], ROOT, p, l)
    };
    for (path, errno) in [
        ("d/", Errno::ISDIR),
        ("f/", Errno::NOTDIR),
        ("ld/", Errno::NOTDIR),
        ("loop/", Errno::NOTDIR),
        ("dangling/", Errno::NOTDIR),
        ("none/", Errno::NOENT),
    ] {
        assert_eq!(unlink(path), Err(errno), "unlink({path})");
    }
    for name in ["d", "f", "ld", "loop", "dangling"] {
        assert!(fs.lookup(fs.root(), name).is_ok(), "{name} is still there");
    }
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
