//! What calls leave behind: inode numbers from what the guest sees, a
//! write as one change. (One name kept per descriptor for listings is
//! private state: `src/wasi/p1/tests.rs`.)

use super::*;

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
        packfs_core::FileSystem::mkdir(&*fs, fs.root(), "d", 0o755).unwrap();
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

impl packfs_core::mem::Log for Counted {
    fn record(&self, _: &packfs_core::mem::Op<'_>, _: Timestamp) -> packfs_core::Result<u64> {
        Ok(self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1)
    }
    fn durable(&self, _: u64) -> packfs_core::Result<()> {
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
    let quota = packfs_core::mem::Quota { max_bytes: Some(2 << 20), max_inodes: None };
    let journal = Arc::new(Counted::default());
    let trees = [
        Arc::new(MemFs::builder().quota(quota).build()),
        Arc::new(MemFs::journaled(
            packfs_core::mem::Tree::new(Timestamp::new(0, 0), quota),
            journal.clone(),
            packfs_core::system_clock(),
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
