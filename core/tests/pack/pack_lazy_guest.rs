//! A guest's reads of a lazy pack ([`Partial`]) through preview1 and a
//! memory reached only by copies, as the browser's is, driven as the
//! browser drives them ([`calls::loading`]: a call that failed for
//! want of bytes is run again once they are fetched). Every call must
//! answer exactly as over the whole pack: its errno, every byte of the
//! guest's memory, the descriptor's position, whatever was here when it
//! started.
//!
//! The story: a read of several pieces (two iovecs, as wasi-libc's `fread`
//! passes, or more than a copy buffer) used to stop short at the first
//! piece whose extent was not here, move the position and succeed; the
//! browser then fetched and ran it again from the moved position, and the
//! guest got the wrong bytes with no error.

use std::sync::Arc;

use packfs_core::pack::{Compression, PackFs, PackOptions, Partial, ReadOptions};
use packfs_core::wasi::Access;
use packfs_core::wasi::p1::abi::{rights, whence};
use packfs_core::wasi::p1::{Memory, Platform, Wasi, calls};
use packfs_core::{FileSystem, MemFs, Timestamp};
use proptest::prelude::*;

use crate::common::{Rng, write_file};

/// What `read_file` cuts a read into for a memory that cannot lend slices.
const COPY_CHUNK: u64 = 1 << 20;

/// A platform that never changes.
struct Still;

impl Platform for Still {
    fn wall_clock(&self) -> Timestamp {
        Timestamp::new(1_700_000_000, 0)
    }
    fn monotonic_clock(&self) -> u64 {
        0
    }
    fn random(&mut self, buf: &mut [u8]) {
        buf.fill(7);
    }
    fn sleep(&mut self, _: u64) {}
}

/// A guest memory reached only by copies (no slices lent).
struct Copies(Vec<u8>);

impl Memory for Copies {
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
    fn read(&self, ptr: u32, buf: &mut [u8]) {
        buf.copy_from_slice(&self.0[ptr as usize..ptr as usize + buf.len()]);
    }
    fn write(&mut self, ptr: u32, data: &[u8]) {
        self.0[ptr as usize..ptr as usize + data.len()].copy_from_slice(data);
    }
}

/// The guest's memory: iovec arrays and results at the bottom, a path
/// string, then the buffers.
const MEMORY: usize = 7 << 20;
const IOVS: u32 = 0;
const RESULT: u32 = 8192;
const PATH: u32 = 9000;
const BUFS: u32 = 64 << 10;
/// The most a plan's reads ask for at once.
const MAX_READ: u64 = 3 << 20;

/// One guest, over a filesystem.
struct Guest {
    wasi: Wasi,
    mem: Copies,
}

impl Guest {
    fn new(fs: Arc<dyn FileSystem>, access: Access) -> Guest {
        let wasi = Wasi::builder(Box::new(Still)).preopen("/", fs, access).build().unwrap();
        Guest { wasi, mem: Copies(vec![0; MEMORY]) }
    }

    fn put(&mut self, at: u32, bytes: &[u8]) {
        self.mem.write(at, bytes);
    }

    fn u32_at(&self, at: u32) -> u32 {
        let mut b = [0; 4];
        self.mem.read(at, &mut b);
        u32::from_le_bytes(b)
    }
}

/// The lazy side: the pack, the bytes it fetches from, and how many
/// fetches it took.
struct Lazy {
    pack: Arc<PackFs<Partial>>,
    bytes: Vec<u8>,
    fetches: u64,
}

impl Lazy {
    /// What the browser's worker does: fetch what was wanted; true if
    /// anything came.
    fn fetch(&mut self) -> bool {
        let wants = self.pack.take_wanted();
        for w in &wants {
            self.pack.store(w.start, &self.bytes[w.start as usize..w.end as usize]).unwrap();
        }
        self.fetches += !wants.is_empty() as u64;
        !wants.is_empty()
    }
}

