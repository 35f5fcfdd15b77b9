//! A process publishing packs is killed (SIGKILL) at random points; after
//! every kill the target is the previous pack or the new one — whole, by
//! its checksums — and, once the next publish has cleaned up, nothing else
//! is in the directory.
//!
//! The writer is this same test binary re-run with `PACKFS_PUBLISH_CHILD`
//! set: it publishes generation after generation until killed.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use packfs_core::pack::{PackFs, write_pack};
use packfs_core::{FileSystem, MemFs, OpenOptions};
use packfs_host::publish::write_atomic;

const CHILD_ENV: &str = "PACKFS_PUBLISH_CHILD";

/// A pack whose file "gen" holds `generation` and whose file "bulk" is 2
/// MiB derived from it, so a write takes long enough to be interrupted.
fn publish(path: &Path, generation: u64) {
    let fs = MemFs::new();
    for (name, data) in [("gen", generation.to_le_bytes().to_vec()), ("bulk", vec![generation as u8; 2 << 20])] {
        let f = fs.open(fs.root(), name, &OpenOptions::create()).unwrap();
        fs.write_at(f, 0, &data).unwrap();
        fs.close(f);
    }
    write_atomic(path, |file| {
        let mut out = BufWriter::new(file);
        write_pack(&fs.snapshot(), &mut out).map_err(std::io::Error::other)?;
        out.flush()
    })
    .unwrap();
}

/// The generation a published pack holds, after checking it whole.
fn generation(path: &Path) -> u64 {
    let pack = PackFs::open(std::fs::read(path).unwrap()).expect("a published pack opens");
    assert!(pack.verify().unwrap().is_ok(), "a published pack verifies");
    let ino = pack.lookup(pack.root(), "gen").unwrap();
    let mut buf = [0; 8];
    pack.read_at(ino, 0, &mut buf).unwrap();
    u64::from_le_bytes(buf)
}

#[test]
fn child_publisher() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else { return };
    let path = Path::new(&dir).join("tree.pack");
    let start = if path.exists() { generation(&path) + 1 } else { 0 };
    for g in start.. {
        publish(&path, g);
    }
}

#[test]
fn killed_publisher_leaves_old_or_new_and_no_garbage() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tree.pack");
    publish(&path, 0);
    let exe = std::env::current_exe().unwrap();
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let (mut last, mut advanced) = (0, 0);
    const KILLS: usize = 40;
    for _ in 0..KILLS {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let mut child = Command::new(&exe)
            .args(["--exact", "child_publisher", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(5 + rng % 120));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let g = generation(&path);
        assert!(g >= last, "generation went back from {last} to {g}");
        advanced += usize::from(g > last);
        last = g;
    }
    // The next publish removes what the killed writers left behind.
    publish(&path, last + 1);
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["tree.pack"]);
    assert_eq!(generation(&path), last + 1);
    assert!(advanced > 0, "no kill ever let a publish complete: the test proved nothing");
}
