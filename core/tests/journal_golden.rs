//! Format stability: `core/tests/data/golden-v1.journal` was written by
//! the version-1 journal (`PACKFSJ1`) from `golden_ops()`: a header, then
//! one record of each of the twelve types. Replaying it must give exactly
//! `golden_tree()`'s table, and doing the same operations today must write
//! the same bytes; a change to either is a format change (a new magic, and
//! a new golden journal beside this one).
//!
//! A second reader, written from `docs/journal-format.md` alone, walks the
//! same bytes, so the spec and the code cannot drift apart.
//!
//! `core/tests/data/golden-v2.journal` is version 2 (`PACKFSJ2`): the
//! image of the same tree (`docs/journal-format.md` §6.1), then one change,
//! checked the same three ways.
//!
//! To regenerate after a deliberate format change:
//! `PACKFS_BLESS=1 cargo test -p packfs-core --test journal_golden`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use packfs_core::journal::{
    CorruptJournal, CorruptJournalKind, HEADER_LEN, Header, MAGIC, MAGIC_V2, Sink, encode_part, replay,
};
use packfs_core::mem::{Quota, Tree};
use packfs_core::sync::lock;
use packfs_core::{FileSystem, FileType, Ino, MemFs, OpenOptions, Result, SetTime, Snapshot, Timestamp};

const GOLDEN: &[u8] = include_bytes!("data/golden-v1.journal");
const GOLDEN_V2: &[u8] = include_bytes!("data/golden-v2.journal");

/// When the golden journal's empty tree was made.
const CREATED: Timestamp = Timestamp { secs: 1_700_000_000, nanos: 5 };

/// A log held in memory: every record appended, durable at once.
#[derive(Default)]
struct Bytes(Mutex<Vec<u8>>);

impl Sink for Bytes {
    fn append(&self, record: &[u8]) -> Result<u64> {
        lock(&self.0).extend_from_slice(record);
        Ok(0)
    }
    fn sync(&self, _: u64) -> Result<()> {
        Ok(())
    }
    fn durable_before_visible(&self) -> bool {
        true
    }
}

/// The golden journal's filesystem after `golden_ops()`, its log, and a
/// tick that moves its clock on one second.
fn golden_fs() -> (MemFs, Arc<Bytes>, impl Fn()) {
    let log = Arc::new(Bytes::default());
    let at = Arc::new(Mutex::new(CREATED));
    let clock = at.clone();
    let fs = MemFs::journaled(Tree::new(CREATED, Quota::default()), log.clone(), Arc::new(move || *lock(&clock)));
    let tick = move || {
        let mut t = lock(&at);
        *t = Timestamp::new(t.secs + 1, t.nanos);
    };
    golden_ops(&fs, &tick);
    (fs, log, tick)
}

/// The golden journal's bytes as the code writes them today: its header,
/// then the records of `golden_ops()`, each done one second after the last.
fn golden_bytes() -> Vec<u8> {
    let (_, log, _) = golden_fs();
    let mut bytes = Header { generation: 0, created: CREATED, image: false }.encode().to_vec();
    bytes.extend_from_slice(&lock(&log.0));
    bytes
}

/// The version-2 golden journal: the image of `golden_ops()`'s tree, made
/// at 21 s, then a `MKDIR` at 22 s.
fn golden_v2_bytes() -> Vec<u8> {
    let (fs, log, tick) = golden_fs();
    let mut bytes = Header { generation: 0, created: CREATED, image: true }.encode().to_vec();
    let made = Timestamp::new(CREATED.secs + 21, CREATED.nanos);
    fs.settled(|tree| {
        tree.image(|part| {
            encode_part(&part, made, &mut bytes);
            Ok::<_, ()>(())
        })
    })
    .unwrap();
    let from = lock(&log.0).len();
    tick();
    tick();
    fs.mkdir(fs.root(), "after", 0o700).unwrap(); // MKDIR
    bytes.extend_from_slice(&lock(&log.0)[from..]);
    bytes
}

