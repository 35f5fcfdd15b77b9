//! A script of `wasi:filesystem` 0.2 calls, for the randomized differential
//! test of the 0.2 side (`host/tests/p2_differential.rs` runs it natively;
//! `web/e2e/preview2.test.mjs` through jco and packfs-web/preview2), not a
//! transcript of its own. The script language is `p3_script`'s
//! (`guest-tests/p3/src/bin/p3_script.rs`), each operation one argument,
//! its fields separated by `|`, on a table of descriptor slots (0 is the
//! preopen `/`, 1 is `/ro`). Each prints one line, `N OP: ok VALUE` or
//! `N OP: err CODE` (`none` for an empty slot), with nothing that may
//! differ between hosts; streams end in `ok ()`, `closed` or the
//! `error-code` of their failure. The script ends with `done`.
//!
//! Built for wasm32-wasip2 only; the wasm32-wasip1 build is a stub.

#[cfg(target_env = "p2")]
fn main() {
    script::main();
}

#[cfg(not(target_env = "p2"))]
fn main() {
    eprintln!("p2_script is a wasm32-wasip2 component");
    std::process::exit(2);
}

#[cfg(target_env = "p2")]
mod script {
    use std::fmt::Debug;

    use packfs_guests::{digest, pattern};
    use wasi::filesystem::preopens::get_directories;
    use wasi::filesystem::types::{
        Advice, Descriptor, DescriptorFlags, DescriptorStat, DescriptorType, ErrorCode, NewTimestamp, OpenFlags,
        PathFlags, filesystem_error_code,
    };
    use wasi::clocks::wall_clock::Datetime;
    use wasi::io::streams::StreamError;

    /// Descriptor slots.
    const SLOTS: usize = 8;

    /// Times before this (2000-01-01) were set by a script.
    const EXPLICIT_BEFORE: u64 = 946_684_800;

