//! The journal's own unit tests (the crash tests, by SIGKILL, are in
//! `host/os/tests/journal_crash.rs`).

use std::sync::atomic::Ordering;

use packfs_core::journal::Sink;
use packfs_core::{Error, FileSystem, OpenOptions};

use super::*;

/// Opening removes other generations' files, and nothing else: names
/// not of the exact form the journal writes are someone else's.
#[test]
fn only_its_own_names_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let theirs = ["journal-007.log", "base-+2.pack", "journal-1.log.bak", "base-01.pack", "notes.txt"];
    for name in theirs {
        std::fs::write(dir.path().join(name), name).unwrap();
    }
    std::fs::write(dir.path().join("journal-5.log"), b"an old generation's log").unwrap();
    let j = Journal::open(dir.path(), SyncPolicy::EveryOp, Quota::default()).unwrap();
    drop(j);
    for name in theirs {
        assert_eq!(std::fs::read_to_string(dir.path().join(name)).unwrap(), name);
    }
    assert!(!dir.path().join("journal-5.log").exists(), "another generation's log goes");
    assert_eq!(parse_name("journal-12.log"), Some((12, false)));
    assert_eq!(parse_name("base-0.pack"), Some((0, true)));
    assert_eq!(parse_name("journal-007.log"), None);
}

/// A writer killed while publishing a log or pack leaves a named
/// temporary (killed between naming and renaming it). Opening removes
/// those of every generation, not only the ones a later publication of
/// the same name would: a kill mid-rewrite followed by a checkpoint left
/// the old generation's for ever, and 40 kills left 4 MiB.
#[test]
fn opening_removes_dead_writers_temporaries() {
    let dir = tempfile::tempdir().unwrap();
    let stale = [".journal-3.log.77.0.packfs-tmp", ".base-4.pack.77.1.packfs-tmp", ".journal-0.log.78.2.packfs-tmp"];
    for name in stale {
        std::fs::write(dir.path().join(name), b"a dead writer's").unwrap();
    }
    let theirs = [".notes.txt.77.0.packfs-tmp", ".journal-3.log.77.packfs-tmp"];
    for name in theirs {
        std::fs::write(dir.path().join(name), name).unwrap();
    }
    // A live writer's (locked) is kept.
    let live = dir.path().join(".journal-9.log.79.3.packfs-tmp");
    let held = std::fs::File::create(&live).unwrap();
    held.lock().unwrap();
    drop(Journal::open(dir.path(), SyncPolicy::EveryOp, Quota::default()).unwrap());
    for name in stale {
        assert!(!dir.path().join(name).exists(), "{name} stays");
    }
    for name in theirs {
        assert_eq!(std::fs::read_to_string(dir.path().join(name)).unwrap(), name);
    }
    assert!(live.exists(), "a live writer's temporary goes");
}

fn put(fs: &MemFs, name: &str, data: &[u8]) {
    let f = fs.open(fs.root(), name, &OpenOptions::create()).unwrap();
    fs.write_at(f, 0, data).unwrap();
    fs.close(f);
}

fn get(fs: &dyn FileSystem, name: &str) -> Vec<u8> {
    let ino = fs.lookup(fs.root(), name).unwrap();
    let mut buf = vec![0; fs.metadata(ino).unwrap().size as usize];
    fs.read_at(ino, 0, &mut buf).unwrap();
    buf
}

#[test]
fn reopen_replays_and_checkpoint_compacts() {
    let dir = tempfile::tempdir().unwrap();
    let j = Journal::open(dir.path(), SyncPolicy::EveryOp, Quota::default()).unwrap();
    put(j.fs(), "a", b"one");
    let created = j.fs().metadata(1).unwrap().mtime;
    drop(j);
    let j = Journal::open(dir.path(), SyncPolicy::GroupCommit, Quota::default()).unwrap();
    assert_eq!(get(&**j.fs(), "a"), b"one");
    assert_eq!(j.fs().metadata(1).unwrap().mtime, created, "replay restores times too");
    let old = j.fs().clone();
    let j = j.checkpoint().unwrap();
    assert_eq!(j.generation(), 1);
    assert!(old.mkdir(old.root(), "lost", 0o755).is_err(), "the old generation takes no changes");
    put(j.fs(), "b", b"two");
    drop(j);
    let mut names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert_eq!(names, ["base-1.pack", "journal-1.log", "lock"]);
    let j = Journal::open(dir.path(), SyncPolicy::EveryOp, Quota::default()).unwrap();
    assert_eq!(get(&**j.fs(), "a"), b"one");
    assert_eq!(get(&**j.fs(), "b"), b"two");
    assert_eq!(get(&Journal::read(dir.path()).unwrap(), "b"), b"two");
}

