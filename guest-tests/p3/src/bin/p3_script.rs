//! A script of `wasi:filesystem@0.3.0` calls, for the randomized
//! differential test (`host/tests/p3_differential.rs`), not a transcript
//! of its own: each argument is one operation, its fields separated by
//! `|`, on a table of descriptor slots (0 is the preopen `/`, 1 is `/ro`,
//! the others empty until a script opens into them). Each prints one line,
//! `N OP: ok VALUE` or `N OP: err CODE` (`none` for an empty slot), with
//! nothing that may differ between hosts: no inode numbers, hash values,
//! times but those a script set (before 2000), directory order, or sizes
//! of directories.
//!
//! | operation | call |
//! |---|---|
//! | `open\|S\|D\|F\|O\|FL\|PATH` | slot S = D.open-at(F, PATH, O, FL); F `f` follows, O of `cdet` (create, directory, exclusive, truncate), FL of `rwm` (read, write, mutate-directory), `-` for none |
//! | `mkdir\|D\|PATH`, `unlink\|D\|PATH`, `rmdir\|D\|PATH`, `readlink\|D\|PATH` | the `*-at` call |
//! | `stat\|D`, `statat\|D\|F\|PATH` | type, links, size (not a directory's), mtime if set before 2000 |
//! | `size\|D\|N` | set-size |
//! | `times\|D\|A\|M`, `timesat\|D\|F\|PATH\|A\|M` | set-times(-at): `-` no change, `now`, or `SECS.NANOS` |
//! | `write\|D\|OFF\|LEN\|SEED\|PIECE`, `append\|D\|LEN\|SEED\|PIECE` | LEN bytes of `pattern(LEN, SEED)` through write-via-stream at OFF (append-via-stream), in writes of PIECE: bytes taken and the future |
//! | `read\|D\|OFF\|LIMIT\|PIECE` | read-via-stream from OFF in reads of PIECE, to the end or dropped once LIMIT bytes came (LIMIT 0: no limit): digest of the bytes and the future |
//! | `list\|D\|LIMIT` | read-directory: sorted names and types, or dropped after LIMIT entries (0: no limit) and how many came; the future |
//! | `rename\|D\|P\|D2\|P2`, `link\|D\|P\|D2\|P2` | rename-at, link-at (not following) |
//! | `symlink\|D\|TARGET\|PATH` | symlink-at |
//! | `same\|D\|D2`, `hash\|D\|D2`, `hashat\|D\|F\|PATH\|D2` | is-same-object; whether metadata-hash (of D, or of PATH under D) equals D2's |
//! | `flags\|D`, `type\|D`, `sync\|D`, `syncdata\|D`, `advise\|D` | get-flags, get-type, sync, sync-data, advise |
//! | `drop\|S` | drops slot S |
//!
//! The script ends with `done`.

use std::fmt::Debug;

use packfs_guests_p3::exports::wasi::cli::run::Guest;
use packfs_guests_p3::wasi::clocks::system_clock::Instant;
use packfs_guests_p3::wasi::filesystem::types::Advice;
use packfs_guests_p3::{
    Descriptor, DescriptorFlags, DescriptorType, ErrorCode, NewTimestamp, OpenFlags, PathFlags, digest, drain, pattern,
    preopen, write_counted,
};

struct Run;
packfs_guests_p3::export!(Run);

/// Descriptor slots.
const SLOTS: usize = 8;

/// Times before this (2000-01-01) were set by a script.
const EXPLICIT_BEFORE: i64 = 946_684_800;

impl Guest for Run {
    async fn run() -> Result<(), ()> {
        let mut slots: Vec<Option<Descriptor>> = (0..SLOTS).map(|_| None).collect();
        slots[0] = Some(preopen("/"));
        slots[1] = Some(preopen("/ro"));
        for (i, op) in std::env::args().skip(1).enumerate() {
            let out = perform(&mut slots, &op).await;
            println!("{i} {op}: {out}");
        }
        println!("done");
        Ok(())
    }
}

