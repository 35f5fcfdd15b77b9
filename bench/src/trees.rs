//! The trees the pack benchmark (`benches/pack.rs`) and its probe
//! (`examples/pack_probe.rs`) build, so that both measure the same thing.

use std::collections::HashMap;

use packfs_core::mem::ROOT;
use packfs_core::{MemFs, OpenOptions};
pub use packfs_test_support::Rng;

/// A tree as paths: directories (parents first) and files with contents.
pub struct Spec {
    /// Directories, each after its parent.
    pub dirs: Vec<String>,
    /// Files and their contents.
    pub files: Vec<(String, Vec<u8>)>,
}

/// The random-read tree: 20 x 16 directories, 20,000 files of 128 B to
/// 4 KiB of unique pseudo-random bytes, spread evenly over the leaves.
pub fn read_tree() -> Spec {
    const FILES: usize = 20_000;
    let mut rng = Rng::new(0x5EED);
    let mut dirs = Vec::new();
    let mut leaves = Vec::new();
    for t in 0..20 {
        dirs.push(format!("t{t:02}"));
        for s in 0..16 {
            let d = format!("t{t:02}/s{s:02}");
            dirs.push(d.clone());
            leaves.push(d);
        }
    }
    let files = (0..FILES)
        .map(|i| {
            let mut data = vec![0; 128 + rng.below(4096 - 128 + 1) as usize];
            rng.fill(&mut data);
            (format!("{}/f{i:06}.dat", leaves[i % leaves.len()]), data)
        })
        .collect();
    Spec { dirs, files }
}

/// A `MemFs` holding `spec`, built in one batch.
pub fn memfs(spec: &Spec) -> MemFs {
    let fs = MemFs::new();
    fs.batch(|t, now| {
        let mut inos: HashMap<&str, u64> = HashMap::new();
        let parent_of = |path: &str, inos: &HashMap<&str, u64>| match path.rsplit_once('/') {
            Some((p, name)) => (inos[p], name.to_owned()),
            None => (ROOT, path.to_owned()),
        };
        for d in &spec.dirs {
            let (parent, name) = parent_of(d, &inos);
            inos.insert(d, t.mkdir(parent, &name, 0o755, now)?);
        }
        for (f, data) in &spec.files {
            let (parent, name) = parent_of(f, &inos);
            let ino = t.open(parent, &name, &OpenOptions::create(), now)?;
            t.write_at(ino, 0, data, now)?;
        }
        Ok(())
    })
    .expect("building the tree");
    fs
}

/// A `MemFs` of `n` files in directories `dNNNN` of 100, each file's
/// content made by `content(i, buf)`.
pub fn flat_memfs(n: usize, mut content: impl FnMut(usize, &mut Vec<u8>)) -> MemFs {
    let fs = MemFs::new();
    fs.batch(|t, now| {
        let mut buf = Vec::new();
        let mut dir = ROOT;
        for i in 0..n {
            if i % 100 == 0 {
                dir = t.mkdir(ROOT, &format!("d{:04}", i / 100), 0o755, now)?;
            }
            let ino = t.open(dir, &format!("f{i:07}"), &OpenOptions::create(), now)?;
            buf.clear();
            content(i, &mut buf);
            t.write_at(ino, 0, &buf, now)?;
        }
        Ok(())
    })
    .expect("building the tree");
    fs
}

/// The compaction tree: [`flat_memfs`] of 128-byte files, each of unique
/// pseudo-random bytes or all the same.
pub fn compaction_tree(n: usize, unique: bool) -> MemFs {
    let mut rng = Rng::new(n as u64);
    let same: Vec<u8> = (0..128u8).collect();
    flat_memfs(n, |_, buf| {
        if unique {
            buf.resize(128, 0);
            rng.fill(buf);
        } else {
            buf.extend_from_slice(&same);
        }
    })
}
