//! Files through WASI 0.3's streams: writes at offsets and appends in
//! pieces of every size around the hosts' buffers (4 KiB, 8 KiB, 64 KiB,
//! 1 MiB), read back whole and from offsets, a read stopped early, sizes,
//! flags, times, identity, and the errors a stream's future carries.

use packfs_guests_p3::exports::wasi::cli::run::Guest;
use packfs_guests_p3::{
    Descriptor, DescriptorFlags as F, NewTimestamp, OpenFlags as O, PathFlags, digest, open, pattern, preopen, read_from, show,
    step, write_at,
};
use wasi::clocks::system_clock::Instant;
use packfs_guests_p3::wasi;

struct Run;
packfs_guests_p3::export!(Run);

const RW: F = F::READ.union(F::WRITE);

impl Guest for Run {
    async fn run() -> Result<(), ()> {
        let root = preopen("/");
        let ro = preopen("/ro");
        step("mkdir p3", root.create_directory_at("p3".into()).await);
        let dir = open(&root, "p3", O::DIRECTORY, F::READ | F::MUTATE_DIRECTORY).await.unwrap();
        sizes(&dir).await;
        offsets(&dir).await;
        early(&dir).await;
        metadata(&dir).await;
        errors(&root, &ro, &dir).await;
        let seed = open(&root, "seed/big.bin", O::empty(), F::READ).await.unwrap();
        show("seed/big.bin", read_from(&seed, 0, 64 << 10).await.map(|d| digest(&d)));
        show("seed/big.bin from 65536", read_from(&seed, 65536, 4096).await.map(|d| digest(&d)));
        println!("done");
        Ok(())
    }
}

/// Each size written in each piece size, and read back in each.
async fn sizes(dir: &Descriptor) {
    let sizes = [0, 1, 4095, 4096, 4097, 8191, 8192, 8193, 65535, 65536, 65537, 131072, 131073, 1 << 20, (1 << 20) + 1, (3 << 20) + 5];
    for (i, &size) in sizes.iter().enumerate() {
        let data = pattern(size, i as u8);
        for piece in [4096, 65536, 1 << 20] {
            let name = format!("s{size}-{piece}");
            let f = open(dir, &name, O::CREATE, RW).await.unwrap();
            show(&format!("write {name}"), write_at(&f, Some(0), &data, piece).await);
            show(&format!("size {name}"), f.stat().await.map(|s| s.size));
            for read in [4096, 1 << 20] {
                let back = read_from(&f, 0, read).await;
                show(&format!("read {name} by {read}"), back.map(|b| b == data));
            }
            step(&format!("unlink {name}"), dir.unlink_file_at(name).await);
        }
    }
}

/// Writes past the end, over the middle, appends; reads from offsets.
async fn offsets(dir: &Descriptor) {
    let f = open(dir, "sparse", O::CREATE | O::EXCLUSIVE, RW).await.unwrap();
    show("write past end", write_at(&f, Some(10_000), b"x", 1).await);
    show("sparse size", f.stat().await.map(|s| s.size));
    show("sparse bytes", read_from(&f, 0, 4096).await.map(|d| (d.iter().filter(|&&b| b == 0).count(), d[10_000])));
    show("overwrite middle", write_at(&f, Some(4094), b"abcd", 2).await);
    show("read at 4094", read_from(&f, 4094, 3).await.map(|d| d[..4].to_vec()));
    show("read at end", read_from(&f, 10_001, 4096).await.map(|d| d.len()));
    show("read past end", read_from(&f, 1 << 40, 4096).await.map(|d| d.len()));
    let log = open(dir, "log", O::CREATE, RW).await.unwrap();
    for line in ["one\n", "two\n", "three\n"] {
        show("append", write_at(&log, None, line.as_bytes(), 2).await);
    }
    show("write at 0 after appends", write_at(&log, Some(0), b"ONE", 3).await);
    show("log", read_from(&log, 0, 4096).await.map(|d| String::from_utf8(d).unwrap()));
    let big = pattern(300_000, 9);
    show("append big", write_at(&log, None, &big, 65536).await);
    show("log tail", read_from(&log, 14, 65536).await.map(|d| d == big));
}

