//! A child process makes random changes to a journaled filesystem and is
//! killed with SIGKILL at 200 random points. After each kill the replayed
//! tree must hold every acknowledged change and nothing half-applied: it
//! equals a reference filesystem that applied exactly the acknowledged
//! operations (or one more: the change journaled as the kill came, before
//! its acknowledgement got out).
//!
//! The child is this test binary re-run with `PACKFS_JOURNAL_CHILD` set.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use packfs_core::mem::Quota;
use packfs_core::resolve::resolve_parent;
use packfs_core::{FileSystem, FileType, MemFs, OpenOptions, Snapshot};
use packfs_os::journal::{Journal, SyncPolicy};

const CHILD_ENV: &str = "PACKFS_JOURNAL_CHILD";
const KILLS: usize = 200;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn path(&mut self) -> String {
        let depth = 1 + self.below(2);
        (0..depth).map(|_| ["a", "b", "c", "d"][self.below(4) as usize]).collect::<Vec<_>>().join("/")
    }
}

/// Op `i` of run `seed`: one call that changes the filesystem (at most one
/// journal record), whatever its outcome; returns what happened.
fn step(fs: &dyn FileSystem, seed: u64, i: u64) -> String {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i.wrapping_add(1).wrapping_mul(0xD1B5_4A32_D192_ED03));
    rng.next();
    let path = rng.path();
    let Ok(p) = resolve_parent(fs, fs.root(), &path) else { return format!("{path}: no parent") };
    let (dir, name) = (p.dir, &*p.name);
    let data: Vec<u8> = (0..rng.below(3000)).map(|k| (k ^ i) as u8).collect();
    let with_file = |f: &dyn Fn(u64) -> packfs_core::Result<()>| {
        let ino = fs.open(dir, name, &OpenOptions { write: true, ..OpenOptions::default() })?;
        let r = f(ino);
        fs.close(ino);
        r
    };
    let kind = rng.below(10);
    let r = match kind {
        0 => fs.open(dir, name, &OpenOptions::create_new()).map(|ino| fs.close(ino)),
        1 | 2 => with_file(&|ino| fs.write_at(ino, rng.0 % 5000, &data).map(drop)),
        3 => with_file(&|ino| fs.append(ino, &data).map(drop)),
        4 => with_file(&|ino| fs.set_len(ino, rng.0 % 4000)),
        5 => fs.mkdir(dir, name, 0o755).map(drop),
        6 => fs.rmdir(dir, name),
        7 => fs.unlink(dir, name),
        8 => match resolve_parent(fs, fs.root(), &rng.path()) {
            Ok(to) => fs.rename(dir, name, to.dir, &to.name),
            Err(e) => Err(e),
        },
        _ => fs.symlink(dir, name, "a/b").map(drop),
    };
    format!("{path} kind {kind}: {r:?}")
}

#[test]
fn child_writer() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else { return };
    let seed: u64 = std::env::var("PACKFS_JOURNAL_SEED").unwrap().parse().unwrap();
    let journal = Journal::open(Path::new(&dir), SyncPolicy::EveryOp, Quota::default()).unwrap();
    let fs = journal.fs();
    let mut out = std::io::stdout().lock();
    for i in 0..1_000_000 {
        let what = step(&**fs, seed, i);
        // The acknowledgement: this op is durable.
        writeln!(out, "ack {i} {what}").unwrap();
        out.flush().unwrap();
    }
}

/// Everything observable but times: kind, size, mode, links, bytes.
fn dump(fs: &dyn FileSystem) -> BTreeMap<String, (FileType, u64, u32, u64, Vec<u8>)> {
    fn walk(
        fs: &dyn FileSystem,
        dir: u64,
        prefix: &str,
        out: &mut BTreeMap<String, (FileType, u64, u32, u64, Vec<u8>)>,
    ) {
        for e in fs.read_dir(dir, None, usize::MAX).unwrap() {
            let path = format!("{prefix}/{}", e.name);
            let md = fs.metadata(e.ino).unwrap();
            let data = match md.kind {
                FileType::File => {
                    let mut buf = vec![0; md.size as usize];
                    fs.read_at(e.ino, 0, &mut buf).unwrap();
                    buf
                }
                FileType::Dir => {
                    walk(fs, e.ino, &path, out);
                    Vec::new()
                }
                FileType::Symlink => fs.readlink(e.ino).unwrap().into_bytes(),
            };
            out.insert(path, (md.kind, md.size, md.mode, md.nlink, data));
        }
    }
    let mut out = BTreeMap::new();
    walk(fs, fs.root(), "", &mut out);
    out
}