/// Runs one call on both guests; the errnos must agree.
fn both(whole: &mut Guest, lazy: &mut Guest, fetcher: &mut Lazy, name: &str, args: &[i64]) -> i32 {
    let call = |g: &mut Guest| calls::call(&mut g.wasi, &mut g.mem, name, args).unwrap();
    let a = calls::loading(|| call(whole), || false).unwrap();
    // What earlier calls wanted is not this one's (as the worker does).
    fetcher.pack.take_wanted();
    let b = calls::loading(|| call(lazy), || fetcher.fetch()).unwrap();
    assert_eq!(a, b, "{name}{args:?}");
    a.unwrap()
}

/// Sizes around every boundary a read crosses: a page, the chunk, the
/// copy buffer.
fn sizes(chunk: u64) -> Vec<u64> {
    let mut v = vec![0, 1, 4095, 4096, 4097, chunk - 1, chunk, chunk + 1, 3 * chunk + 5];
    v.extend([COPY_CHUNK - 1, COPY_CHUNK, COPY_CHUNK + 1, 2 * COPY_CHUNK + chunk / 2 + 3]);
    v
}

/// Bytes that are random, compressible or half of each (so a file holds
/// both raw and compressed chunks).
fn content(rng: &mut Rng, len: u64) -> Vec<u8> {
    let words: [&[u8]; 4] = [b"alpha ", b"beta ", b"gamma\n", b"delta "];
    let kind = rng.below(3);
    let mut out = Vec::with_capacity(len as usize);
    while (out.len() as u64) < len {
        let random = kind == 0 || (kind == 2 && out.len() as u64 >= len / 2);
        if random {
            out.extend_from_slice(&rng.next().to_le_bytes());
        } else {
            out.extend_from_slice(words[rng.below(4) as usize]);
        }
    }
    out.truncate(len as usize);
    out
}

/// Opens `path` under the preopen on both guests; the descriptor.
fn open(whole: &mut Guest, lazy: &mut Guest, fetcher: &mut Lazy, path: &str, write: bool) -> i64 {
    for g in [&mut *whole, &mut *lazy] {
        g.put(PATH, path.as_bytes());
    }
    let base = rights::FD_READ | rights::FD_SEEK | rights::FD_TELL | if write { rights::FD_WRITE } else { 0 };
    let args = [3, 0, PATH as i64, path.len() as i64, 0, base as i64, 0, 0, RESULT as i64];
    assert_eq!(both(whole, lazy, fetcher, "path_open", &args), 0, "open {path}");
    let fd = whole.u32_at(RESULT);
    assert_eq!(fd, lazy.u32_at(RESULT));
    i64::from(fd)
}

/// Lays out `lens` as an iovec array at [`IOVS`] over the buffers; its
/// count.
fn iovecs(g: &mut Guest, lens: &[u64]) -> i64 {
    let mut at = BUFS;
    for (i, &len) in lens.iter().enumerate() {
        let mut rec = [0u8; 8];
        rec[..4].copy_from_slice(&at.to_le_bytes());
        rec[4..].copy_from_slice(&(len as u32).to_le_bytes());
        g.put(IOVS + 8 * i as u32, &rec);
        at += len as u32;
    }
    lens.len() as i64
}

/// Buffer lengths for one read: one to four, around the boundaries.
fn read_plan(rng: &mut Rng, chunk: u64) -> Vec<u64> {
    let pick = |rng: &mut Rng| match rng.below(5) {
        0 => rng.below(64),
        1 => 4096 + rng.below(3) - 1,
        2 => chunk + rng.below(3) - 1,
        3 => COPY_CHUNK + rng.below(3) - 1,
        _ => rng.below(2 * chunk),
    };
    let mut lens: Vec<u64> = (0..1 + rng.below(4)).map(|_| pick(rng)).collect();
    // Within the buffers.
    while lens.iter().sum::<u64>() > MAX_READ {
        lens.pop();
    }
    lens
}

/// A random chunk size and codec (`None`: a version 1 pack).
fn options(rng: &mut Rng) -> (PackOptions, u64) {
    let chunk = [4096, 16384, 65536, 131072][rng.below(4) as usize];
    let compression = match rng.below(3) {
        0 => None,
        1 => Some(Compression::zstd(1)),
        _ => Some(Compression::lz4()),
    };
    (PackOptions::new().compress(compression).chunk_size(chunk), chunk)
}