#[test]
fn a_torn_tail_is_cut_and_appends_continue_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let j = Journal::open(dir.path(), SyncPolicy::EveryOp, Quota::default()).unwrap();
    put(j.fs(), "a", b"kept");
    drop(j);
    let log = log_path(dir.path(), 0);
    let whole = std::fs::metadata(&log).unwrap().len();
    // Half a record of garbage, as a crash mid-append leaves it.
    let mut f = File::options().append(true).open(&log).unwrap();
    f.write_all(&[0x30, 0, 0, 0, 1, 2, 3]).unwrap();
    drop(f);
    let j = Journal::open(dir.path(), SyncPolicy::EveryOp, Quota::default()).unwrap();
    assert_eq!(std::fs::metadata(&log).unwrap().len(), whole);
    put(j.fs(), "b", b"after");
    drop(j);
    let j = Journal::open(dir.path(), SyncPolicy::EveryOp, Quota::default()).unwrap();
    assert_eq!((get(&**j.fs(), "a"), get(&**j.fs(), "b")), (b"kept".to_vec(), b"after".to_vec()));
}

#[test]
fn limits_change_on_a_journaled_filesystem() {
    let dir = tempfile::tempdir().unwrap();
    let j = Journal::open(dir.path(), SyncPolicy::EveryOp, Quota::default()).unwrap();
    j.fs().set_quota(Quota { max_bytes: None, max_inodes: Some(2) });
    j.fs().mkdir(j.fs().root(), "a", 0o755).unwrap();
    assert_eq!(j.fs().mkdir(j.fs().root(), "b", 0o755), Err(Error::Quota));
}

#[test]
fn a_journal_is_open_in_one_place_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let j = Journal::open(dir.path(), SyncPolicy::EveryOp, Quota::default()).unwrap();
    let again = Journal::open(dir.path(), SyncPolicy::EveryOp, Quota::default());
    assert!(matches!(again, Err(JournalError::InUse { .. })), "{:?}", again.err());
    let j = j.checkpoint().unwrap();
    assert!(Journal::open(dir.path(), SyncPolicy::EveryOp, Quota::default()).is_err(), "the lock is kept");
    // Whoever still holds the filesystem can still write the log: the
    // lock stays with it.
    let fs = j.fs().clone();
    drop(j);
    assert!(Journal::open(dir.path(), SyncPolicy::EveryOp, Quota::default()).is_err(), "held by the filesystem");
    drop(fs);
    Journal::open(dir.path(), SyncPolicy::EveryOp, Quota::default()).unwrap();
}

/// Writers keep changing the filesystem while it is checkpointed: every
/// change acknowledged before the checkpoint closed the log is kept.
#[test]
fn checkpoints_keep_every_acknowledged_change() {
    use std::sync::atomic::AtomicUsize;
    let dir = tempfile::tempdir().unwrap();
    let mut j = Journal::open(dir.path(), SyncPolicy::EveryOp, Quota::default()).unwrap();
    let mut acknowledged = Vec::new();
    for round in 0..4 {
        let made = Arc::new(AtomicUsize::new(0));
        let writer = {
            let (fs, made) = (j.fs().clone(), made.clone());
            std::thread::spawn(move || {
                let mut ok = Vec::new();
                for i in 0.. {
                    let name = format!("r{round}-{i}");
                    match fs.mkdir(fs.root(), &name, 0o755) {
                        Ok(_) => ok.push(name),
                        Err(Error::Backend { .. } | Error::Os(_)) => return ok,
                        Err(e) => panic!("{name}: {e}"),
                    }
                    made.fetch_add(1, Ordering::Relaxed);
                }
                unreachable!()
            })
        };
        while made.load(Ordering::Relaxed) < 3 {
            std::thread::yield_now();
        }
        j = j.checkpoint().unwrap();
        acknowledged.extend(writer.join().unwrap());
    }
    drop(j);
    let j = Journal::open(dir.path(), SyncPolicy::EveryOp, Quota::default()).unwrap();
    for name in &acknowledged {
        assert!(j.fs().lookup(j.fs().root(), name).is_ok(), "{name} was acknowledged, then lost");
    }
}

