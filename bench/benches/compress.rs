//! Compressed packs (format version 2) against the formats people would
//! otherwise ship a read-only tree in, on real trees of this machine:
//!
//! - **size**: PackFS zstd and lz4 against `mksquashfs` with the same codec,
//!   level and block size (128 KiB), without xattrs and owners
//!   (`-no-xattrs -all-root`: a pack stores neither), `mkfs.erofs` with each
//!   codec against its own kind (lz4, lz4hc, zstd; 128 KiB clusters, with
//!   and without `-Ededupe,ztailpacking`; erofs-utils 1.8 for zstd:
//!   `PACKFS_MKFS_EROFS`), `tar | zstd` and `zip -9`;
//! - **build time**: PackFS's writer (which compresses chunks on every
//!   core) against `mksquashfs` on one processor and on all of them;
//! - **random whole-file reads** of every file in a fixed shuffled order,
//!   against each peer format's best in-process reader: the backhand crate
//!   for squashfs, the zip crate, and for tar.zst decompressing the whole
//!   archive and indexing it (that cost reported apart);
//! - **one 4 KiB read** in the middle of a 100 MiB compressed file: the
//!   chunks it decodes, counted;
//! - **bytes fetched by a lazy read** of 5% of a tree's files (the first
//!   of the shuffled order), as a page reading a pack by URL fetches them
//!   (`LazyOpen`, then each read's wanted extents, close ones merged),
//!   against the uncompressed pack: with the default dictionary, without
//!   it, and lz4.
//!
//! Peers are the Debian tools (`apt-get install squashfs-tools erofs-utils
//! zip zstd`); a missing one is reported and left out. Trees default to
//! `/usr/include`, `/usr/lib/python3.11` and `/usr/lib/chromium`, with
//! `/usr/lib/python3.11`'s `.py` files alone (an interpreter's standard
//! library, a small-file tree) after it;
//! `PACKFS_BENCH_TREES=dir:dir…` picks others. Times are medians of
//! `PASSES` passes; every figure is a ratio against a baseline of the same
//! run. Prints a markdown report.
//!
//! `cargo bench -p packfs-bench --bench compress`

use std::collections::HashMap;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use packfs_bench::lazy::{files, lazy_fetched};
use packfs_core::pack::{Compression, PackOptions, ReadOptions};
use packfs_core::{FileSystem, MemFs, OpenOptions};
use packfs_os::dir::DirFs;
use packfs_os::mmap::{MappedPack, open_pack_with};

const PASSES: usize = 3;
const LEVEL: i32 = 15;
const BLOCK: u64 = 128 * 1024;

/// erofs-utils' `mkfs.erofs`: `PACKFS_MKFS_EROFS`, else the one on the
/// path (zstd needs erofs-utils 1.8; bench/rerun.sh builds it).
fn mkfs_erofs() -> String {
    std::env::var("PACKFS_MKFS_EROFS").unwrap_or_else(|_| "mkfs.erofs".into())
}

/// The median of `PASSES` runs of `f`.
fn median(mut f: impl FnMut()) -> Duration {
    median_timed(|| {
        let start = Instant::now();
        f();
        start.elapsed()
    })
}

