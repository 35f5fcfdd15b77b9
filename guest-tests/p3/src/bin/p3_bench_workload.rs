//! The guest workload of `bench/benches/guest.rs` through WASI 0.3: the
//! phases, arguments, contents and output of
//! `guest-tests/src/bin/bench_workload.rs` (which says what each phase
//! does), each a call of `wasi:filesystem@0.3.0` where that one makes a
//! `std::fs` call, timed inside the guest with
//! `wasi:clocks/monotonic-clock@0.3.0`.
//!
//! ```text
//! p3_bench_workload PHASES N [ROOT [BIG_MIB]]
//! ```
//!
//! Paths are relative to the preopen `/`, as wasi-libc resolves an
//! absolute path. A small file is written as `fs::write` does (`open-at`
//! with create and truncate, its 128 bytes through `write-via-stream`) and
//! read as `File::open` and `read_to_end` do (`open-at`, `read-via-stream`
//! read until the stream ends, the future); `stat` is `stat-at`, following
//! symlinks; `readdir` opens the directory and reads `read-directory` in
//! batches of up to [`BATCH`] entries. The big file moves through one
//! stream, one stream read or write per piece of 4 KiB, 64 KiB or 1 MiB.
//!
//! Pieces are separate buffers made before the clock starts (a stream write
//! takes its buffer, a stream read fills one's spare capacity), so that,
//! as with p1's `read(2)` into a slice of one buffer, the guest copies no
//! bytes of its own while timed.
//!
//! Not compared with the oracle (`host/tests/guests.rs` lists it as a tool).

use packfs_guests_p3::exports::wasi::cli::run::Guest;
use packfs_guests_p3::wasi::clocks::monotonic_clock;
use packfs_guests_p3::{
    Descriptor, DescriptorFlags as F, DescriptorType, ErrorCode, OpenFlags as O, PathFlags, open, preopen, wit_stream,
};
use wit_bindgen::StreamResult;

#[path = "../../../src/workload.rs"]
mod workload;
use workload::{SMALL, pattern, piece, small};

struct Run;
packfs_guests_p3::export!(Run);

/// Directory entries asked for in one read of `read-directory`'s stream.
const BATCH: usize = 1024;

impl Guest for Run {
    async fn run() -> Result<(), ()> {
        let args: Vec<String> = std::env::args().collect();
        let (Some(phases), Some(n)) = (args.get(1), args.get(2).and_then(|n| n.parse::<usize>().ok())) else {
            eprintln!("usage: p3_bench_workload PHASES N [ROOT [BIG_MIB]]");
            return Err(());
        };
        let root = args.get(3).map_or("work", |r| r.trim_matches('/'));
        let big = match workload::big(args.get(4)) {
            Ok(big) => big,
            Err(e) => {
                eprintln!("p3_bench_workload: {e}");
                return Err(());
            }
        };
        let w = Workload { top: preopen("/"), root, n, big };
        for phase in workload::phases(phases) {
            match w.run(phase).await {
                Ok((ns, ops)) => println!("phase {phase} {ns} {ops}"),
                Err(e) => {
                    eprintln!("p3_bench_workload: {phase}: {e}");
                    return Err(());
                }
            }
        }
        println!("done");
        Ok(())
    }
}

/// `what: code`, for a failed call.
fn err(what: &str) -> impl Fn(ErrorCode) -> String + '_ {
    move |e| format!("{what}: {e:?}")
}

/// The preopen, the workload's directory under it, and the sizes.
struct Workload<'a> {
    top: Descriptor,
    root: &'a str,
    n: usize,
    big: usize,
}

