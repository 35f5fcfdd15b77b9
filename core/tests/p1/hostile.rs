//! Any arguments at all: no panic, nothing outside memory; results that
//! end at the top of a 4 GiB memory.

use super::*;

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
    packfs_core::FileSystem::mkdir(&*fs, fs.root(), "d", 0o755).unwrap();
    w.fd_readdir(&mut m, ROOT, top(100), 100, 0, top(200)).unwrap();
    assert_eq!(m.at(u64::from(top(200)), 4), 76u32.to_le_bytes(), "., .. and d: 24 + 1 + 24 + 2 + 24 + 1");
    w.fd_readdir(&mut m, ROOT, top(50), 50, 0, top(200)).unwrap();
    assert_eq!(m.at(u64::from(top(200)), 4), 50u32.to_le_bytes());
    // Random bytes, and a read of a file, into the last bytes.
    w.random_get(&mut m, top(16), 16).unwrap();
    assert_eq!(m.at(u64::from(top(16)), 16), [0xa5; 16]);
    let f = packfs_core::FileSystem::open(&*fs, fs.root(), "f", &packfs_core::OpenOptions::create()).unwrap();
    packfs_core::FileSystem::write_at(&*fs, f, 0, b"the end").unwrap();
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