/// Every record type once at least (tags 1 to 12), each call one record;
/// `tick` moves the clock on before each.
fn golden_ops(fs: &MemFs, tick: &dyn Fn()) {
    let root = fs.root();
    let t = |secs| SetTime::At(Timestamp::new(secs, 123_456_789));
    tick();
    let docs = fs.mkdir(root, "docs", 0o750).unwrap(); // MKDIR
    tick();
    let new = OpenOptions { mode: 0o640, ..OpenOptions::create_new() };
    let readme = fs.open(docs, "README", &new).unwrap(); // OPEN
    tick();
    fs.write_at(readme, 0, b"PackFS golden journal, version 1.\n").unwrap(); // WRITE_AT
    tick();
    fs.append(readme, b"appended\n").unwrap(); // APPEND
    fs.close(readme);
    tick();
    let log = fs.open(root, "log", &OpenOptions::create()).unwrap(); // OPEN
    tick();
    fs.write_at(log, 4, b"sparse").unwrap(); // WRITE_AT past the end
    tick();
    fs.set_len(log, 8).unwrap(); // SET_LEN
    fs.close(log);
    tick();
    fs.link(readme, root, "hard").unwrap(); // LINK
    tick();
    fs.symlink(root, "latest", "docs/README").unwrap(); // SYMLINK
    tick();
    fs.rename(root, "log", docs, "log.txt").unwrap(); // RENAME
    tick();
    fs.set_mode(readme, 0o604).unwrap(); // SET_MODE
    tick();
    fs.set_times(readme, SetTime::Now, t(1_600_000_000)).unwrap(); // SET_TIMES
    tick();
    fs.set_times(docs, SetTime::Keep, t(5)).unwrap(); // SET_TIMES
    tick();
    fs.mkdir(root, "gone", 0o755).unwrap(); // MKDIR
    tick();
    fs.rmdir(root, "gone").unwrap(); // RMDIR
    // A file unlinked while open, written after: an orphan, reaped on replay.
    tick();
    let orphan = fs.open(root, "orphan", &OpenOptions::create()).unwrap(); // OPEN
    tick();
    fs.unlink(root, "orphan").unwrap(); // UNLINK
    tick();
    fs.write_at(orphan, 0, b"never seen").unwrap(); // WRITE_AT
    fs.close(orphan);
    tick();
    let trunc = OpenOptions { write: true, truncate: true, ..OpenOptions::default() };
    fs.close(fs.open(root, "hard", &trunc).unwrap()); // OPEN with O_TRUNC
    tick();
    fs.append(readme, b"after\n").unwrap(); // APPEND
}

/// Every path of `fs` with what a replay must restore: inode number,
/// kind, mode, link count, times (atime, mtime, ctime as seconds after
/// `CREATED`'s, or absolute when set), and content or target.
type Table = BTreeMap<String, (Ino, FileType, u32, u64, [u64; 3], String)>;

fn table(fs: &dyn FileSystem) -> Table {
    let mut seen = Table::new();
    let mut todo = vec![(fs.root(), String::new())];
    while let Some((ino, path)) = todo.pop() {
        let m = fs.metadata(ino).unwrap();
        let body = match m.kind {
            FileType::File => {
                let mut buf = vec![0; m.size as usize];
                assert_eq!(fs.read_at(ino, 0, &mut buf).unwrap(), buf.len());
                String::from_utf8(buf).unwrap()
            }
            FileType::Dir => {
                for e in fs.read_dir(ino, None, usize::MAX).unwrap() {
                    todo.push((e.ino, format!("{path}/{}", e.name)));
                }
                String::new()
            }
            FileType::Symlink => fs.readlink(ino).unwrap(),
        };
        let secs = |t: Timestamp| if t.nanos == CREATED.nanos { t.secs - CREATED.secs } else { t.secs };
        let times = [secs(m.atime), secs(m.mtime), secs(m.ctime)];
        seen.insert(path, (ino, m.kind, m.mode, m.nlink, times, body));
    }
    seen
}

