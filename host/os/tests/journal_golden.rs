//! The golden journal (`core/tests/data/golden-v1.journal`, see
//! `core/tests/journal_golden.rs`) as the log of a journal directory:
//! `journal-0.log` alone opens to its tree, a clean log is appended to
//! where it ends, and a torn tail after it is cut back to it; and the
//! version-2 golden journal (an image, then a change) the same way.

use std::path::Path;

use packfs_core::mem::Quota;
use packfs_core::{FileSystem, FileType};
use packfs_os::journal::{Journal, SyncPolicy};

const GOLDEN: &[u8] = include_bytes!("../../../core/tests/data/golden-v1.journal");
const GOLDEN_V2: &[u8] = include_bytes!("../../../core/tests/data/golden-v2.journal");

fn read(fs: &dyn FileSystem, path: &str) -> Vec<u8> {
    let ino = packfs_core::resolve::resolve(fs, fs.root(), path, false).unwrap();
    let mut buf = vec![0; fs.metadata(ino).unwrap().size as usize];
    fs.read_at(ino, 0, &mut buf).unwrap();
    buf
}

fn log(dir: &Path) -> Vec<u8> {
    std::fs::read(dir.join("journal-0.log")).unwrap()
}

#[test]
fn the_golden_journal_opens_as_a_directory() {
    opens_as_a_directory(GOLDEN);
}

#[test]
fn the_golden_v2_journal_opens_as_a_directory() {
    opens_as_a_directory(GOLDEN_V2);
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("journal-0.log"), GOLDEN_V2).unwrap();
    let tree = Journal::read(tmp.path()).unwrap();
    let after = tree.lookup(tree.root(), "after").unwrap();
    assert_eq!((after, tree.metadata(after).unwrap().mode), (8, 0o700), "numbered on from the image");
    // A log cut inside its image is refused, not taken as a torn tail.
    std::fs::write(tmp.path().join("journal-0.log"), &GOLDEN_V2[..GOLDEN_V2.len() - 100]).unwrap();
    let e = Journal::open(tmp.path(), SyncPolicy::EveryOp, Quota::default()).err().unwrap();
    let cause = std::error::Error::source(&e).map(ToString::to_string).unwrap_or_default();
    assert!(cause.contains("before its image does"), "{e}: {cause}");
    assert_eq!(log(tmp.path()).len(), GOLDEN_V2.len() - 100, "left as it was");
}

fn opens_as_a_directory(golden: &[u8]) {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("journal-0.log"), golden).unwrap();
    let tree = Journal::read(tmp.path()).unwrap();
    assert_eq!(read(&tree, "docs/README"), b"after\n");
    assert_eq!(read(&tree, "docs/log.txt"), b"\0\0\0\0spar");
    let latest = tree.lookup(tree.root(), "latest").unwrap();
    assert_eq!(tree.metadata(latest).unwrap().kind, FileType::Symlink);
    assert_eq!(tree.readlink(latest).unwrap(), "docs/README");
    assert_eq!(log(tmp.path()), golden, "reading changes nothing");

    // Appended to where it ends; then a torn tail after that is cut.
    let j = Journal::open(tmp.path(), SyncPolicy::EveryOp, Quota::default()).unwrap();
    j.fs().mkdir(j.fs().root(), "more", 0o755).unwrap();
    drop(j);
    let grown = log(tmp.path());
    assert!(grown.len() > golden.len() && grown.starts_with(golden));
    let mut torn = grown.clone();
    torn.extend_from_slice(&golden[32..40]);
    std::fs::write(tmp.path().join("journal-0.log"), &torn).unwrap();
    let j = Journal::open(tmp.path(), SyncPolicy::EveryOp, Quota::default()).unwrap();
    assert!(j.fs().lookup(j.fs().root(), "more").is_ok());
    drop(j);
    assert_eq!(log(tmp.path()), grown, "the torn tail is cut");
}