/// The median of `PASSES` durations `f` measures itself.
fn median_timed(mut f: impl FnMut() -> Duration) -> Duration {
    let mut t: Vec<Duration> = (0..PASSES).map(|_| f()).collect();
    t.sort();
    t[PASSES / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn ratio(a: f64, b: f64) -> String {
    format!("{:.3}x", a / b)
}

/// Runs a peer's tool; `None` (and a note) if it is missing or fails.
fn tool(name: &str, args: &[&str]) -> Option<Duration> {
    let start = Instant::now();
    match Command::new(name).args(args).output() {
        Ok(o) if o.status.success() => Some(start.elapsed()),
        Ok(o) => {
            eprintln!("{name} failed: {}", String::from_utf8_lossy(&o.stderr).lines().next().unwrap_or(""));
            None
        }
        Err(e) => {
            eprintln!("{name}: {e} (left out)");
            None
        }
    }
}

fn shell(script: &str) -> Option<Duration> {
    tool("sh", &["-c", script])
}

fn size(p: &Path) -> u64 {
    std::fs::metadata(p).map_or(0, |m| m.len())
}

/// Reads every file of `pack` whole, in `order`.
fn read_pack(pack: &MappedPack, order: &[String], buf: &mut Vec<u8>) -> u64 {
    let mut total = 0;
    for p in order {
        let ino = packfs_core::resolve::resolve(pack, pack.root(), p, true).unwrap();
        let n = pack.metadata(ino).unwrap().size as usize;
        buf.resize(n, 0);
        let mut at = 0;
        while at < n {
            let k = pack.read_at(ino, at as u64, &mut buf[at..]).unwrap();
            assert!(k > 0);
            at += k;
        }
        total += n as u64;
    }
    total
}

fn tar_index(bytes: &[u8]) -> HashMap<String, (usize, usize)> {
    let mut archive = tar::Archive::new(bytes);
    let mut index = HashMap::new();
    for e in archive.entries().unwrap() {
        let e = e.unwrap();
        let path = e.path().unwrap().to_string_lossy().trim_start_matches("./").to_owned();
        index.insert(path, (e.raw_file_position() as usize, e.size() as usize));
    }
    index
}

fn bench_tree(root: &Path, out: &Path) {
    let order = files(root);
    let content: u64 = order.iter().map(|p| size(&root.join(p))).sum();
    packfs_bench::outln!("\n### `{}`: {} files, {:.1} MiB\n", root.display(), order.len(), content as f64 / 1048576.0);
    let src = DirFs::open(root, true).unwrap();
    let p = |name: &str| out.join(name);
    let (zstd_pack, lz4_pack, plain_pack) = (p("zstd.pack"), p("lz4.pack"), p("plain.pack"));
    let write = |path: &Path, options: PackOptions| {
        let start = Instant::now();
        options.write(&src, std::fs::File::create(path).unwrap()).unwrap();
        start.elapsed()
    };
    let t_zstd = write(&zstd_pack, PackOptions::new().compress(Some(Compression::zstd(LEVEL))).chunk_size(BLOCK));
    let t_lz4 = write(&lz4_pack, PackOptions::new().compress(Some(Compression::lz4())).chunk_size(BLOCK));
    write(&plain_pack, PackOptions::new());
    let shared_pack = p("zstd-shared.pack");
    let no_dict = PackOptions::new().compress(Some(Compression::zstd(LEVEL))).chunk_size(BLOCK).dictionary(false);
    write(&shared_pack, no_dict);
    let r = root.to_str().unwrap();
    let (sq_zstd, sq_lz4, tzst, zip) = (p("zstd.sqfs"), p("lz4.sqfs"), p("t.tar.zst"), p("t.zip"));
    let sq = |dst: &Path, comp: &[&str], procs: &str| {
        // -no-xattrs -all-root: a pack stores neither, so squashfs keeps
        // neither either (issue 42: the peer is not charged for metadata
        // PackFS drops).
        let mut a = vec![
            r,
            dst.to_str().unwrap(),
            "-noappend",
            "-quiet",
            "-no-progress",
            "-no-xattrs",
            "-all-root",
            "-b",
            "131072",
            "-processors",
            procs,
        ];
        a.extend_from_slice(comp);
        tool("mksquashfs", &a)
    };
    let level = LEVEL.to_string();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()).to_string();
    let t_sq_zstd = sq(&sq_zstd, &["-comp", "zstd", "-Xcompression-level", &level], "1");
    let t_sq_zstd_all = sq(&sq_zstd, &["-comp", "zstd", "-Xcompression-level", &level], &cores);
    let t_sq_lz4 = sq(&sq_lz4, &["-comp", "lz4"], "1");
    // Whether small files sharing blocks pays: squashfs without fragments
    // gives every file blocks of its own.
    let sq_nofrag = p("zstd-nofrag.sqfs");
    sq(&sq_nofrag, &["-comp", "zstd", "-Xcompression-level", &level, "-no-fragments"], &cores);
    // erofs, each codec with its own kind: lz4 against PackFS's lz4 (which
    // has no high-compression mode: lz4_flex offers none), lz4hc at its
    // highest level beside it, zstd at PackFS's level; 128 KiB clusters as
    // PackFS's chunks (its default clusters too, for lz4hc), each with and
    // without deduplication and tail packing, whichever is smaller counted.
    let erofs_variants: Vec<(String, &str, PathBuf)> = [
        ("lz4", "lz4", "-C131072"),
        ("lz4hc,level=12", "lz4hc", "-C131072"),
        ("lz4hc,level=12", "lz4hc", ""),
        (&*format!("zstd,level={LEVEL}"), "zstd", "-C131072"),
    ]
    .iter()
    .flat_map(|&(z, codec, clusters)| {
        ["-Eall-fragments", "-Eall-fragments,dedupe,ztailpacking"].map(move |e| {
            let file = p(&format!("{codec}{clusters}{e}.erofs"));
            let mut a = vec![format!("-z{z}"), e.to_string()];
            if !clusters.is_empty() {
                a.push(clusters.to_string());
            }
            a.extend([file.to_str().unwrap().to_string(), r.to_string()]);
            let args: Vec<&str> = a.iter().map(String::as_str).collect();
            tool(&mkfs_erofs(), &args);
            let what = format!(
                "mkfs.erofs {z}, {}{}",
                if clusters.is_empty() { "its default clusters" } else { "128 KiB clusters" },
                if e.contains("dedupe") { ", `-Ededupe,ztailpacking`" } else { "" }
            );
            (what, codec, file)
        })
    })
    .collect();
    shell(&format!("tar -C '{r}' -cf - . | zstd -q -{LEVEL} -o '{}'", tzst.display()));
    shell(&format!("cd '{r}' && zip -q -9 -r -y '{}' .", zip.display()));

    packfs_bench::outln!("| format | bytes | PackFS zstd ÷ it | PackFS lz4 ÷ it |");
    packfs_bench::outln!("|---|--:|--:|--:|");
    let (zs, ls) = (size(&zstd_pack) as f64, size(&lz4_pack) as f64);
    let rows = [
        ("PackFS zstd:15, 128 KiB chunks (default: a dictionary, if small files hold enough)", &zstd_pack),
        ("PackFS zstd:15, 128 KiB chunks shared by small files, no dictionary", &shared_pack),
        ("PackFS lz4, 128 KiB chunks", &lz4_pack),
        ("PackFS uncompressed (version 1)", &plain_pack),
        ("mksquashfs zstd:15, 128 KiB blocks", &sq_zstd),
        ("mksquashfs lz4, 128 KiB blocks", &sq_lz4),
        ("mksquashfs zstd:15, no fragments (no block shared by files)", &sq_nofrag),
    ];
    let erofs_rows = erofs_variants.iter().map(|(what, _, file)| (what.as_str(), file));
    let tail = [("tar, then zstd -15", &tzst), ("zip -9", &zip)];
    for (name, path) in rows.into_iter().chain(erofs_rows).chain(tail) {
        let s = size(path);
        if s > 0 {
            packfs_bench::outln!("| {name} | {s} | {} | {} |", ratio(zs, s as f64), ratio(ls, s as f64));
        }
    }
    // Like for like: each codec against erofs's smallest image of the same
    // codec (lz4hc beside lz4: PackFS has no lz4hc).
    let smallest =
        |codec: &str| erofs_variants.iter().filter(|v| v.1 == codec).map(|v| size(&v.2)).filter(|&s| s > 0).min();
    let like: Vec<String> = [("zstd", "zstd", zs), ("lz4", "lz4", ls), ("lz4hc", "lz4", ls)]
        .iter()
        .filter_map(|&(codec, ours, packfs)| {
            smallest(codec).map(|s| format!("erofs {codec} ÷ PackFS {ours}: **{}**", ratio(s as f64, packfs)))
        })
        .collect();
    if !like.is_empty() {
        packfs_bench::outln!("\nLike for like (erofs's smallest image of each codec): {}", like.join(", "));
    }
    packfs_bench::outln!(
        "\nBuild: PackFS zstd:15 {} ({:.1} MiB/s, chunks compressed on {cores} cores), lz4 {}",
        ms(t_zstd),
        content as f64 / 1048576.0 / t_zstd.as_secs_f64(),
        ms(t_lz4)
    );
    if let (Some(a), Some(b), Some(c)) = (t_sq_zstd, t_sq_zstd_all, t_sq_lz4) {
        packfs_bench::outln!(
            "mksquashfs zstd:15 on 1 processor {} (PackFS ÷ it: {}), on {cores} {} ({}); lz4 on 1 {} ({})",
            ms(a),
            ratio(t_zstd.as_secs_f64(), a.as_secs_f64()),
            ms(b),
            ratio(t_zstd.as_secs_f64(), b.as_secs_f64()),
            ms(c),
            ratio(t_lz4.as_secs_f64(), c.as_secs_f64())
        );
    }

    // A lazy read of 5% of the files: the bytes it fetches.
    let picks = &order[..order.len().div_ceil(20)];
    let base = lazy_fetched(&std::fs::read(&plain_pack).unwrap(), picks) as f64;
    packfs_bench::outln!("\nA lazy read of {} files (5%), whole: bytes fetched, the open's included:\n", picks.len());
    packfs_bench::outln!("| pack | bytes fetched | ÷ uncompressed |");
    packfs_bench::outln!("|---|--:|--:|");
    for (name, path) in [
        ("PackFS uncompressed (version 1)", &plain_pack),
        ("PackFS zstd:15 (default)", &zstd_pack),
        ("PackFS zstd:15, no dictionary", &shared_pack),
        ("PackFS lz4", &lz4_pack),
    ] {
        let n = lazy_fetched(&std::fs::read(path).unwrap(), picks);
        packfs_bench::outln!("| {name} | {n} | {} |", ratio(n as f64, base));
    }

    // Random whole-file reads.
    let mut buf = Vec::new();
    let mut rows: Vec<(String, Duration)> = Vec::new();
    for (name, path) in [
        ("PackFS zstd", &zstd_pack),
        ("PackFS zstd, no dictionary", &shared_pack),
        ("PackFS lz4", &lz4_pack),
        ("PackFS uncompressed", &plain_pack),
    ] {
        let pack = open_pack_with(path, ReadOptions::new()).unwrap();
        read_pack(&pack, &order, &mut buf); // the page cache and the chunk cache warm
        // Cold: a pack opened afresh (outside the clock) for each pass.
        let mut cold = |options: ReadOptions| {
            median_timed(|| {
                let p = open_pack_with(path, options).unwrap();
                let start = Instant::now();
                assert_eq!(read_pack(&p, &order, &mut buf), content);
                start.elapsed()
            })
        };
        rows.push((format!("{name}, cold"), cold(ReadOptions::new())));
        if name != "PackFS uncompressed" {
            // What bounds the cold pass: chunks decoded again after the
            // default cache (128 MiB) let them go. With room for them all,
            // each is decoded once.
            rows.push((format!("{name}, cold, 1 GiB cache"), cold(ReadOptions::new().cache_bytes(1 << 30))));
            let pack = open_pack_with(path, ReadOptions::new().cache_bytes(1 << 30)).unwrap();
            read_pack(&pack, &order, &mut buf);
            rows.push((
                format!("{name}, warm, 1 GiB cache"),
                median(|| assert_eq!(read_pack(&pack, &order, &mut buf), content)),
            ));
        }
        rows.push((format!("{name}, warm"), median(|| assert_eq!(read_pack(&pack, &order, &mut buf), content))));
    }
    for (name, path) in [("squashfs zstd (backhand)", &sq_zstd), ("squashfs lz4 (backhand)", &sq_lz4)] {
        if size(path) == 0 {
            continue;
        }
        let open =
            || backhand::FilesystemReader::from_reader(BufReader::new(std::fs::File::open(path).unwrap())).unwrap();
        let pass = |fs: &backhand::FilesystemReader| {
            let index: HashMap<String, &backhand::SquashfsFileReader> = fs
                .files()
                .filter_map(|n| match &n.inner {
                    backhand::InnerNode::File(f) => {
                        Some((n.fullpath.to_string_lossy().trim_start_matches('/').to_owned(), f))
                    }
                    _ => None,
                })
                .collect();
            let start = Instant::now();
            let mut total = 0;
            let mut buf = Vec::new();
            for p in &order {
                buf.clear();
                fs.file(index[p.as_str()]).reader().read_to_end(&mut buf).unwrap();
                total += buf.len() as u64;
            }
            assert_eq!(total, content);
            start.elapsed()
        };
        let warm = open();
        pass(&warm);
        rows.push((format!("{name}, cold"), median_timed(|| pass(&open()))));
        rows.push((format!("{name}, warm"), median_timed(|| pass(&warm))));
    }
    if size(&zip) > 0 {
        let bytes = std::fs::read(&zip).unwrap();
        let mut archive = zip::ZipArchive::new(std::io::Cursor::new(&bytes[..])).unwrap();
        rows.push((
            "zip -9 (zip crate)".into(),
            median(|| {
                let mut buf = Vec::new();
                for p in &order {
                    buf.clear();
                    archive.by_name(p).unwrap().read_to_end(&mut buf).unwrap();
                }
            }),
        ));
    }
    if size(&tzst) > 0 {
        let packed = std::fs::read(&tzst).unwrap();
        let unpack = median(|| {
            std::hint::black_box(tar_index(&zstd::decode_all(&packed[..]).unwrap()));
        });
        let tar = zstd::decode_all(&packed[..]).unwrap();
        let index = tar_index(&tar);
        let reads = median(|| {
            let mut buf = Vec::new();
            for p in &order {
                let (at, n) = index[p.as_str()];
                buf.clear();
                buf.extend_from_slice(&tar[at..at + n]);
                std::hint::black_box(&buf);
            }
        });
        rows.push((format!("tar.zst: decompress and index ({}), then", ms(unpack)), reads));
        rows.push(("tar.zst: decompress, index and read".into(), unpack + reads));
    }
    let base = rows[0].1.as_secs_f64();
    packfs_bench::outln!("\nRandom whole-file reads of all {} files:\n", order.len());
    packfs_bench::outln!("| reader | time | it ÷ PackFS zstd |");
    packfs_bench::outln!("|---|--:|--:|");
    for (name, t) in &rows {
        packfs_bench::outln!("| {name} | {} | {} |", ms(*t), ratio(t.as_secs_f64(), base));
    }
}

/// One 4 KiB read in the middle of a 100 MiB compressed file, on a pack
/// opened afresh each time: the chunks it decodes, and its time against a
/// read of the same range of the uncompressed pack.
fn one_range(out: &Path) {
    let fs = MemFs::new();
    let f = fs.open(fs.root(), "big.log", &OpenOptions::create()).unwrap();
    let mut line = 0u64;
    let mut data = Vec::with_capacity(100 << 20);
    while data.len() < 100 << 20 {
        data.extend_from_slice(format!("{line:09} request served in {} us\n", line * 7919 % 100_000).as_bytes());
        line += 1;
    }
    data.truncate(100 << 20);
    fs.write_at(f, 0, &data).unwrap();
    let (zp, pp) = (out.join("big.zstd.pack"), out.join("big.plain.pack"));
    PackOptions::new()
        .compress(Some(Compression::zstd(LEVEL)))
        .write(&fs.snapshot(), std::fs::File::create(&zp).unwrap())
        .unwrap();
    PackOptions::new().write(&fs.snapshot(), std::fs::File::create(&pp).unwrap()).unwrap();
    let mid = 50 << 20;
    let mut buf = [0u8; 4096];
    let read = |path: &Path, buf: &mut [u8]| {
        let pack = open_pack_with(path, ReadOptions::new()).unwrap();
        let ino = pack.lookup(pack.root(), "big.log").unwrap();
        let start = Instant::now();
        assert_eq!(pack.read_at(ino, mid, buf).unwrap(), 4096);
        (start.elapsed(), pack.chunks_decoded())
    };
    let (tz, decoded) = (0..PASSES).map(|_| read(&zp, &mut buf)).min().unwrap();
    assert_eq!(&buf[..], &data[mid as usize..mid as usize + 4096]);
    let (tp, _) = (0..PASSES).map(|_| read(&pp, &mut buf)).min().unwrap();
    packfs_bench::outln!(
        "\nOne 4 KiB read in the middle of a 100 MiB file ({} B as zstd:15): {decoded} chunk decoded, {:.1} µs; uncompressed {:.1} µs ({})",
        size(&zp),
        tz.as_secs_f64() * 1e6,
        tp.as_secs_f64() * 1e6,
        ratio(tz.as_secs_f64(), tp.as_secs_f64())
    );
}

/// Copies the `.py` files under `from` to `to`, their directories kept;
/// false if there are none.
fn copy_sources(from: &Path, to: &Path) -> bool {
    let mut copied = 0;
    for rel in files(from) {
        if rel.ends_with(".py") {
            let dst = to.join(&rel);
            std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
            std::fs::copy(from.join(&rel), dst).unwrap();
            copied += 1;
        }
    }
    copied > 0
}

fn main() {
    // `cargo test --all-targets` runs this too, without `--bench`: then a
    // smoke run on a small generated tree (peers that are not installed
    // are left out), not minutes of packing real trees.
    if !std::env::args().any(|a| a == "--bench") {
        let tree = tempfile::tempdir().unwrap();
        for i in 0..40u32 {
            let body: Vec<u8> = match i % 4 {
                0 => (0..5000 + i * 300).map(|j| (j.wrapping_mul(2_654_435_761) >> 13) as u8).collect(),
                _ => format!("file {i}: {}\n", "some text ".repeat(50 + i as usize * 40)).into_bytes(),
            };
            std::fs::create_dir_all(tree.path().join(format!("d{}", i % 3))).unwrap();
            std::fs::write(tree.path().join(format!("d{}/f{i}", i % 3)), body).unwrap();
        }
        let out = tempfile::tempdir().unwrap();
        bench_tree(tree.path(), out.path());
        return;
    }
    let trees: Vec<PathBuf> = match std::env::var("PACKFS_BENCH_TREES") {
        Ok(t) => t.split(':').map(PathBuf::from).collect(),
        Err(_) => ["/usr/include", "/usr/lib/python3.11", "/usr/lib/chromium"].map(PathBuf::from).to_vec(),
    };
    let out = tempfile::Builder::new().prefix("packfs-bench-compress-").tempdir_in("/tmp").unwrap();
    // The small-file tree: an interpreter's standard library, its sources.
    let py = tempfile::Builder::new().prefix("packfs-bench-py-").tempdir_in("/tmp").unwrap();
    let mut trees = trees;
    let python = Path::new("/usr/lib/python3.11");
    if let Some(i) = trees.iter().position(|t| t == python)
        && copy_sources(python, py.path())
    {
        trees.insert(i + 1, py.path().to_owned());
    }
    packfs_bench::outln!("## Compressed packs (`cargo bench -p packfs-bench --bench compress`)");
    for t in trees.iter().filter(|t| t.is_dir()) {
        bench_tree(t, out.path());
        for f in std::fs::read_dir(out.path()).unwrap() {
            let _ = std::fs::remove_file(f.unwrap().path());
        }
    }
    one_range(out.path());
    packfs_bench::results::printed_done(
        "compress",
        "cargo bench -p packfs-bench --bench compress",
        &["bench/benches/compress.rs", "core/src/pack", "host/os/src", "host/cli/src/packing.rs"],
        None,
    );
}
