//! A WASI 0.3 guest that holds and races streams, for `packfs virt`'s
//! 0.3 streams (`host/tests/virt/p3.rs`): its arguments pick what it does,
//! and it prints what it saw, compared with PackFS's own host.
//!
//! - `stale`: takes 10 bytes of a file's stream, writes the file anew, reads
//!   on: which bytes came;
//! - `listings N`: N listings read to their end, their futures held, then
//!   one more;
//! - `pending N`: N write streams given and never written;
//! - `unread N`: N read streams over a 1 MiB file never read;
//! - `seqerr N`: N bytes written through a stream to an offset no file
//!   takes, all of them before the future is awaited;
//! - `unawaited`: a write whose future is awaited only after a stat.

use packfs_guests_p3::exports::wasi::cli::run::Guest;
use packfs_guests_p3::{
    Descriptor, DescriptorFlags as F, OpenFlags as O, open, pattern, preopen, show, wit_stream, write_at,
};
use wit_bindgen::StreamResult;

struct Run;
packfs_guests_p3::export!(Run);

const RW: F = F::READ.union(F::WRITE);

fn flush() {
    let _ = std::io::Write::flush(&mut std::io::stdout());
}

/// Lets the other tasks run (a call to the virtual filesystem's async
/// exports returns at once, without yielding).
async fn yield_some(_f: &Descriptor, n: usize) {
    for _ in 0..n {
        wit_bindgen::yield_async().await;
    }
}

impl Guest for Run {
    async fn run() -> Result<(), ()> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let root = preopen("/");
        let f = open(&root, "r3data", O::CREATE | O::TRUNCATE, RW).await.unwrap();
        match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
            ["stale"] => {
                let (old, new) = (pattern(200_000, 1), pattern(200_000, 2));
                show("write old", write_at(&f, Some(0), &old, 1 << 20).await);
                let (mut rx, done) = f.read_via_stream(0);
                let (r, first) = rx.read(Vec::with_capacity(10)).await;
                println!("first read: {r:?} {}", first.len());
                show("write new", write_at(&f, Some(0), &new, 1 << 20).await);
                let mut rest = Vec::new();
                loop {
                    rest.reserve(4096);
                    let (r, back) = rx.read(rest).await;
                    rest = back;
                    if !matches!(r, StreamResult::Complete(_)) {
                        break;
                    }
                }
                let n = rest.len();
                let at = &rest[..n.min(1000)];
                println!(
                    "bytes 10..1010 are {}",
                    if at == &new[10..10 + at.len()] {
                        "new"
                    } else if at == &old[10..10 + at.len()] {
                        "old"
                    } else {
                        "neither"
                    }
                );
                println!("rest is the new file's: {}", rest == new[10..]);
                show("future", done.await);
            }
            ["listings", n] => {
                let n: usize = n.parse().unwrap();
                let mut futures = Vec::new();
                for _ in 0..n {
                    let (rx, done) = root.read_directory();
                    let _entries = rx.collect().await;
                    futures.push(done);
                }
                println!("holding {n} futures of listings read to their end");
                let (rx, done) = root.read_directory();
                let entries = rx.collect().await;
                println!("one more listing: {} entries", entries.len());
                show("its future", done.await);
                drop(futures);
                let (rx, done) = root.read_directory();
                let entries = rx.collect().await;
                println!("after dropping them: {} entries", entries.len());
                show("its future", done.await);
            }
            ["pending", n] => {
                let n: usize = n.parse().unwrap();
                let mut held = Vec::new();
                for i in 0..n {
                    let (tx, wrx) = wit_stream::new::<u8>();
                    let wdone = f.write_via_stream(wrx, i as u64);
                    held.push((tx, wdone));
                    if i % 64 == 63 {
                        yield_some(&f, 2).await;
                    }
                    if i % 1000 == 999 {
                        println!("holding {}", i + 1);
                        flush();
                    }
                }
                yield_some(&f, 4).await;
                println!("holding {n} write streams");
                std::mem::forget(held);
            }
            ["unread", n] => {
                let n: usize = n.parse().unwrap();
                show("write data", write_at(&f, Some(0), &pattern(1 << 20, 1), 1 << 20).await);
                let mut held = Vec::new();
                for i in 0..n {
                    held.push(f.read_via_stream(0));
                    if i % 64 == 63 {
                        yield_some(&f, 2).await;
                    }
                    if i % 1000 == 999 {
                        println!("holding {}", i + 1);
                        flush();
                    }
                }
                yield_some(&f, 4).await;
                println!("holding {n} read streams");
                std::mem::forget(held);
            }
            ["seqerr", n] => {
                // write_all, then the future: a common sequential pattern.
                let n: usize = n.parse().unwrap();
                let (mut tx, rx) = wit_stream::new::<u8>();
                let done = f.write_via_stream(rx, u64::MAX / 2);
                println!("writing {n} bytes at 2^63");
                flush();
                let rest = tx.write_all(pattern(n, 3)).await;
                println!("taken {}", n - rest.len());
                drop(tx);
                show("future", done.await);
            }
            ["unawaited"] => {
                let data = pattern(1000, 4);
                let (mut tx, rx) = wit_stream::new::<u8>();
                let done = f.write_via_stream(rx, 0);
                let rest = tx.write_all(data.clone()).await;
                println!("taken {}", data.len() - rest.len());
                drop(tx);
                show("size before the future", f.stat().await.map(|s| s.size));
                show("future", done.await);
                show("size after it", f.stat().await.map(|s| s.size));
            }
            _ => panic!("usage"),
        }
        println!("done");
        flush();
        Ok(())
    }
}

/// The work is `run`, which `wasi:cli/run@0.3.0` exports; the standard
/// library still wants a `main`.
fn main() {
    unreachable!("run through wasi:cli/run@0.3.0")
}