/// `ok VALUE` or `err CODE`.
fn show<T: Debug>(r: Result<T, ErrorCode>) -> String {
    match r {
        Ok(v) => format!("ok {v:?}"),
        Err(e) => format!("err {e:?}"),
    }
}

fn num<T: std::str::FromStr>(s: &str) -> T {
    s.parse().unwrap_or_else(|_| panic!("not a number: {s:?}"))
}

fn path_flags(f: &str) -> PathFlags {
    if f == "f" { PathFlags::SYMLINK_FOLLOW } else { PathFlags::empty() }
}

fn open_flags(s: &str) -> OpenFlags {
    let mut o = OpenFlags::empty();
    for (c, f) in
        [('c', OpenFlags::CREATE), ('d', OpenFlags::DIRECTORY), ('e', OpenFlags::EXCLUSIVE), ('t', OpenFlags::TRUNCATE)]
    {
        if s.contains(c) {
            o |= f;
        }
    }
    o
}

fn descriptor_flags(s: &str) -> DescriptorFlags {
    let mut o = DescriptorFlags::empty();
    for (c, f) in
        [('r', DescriptorFlags::READ), ('w', DescriptorFlags::WRITE), ('m', DescriptorFlags::MUTATE_DIRECTORY)]
    {
        if s.contains(c) {
            o |= f;
        }
    }
    o
}

fn time(s: &str) -> NewTimestamp {
    match s {
        "-" => NewTimestamp::NoChange,
        "now" => NewTimestamp::Now,
        t => {
            let (secs, nanos) = t.split_once('.').expect("SECS.NANOS");
            NewTimestamp::Timestamp(Instant { seconds: num(secs), nanoseconds: num(nanos) })
        }
    }
}

/// A stat without what differs between hosts.
fn stat(s: packfs_guests_p3::wasi::filesystem::types::DescriptorStat) -> String {
    let size = match s.type_ {
        DescriptorType::Directory => String::new(),
        _ => format!(" size {}", s.size),
    };
    let mtime = match s.data_modification_timestamp {
        Some(t) if t.seconds < EXPLICIT_BEFORE => format!(" mtime {}.{:09}", t.seconds, t.nanoseconds),
        _ => String::new(),
    };
    format!("{:?} links {}{size}{mtime}", s.type_, s.link_count)
}