#[test]
fn group_commit_shares_syncs_between_threads() {
    let dir = tempfile::tempdir().unwrap();
    let j = Journal::open(dir.path(), SyncPolicy::GroupCommit, Quota::default()).unwrap();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let fs = j.fs().clone();
            std::thread::spawn(move || {
                for i in 0..50 {
                    fs.mkdir(fs.root(), &format!("t{t}-{i}"), 0o755).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    drop(j);
    let j = Journal::open(dir.path(), SyncPolicy::EveryOp, Quota::default()).unwrap();
    assert_eq!(j.fs().read_dir(j.fs().root(), None, 1000).unwrap().len(), 200);
}

/// The bytes of every file in `dir`.
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum()
}

/// A 1 MiB file rewritten 1,500 times through one handle held open
/// throughout, beside an orphan (a file unlinked while open) written to
/// now and then, under a 2 MiB quota: the log is rewritten as the tree's
/// image whenever it outgrows the tree, so it stays within
/// `REWRITE_FACTOR` times the tree (plus the record that crossed) at every
/// step, and every rewrite succeeds. Dropped without a close, as a killed
/// run is, the journal reopens to the last rewrite. On 65991d3 the log
/// held every rewrite (1.57 GB), and the next open read it all.
#[test]
fn a_rewriting_run_keeps_its_log_in_proportion_to_its_tree() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Quota { max_bytes: Some(2 << 20), max_inodes: None };
    let j = Journal::open(dir.path(), SyncPolicy::GroupCommit, limits).unwrap();
    let fs = j.fs().clone();
    let f = fs.open(fs.root(), "f", &OpenOptions::create()).unwrap();
    let orphan = fs.open(fs.root(), "orphan", &OpenOptions::create()).unwrap();
    fs.unlink(fs.root(), "orphan").unwrap();
    let bound = REWRITE_FACTOR * ((1 << 20) + (64 << 10)) + (1 << 20) + 64;
    let mut longest = 0;
    for round in 0..1500usize {
        fs.write_at(f, 0, &vec![(round % 251) as u8; 1 << 20]).unwrap();
        if round % 100 == 0 {
            fs.write_at(orphan, round as u64, b"o").unwrap();
        }
        longest = longest.max(j.log_len());
        assert!(j.log_len() <= bound, "round {round}: {} bytes of log", j.log_len());
        assert!(dir_bytes(dir.path()) <= bound + 64, "round {round}: {} bytes on disk", dir_bytes(dir.path()));
    }
    assert!(longest > 2 << 20, "the log grew past the tree before each rewrite: {longest}");
    let mut buf = [0; 1];
    assert_eq!(fs.read_at(orphan, 1400, &mut buf), Ok(1), "the orphan lives on through every rewrite");
    fs.close(f);
    drop((fs, j));
    let j = Journal::open(dir.path(), SyncPolicy::EveryOp, limits).unwrap();
    assert_eq!(get(&**j.fs(), "f"), vec![(1499 % 251) as u8; 1 << 20]);
    assert_eq!(j.fs().read_dir(j.fs().root(), None, 10).unwrap().len(), 1, "the orphan reaped");
    j.fs().snapshot().check_consistency().unwrap();
}

/// The log's bound under a quota holds when it cannot be rewritten (here
/// a log that is never rewritten): a change past it is `Quota`, and
/// changes nothing.
#[test]
fn a_log_that_cannot_be_rewritten_is_bounded_by_its_quota() {
    let log = LogFile::new(tempfile::tempfile().unwrap(), 0, SyncPolicy::EveryOp, None).limit(Some(100));
    assert!(log.append(&[1; 60]).is_ok());
    assert_eq!(log.append(&[2; 41]), Err(Error::Quota));
    assert_eq!(log.len(), (60, Some(100)));
    assert!(log.append(&[3; 40]).is_ok());
}

/// A journal dropped with a long log (a run killed, an embedder that
/// never closed it) is checkpointed by the next open: the tree as it was,
/// the log empty; a short one is left as it is.
#[test]
fn opening_a_long_log_checkpoints_it() {
    let dir = tempfile::tempdir().unwrap();
    let j = Journal::open(dir.path(), SyncPolicy::EveryOp, Quota::default()).unwrap();
    put(j.fs(), "small", b"x");
    drop(j);
    let j = Journal::open(dir.path(), SyncPolicy::EveryOp, Quota::default()).unwrap();
    assert_eq!(j.generation(), 0, "a short log stays");
    for i in 0..3u8 {
        put(j.fs(), "big", &vec![i; 1 << 20]);
    }
    drop(j);
    let j = Journal::open(dir.path(), SyncPolicy::EveryOp, Quota::default()).unwrap();
    assert_eq!(j.generation(), 1);
    assert_eq!(j.log_len(), HEADER_LEN as u64);
    assert_eq!((get(&**j.fs(), "small"), get(&**j.fs(), "big")), (b"x".to_vec(), vec![2; 1 << 20]));
}

/// Where `/proc` is not mounted (a chroot, a minimal container), a
/// rewritten log is published as a copy of the file it was written to:
/// every change acknowledged after a rewrite goes to the log now at the
/// path, and comes back on reopen. On a3db56c they went to the unlinked
/// file, and a reopen lost everything after the first rewrite.
#[test]
fn writes_after_a_rewrite_are_kept_without_proc() {
    for no_proc in [true, false] {
        crate::publish::NO_PROC.set(no_proc);
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open(dir.path(), SyncPolicy::EveryOp, Quota::default()).unwrap();
        // Its owner made it private: every rewrite keeps it so.
        use std::os::unix::fs::PermissionsExt;
        let private = std::fs::Permissions::from_mode(0o600);
        std::fs::set_permissions(log_path(dir.path(), 0), private).unwrap();
        // A rewrite publishes a new file: a new inode at the log's path.
        let log_ino = || std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(log_path(dir.path(), 0)).unwrap());
        let (mut rewrites, mut last) = (0, log_ino());
        for round in 0..12u8 {
            put(j.fs(), "big", &vec![round; 1 << 20]);
            put(j.fs(), &format!("r{round}"), &[round]);
            rewrites += usize::from(log_ino() != last);
            last = log_ino();
        }
        assert!(rewrites >= 2, "the log was rewritten {rewrites} times");
        let mode = std::fs::metadata(log_path(dir.path(), 0)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "no_proc {no_proc}");
        let counted = j.log_len();
        drop(j);
        assert_eq!(std::fs::metadata(log_path(dir.path(), 0)).unwrap().len(), counted, "no_proc {no_proc}");
        let j = Journal::open(dir.path(), SyncPolicy::EveryOp, Quota::default()).unwrap();
        assert_eq!(get(&**j.fs(), "big"), vec![11; 1 << 20], "no_proc {no_proc}");
        for round in 0..12u8 {
            assert_eq!(get(&**j.fs(), &format!("r{round}")), [round], "no_proc {no_proc}");
        }
    }
    crate::publish::NO_PROC.set(false);
}