/// What replaying the golden journal gives, written out by hand.
fn golden_tree() -> Table {
    use FileType::{Dir, File, Symlink};
    // Written at 4, then cut to 8 bytes.
    let text = "\0\0\0\0spar".to_string();
    // Truncated by the open of "hard" at 19, then appended to.
    let readme = "after\n".to_string();
    BTreeMap::from([
        (String::new(), (1, Dir, 0o755, 3, [0, 17, 17], String::new())),
        ("/docs".into(), (2, Dir, 0o750, 2, [1, 5, 13], String::new())),
        ("/docs/README".into(), (3, File, 0o604, 2, [12, 20, 20], readme.clone())),
        ("/docs/log.txt".into(), (4, File, 0o644, 1, [5, 7, 10], text)),
        ("/hard".into(), (3, File, 0o604, 2, [12, 20, 20], readme)),
        ("/latest".into(), (5, Symlink, 0o777, 1, [9, 9, 9], "docs/README".into())),
    ])
}

/// Today's bytes must be the checked-in ones (`PACKFS_BLESS=1` writes
/// them first).
fn reproduces(bytes: &[u8], golden: &[u8], file: &str) {
    if std::env::var_os("PACKFS_BLESS").is_some() {
        std::fs::write(format!("{}/tests/data/{file}", env!("CARGO_MANIFEST_DIR")), bytes).unwrap();
    }
    assert!(bytes == golden, "the journal no longer writes {file}: the format changed");
}

#[test]
fn journal_golden_v1_writer_reproduces_it() {
    reproduces(&golden_bytes(), GOLDEN, "golden-v1.journal");
}

#[test]
fn journal_golden_v1_replays_to_its_tree() {
    let header = Header::decode(GOLDEN).unwrap();
    assert_eq!(header, Header { generation: 0, created: CREATED, image: false });
    let mut tree = Tree::new(header.created, Quota::default());
    let replayed = replay(&mut tree, &header, &GOLDEN[HEADER_LEN..]).unwrap();
    assert_eq!((replayed.records, replayed.clean), (20, true));
    assert_eq!(replayed.valid_len as usize, GOLDEN.len() - HEADER_LEN);
    let snapshot = Snapshot::from(tree);
    snapshot.check_consistency().unwrap();
    assert_eq!(table(&snapshot), golden_tree());
    for (ino, what) in [(6, "removed"), (7, "reaped: an orphan")] {
        assert_eq!(snapshot.metadata(ino).err(), Some(packfs_core::Error::NotFound), "inode {ino} is {what}");
    }
}