/// Only what an open needs is here: the header, the index, the trailer.
fn lazy_pack(bytes: &[u8]) -> PackFs<Partial> {
    use packfs_core::pack::Layout;
    use packfs_core::pack::layout::TRAILER_LEN;
    let layout = Layout::from_trailer(&bytes[bytes.len() - TRAILER_LEN as usize..]).unwrap();
    let pieces = layout.required().iter().map(|&(s, e)| (s, bytes[s as usize..e as usize].to_vec())).collect();
    PackFs::open_partial(bytes.len() as u64, pieces, ReadOptions::new()).unwrap()
}

/// Runs a random plan over the whole pack and the lazy one; returns how
/// many fetches the lazy guest's calls took.
fn run_plan(seed: u64, overlay: bool) -> u64 {
    let mut rng = Rng::new(seed);
    let (options, chunk) = options(&mut rng);
    let tree = MemFs::new();
    let mut all = sizes(chunk);
    // A few of the boundary sizes each time, to keep a case quick.
    let mut files = Vec::new();
    for i in 0..4 {
        let len = all.swap_remove(rng.below(all.len() as u64) as usize);
        let name = format!("f{i}");
        write_file(&tree, tree.root(), &name, &content(&mut rng, len));
        files.push((name, len));
    }
    tree.symlink(tree.root(), "link", "f0").unwrap();
    let mut bytes = Vec::new();
    options.write(&tree, &mut bytes).unwrap();
    let fetcher_pack = Arc::new(lazy_pack(&bytes));
    let whole_pack: Arc<dyn FileSystem> = Arc::new(PackFs::open(bytes.clone()).unwrap());
    let lazy_fs: Arc<dyn FileSystem> = fetcher_pack.clone();
    let (whole_fs, lazy_fs, access): (Arc<dyn FileSystem>, Arc<dyn FileSystem>, _) = if overlay {
        (Arc::new(MemFs::overlay(whole_pack).unwrap()), Arc::new(MemFs::overlay(lazy_fs).unwrap()), Access::ReadWrite)
    } else {
        (whole_pack, lazy_fs, Access::ReadOnly)
    };
    let mut fetcher = Lazy { pack: fetcher_pack, bytes, fetches: 0 };
    let (mut whole, mut lazy) = (Guest::new(whole_fs, access), Guest::new(lazy_fs, access));
    let fds: Vec<(i64, u64)> =
        files.iter().map(|(name, len)| (open(&mut whole, &mut lazy, &mut fetcher, name, overlay), *len)).collect();

    for _ in 0..12 {
        let (fd, len) = fds[rng.below(fds.len() as u64) as usize];
        let before = (whole.mem.0.clone(), lazy.mem.0.clone());
        assert!(before.0 == before.1);
        match rng.below(7) {
            // A read from the position (with fread's two iovecs, one big
            // read, or pieces).
            0..=2 => {
                let lens = read_plan(&mut rng, chunk);
                let n = iovecs(&mut whole, &lens);
                iovecs(&mut lazy, &lens);
                both(&mut whole, &mut lazy, &mut fetcher, "fd_read", &[fd, IOVS as i64, n, RESULT as i64]);
            }
            3 => {
                let lens = read_plan(&mut rng, chunk);
                let n = iovecs(&mut whole, &lens);
                iovecs(&mut lazy, &lens);
                let at = rng.below(len + chunk) as i64;
                both(&mut whole, &mut lazy, &mut fetcher, "fd_pread", &[fd, IOVS as i64, n, at, RESULT as i64]);
            }
            4 => {
                let at = rng.below(len + 2) as i64;
                both(&mut whole, &mut lazy, &mut fetcher, "fd_seek", &[fd, at, i64::from(whence::SET), RESULT as i64]);
            }
            // A small write: the overlay copies the lower file up first.
            5 if overlay => {
                let data: Vec<u8> = (0..1 + rng.below(100)).map(|_| rng.next() as u8).collect();
                for g in [&mut whole, &mut lazy] {
                    g.put(BUFS, &data);
                }
                let n = iovecs(&mut whole, &[data.len() as u64]);
                iovecs(&mut lazy, &[data.len() as u64]);
                let at = rng.below(len + 2) as i64;
                both(&mut whole, &mut lazy, &mut fetcher, "fd_pwrite", &[fd, IOVS as i64, n, at, RESULT as i64]);
            }
            // A listing, and a link's target: both from the index.
            _ => {
                let cap = 24 + rng.below(200) as i64;
                both(&mut whole, &mut lazy, &mut fetcher, "fd_readdir", &[3, BUFS as i64, cap, 0, RESULT as i64]);
                for g in [&mut whole, &mut lazy] {
                    g.put(PATH, b"link");
                }
                let args = [3, PATH as i64, 4, BUFS as i64 + 4096, 64, RESULT as i64];
                both(&mut whole, &mut lazy, &mut fetcher, "path_readlink", &args);
            }
        }
        assert!(whole.mem.0 == lazy.mem.0, "memories differ after a call (seed {seed})");
        // Where each descriptor stands.
        for &(fd, _) in &fds {
            both(&mut whole, &mut lazy, &mut fetcher, "fd_tell", &[fd, RESULT as i64]);
        }
        assert!(whole.mem.0 == lazy.mem.0);
    }
    fetcher.fetches
}

