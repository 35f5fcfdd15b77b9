//! A process publishing packs is killed (SIGKILL) at random points; after
//! every kill the target is the previous pack or the new one — whole, by
//! its checksums — nothing but temporaries of it is beside it, and once
//! the next publish has cleaned up, nothing else is in the directory. Both
//! kinds of temporary: anonymous (`O_TMPFILE`) and named.
//!
//! The writer is this same test binary re-run with `PACKFS_PUBLISH_CHILD`
//! set: it publishes generation after generation until killed.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use packfs_core::pack::{PackFs, write_pack};
use packfs_core::{FileSystem, MemFs, OpenOptions};
use packfs_os::publish::{Temporary, write_atomic_with};

const CHILD_ENV: &str = "PACKFS_PUBLISH_CHILD";
/// Set (to anything) when the child is to use named temporaries.
const NAMED_ENV: &str = "PACKFS_PUBLISH_NAMED";

/// A pack whose file "gen" holds `generation` and whose file "bulk" is 2
/// MiB derived from it, so a write takes long enough to be interrupted.
fn publish(path: &Path, generation: u64, how: Temporary) {
    let fs = MemFs::new();
    for (name, data) in [("gen", generation.to_le_bytes().to_vec()), ("bulk", vec![generation as u8; 2 << 20])] {
        let f = fs.open(fs.root(), name, &OpenOptions::create()).unwrap();
        fs.write_at(f, 0, &data).unwrap();
        fs.close(f);
    }
    write_atomic_with(path, how, |file| {
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
    let how = if std::env::var_os(NAMED_ENV).is_some() { Temporary::Named } else { Temporary::Anonymous };
    let start = if path.exists() { generation(&path) + 1 } else { 0 };
    for g in start.. {
        publish(&path, g, how);
    }
}

#[test]
fn killed_publisher_leaves_old_or_new_and_no_garbage() {
    killed_publisher(Temporary::Anonymous);
}

#[test]
fn killed_publisher_with_named_temporaries_leaves_old_or_new_and_no_garbage() {
    killed_publisher(Temporary::Named);
}

/// The directory's names other than the target's.
fn others(dir: &Path) -> Vec<String> {
    let names = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap());
    names.filter(|n| n != "tree.pack").collect()
}

fn killed_publisher(how: Temporary) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tree.pack");
    publish(&path, 0, how);
    let exe = std::env::current_exe().unwrap();
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let (mut last, mut advanced) = (0, 0);
    const KILLS: usize = 40;
    for _ in 0..KILLS {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let mut command = Command::new(&exe);
        command.args(["--exact", "child_publisher", "--nocapture", "--test-threads=1"]).env(CHILD_ENV, dir.path());
        if how == Temporary::Named {
            command.env(NAMED_ENV, "1");
        }
        let mut child = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(5 + rng % 120));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let g = generation(&path);
        assert!(g >= last, "generation went back from {last} to {g}");
        advanced += usize::from(g > last);
        last = g;
        for name in others(dir.path()) {
            assert!(name.starts_with(".tree.pack.") && name.ends_with(".packfs-tmp"), "{name} beside the pack");
        }
    }
    // The next publish removes what the killed writers left behind.
    publish(&path, last + 1, how);
    assert_eq!(others(dir.path()), Vec::<String>::new());
    assert_eq!(generation(&path), last + 1);
    assert!(advanced > 0, "no kill ever let a publish complete: the test proved nothing");
}