// ---- a second reader, from the spec alone ------------------------------------

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// `docs/journal-format.md` §3 and §4: the header's fields, then each
/// record's length, checksum, time and tag, and §5's fields of a few.
#[test]
fn journal_golden_v1_matches_the_spec() {
    let b = GOLDEN;
    assert_eq!(&b[..8], b"PACKFSJ1");
    assert_eq!(MAGIC, *b"PACKFSJ1");
    assert_eq!((u64_at(b, 8), u64_at(b, 16), u32_at(b, 24), u32_at(b, 28)), (0, 1_700_000_000, 5, 0));
    let mut at = 32;
    let mut records = Vec::new();
    while at < b.len() {
        let len = u32_at(b, at) as usize;
        let payload = &b[at + 12..at + 12 + len];
        assert_eq!(u64_at(b, at + 4), xxhash_rust::xxh3::xxh3_64(payload), "record at {at}");
        let (secs, nanos, tag) = (u64_at(payload, 0), u32_at(payload, 8), payload[12]);
        assert_eq!(nanos, 5);
        records.push((secs - 1_700_000_000, tag, payload[13..].to_vec()));
        at += 12 + len;
    }
    assert_eq!(at, b.len(), "whole records to the end");
    let tags: Vec<u8> = records.iter().map(|r| r.1).collect();
    assert_eq!(tags, [5, 1, 2, 3, 1, 2, 4, 10, 9, 8, 12, 11, 11, 5, 6, 1, 7, 2, 1, 3]);
    let times: Vec<u64> = records.iter().map(|r| r.0).collect();
    assert_eq!(times, (1..=20).collect::<Vec<_>>(), "one second apart");
    // MKDIR: dir u64 | name (len u32, bytes) | mode u32.
    assert_eq!(records[0].2, [&1u64.to_le_bytes()[..], &4u32.to_le_bytes(), b"docs", &0o750u32.to_le_bytes()].concat());
    // OPEN: dir | name | flags u8 (read, write, create, exclusive: bits 0,
    // 1, 3, 4) | mode.
    let open = [&2u64.to_le_bytes()[..], &6u32.to_le_bytes(), b"README", &[0b1_1011], &0o640u32.to_le_bytes()];
    assert_eq!(records[1].2, open.concat());
    // SET_LEN: ino u64 | len u64.
    assert_eq!(records[6].2, [4u64.to_le_bytes(), 8u64.to_le_bytes()].concat());
    // SET_TIMES: ino | atime (1: now) | mtime (2: at, secs u64, nanos u32).
    let set = [&3u64.to_le_bytes()[..], &[1, 2], &1_600_000_000u64.to_le_bytes(), &123_456_789u32.to_le_bytes()];
    assert_eq!(records[11].2, set.concat());
}

/// §8 on the golden bytes, with record offsets found as the spec reader
/// finds them: a damaged byte in the last record is a torn tail (19
/// records replayed); in any other, replay refuses the log, naming the
/// bad record and the good one after it.
#[test]
fn journal_golden_v1_recovery_follows_the_spec() {
    let b = GOLDEN;
    let mut starts = vec![32];
    while let Some(&at) = starts.last().filter(|&&at| at < b.len()) {
        starts.push(at + 12 + u32_at(b, at) as usize);
    }
    let header = Header::decode(GOLDEN).unwrap();
    let replayed = |bytes: &[u8]| replay(&mut Tree::new(CREATED, Quota::default()), &header, &bytes[HEADER_LEN..]);
    for k in 0..20 {
        let mut bad = GOLDEN.to_vec();
        bad[starts[k] + 14] ^= 0x01; // a byte of the time
        if k == 19 {
            let r = replayed(&bad).unwrap();
            assert_eq!((r.records, r.clean, HEADER_LEN as u64 + r.valid_len), (19, false, starts[19] as u64));
        } else {
            let kind = CorruptJournalKind::DamagedRecord { record: k as u64, next: starts[k + 1] as u64 };
            let want = packfs_core::Error::CorruptJournal(CorruptJournal { offset: starts[k] as u64, kind });
            assert_eq!(replayed(&bad).unwrap_err(), want, "record {k}");
        }
    }
}

// ---- version 2: an image, then changes -------------------------------------

#[test]
fn journal_golden_v2_writer_reproduces_it() {
    reproduces(&golden_v2_bytes(), GOLDEN_V2, "golden-v2.journal");
}