/// A stream read a little and dropped; a stream and future dropped unread.
async fn early(dir: &Descriptor) {
    let f = open(dir, "early", O::CREATE, RW).await.unwrap();
    let data = pattern(2 << 20, 3);
    show("write early", write_at(&f, Some(0), &data, 1 << 20).await);
    let (mut rx, done) = f.read_via_stream(0);
    let (_, got) = rx.read(Vec::with_capacity(100)).await;
    println!("first read: {}", !got.is_empty() && got.len() <= 100 && got == data[..got.len()]);
    drop(rx);
    show("future after drop", done.await);
    let (rx, done) = f.read_via_stream(5);
    drop(done);
    drop(rx);
    // A write stream whose writer ends before anything is written.
    let (tx, rx) = packfs_guests_p3::wit_stream::new::<u8>();
    let done = f.write_via_stream(rx, 0);
    drop(tx);
    show("empty write", done.await);
    show("still whole", read_from(&f, 0, 1 << 20).await.map(|d| d == data));
    step("unlink early", dir.unlink_file_at("early".into()).await);
}

async fn metadata(dir: &Descriptor) {
    let f = open(dir, "meta", O::CREATE, RW).await.unwrap();
    show("set-size grow", f.set_size(100_000).await);
    show("size", f.stat().await.map(|s| s.size));
    show("set-size shrink", f.set_size(10).await);
    show("bytes", read_from(&f, 0, 4096).await);
    show("get-type file", f.get_type().await);
    show("get-type dir", dir.get_type().await);
    show("get-flags file", f.get_flags().await);
    show("sync", f.sync().await);
    show("sync-data", f.sync_data().await);
    show("advise", f.advise(0, 10, wasi::filesystem::types::Advice::Sequential).await);
    let at = |s, n| NewTimestamp::Timestamp(Instant { seconds: s, nanoseconds: n });
    show("set-times", f.set_times(at(1_000_000_000, 5), at(1_100_000_000, 7)).await);
    show("times", f.stat().await.map(|s| (s.data_access_timestamp, s.data_modification_timestamp)));
    show("set-times-at", dir.set_times_at(PathFlags::empty(), "meta".into(), NewTimestamp::NoChange, at(1_200_000_000, 0)).await);
    show("mtime at", dir.stat_at(PathFlags::empty(), "meta".into()).await.map(|s| s.data_modification_timestamp));
    show("link-count", f.stat().await.map(|s| s.link_count));
    let again = open(dir, "meta", O::empty(), F::READ).await.unwrap();
    let other = open(dir, "log", O::empty(), F::READ).await.unwrap();
    println!("same object: {} {}", f.is_same_object(&again).await, f.is_same_object(&other).await);
    let (a, b, c) = (f.metadata_hash().await.unwrap(), again.metadata_hash().await.unwrap(), other.metadata_hash().await.unwrap());
    println!("metadata-hash: same {} other {}", a == b, a == c);
    let at_hash = dir.metadata_hash_at(PathFlags::empty(), "meta".into()).await.unwrap();
    println!("metadata-hash-at: same {}", at_hash == a);
}

async fn errors(root: &Descriptor, ro: &Descriptor, dir: &Descriptor) {
    let (_, done) = dir.read_via_stream(0);
    show("read a directory", done.await);
    let r = open(dir, "meta", O::empty(), F::READ).await.unwrap();
    show("read the read-only", read_from(&r, 0, 10).await.map(|d| d.len()));
    show("write the read-only", write_at(&r, Some(0), b"x", 1).await);
    show("append the read-only", write_at(&r, None, b"x", 1).await);
    step("open missing", open(dir, "missing", O::empty(), F::READ).await);
    step("create exclusive existing", open(dir, "meta", O::CREATE | O::EXCLUSIVE, RW).await);
    step("open a file as a directory", open(dir, "meta", O::DIRECTORY, F::READ).await);
    step("open a directory for writing", open(root, "p3", O::empty(), RW).await);
    step("open ro for writing", open(ro, "hello.txt", O::empty(), RW).await);
    step("create in ro", open(ro, "new", O::CREATE, RW).await);
    let hello = open(ro, "hello.txt", O::empty(), F::READ).await.unwrap();
    show("read ro", read_from(&hello, 0, 4096).await.map(|d| String::from_utf8(d).unwrap()));
    show("set-size ro", hello.set_size(0).await);
    step("escape with ..", open(dir, "../../x", O::empty(), F::READ).await);
    step("absolute", open(dir, "/etc/passwd", O::empty(), F::READ).await);
    show("stat-at missing", dir.stat_at(PathFlags::empty(), "nope".into()).await.map(|s| s.size));
}

/// The work is `run`, which `wasi:cli/run@0.3.0` exports; the standard
/// library still wants a `main`.
fn main() {
    unreachable!("run through wasi:cli/run@0.3.0")
}