#[test]
fn kills_lose_no_acknowledged_change() {
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut rng = Rng(0x1234_5678_9ABC_DEF1);
    let (mut acked_total, mut in_flight_seen) = (0, 0);
    let mut before: Snapshot = MemFs::new().snapshot();
    for kill in 0..KILLS {
        let seed = rng.next();
        let mut child = Command::new(&exe)
            .args(["--exact", "child_writer", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, dir.path())
            .env("PACKFS_JOURNAL_SEED", seed.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(2 + rng.below(40)));
        child.kill().unwrap();
        child.wait().unwrap();
        // Whole lines only: the test harness prints its own, and the kill
        // may have cut the last one.
        let mut out = String::new();
        std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
        let whole = out.rfind('\n').map_or("", |end| &out[..end]);
        // (libtest prints "test child_writer ... " before the first ack, on its line.)
        let acks: Vec<&str> = whole.lines().filter_map(|l| Some(&l[l.find("ack ")?..])).collect();
        let acked = acks.len() as u64;
        acked_total += acked;

        let after = Journal::read(dir.path()).unwrap();
        after.check_consistency().unwrap();
        let got = dump(&after);
        // The reference: the state before this run, plus the acknowledged ops.
        let reference = MemFs::fork(&before);
        let mut did = Vec::new();
        for i in 0..acked {
            did.push(step(&reference, seed, i));
        }
        if dump(&reference) != got {
            step(&reference, seed, acked);
            let want = dump(&reference);
            let differ: Vec<_> = want.keys().chain(got.keys()).filter(|k| want.get(*k) != got.get(*k)).collect();
            // Where the child and the reference parted ways, if they did.
            for (i, (a, b)) in acks.iter().zip(&did).enumerate() {
                if !a.ends_with(b.as_str()) {
                    eprintln!("op {i}: child {a} / reference {b}");
                }
            }
            assert!(
                differ.is_empty(),
                "kill {kill} after {acked} acks: replay differs from the reference at {differ:?}"
            );
            in_flight_seen += 1;
        }
        before = after;
    }
    assert!(acked_total > KILLS as u64, "children barely ran ({acked_total} acknowledged ops): the test proved little");
    eprintln!(
        "{KILLS} kills survived; {acked_total} acknowledged ops; {in_flight_seen} kills caught a journaled, unacknowledged op"
    );
}

/// The child of the rewrite test: one 256 KiB file, held open, rewritten
/// whole with its round number, each rewrite acknowledged; the log is
/// rewritten as the tree's image every few rounds.
#[test]
fn child_rewriter() {
    let Some(dir) = std::env::var_os(REWRITER_ENV) else { return };
    let journal = Journal::open(Path::new(&dir), SyncPolicy::EveryOp, Quota::default()).unwrap();
    let fs = journal.fs();
    let f = fs.open(fs.root(), "f", &OpenOptions { write: true, create: true, ..OpenOptions::default() }).unwrap();
    let start = u32::from_le_bytes(read_round(&**fs).unwrap_or_default());
    let mut out = std::io::stdout().lock();
    for round in start + 1.. {
        fs.write_at(f, 0, &round.to_le_bytes().repeat(REWRITTEN / 4)).unwrap();
        writeln!(out, "ack {round}").unwrap();
        out.flush().unwrap();
    }
}

const REWRITER_ENV: &str = "PACKFS_JOURNAL_REWRITER";
const REWRITTEN: usize = 256 << 10;

/// The round the rewriter's file holds, if it holds one whole.
fn read_round(fs: &dyn FileSystem) -> Option<[u8; 4]> {
    let f = fs.lookup(fs.root(), "f").ok().filter(|&f| fs.metadata(f).unwrap().size > 0)?;
    let mut buf = vec![0; REWRITTEN];
    assert_eq!(fs.read_at(f, 0, &mut buf).unwrap(), REWRITTEN);
    let round: [u8; 4] = buf[..4].try_into().unwrap();
    assert!(buf.chunks(4).all(|c| c == round), "a file of one round, not a mix");
    Some(round)
}

/// Killed at random points while its log is being rewritten as the
/// tree's image (every few rounds): the journal always reopens to the
/// last acknowledged round or the one in flight, never to a torn or
/// older one, and its log stays in proportion to its tree.
#[test]
fn kills_during_log_rewrites_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut rng = Rng(0x0DDB_A115_EED5_F00D);
    let (mut last, mut acked_total) = (0u32, 0);
    for kill in 0..40 {
        let mut child = Command::new(&exe)
            .args(["--exact", "child_rewriter", "--nocapture", "--test-threads=1"])
            .env(REWRITER_ENV, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(5 + rng.below(80)));
        child.kill().unwrap();
        child.wait().unwrap();
        let mut out = String::new();
        std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
        let whole = out.rfind('\n').map_or("", |end| &out[..end]);
        let acked = whole.lines().filter_map(|l| l[l.find("ack ")? + 4..].parse::<u32>().ok()).max().unwrap_or(last);
        acked_total += acked - last;
        let after = Journal::read(dir.path()).unwrap();
        let got = read_round(&after).map_or(0, u32::from_le_bytes);
        assert!(got == acked || got == acked + 1, "kill {kill}: round {got} after {acked} acknowledged");
        let files: Vec<(String, u64)> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap())
            .map(|e| (e.file_name().to_string_lossy().into_owned(), e.metadata().unwrap().len()))
            .collect();
        let log: u64 = files.iter().map(|(_, len)| len).sum();
        assert!(log < 4 << 20, "kill {kill}: {log} bytes in the journal: {files:?}");
        last = got;
    }
    assert!(acked_total > 200, "children barely ran ({acked_total} rounds): the test proved little");
    eprintln!("40 kills survived; {acked_total} rounds acknowledged");
}

/// The premise of the crash test: the op sequence is deterministic, and a
/// journaled filesystem behaves as a plain one and replays to it.
#[test]
fn journaled_and_plain_agree() {
    let dir = tempfile::tempdir().unwrap();
    let j = Journal::open(dir.path(), SyncPolicy::EveryOp, Quota::default()).unwrap();
    let plain = MemFs::new();
    for i in 0..300 {
        step(&**j.fs(), 77, i);
        step(&plain, 77, i);
        assert_eq!(dump(&**j.fs()), dump(&plain), "op {i}");
    }
    drop(j);
    let r = Journal::read(dir.path()).unwrap();
    assert!(dump(&r) == dump(&plain), "replay");
}
