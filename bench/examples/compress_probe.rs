//! Where a cold whole-tree read of a compressed pack spends its time, for a
//! profiler: packs TREE with zstd:15 (128 KiB chunks) into a temporary
//! file, then reads every file whole, in a shuffled order, from a pack
//! opened afresh, ROUNDS times. A second argument `no-dictionary` packs
//! without a dictionary (format §19), to compare.
//!
//! `cargo build -p packfs-bench --release --example compress_probe &&
//!  perf record -g target/release/examples/compress_probe /usr/lib/python3.11 &&
//!  perf report --no-children --sort symbol`

use packfs_core::FileSystem;
use packfs_core::pack::{Compression, PackOptions, ReadOptions};
use packfs_os::dir::DirFs;
use packfs_os::mmap::open_pack_with;

const ROUNDS: usize = 20;

fn main() {
    let tree = std::env::args().nth(1).unwrap_or_else(|| "/usr/lib/python3.11".into());
    let tmp = tempfile::NamedTempFile::new().unwrap();
    let src = DirFs::open(std::path::Path::new(&tree), true).unwrap();
    let dictionary = std::env::args().nth(2).as_deref() != Some("no-dictionary");
    let options = PackOptions::new().compress(Some(Compression::zstd(15))).dictionary(dictionary);
    options.write(&src, std::fs::File::create(tmp.path()).unwrap()).unwrap();
    let pack = open_pack_with(tmp.path(), ReadOptions::new()).unwrap();
    let mut files = Vec::new();
    let mut stack = vec![(pack.root(), String::new())];
    while let Some((dir, path)) = stack.pop() {
        for e in pack.read_dir(dir, None, usize::MAX).unwrap() {
            let p = if path.is_empty() { e.name.to_string() } else { format!("{path}/{}", e.name) };
            match e.kind {
                packfs_core::FileType::Dir => stack.push((e.ino, p)),
                packfs_core::FileType::File => files.push(p),
                _ => {}
            }
        }
    }
    let mut s = 7u64;
    for i in (1..files.len()).rev() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        files.swap(i, (s % (i as u64 + 1)) as usize);
    }
    let start = std::time::Instant::now();
    let mut buf = Vec::new();
    let mut decoded = 0;
    for _ in 0..ROUNDS {
        let pack = open_pack_with(tmp.path(), ReadOptions::new()).unwrap();
        for p in &files {
            let ino = packfs_core::resolve::resolve(&pack, pack.root(), p, true).unwrap();
            buf.resize(pack.metadata(ino).unwrap().size as usize, 0);
            let mut at = 0;
            while at < buf.len() {
                at += pack.read_at(ino, at as u64, &mut buf[at..]).unwrap();
            }
        }
        decoded += pack.chunks_decoded();
    }
    let chunks = pack.content_stats().unwrap().codecs.iter().map(|c| c.chunks).sum::<u64>();
    eprintln!(
        "{} files, {ROUNDS} cold rounds: {:.1} ms a round; {} chunks decoded a round of {chunks}",
        files.len(),
        start.elapsed().as_secs_f64() * 1e3 / ROUNDS as f64,
        decoded / ROUNDS as u64
    );
}
