//! Host descriptors a guest makes a `DirFs` hold (issue 23).
//!
//! Every open handle of a `DirFs` holds a host fd, and preview1 lets a
//! guest hold 65,536 descriptors, above a typical `RLIMIT_NOFILE`. A
//! guest that opened without closing filled the host process's table:
//! its next open failed with `EIO` (an `Os` error, `EMFILE`), and so did
//! every path call of every `DirFs` in the process, since each takes an
//! `O_PATH` fd of the directory it works in, and every open of the host's
//! own (publication, journals, the pack cache). Now a budget of host
//! descriptors refuses the open past it with the error of a full host
//! table, `ENFILE`; the host's own table full, should it come first, is
//! that same error; and what the guest already holds works on.
//!
//! The tests that fill the process's table run in a child process whose
//! soft limit is lowered, so that they starve no other test.

use std::path::Path;
use std::process::Command;

use packfs_core::{Error, FileSystem, Ino, OpenOptions};
use packfs_os::dir::{DirFs, FdBudget};
use packfs_os::publish::write_atomic;
use rustix::process::{Resource, getrlimit, setrlimit};

/// Set in the child process a test runs itself in.
const CHILD: &str = "PACKFS_DIR_FDS_CHILD";

/// In the child, lowers the soft `RLIMIT_NOFILE` to `limit` and returns
/// true: the test goes on there. In the parent, runs test `name` in a
/// child, checks that it ran and passed, and returns false.
fn in_child(name: &str, limit: u64) -> bool {
    if std::env::var_os(CHILD).is_some() {
        let mut nofile = getrlimit(Resource::Nofile);
        nofile.current = Some(limit);
        setrlimit(Resource::Nofile, nofile).unwrap();
        return true;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && stdout.contains("1 passed"), "the child failed:\n{stdout}\n{stderr}");
    false
}

/// The error of a full host table, as a guest is to see it: `ENFILE`.
fn assert_no_fds(e: &Error) {
    assert!(matches!(e, Error::NoDescriptors(_)), "{e:?}");
    assert_eq!(packfs_core::wasi::p1::abi::errno(e), packfs_core::wasi::p1::Errno::NFILE);
}

struct P;
impl packfs_core::wasi::p1::Platform for P {
    fn wall_clock(&self) -> packfs_core::Timestamp {
        Default::default()
    }
    fn monotonic_clock(&self) -> u64 {
        0
    }
    fn random(&mut self, buf: &mut [u8]) {
        buf.fill(4)
    }
    fn sleep(&mut self, _: u64) {}
}

/// Scratch: a preview1 guest sees ENFILE past the budget.
#[test]
fn p1_guest_sees_enfile() {
    use packfs_core::wasi::{
        Access,
        p1::{Errno, Wasi},
    };
    let tmp = tempfile::tempdir().unwrap();
    files(&tmp.path().join("a"), 10);
    let fs = std::sync::Arc::new(DirFs::open(&tmp.path().join("a"), false).unwrap().with_budget(FdBudget::new(4)));
    let mut w = Wasi::builder(Box::new(P)).preopen("/", fs, Access::ReadWrite).build().unwrap();
    let mut mem = vec![0u8; 4096];
    let mut got = Vec::new();
    for i in 0..10 {
        let name = format!("f{i}");
        mem[100..100 + name.len()].copy_from_slice(name.as_bytes());
        let r = w.path_open(&mut mem[..], 3, 0, 100, name.len() as u32, 0, 0x2, 0, 0, 0);
        got.push(r.map(|()| u32::from_le_bytes(mem[0..4].try_into().unwrap())));
    }
    println!("{got:?}");
    // the preopen root pins 1: 3 files, then ENFILE
    assert_eq!(got[3], Err(Errno::NFILE));
    w.fd_close(&mut mem[..], got[0].unwrap()).unwrap();
    let r = w.path_open(&mut mem[..], 3, 0, 100, 2, 0, 0x2, 0, 0, 0);
    assert!(r.is_ok(), "{r:?}");
}

/// A directory of `n` files, `f0`, `f1`, ..., each holding its name.
fn files(at: &Path, n: usize) {
    std::fs::create_dir(at).unwrap();
    for i in 0..n {
        std::fs::write(at.join(format!("f{i}")), format!("f{i}")).unwrap();
    }
}

fn read(fs: &DirFs, ino: Ino) -> String {
    let mut buf = [0; 16];
    let n = fs.read_at(ino, 0, &mut buf).unwrap();
    String::from_utf8(buf[..n].to_vec()).unwrap()
}

/// Opens `f0`, `f1`, ... of the root until an open is refused: the
/// handles, and the refusal.
fn open_until_refused(fs: &DirFs, most: usize) -> (Vec<Ino>, Error) {
    let mut held = Vec::new();
    loop {
        assert!(held.len() < most, "{most} files opened, none refused");
        match fs.open(fs.root(), &format!("f{}", held.len()), &OpenOptions::read()) {
            Ok(h) => held.push(h),
            Err(e) => return (held, e),
        }
    }
}

