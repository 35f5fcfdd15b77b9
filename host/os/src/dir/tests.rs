//! DirFs's own unit tests (the property tests against a model are in
//! `host/os/tests/dir_backend.rs`).

use super::*;

/// A writable `DirFs` over a new, empty directory (gone with the guard).
fn fresh() -> (tempfile::TempDir, DirFs) {
    let tmp = tempfile::tempdir().unwrap();
    let fs = DirFs::open(tmp.path(), false).unwrap();
    (tmp, fs)
}

/// Places come and go with the names: a long run of creates, renames
/// and unlinks leaves only the places of what is still there.
#[test]
fn places_do_not_pile_up() {
    let (_tmp, fs) = fresh();
    let root = fs.root();
    let keep = fs.mkdir(root, "keep", 0o755).unwrap();
    for i in 0..500 {
        let d = fs.mkdir(root, "d", 0o755).unwrap();
        let f = fs.open(d, &format!("f{i}"), &OpenOptions::create()).unwrap();
        fs.close(f);
        fs.close(fs.open(root, "x", &OpenOptions::create()).unwrap());
        fs.rename(root, "x", d, "y").unwrap();
        fs.rename(d, &format!("f{i}"), d, "y").unwrap(); // replaces y
        fs.read_dir(d, None, 10).unwrap();
        fs.unlink(d, "y").unwrap();
        fs.rmdir(root, "d").unwrap();
    }
    let places = lock(&fs.places);
    assert_eq!(places.len(), 1, "only keep/ is left");
    assert!(places.contains_key(&keep));
}

/// `close` does not say which handle closes: an fd goes only when the
/// others can do all it could, and the rest with the last handle.
#[test]
fn closing_keeps_what_other_handles_need() {
    let fd = || Arc::new(rustix::fs::open("/dev/null", OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()).unwrap());
    let (r, w, rw) = ((true, false), (false, true), (true, true));
    let budget = FdBudget::new(3);
    let held = |kinds: &[(bool, bool)]| {
        let mut h = Held::default();
        for &(read, write) in kinds {
            h.pin(Pinned { fd: fd(), read, write, _slot: budget.take().unwrap() });
        }
        h
    };
    let kinds = |h: &Held| h.fds.iter().map(|p| (p.read, p.write)).collect::<Vec<_>>();
    // A reader and a writer: neither can stand in for the other.
    let mut h = held(&[r, w]);
    assert!(!h.unpin());
    assert_eq!(kinds(&h), [r, w]);
    assert!(h.unpin(), "the last handle");
    drop(h);
    assert_eq!(budget.held(), 0, "each fd's slot goes with it");
    // A read-write fd covers a reader.
    let mut h = held(&[r, rw, w]);
    assert!(!h.unpin());
    assert_eq!(kinds(&h), [rw, w]);
    assert!(!h.unpin());
    assert_eq!(kinds(&h), [rw]);
    assert!(h.fd(Some(false)).is_some() && h.fd(Some(true)).is_some());
    assert_eq!(budget.held(), 1);
}

/// A walk that reads a page of a big directory, then lists many small
/// ones to their (short) last pages, keeps the big one's listing: the
/// finished listings go first.
#[test]
fn finished_listings_go_first() {
    let (_tmp, fs) = fresh();
    let root = fs.root();
    let big = fs.mkdir(root, "big", 0o755).unwrap();
    for i in 0..300 {
        fs.close(fs.open(big, &format!("f{i:03}"), &OpenOptions::create()).unwrap());
    }
    let first = fs.read_dir(big, None, 256).unwrap();
    for k in 0..2 * LISTINGS {
        let d = fs.mkdir(root, &format!("d{k}"), 0o755).unwrap();
        fs.close(fs.open(d, "x", &OpenOptions::create()).unwrap());
        assert_eq!(fs.read_dir(d, None, 256).unwrap().len(), 1);
    }
    assert!(lock(&fs.listings).iter().any(|l| l.dir == big), "the big listing was pushed out");
    let rest = fs.read_dir(big, Some(&first[255].name), 256).unwrap();
    assert_eq!(first.len() + rest.len(), 300);
}
