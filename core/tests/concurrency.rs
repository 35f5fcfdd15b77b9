//! Readers on other threads while a writer mutates: every read sees one
//! whole version, never half of a change, and never blocks on the writer.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

use packfs_core::mem::ROOT;
use packfs_core::{FileSystem, MemFs, OpenOptions};

/// Two files are always written together in one batch; readers check in
/// every snapshot that they hold the same counter.
#[test]
fn paired_writes_are_seen_together() {
    let fs = Arc::new(MemFs::new());
    let (a, b) = fs
        .batch(|t, now| {
            let a = t.open(ROOT, "a", &OpenOptions::create(), now)?;
            let b = t.open(ROOT, "b", &OpenOptions::create(), now)?;
            t.write_at(a, 0, &0u64.to_le_bytes(), now)?;
            t.write_at(b, 0, &0u64.to_le_bytes(), now)?;
            Ok((a, b))
        })
        .unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let progress = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (fs, done, progress) = (fs.clone(), done.clone(), progress.clone());
            thread::spawn(move || {
                let (mut reads, mut last) = (0u64, 0u64);
                while !done.load(Ordering::Relaxed) {
                    progress.fetch_add(1, Ordering::Relaxed);
                    let snap = fs.snapshot();
                    let (mut x, mut y) = ([0u8; 8], [0u8; 8]);
                    snap.read_at(a, 0, &mut x).unwrap();
                    snap.read_at(b, 0, &mut y).unwrap();
                    assert_eq!(x, y, "half of a batch was visible");
                    let v = u64::from_le_bytes(x);
                    assert!(v >= last, "time went backwards");
                    last = v;
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    // Keep writing until the readers have read a good while alongside.
    let mut i = 0u64;
    while i < 5_000 || progress.load(Ordering::Relaxed) < 3_000 {
        i += 1;
        fs.batch(|t, now| {
            t.write_at(a, 0, &i.to_le_bytes(), now)?;
            t.write_at(b, 0, &i.to_le_bytes(), now)
        })
        .unwrap();
    }
    done.store(true, Ordering::Relaxed);
    let total: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    assert!(total >= 1_000, "readers barely ran alongside the writer");
}

/// A writer keeps exactly 100 entries in a directory by replacing one name
/// with another through atomic renames and paired create+unlink batches;
/// readers listing the directory always count 100 and can read every entry.
#[test]
fn directory_listings_are_consistent() {
    let fs = Arc::new(MemFs::new());
    let d = fs.mkdir(ROOT, "d", 0o755).unwrap();
    for i in 0..100 {
        let f = fs.open(d, &format!("f{i}"), &OpenOptions::create()).unwrap();
        fs.write_at(f, 0, format!("f{i}").as_bytes()).unwrap();
        fs.close(f);
    }
    let done = Arc::new(AtomicBool::new(false));
    let progress = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (fs, done, progress) = (fs.clone(), done.clone(), progress.clone());
            thread::spawn(move || {
                let mut listings = 0u64;
                while !done.load(Ordering::Relaxed) {
                    progress.fetch_add(1, Ordering::Relaxed);
                    let snap = fs.snapshot();
                    let entries = snap.read_dir(d, None, usize::MAX).unwrap();
                    assert_eq!(entries.len(), 100);
                    for e in entries.iter().step_by(17) {
                        let mut buf = [0u8; 16];
                        let n = snap.read_at(e.ino, 0, &mut buf).unwrap();
                        assert!(n > 1 && (buf[0] == b'f' || buf[0] == b'g'), "entry {} unreadable", e.name);
                    }
                    listings += 1;
                }
                listings
            })
        })
        .collect();
    let mut round = 0u32;
    while round < 3_000 || progress.load(Ordering::Relaxed) < 1_000 {
        round += 1;
        // Entry i is named f{i} or g{i}; switch it to the other name.
        let i = round % 100;
        let old = ["f", "g"].iter().map(|p| format!("{p}{i}")).find(|n| fs.lookup(d, n).is_ok()).unwrap();
        let new = if old.starts_with('f') { format!("g{i}") } else { format!("f{i}") };
        if round.is_multiple_of(2) {
            fs.rename(d, &old, d, &new).unwrap();
        } else {
            // Unlink one name and create another in one atomic batch.
            fs.batch(|t, now| {
                t.unlink(d, &old, now)?;
                let f = t.open(d, &new, &OpenOptions::create_new(), now)?;
                t.write_at(f, 0, new.as_bytes(), now).map(|_| ())
            })
            .unwrap();
        }
    }
    done.store(true, Ordering::Relaxed);
    let total: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    assert!(total >= 1_000, "readers barely ran alongside the writer");
    fs.snapshot().check_consistency().unwrap();
}

/// Many writers at once: operations serialize, none is lost.
#[test]
fn concurrent_writers_lose_nothing() {
    let fs = Arc::new(MemFs::new());
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let fs = fs.clone();
            thread::spawn(move || {
                let d = fs.mkdir(ROOT, &format!("t{t}"), 0o755).unwrap();
                for i in 0..2_000 {
                    let f = fs.open(d, &format!("{i}"), &OpenOptions::create_new()).unwrap();
                    fs.append(f, &[t as u8; 3]).unwrap();
                    let shared = fs.open(ROOT, "shared", &OpenOptions { append: true, ..OpenOptions::create() });
                    let shared = shared.unwrap_or_else(|_| {
                        fs.open(ROOT, "shared", &OpenOptions { write: true, ..OpenOptions::default() }).unwrap()
                    });
                    fs.append(shared, &[t as u8]).unwrap();
                    fs.close(shared);
                    fs.close(f);
                    if i % 2 == 0 {
                        fs.unlink(d, &format!("{i}")).unwrap();
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let snap = fs.snapshot();
    snap.check_consistency().unwrap();
    for t in 0..4 {
        let d = snap.lookup(ROOT, &format!("t{t}")).unwrap();
        assert_eq!(snap.read_dir(d, None, usize::MAX).unwrap().len(), 1_000);
    }
    assert_eq!(snap.orphans(), []);
}