#[test]
fn pack_lazy_guest_reads_the_bytes_of_the_whole_pack() {
    // One plan of each kind that surely fetches, whatever the proptest
    // below draws.
    let mut fetched = 0;
    for seed in 0..4 {
        fetched += run_plan(seed, seed % 2 == 1);
    }
    assert!(fetched > 0, "no call needed a fetch: the test tests nothing");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn pack_lazy_guest_plans_answer_as_over_the_whole_pack(seed in any::<u64>(), overlay in any::<bool>()) {
        run_plan(seed, overlay);
    }
}

/// A write into a large file of a lazy pack under an overlay copies the
/// file up, and a truncation keeping part of it copies that part: every
/// missing chunk is asked for in one round, then the call runs again once.
/// The copy read the lower a MiB at a time, each MiB a round of its own
/// and the call run again from the start after each: 8 rounds for this
/// 8 MiB file (quadratic time in the browser, 17 minutes for 1 GiB).
#[test]
fn a_copy_up_fetches_its_lower_file_in_one_round() {
    let tree = MemFs::new();
    let data = content(&mut Rng::new(9), (8 << 20) + 5);
    write_file(&tree, tree.root(), "big", &data);
    let mut bytes = Vec::new();
    PackOptions::new().compress(Some(Compression::zstd(1))).chunk_size(65536).write(&tree, &mut bytes).unwrap();
    for (call, at) in [("fd_pwrite", data.len() as i64), ("fd_filestat_set_size", (5 << 20) + 3)] {
        let fetcher_pack = Arc::new(lazy_pack(&bytes));
        let whole_fs: Arc<dyn FileSystem> =
            Arc::new(MemFs::overlay(Arc::new(PackFs::open(bytes.clone()).unwrap())).unwrap());
        let lazy_fs: Arc<dyn FileSystem> = Arc::new(MemFs::overlay(fetcher_pack.clone()).unwrap());
        let mut fetcher = Lazy { pack: fetcher_pack, bytes: bytes.clone(), fetches: 0 };
        let (mut whole, mut lazy) = (Guest::new(whole_fs, Access::ReadWrite), Guest::new(lazy_fs, Access::ReadWrite));
        let fd = open(&mut whole, &mut lazy, &mut fetcher, "big", true);
        let before = fetcher.fetches;
        let args = match call {
            "fd_pwrite" => {
                for g in [&mut whole, &mut lazy] {
                    g.put(BUFS, b"!");
                }
                let n = iovecs(&mut whole, &[1]);
                iovecs(&mut lazy, &[1]);
                vec![fd, i64::from(IOVS), n, at, i64::from(RESULT)]
            }
            _ => vec![fd, at],
        };
        assert_eq!(both(&mut whole, &mut lazy, &mut fetcher, call, &args), 0, "{call}");
        assert_eq!(fetcher.fetches - before, 1, "{call}: rounds of fetching");
        assert!(whole.mem.0 == lazy.mem.0);
    }
}