/// A journal directory of generation `g` whose log is the image `parts`
/// (version 2).
fn journal_of_image(dir: &Path, g: u64, parts: &[packfs_core::mem::Part<'_>]) {
    let created = packfs_core::Timestamp::new(0, 0);
    let mut log = Header { generation: g, created, image: true }.encode().to_vec();
    for part in parts {
        packfs_core::journal::encode_part(part, created, &mut log);
    }
    std::fs::write(log_path(dir, g), log).unwrap();
}

/// Logs no journal could have written are refused at open, whole, over a
/// checkpoint pack too; on a3db56c the first opened and then made a rename
/// spin for ever under the writer lock, the second opened and acknowledged
/// writes until the log's next rewrite, after which it never opened again.
#[test]
fn an_image_no_journal_could_write_is_refused_at_open() {
    use packfs_core::mem::{LOWER_TAG, Part, ROOT, Shape};
    let t0 = [packfs_core::Timestamp::new(0, 0); 3];
    let dir = |ino, parent, lower, nlink| Part::Inode {
        ino,
        shape: Shape::Dir { parent, lower },
        mode: 0o755,
        nlink,
        times: t0,
        orphan: nlink == 0,
    };
    // Over a checkpoint pack of `a` and `b`: each the other's parent.
    let over_pack = tempfile::tempdir().unwrap();
    let base = MemFs::new();
    base.mkdir(base.root(), "a", 0o755).unwrap();
    base.mkdir(base.root(), "b", 0o755).unwrap();
    write_pack(&base.snapshot(), File::create(base_path(over_pack.path(), 1)).unwrap()).unwrap();
    let pack = open_pack(base_path(over_pack.path(), 1)).unwrap();
    let (a, b) = (pack.lookup(pack.root(), "a").unwrap(), pack.lookup(pack.root(), "b").unwrap());
    let cycle = [
        dir(a | LOWER_TAG, b | LOWER_TAG, Some(a), 2),
        dir(b | LOWER_TAG, a | LOWER_TAG, Some(b), 2),
        Part::End { next_ino: 2 },
    ];
    // Without the cycle, the same parts open.
    let good = [dir(a | LOWER_TAG, ROOT, Some(a), 2), Part::End { next_ino: 2 }];
    let fresh = tempfile::tempdir().unwrap();
    // Two removed directories, an entry from one to the other.
    let orphans = [
        dir(2, ROOT, None, 0),
        dir(3, 2, None, 0),
        Part::Entry { dir: 2, name: "x", ino: 3, kind: packfs_core::FileType::Dir },
        Part::End { next_ino: 4 },
    ];
    journal_of_image(over_pack.path(), 1, &good);
    let j = Journal::open(over_pack.path(), SyncPolicy::EveryOp, Quota::default()).unwrap();
    assert_eq!(j.fs().read_dir(j.fs().root(), None, 10).unwrap().len(), 2);
    drop(j);
    for (what, at, g, parts) in [("a cycle", &over_pack, 1, &cycle[..]), ("orphans", &fresh, 0, &orphans[..])] {
        journal_of_image(at.path(), g, parts);
        let opened = Journal::open(at.path(), SyncPolicy::EveryOp, Quota::default());
        assert!(matches!(opened, Err(JournalError::Corrupt { .. })), "{what}: {:?}", opened.err());
    }
}