#[test]
fn journal_golden_v2_replays_to_its_tree() {
    let header = Header::decode(GOLDEN_V2).unwrap();
    assert_eq!(header, Header { generation: 0, created: CREATED, image: true });
    let mut tree = Tree::new(header.created, Quota::default());
    let replayed = replay(&mut tree, &header, &GOLDEN_V2[HEADER_LEN..]).unwrap();
    assert_eq!((replayed.records, replayed.clean), (14, true));
    let snapshot = Snapshot::from(tree);
    snapshot.check_consistency().unwrap();
    let mut want = golden_tree();
    let root = want.get_mut("").unwrap();
    (root.3, root.4) = (4, [0, 22, 22]);
    want.insert("/after".into(), (8, FileType::Dir, 0o700, 2, [22, 22, 22], String::new()));
    assert_eq!(table(&snapshot), want, "inode numbers carried on past the image: /after is 8");

    // A version-1 reader's log may not hold an image; a version-2 log's
    // image must end before its first change.
    let mut v1 = GOLDEN_V2.to_vec();
    v1[7] = b'1';
    let e = replay(&mut Tree::new(CREATED, Quota::default()), &Header::decode(&v1).unwrap(), &v1[HEADER_LEN..]);
    assert!(
        matches!(
            e,
            Err(packfs_core::Error::CorruptJournal(CorruptJournal {
                offset: 32,
                kind: CorruptJournalKind::BadImage { record: 0, .. }
            }))
        ),
        "{e:?}"
    );
    let mut starts = vec![32];
    while let Some(&at) = starts.last().filter(|&&at| at < GOLDEN_V2.len()) {
        starts.push(at + 12 + u32_at(GOLDEN_V2, at) as usize);
    }
    let cut = [&GOLDEN_V2[..starts[12]], &GOLDEN_V2[starts[13]..]].concat(); // without its END
    let e = replay(&mut Tree::new(CREATED, Quota::default()), &header, &cut[HEADER_LEN..]).unwrap_err();
    assert!(e.to_string().contains("a change before its end"), "{e}");
}

/// §6.1 from the spec alone: the image's tags in order, then the change;
/// the `INODE` and `CONTENT` of the sparse file field by field.
#[test]
fn journal_golden_v2_matches_the_spec() {
    let b = GOLDEN_V2;
    assert_eq!((&b[..8], MAGIC_V2), (&b"PACKFSJ2"[..], *b"PACKFSJ2"));
    let mut at = 32;
    let mut records = Vec::new();
    while at < b.len() {
        let len = u32_at(b, at) as usize;
        let payload = &b[at + 12..at + 12 + len];
        assert_eq!(u64_at(b, at + 4), xxhash_rust::xxh3::xxh3_64(payload), "record at {at}");
        records.push((u64_at(payload, 0) - 1_700_000_000, payload[12], payload[13..].to_vec()));
        at += 12 + len;
    }
    let tags: Vec<u8> = records.iter().map(|r| r.1).collect();
    // Inodes 1 to 5 in order, each file's content after it; the five
    // entries by directory then name; the end; the change.
    assert_eq!(tags, [13, 13, 13, 14, 13, 14, 13, 15, 15, 15, 15, 15, 17, 5]);
    let times: Vec<u64> = records.iter().map(|r| r.0).collect();
    assert_eq!(times, [[21; 13].as_slice(), &[22]].concat());
    // INODE: ino | shape 1 (file), size | mode | nlink | atime, mtime,
    // ctime | orphan.
    let t = |s: u64| [&(1_700_000_000 + s).to_le_bytes()[..], &5u32.to_le_bytes()].concat();
    let inode = [&4u64.to_le_bytes()[..], &[1], &8u64.to_le_bytes(), &0o644u32.to_le_bytes(), &1u64.to_le_bytes()];
    assert_eq!(records[4].2, [&inode.concat()[..], &t(5), &t(7), &t(10), &[0]].concat());
    // CONTENT: ino | offset | bytes (the run after the hole).
    assert_eq!(records[5].2, [&4u64.to_le_bytes()[..], &4u64.to_le_bytes(), &4u32.to_le_bytes(), b"spar"].concat());
    // ENTRY: dir | name | ino | kind (1 file, 2 dir, 3 symlink); END: the
    // next inode number.
    assert_eq!(
        records[7].2,
        [&1u64.to_le_bytes()[..], &4u32.to_le_bytes(), b"docs", &2u64.to_le_bytes(), &[2]].concat()
    );
    assert_eq!(records[12].2, 8u64.to_le_bytes());
}
