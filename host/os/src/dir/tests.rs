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
    assert_eq!(fs.places.inodes(), [keep], "only keep/ is left");
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
    for k in 0..2 * listing::LISTINGS {
        let d = fs.mkdir(root, &format!("d{k}"), 0o755).unwrap();
        fs.close(fs.open(d, "x", &OpenOptions::create()).unwrap());
        assert_eq!(fs.read_dir(d, None, 256).unwrap().len(), 1);
    }
    assert!(fs.listings.holds(big), "the big listing was pushed out");
    let rest = fs.read_dir(big, Some(&first[255].name), 256).unwrap();
    assert_eq!(first.len() + rest.len(), 300);
}
