//! A WASI 0.3 guest that misuses streams and futures, for
//! `host/tests/p3_hostile.rs`: its one argument picks what it does, and it
//! prints what it saw, one line a fact.
//!
//! - `unread N`: N streams over a 1 MiB file held unread, and N write
//!   streams given to the host and never written, then exits holding them;
//! - `flood`: streams and their futures made and kept until the host
//!   refuses one (a trap: the run ends there);
//! - `unawaited`: writes through a stream whose future it never awaits,
//!   drops a read's future first, and reads the file back;
//! - `quota`: writes 4 MiB through one stream into a tree with a 1 MiB
//!   quota;
//! - `deadlock`: reads a stream whose writer it holds and never writes;
//! - `concurrent read` / `concurrent write`: reads `/r/big` (a remote
//!   pack's file, its server slow), or writes a byte into it (under an
//!   overlay: a copy-up of all of it), while another future of the same
//!   task ticks a clock 100 times, and says which ended first;
//! - `queued N`: N writes of 64 KiB at offset 0 of `/r/big` at once, each through
//!   its own stream from its own buffer, while the first (a copy-up from
//!   the slow server) waits: the writes waiting their turn must hold no
//!   copy of their bytes in the host.

use packfs_guests_p3::exports::wasi::cli::run::Guest;
use packfs_guests_p3::{
    DescriptorFlags as F, OpenFlags as O, digest, open, pattern, preopen, read_from, show, wasi, wit_stream, write_at,
};

struct Run;
packfs_guests_p3::export!(Run);

const RW: F = F::READ.union(F::WRITE);

impl Guest for Run {
    async fn run() -> Result<(), ()> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let root = preopen("/");
        let f = open(&root, "data", O::CREATE | O::TRUNCATE, RW).await.unwrap();
        match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
            ["unread", n] => {
                let n: usize = n.parse().unwrap();
                show("write data", write_at(&f, Some(0), &pattern(1 << 20, 1), 1 << 20).await);
                let mut held = Vec::with_capacity(2 * n);
                for i in 0..n {
                    let (rx, done) = f.read_via_stream(i as u64 * 100);
                    let (tx, wrx) = wit_stream::new::<u8>();
                    let wdone = f.write_via_stream(wrx, (2 << 20) + i as u64);
                    held.push((rx, done, tx, wdone));
                }
                println!("holding {} streams", 2 * held.len());
                // Exits with every stream and future still held.
                std::mem::forget(held);
            }
            ["flood"] => {
                let mut held = Vec::new();
                loop {
                    held.push(f.read_via_stream(0));
                    if held.len() % 10_000 == 0 {
                        println!("holding {}", held.len());
                        flush();
                    }
                }
            }
            ["unawaited"] => {
                let (rx, done) = f.read_via_stream(0);
                drop(done);
                drop(rx);
                let (mut tx, rx) = wit_stream::new::<u8>();
                let never_awaited = f.write_via_stream(rx, 0);
                let data = pattern(300_000, 2);
                let rest = tx.write_all(data.clone()).await;
                println!("written {}", data.len() - rest.len());
                drop(tx);
                std::mem::forget(never_awaited);
                show("read back", read_from(&f, 0, 65536).await.map(|d| digest(&d) == digest(&data)));
            }
            ["quota"] => {
                let data = pattern(4 << 20, 3);
                show("write 4 MiB", write_at(&f, Some(0), &data, 64 << 10).await);
                show("size", f.stat().await.map(|s| s.size));
                show("kept", read_from(&f, 0, 65536).await.map(|d| d == data[..d.len()]));
            }
            ["deadlock"] => {
                let (tx, mut rx) = wit_stream::new::<u8>();
                println!("reading my own stream");
                flush();
                let (result, _) = rx.read(Vec::with_capacity(16)).await;
                println!("read returned: {result:?}");
                drop(tx);
            }
            ["concurrent", how] => {
                let flags = if how == "write" { RW } else { F::READ };
                let big = open(&preopen("/r"), "big", O::empty(), flags).await.unwrap();
                let reading = async {
                    if how == "write" {
                        show("remote write", write_at(&big, Some(1), b"x", 1).await);
                    }
                    let mut want = pattern(1 << 20, 7);
                    if how == "write" {
                        want[1] = b'x';
                    }
                    let read = read_from(&big, 0, 65536).await;
                    show("remote read", read.map(|d| digest(&d) == digest(&want)));
                    flush();
                };
                let ticking = async {
                    for _ in 0..100 {
                        wasi::clocks::monotonic_clock::wait_for(1_000_000).await;
                    }
                    println!("ticked 100");
                    flush();
                };
                futures::join!(reading, ticking);
            }
            ["queued", n] => {
                let n: usize = n.parse().unwrap();
                let big = open(&preopen("/r"), "big", O::empty(), RW).await.unwrap();
                let piece = pattern(64 << 10, 9);
                // All at 0: each write replaces the last, so that what the
                // file keeps does not grow with them.
                let writes = (0..n).map(|_| write_at(&big, Some(0), &piece, 64 << 10));
                let written = futures::future::join_all(writes).await;
                println!("written {} of {n}", written.iter().filter(|w| matches!(w, Ok(n) if *n == 64 << 10)).count());
                show("size", big.stat().await.map(|s| s.size));
            }
            _ => panic!("usage: unread N | flood | unawaited | quota | deadlock | concurrent read|write | queued N"),
        }
        println!("done");
        flush();
        Ok(())
    }
}

/// std flushes stdout when `main` returns, which never runs here.
fn flush() {
    let _ = std::io::Write::flush(&mut std::io::stdout());
}

/// The work is `run`, which `wasi:cli/run@0.3.0` exports; the standard
/// library still wants a `main`.
fn main() {
    unreachable!("run through wasi:cli/run@0.3.0")
}
