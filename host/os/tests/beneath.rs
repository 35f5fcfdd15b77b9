//! The containment rule of `packfs_os::beneath`: paths inside the root
//! open, whatever they pass through on the way; nothing leads out of it —
//! not `..`, not an absolute path, not a symlink, relative or absolute, not
//! a magic link — and a last component that is a symlink is never
//! followed.

use std::io::ErrorKind;
use std::os::fd::OwnedFd;
use std::os::unix::fs::symlink;
use std::path::Path;

use packfs_os::beneath::{open_dir, open_root};

/// DIR/root with sub/deeper inside, and a sibling DIR/outside.
fn tree() -> (tempfile::TempDir, OwnedFd) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
    std::fs::create_dir(tmp.path().join("outside")).unwrap();
    std::fs::write(root.join("file"), b"").unwrap();
    symlink("sub", root.join("to-sub")).unwrap();
    symlink("sub/deeper", root.join("to-deeper")).unwrap();
    symlink("../outside", root.join("up")).unwrap();
    symlink(tmp.path().join("outside"), root.join("absolute")).unwrap();
    symlink("/proc/self/cwd", root.join("magic")).unwrap();
    let fd = open_root(&root).unwrap();
    (tmp, fd)
}

/// Refused as leading out of the root: the kernel's `EXDEV`.
fn is_out(r: std::io::Result<OwnedFd>) -> bool {
    r.is_err_and(|e| e.raw_os_error() == Some(rustix::io::Errno::XDEV.raw_os_error()))
}

fn ino(fd: &OwnedFd) -> u64 {
    rustix::fs::fstat(fd).unwrap().st_ino
}

fn ino_of(path: &Path) -> u64 {
    std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(path).unwrap())
}

#[test]
fn paths_inside_open() {
    let (tmp, root) = tree();
    let deeper = ino_of(&tmp.path().join("root/sub/deeper"));
    assert_eq!(ino(&open_dir(&root, Path::new("")).unwrap()), ino(&root), "empty: the root itself");
    assert_eq!(ino(&open_dir(&root, Path::new(".")).unwrap()), ino(&root));
    for rel in ["sub/deeper", "sub/../sub/deeper", "to-sub/deeper", "./sub//deeper/"] {
        assert_eq!(ino(&open_dir(&root, Path::new(rel)).unwrap()), deeper, "{rel}");
    }
    // Relative to any directory opened so, and `..` back up to it.
    let sub = open_dir(&root, Path::new("sub")).unwrap();
    assert_eq!(ino(&open_dir(&sub, Path::new("deeper/..")).unwrap()), ino(&sub));
    // What the descriptor is for: making a name inside it.
    rustix::fs::symlinkat("/anywhere", &sub, "made").unwrap();
    let made = tmp.path().join("root/sub/made");
    assert_eq!(std::fs::read_link(made).unwrap(), Path::new("/anywhere"));
}

#[test]
fn nothing_leads_out() {
    let (tmp, root) = tree();
    for rel in ["..", "../outside", "sub/../..", "up/", "up/.", "to-sub/../../outside"] {
        assert!(is_out(open_dir(&root, Path::new(rel))), "{rel}");
    }
    // Absolute paths and symlinks are refused however they point, even
    // back inside.
    let inside = tmp.path().join("root/sub");
    assert!(is_out(open_dir(&root, &inside)));
    assert!(is_out(open_dir(&root, Path::new("absolute/."))));
    assert!(open_dir(&root, Path::new("magic/.")).is_err(), "through a symlink into /proc");
    // From a directory below the root, `..` above that directory is out.
    let sub = open_dir(&root, Path::new("sub")).unwrap();
    assert!(is_out(open_dir(&sub, Path::new(".."))));
}

#[test]
fn a_last_symlink_is_not_followed() {
    let (_tmp, root) = tree();
    for rel in ["to-sub", "to-deeper", "absolute", "up"] {
        let e = open_dir(&root, Path::new(rel)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotADirectory, "{rel}: {e}");
    }
    assert_eq!(open_dir(&root, Path::new("file")).unwrap_err().kind(), ErrorKind::NotADirectory);
    assert_eq!(open_dir(&root, Path::new("missing")).unwrap_err().kind(), ErrorKind::NotFound);
}