    pub fn main() {
        let mut slots: Vec<Option<Descriptor>> = (0..SLOTS).map(|_| None).collect();
        let mut preopens = get_directories();
        for (slot, path) in [(0, "/"), (1, "/ro")] {
            let at = preopens.iter().position(|(_, p)| p == path).unwrap_or_else(|| panic!("no preopen {path}"));
            slots[slot] = Some(preopens.swap_remove(at).0);
        }
        for (i, op) in std::env::args().skip(1).enumerate() {
            let out = perform(&mut slots, &op);
            println!("{i} {op}: {out}");
        }
        println!("done");
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
                NewTimestamp::Timestamp(Datetime { seconds: num(secs), nanoseconds: num(nanos) })
            }
        }
    }

    /// A stat without what differs between hosts.
    fn stat(s: DescriptorStat) -> String {
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

    /// A stream's failure as the transcript shows it.
    fn stream_error(e: StreamError) -> String {
        match e {
            StreamError::Closed => "closed".into(),
            StreamError::LastOperationFailed(e) => match filesystem_error_code(&e) {
                Some(code) => format!("err {code:?}"),
                None => "err (not a filesystem error)".into(),
            },
        }
    }

    /// Performs `op`; what it printed.
    fn perform(slots: &mut [Option<Descriptor>], op: &str) -> String {
        let f: Vec<&str> = op.split('|').collect();
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
                match d.open_at(path_flags(f[3]), f[6], open_flags(f[4]), descriptor_flags(f[5])) {
                    Ok(opened) => {
                        slots[num::<usize>(f[1])] = Some(opened);
                        "ok".into()
                    }
                    Err(e) => show::<()>(Err(e)),
                }
            }
            "mkdir" => show(fd!(1).create_directory_at(f[2])),
            "unlink" => show(fd!(1).unlink_file_at(f[2])),
            "rmdir" => show(fd!(1).remove_directory_at(f[2])),
            "readlink" => show(fd!(1).readlink_at(f[2])),
            "stat" => show(fd!(1).stat().map(stat)),
            "statat" => show(fd!(1).stat_at(path_flags(f[2]), f[3]).map(stat)),
            "size" => show(fd!(1).set_size(num(f[2]))),
            "times" => show(fd!(1).set_times(time(f[2]), time(f[3]))),
            "timesat" => show(fd!(1).set_times_at(path_flags(f[2]), f[3], time(f[4]), time(f[5]))),
            "write" => write(fd!(1), Some(num(f[2])), num(f[3]), num(f[4]), num(f[5])),
            "append" => write(fd!(1), None, num(f[2]), num(f[3]), num(f[4])),
            "read" => read(fd!(1), num(f[2]), num(f[3]), num(f[4])),
            "list" => list(fd!(1), num(f[2])),
            "rename" => {
                let (a, b) = (fd!(1), fd!(3));
                show(a.rename_at(f[2], b, f[4]))
            }
            "link" => {
                let (a, b) = (fd!(1), fd!(3));
                show(a.link_at(PathFlags::empty(), f[2], b, f[4]))
            }
            "symlink" => show(fd!(1).symlink_at(f[2], f[3])),
            "same" => {
                let (a, b) = (fd!(1), fd!(2));
                format!("ok {}", a.is_same_object(b))
            }
            "hash" => {
                let (a, b) = (fd!(1), fd!(2));
                show(a.metadata_hash().and_then(|x| b.metadata_hash().map(|y| (x.lower, x.upper) == (y.lower, y.upper))))
            }
            "hashat" => {
                let (a, b) = (fd!(1), fd!(4));
                show(a.metadata_hash_at(path_flags(f[2]), f[3]).and_then(|x| b.metadata_hash().map(|y| (x.lower, x.upper) == (y.lower, y.upper))))
            }
            "flags" => show(fd!(1).get_flags()),
            "type" => show(fd!(1).get_type()),
            "sync" => show(fd!(1).sync()),
            "syncdata" => show(fd!(1).sync_data()),
            "advise" => show(fd!(1).advise(0, 100, Advice::Sequential)),
            "drop" => {
                let s = num::<usize>(f[1]);
                format!("ok {}", slots[s].take().is_some())
            }
            other => panic!("unknown operation {other:?}"),
        }
    }

    /// `len` bytes of a pattern written at `offset` (appended, for `None`)
    /// in writes of `piece` (each as much as `check-write` permits): the
    /// bytes taken, then how the stream ended.
    fn write(fd: &Descriptor, offset: Option<u64>, len: usize, seed: u8, piece: usize) -> String {
        let stream = match offset {
            Some(at) => fd.write_via_stream(at),
            None => fd.append_via_stream(),
        };
        let stream = match stream {
            Ok(s) => s,
            Err(e) => return format!("taken 0, err {e:?}"),
        };
        let data = pattern(len, seed);
        let mut taken = 0;
        let mut outcome = "ok ()".to_string();
        'pieces: for chunk in data.chunks(piece.max(1)) {
            let mut rest = chunk;
            while !rest.is_empty() {
                let permit = match stream.check_write() {
                    Ok(0) => {
                        stream.subscribe().block();
                        continue;
                    }
                    Ok(n) => usize::try_from(n).unwrap_or(usize::MAX).min(rest.len()),
                    Err(e) => {
                        outcome = stream_error(e);
                        break 'pieces;
                    }
                };
                if let Err(e) = stream.write(&rest[..permit]) {
                    outcome = stream_error(e);
                    break 'pieces;
                }
                taken += permit;
                rest = &rest[permit..];
            }
        }
        if outcome == "ok ()"
            && let Err(e) = stream.blocking_flush()
        {
            outcome = stream_error(e);
        }
        format!("taken {taken}, {outcome}")
    }

    /// Reads from `offset` in reads of `piece`, to the end or until `limit`
    /// bytes came (0: no limit); the bytes' digest and how it ended.
    fn read(fd: &Descriptor, offset: u64, limit: usize, piece: usize) -> String {
        let stream = match fd.read_via_stream(offset) {
            Ok(s) => s,
            Err(e) => return format!("{}, err {e:?}", digest(&[])),
        };
        let mut data = Vec::new();
        let ended = loop {
            if limit > 0 && data.len() >= limit {
                data.truncate(limit);
                break "dropped".to_string();
            }
            match stream.blocking_read(piece.max(1) as u64) {
                Ok(bytes) => data.extend_from_slice(&bytes),
                Err(StreamError::Closed) => break "to the end".to_string(),
                Err(e) => break stream_error(e),
            }
        };
        format!("{} {ended}", digest(&data))
    }

    /// The sorted names and types (or, with a `limit`, how many came
    /// before it stopped).
    fn list(fd: &Descriptor, limit: usize) -> String {
        let stream = match fd.read_directory() {
            Ok(s) => s,
            Err(e) => return show::<()>(Err(e)),
        };
        let mut names = Vec::new();
        loop {
            if limit > 0 && names.len() >= limit {
                return format!("[{} of at most {limit}], ok ()", names.len());
            }
            match stream.read_directory_entry() {
                Ok(Some(e)) => names.push(format!("{}:{:?}", e.name, e.type_)),
                Ok(None) => break,
                Err(e) => return format!("[{} so far], err {e:?}", names.len()),
            }
        }
        if limit > 0 {
            return format!("[{} of at most {limit}], ok ()", names.len());
        }
        names.sort();
        format!("[{}], ok ()", names.join(" "))
    }
}