impl Workload<'_> {
    fn path(&self, i: usize) -> String {
        format!("{}/d/f{i:05}", self.root)
    }

    /// The `mkdir` phase's directories: one per five small files.
    fn dirs(&self) -> Vec<String> {
        (0..self.n / 5).map(|i| format!("{}/m/d{i:05}", self.root)).collect()
    }

    /// `path` and its parents, as `fs::create_dir_all`.
    async fn mkdirs(&self, path: &str) -> Result<(), String> {
        let mut at = 0;
        while at < path.len() {
            let end = path[at..].find('/').map_or(path.len(), |i| at + i);
            match self.top.create_directory_at(path[..end].to_string()).await {
                Ok(()) | Err(ErrorCode::Exist) => {}
                Err(e) => return Err(err(&path[..end])(e)),
            }
            at = end + 1;
        }
        Ok(())
    }

    /// Opens `path` under the preopen.
    async fn open(&self, path: &str, how: O, flags: F) -> Result<Descriptor, String> {
        open(&self.top, path, how, flags).await.map_err(err(path))
    }

    /// Runs one phase; returns its time in nanoseconds and its operation
    /// count.
    async fn run(&self, phase: &str) -> Result<(u64, usize), String> {
        let (top, n) = (&self.top, self.n);
        // Paths are made before the clock starts: formatting is not the host's work.
        let paths: Vec<String> = (0..n).map(|i| self.path(i)).collect();
        let big = format!("{}/big", self.root);
        let start;
        let ops = match phase {
            "create" => {
                self.mkdirs(&format!("{}/d", self.root)).await?;
                let contents: Vec<Vec<u8>> = (0..n).map(|i| small(i).to_vec()).collect();
                start = monotonic_clock::now();
                for (p, c) in paths.iter().zip(contents) {
                    let f = self.open(p, O::CREATE | O::TRUNCATE, F::WRITE).await?;
                    write(&f, vec![c]).await.map_err(err(p))?;
                }
                n
            }
            "read" => {
                let mut buf = Vec::with_capacity(2 * SMALL);
                start = monotonic_clock::now();
                for (i, p) in paths.iter().enumerate() {
                    buf.clear();
                    let f = self.open(p, O::empty(), F::READ).await?;
                    let (mut rx, done) = f.read_via_stream(0);
                    loop {
                        let (result, back) = rx.read(buf).await;
                        buf = back;
                        if buf.len() == buf.capacity() {
                            buf.reserve(SMALL);
                        }
                        if result == StreamResult::Dropped {
                            break;
                        }
                    }
                    drop(rx);
                    done.await.map_err(err(p))?;
                    if buf.len() != SMALL || buf[..5] != small(i)[..5] {
                        return Err(format!("{p}: wrong contents ({} bytes)", buf.len()));
                    }
                }
                n
            }
            "stat" => {
                start = monotonic_clock::now();
                for p in &paths {
                    let m = top.stat_at(PathFlags::SYMLINK_FOLLOW, p.clone()).await.map_err(err(p))?;
                    if m.size != SMALL as u64 || m.type_ != DescriptorType::RegularFile {
                        return Err(format!("{p}: wrong metadata"));
                    }
                }
                n
            }
            "readdir" => {
                let dir = format!("{}/d", self.root);
                start = monotonic_clock::now();
                let d = self.open(&dir, O::DIRECTORY, F::READ).await?;
                let (mut rx, done) = d.read_directory();
                let (mut count, mut batch) = (0, Vec::with_capacity(BATCH));
                loop {
                    batch.clear();
                    let (result, back) = rx.read(batch).await;
                    batch = back;
                    count += batch.len();
                    if result == StreamResult::Dropped {
                        break;
                    }
                }
                drop(rx);
                done.await.map_err(err(&dir))?;
                if count != n {
                    return Err(format!("{dir}: {count} entries, expected {n}"));
                }
                n
            }
            "unlink" => {
                start = monotonic_clock::now();
                for p in &paths {
                    top.unlink_file_at(p.clone()).await.map_err(err(p))?;
                }
                n
            }
            "mkdir" => {
                self.mkdirs(&format!("{}/m", self.root)).await?;
                let dirs = self.dirs();
                start = monotonic_clock::now();
                for d in &dirs {
                    top.create_directory_at(d.clone()).await.map_err(err(d))?;
                }
                dirs.len()
            }
            "rmdir" => {
                let dirs = self.dirs();
                start = monotonic_clock::now();
                for d in &dirs {
                    top.remove_directory_at(d.clone()).await.map_err(err(d))?;
                }
                dirs.len()
            }
            p if p.starts_with("write") => {
                let piece = piece(&p[5..])?;
                self.mkdirs(self.root).await?;
                let pieces: Vec<Vec<u8>> = pattern(self.big).chunks(piece).map(<[u8]>::to_vec).collect();
                start = monotonic_clock::now();
                let f = self.open(&big, O::CREATE | O::TRUNCATE, F::WRITE).await?;
                write(&f, pieces).await.map_err(err(&big))?;
                self.big / piece
            }
            p if p.starts_with("read") => {
                let piece = piece(&p[4..])?;
                // One more byte, as p1's, where the end shows.
                let mut pieces: Vec<Vec<u8>> = (0..self.big / piece).map(|_| Vec::with_capacity(piece)).collect();
                pieces.push(Vec::with_capacity(1));
                start = monotonic_clock::now();
                let f = self.open(&big, O::empty(), F::READ).await?;
                let (mut rx, done) = f.read_via_stream(0);
                'pieces: for slot in &mut pieces {
                    while slot.len() < slot.capacity() {
                        let (result, back) = rx.read(std::mem::take(slot)).await;
                        *slot = back;
                        if result == StreamResult::Dropped {
                            break 'pieces;
                        }
                    }
                }
                drop(rx);
                done.await.map_err(err(&big))?;
                let elapsed = monotonic_clock::now() - start;
                let data = pieces.concat();
                if data != pattern(self.big) {
                    return Err(format!("{big}: wrong contents ({} bytes)", data.len()));
                }
                return Ok((elapsed, self.big / piece));
            }
            other => return Err(format!("unknown phase {other:?}")),
        };
        Ok((monotonic_clock::now() - start, ops))
    }
}

/// Writes `pieces` from offset 0 through one `write-via-stream`, a stream
/// write each; then its future.
async fn write(f: &Descriptor, pieces: Vec<Vec<u8>>) -> Result<(), ErrorCode> {
    let (mut tx, rx) = wit_stream::new();
    let done = f.write_via_stream(rx, 0);
    for piece in pieces {
        if !tx.write_all(piece).await.is_empty() {
            break;
        }
    }
    drop(tx);
    done.await
}

/// The work is `run`, which `wasi:cli/run@0.3.0` exports; the standard
/// library still wants a `main`.
fn main() {
    unreachable!("run through wasi:cli/run@0.3.0")
}