/// A guest opening files and keeping them, on a budget of 8: the ninth
/// open is refused, and makes nothing; what it holds reads on, paths
/// still resolve and list, a close makes room; another `DirFs` keeps its
/// own budget meanwhile, and two given one budget share it.
#[test]
fn a_spent_budget_refuses_the_next_open() {
    let tmp = tempfile::tempdir().unwrap();
    for d in ["a", "b", "c", "d"] {
        files(&tmp.path().join(d), 20);
    }
    let a = DirFs::open(&tmp.path().join("a"), false).unwrap().with_budget(FdBudget::new(8));
    let b = DirFs::open(&tmp.path().join("b"), false).unwrap().with_budget(FdBudget::new(8));
    let (mut held, refused) = open_until_refused(&a, 20);
    assert_no_fds(&refused);
    assert_eq!((held.len(), a.budget().held(), a.budget().refused()), (8, 8, 1));
    let root = a.root();
    assert_no_fds(&a.open(root, "new", &OpenOptions::create()).unwrap_err());
    assert!(!tmp.path().join("a/new").exists(), "a refused create makes nothing");
    assert_no_fds(&a.open(root, "f0", &OpenOptions::create()).unwrap_err());
    let f19 = a.lookup(root, "f19").unwrap();
    assert_no_fds(&a.open_ino(f19).unwrap_err());
    assert_eq!(a.metadata(f19).unwrap().size, 3);
    assert_eq!(a.read_dir(root, None, 100).unwrap().len(), 20);
    for (i, &h) in held.iter().enumerate() {
        assert_eq!(read(&a, h), format!("f{i}"));
    }
    // Meanwhile, another guest's directory.
    let (other, _) = open_until_refused(&b, 20);
    assert_eq!(other.len(), 8);
    assert_eq!(read(&b, other[7]), "f7");
    // A close gives one back.
    a.close(held.remove(3));
    let h = a.open(root, "f19", &OpenOptions::read()).unwrap();
    assert_eq!(read(&a, h), "f19");
    assert_no_fds(&a.open(root, "f18", &OpenOptions::read()).unwrap_err());
    held.push(h);
    for h in held {
        a.close(h);
    }
    assert_eq!(a.budget().held(), 0);
    // Two host directories of one guest, on one budget.
    let shared = FdBudget::new(3);
    let c = DirFs::open(&tmp.path().join("c"), false).unwrap().with_budget(shared.clone());
    let d = DirFs::open(&tmp.path().join("d"), true).unwrap().with_budget(shared.clone());
    let c0 = c.open(c.root(), "f0", &OpenOptions::read()).unwrap();
    let d0 = d.open(d.root(), "f0", &OpenOptions::read()).unwrap();
    d.open_ino(d0).unwrap();
    assert_no_fds(&c.open(c.root(), "f1", &OpenOptions::read()).unwrap_err());
    d.close(d0);
    c.close(c0);
    assert_eq!(shared.held(), 1);
}

/// A guest holding every file it opens, on a `DirFs` made the default
/// way, is refused at half the soft limit (64 here): the host keeps the
/// other half, and the same directory and another still serve.
#[test]
fn the_default_budget_leaves_the_host_its_descriptors() {
    if !in_child("the_default_budget_leaves_the_host_its_descriptors", 64) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    files(&tmp.path().join("a"), 100);
    files(&tmp.path().join("b"), 1);
    let a = DirFs::open(&tmp.path().join("a"), false).unwrap();
    let (held, refused) = open_until_refused(&a, 100);
    assert_no_fds(&refused);
    assert_eq!(held.len(), 32, "min(the soft limit / 2, 4096)");
    // The host's own opens.
    write_atomic(&tmp.path().join("published"), |f| std::io::Write::write_all(f, b"saved")).unwrap();
    assert_eq!(std::fs::read(tmp.path().join("published")).unwrap(), b"saved");
    // Another guest's host directory.
    let b = DirFs::open(&tmp.path().join("b"), false).unwrap();
    let h = b.open(b.root(), "f0", &OpenOptions::read()).unwrap();
    assert_eq!(read(&b, h), "f0");
    // The full one: paths still resolve and list, what it holds reads,
    // and a close makes room for the next open.
    assert_eq!(a.read_dir(a.root(), None, 1000).unwrap().len(), 100);
    let f99 = a.lookup(a.root(), "f99").unwrap();
    assert_eq!(a.metadata(f99).unwrap().size, 3);
    for (i, &h) in held.iter().enumerate() {
        assert_eq!(read(&a, h), format!("f{i}"));
    }
    a.close(held[7]);
    let again = a.open(a.root(), "f99", &OpenOptions::read()).unwrap();
    assert_eq!(read(&a, again), "f99");
    assert_no_fds(&a.open(a.root(), "f98", &OpenOptions::read()).unwrap_err());
}

/// The host process's own table full, whoever filled it: an open is the
/// same error as a spent budget, and works again once fds are freed.
#[test]
fn a_full_host_table_is_the_same_error() {
    if !in_child("a_full_host_table_is_the_same_error", 64) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    files(&tmp.path().join("a"), 4);
    let a = DirFs::open(&tmp.path().join("a"), false).unwrap();
    let first = a.open(a.root(), "f0", &OpenOptions::read()).unwrap();
    // Fill the table.
    let mut filler = Vec::new();
    while let Ok(fd) = std::fs::File::open("/dev/null") {
        filler.push(fd);
    }
    let refused = a.open(a.root(), "f1", &OpenOptions::read()).unwrap_err();
    assert_no_fds(&refused);
    let created = a.open(a.root(), "new", &OpenOptions::create()).unwrap_err();
    assert_no_fds(&created);
    assert_eq!(read(&a, first), "f0", "what it holds still reads");
    // Room for one handle and the fd of the directory it is opened in.
    filler.truncate(filler.len() - 2);
    let h = a.open(a.root(), "f1", &OpenOptions::read()).unwrap();
    assert_eq!(read(&a, h), "f1");
}