/// Performs `op`; what it printed.
async fn perform(slots: &mut [Option<Descriptor>], op: &str) -> String {
    let f: Vec<&str> = op.split('|').collect();
    // The descriptor in slot field `k`.
    let slot = |k: usize| slots[num::<usize>(f[k])].as_ref();
    macro_rules! fd {
        ($k:expr) => {
            match slot($k) {
                Some(d) => d,
                None => return "none".into(),
            }
        };
    }
    match f[0] {
        "open" => {
            let d = fd!(2);
            let r = d.open_at(path_flags(f[3]), f[6].to_owned(), open_flags(f[4]), descriptor_flags(f[5])).await;
            match r {
                Ok(opened) => {
                    slots[num::<usize>(f[1])] = Some(opened);
                    "ok".into()
                }
                Err(e) => show::<()>(Err(e)),
            }
        }
        "mkdir" => show(fd!(1).create_directory_at(f[2].to_owned()).await),
        "unlink" => show(fd!(1).unlink_file_at(f[2].to_owned()).await),
        "rmdir" => show(fd!(1).remove_directory_at(f[2].to_owned()).await),
        "readlink" => show(fd!(1).readlink_at(f[2].to_owned()).await),
        "stat" => show(fd!(1).stat().await.map(stat)),
        "statat" => show(fd!(1).stat_at(path_flags(f[2]), f[3].to_owned()).await.map(stat)),
        "size" => show(fd!(1).set_size(num(f[2])).await),
        "times" => show(fd!(1).set_times(time(f[2]), time(f[3])).await),
        "timesat" => show(fd!(1).set_times_at(path_flags(f[2]), f[3].to_owned(), time(f[4]), time(f[5])).await),
        "write" => write(fd!(1), Some(num(f[2])), num(f[3]), num(f[4]), num(f[5])).await,
        "append" => write(fd!(1), None, num(f[2]), num(f[3]), num(f[4])).await,
        "read" => read(fd!(1), num(f[2]), num(f[3]), num(f[4])).await,
        "list" => list(fd!(1), num(f[2])).await,
        "rename" => {
            let (a, b) = (fd!(1), fd!(3));
            show(a.rename_at(f[2].to_owned(), b, f[4].to_owned()).await)
        }
        "link" => {
            let (a, b) = (fd!(1), fd!(3));
            show(a.link_at(PathFlags::empty(), f[2].to_owned(), b, f[4].to_owned()).await)
        }
        "symlink" => show(fd!(1).symlink_at(f[2].to_owned(), f[3].to_owned()).await),
        "same" => {
            let (a, b) = (fd!(1), fd!(2));
            format!("ok {}", a.is_same_object(b).await)
        }
        "hash" => {
            let (a, b) = (fd!(1), fd!(2));
            let (x, y) = (a.metadata_hash().await, b.metadata_hash().await);
            show(x.and_then(|x| y.map(|y| x == y)))
        }
        "hashat" => {
            let (a, b) = (fd!(1), fd!(4));
            let (x, y) = (a.metadata_hash_at(path_flags(f[2]), f[3].to_owned()).await, b.metadata_hash().await);
            show(x.and_then(|x| y.map(|y| x == y)))
        }
        "flags" => show(fd!(1).get_flags().await),
        "type" => show(fd!(1).get_type().await),
        "sync" => show(fd!(1).sync().await),
        "syncdata" => show(fd!(1).sync_data().await),
        "advise" => show(fd!(1).advise(0, 100, Advice::Sequential).await),
        "drop" => {
            let s = num::<usize>(f[1]);
            let was = slots[s].take().is_some();
            format!("ok {was}")
        }
        other => panic!("unknown operation {other:?}"),
    }
}

/// `len` bytes of a pattern written at `offset` (appended, for `None`) in
/// writes of `piece`: the bytes the host took, then the future's outcome.
async fn write(fd: &Descriptor, offset: Option<u64>, len: usize, seed: u8, piece: usize) -> String {
    let (taken, result) = write_counted(fd, offset, &pattern(len, seed), piece).await;
    format!("taken {taken}, {}", show(result))
}

/// Reads from `offset` in reads of `piece`, to the end or until `limit`
/// bytes came (then drops the stream); the first `limit` bytes' digest
/// and the future's outcome.
async fn read(fd: &Descriptor, offset: u64, limit: usize, piece: usize) -> String {
    let (mut rx, done) = fd.read_via_stream(offset);
    let (data, early) = drain(&mut rx, limit, piece).await;
    drop(rx);
    let ended = if early { "dropped" } else { "to the end" };
    format!("{} {ended}, {}", digest(&data), show(done.await))
}

/// The sorted names and types (or, with a `limit`, how many of it came
/// before the stream was dropped), then the future's outcome.
async fn list(fd: &Descriptor, limit: usize) -> String {
    let (mut rx, done) = fd.read_directory();
    let (entries, _) = drain(&mut rx, limit, 16).await;
    drop(rx);
    let got = if limit > 0 {
        format!("{} of at most {limit}", entries.len())
    } else {
        let mut names: Vec<String> = entries.into_iter().map(|e| format!("{}:{:?}", e.name, e.type_)).collect();
        names.sort();
        names.join(" ")
    };
    format!("[{got}], {}", show(done.await))
}

/// The work is `run`, which `wasi:cli/run@0.3.0` exports; the standard
/// library still wants a `main`.
fn main() {
    unreachable!("run through wasi:cli/run@0.3.0")
}
