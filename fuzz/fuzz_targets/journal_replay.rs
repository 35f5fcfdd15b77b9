//! Arbitrary bytes as a journal: decoded as a header, and replayed whole as
//! records onto an empty tree, which must come out consistent whenever the
//! replay succeeds. The first byte picks the form of the rest: bit 0 set,
//! payloads separated by 0xA5 bytes, each framed with its length and
//! checksum (so that mutations reach the record decoder and the tree
//! behind them); clear, a raw log (the framing and checksums themselves).
//! Bit 1: a version-2 log, which opens with an image of the tree. Bit 2
//! (over bit 0): the image built from the bytes, part by part, each
//! number either small or one of the extremes (`u64::MAX`, 2^63, 2^47,
//! 2^48 − 1, 4 GiB), so that sizes, offsets, link counts and inode
//! numbers declare far more than the log holds. Bit 3: replayed over a
//! small pack (a checkpoint), whose inodes the image may name, hide and
//! remove; the tree must then also write an image that replays again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use packfs_core::journal::{Header, encode_part, frame, replay};
use packfs_core::mem::{Part, Shape};
use packfs_core::FileType;
use packfs_core::mem::{Quota, Tree};
use packfs_core::{Snapshot, Timestamp};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let _ = Header::decode(rest);
    let log = if mode & 5 == 5 {
        image(rest)
    } else if mode & 1 == 1 {
        let mut log = Vec::new();
        for payload in rest.split(|&b| b == 0xA5) {
            frame(payload, &mut log);
        }
        log
    } else {
        rest.to_vec()
    };
    let created = Timestamp::new(1_600_000_000, 0);
    let header = Header { generation: 0, created, image: mode & 2 != 0 };
    let lower = (mode & 8 != 0).then(checkpoint);
    let fresh = || match &lower {
        Some(l) => Tree::overlay(l.clone(), created, Quota::default()).unwrap(),
        None => Tree::new(created, Quota::default()),
    };
    let mut tree = fresh();
    if replay(&mut tree, &header, &log).is_ok() {
        let snapshot = Snapshot::from(tree.clone());
        if let Err(e) = snapshot.check_consistency() {
            panic!("a replayed tree is inconsistent: {e}");
        }
        // A journal that opened stays openable: its next image replays.
        let mut again = Vec::new();
        tree.image(|p| {
            encode_part(&p, created, &mut again);
            Ok::<_, ()>(())
        })
        .unwrap();
        let v2 = Header { image: true, ..header };
        if let Err(e) = replay(&mut fresh(), &v2, &again) {
            panic!("a replayed tree's image does not replay: {e}");
        }
    }
});

/// A pack of a few directories, files (a hard link among them) and a
/// symbolic link: the checkpoint a version-2 image lies over. Its inodes
/// are numbers 1 to 8, tagged 2^47 + n over it, among those `number` makes.
fn checkpoint() -> std::sync::Arc<dyn packfs_core::FileSystem> {
    use packfs_core::{FileSystem, MemFs, OpenOptions};
    let fs = MemFs::new();
    let a = fs.mkdir(fs.root(), "m", 0o755).unwrap();
    let b = fs.mkdir(a, "n", 0o755).unwrap();
    for (dir, name) in [(fs.root(), "n"), (b, "m")] {
        let f = fs.open(dir, name, &OpenOptions::create()).unwrap();
        fs.write_at(f, 0, name.as_bytes()).unwrap();
        fs.close(f);
    }
    fs.link(fs.lookup(b, "m").unwrap(), fs.root(), "l").unwrap();
    fs.symlink(a, "m2", "n").unwrap();
    let mut bytes = Vec::new();
    packfs_core::pack::write_pack(&fs.snapshot(), &mut bytes).unwrap();
    std::sync::Arc::new(packfs_core::pack::PackFs::open(bytes).unwrap())
}

/// A number from `b`: small, or an extreme that declares far more than
/// any log holds.
fn number(b: &mut &[u8]) -> u64 {
    let Some((&k, rest)) = b.split_first() else { return 0 };
    *b = rest;
    match k % 8 {
        0 => u64::MAX,
        1 => 1 << 63,
        2 => 1 << 47,
        3 => (1 << 48) - 1,
        4 => 4 << 30,
        5 => u64::from(k >> 3) + 1 + (1 << 47),
        _ => u64::from(k >> 3),
    }
}

/// Image parts (then a change or two) built from `b`, each framed.
fn image(mut b: &[u8]) -> Vec<u8> {
    let mut log = Vec::new();
    let at = Timestamp::new(1, 0);
    let data = [0x5a_u8; 64];
    while let Some((&k, rest)) = b.split_first() {
        b = rest;
        let t = Timestamp::new(number(&mut b), 0);
        let part = match k % 6 {
            0 => {
                let shape = match number(&mut b) % 5 {
                    0 => Shape::File { size: number(&mut b) },
                    1 => Shape::Lower { ino: number(&mut b), size: number(&mut b) },
                    2 => Shape::Dir { parent: number(&mut b), lower: Some(number(&mut b)).filter(|&l| l != 0) },
                    3 => Shape::Symlink(["t", "", "a\0b"][(k as usize >> 4) % 3]),
                    _ => Shape::Symlink("n"),
                };
                let (ino, nlink) = (number(&mut b), number(&mut b));
                Part::Inode { ino, shape, mode: 0o644, nlink, times: [t; 3], orphan: k & 8 != 0 }
            }
            1 => {
                let len = (number(&mut b) % 65) as usize;
                Part::Content { ino: number(&mut b), offset: number(&mut b), data: &data[..len] }
            }
            2 => {
                let kind = [FileType::File, FileType::Dir, FileType::Symlink][(k as usize >> 3) % 3];
                Part::Entry { dir: number(&mut b), name: if k & 64 != 0 { "n" } else { "m" }, ino: number(&mut b), kind }
            }
            3 => Part::Gone { lower: number(&mut b) },
            4 => Part::End { next_ino: number(&mut b) },
            _ => {
                let op = packfs_core::mem::Op::SetLen { ino: number(&mut b), len: number(&mut b) };
                let _ = packfs_core::journal::encode(&op, at, &mut log);
                continue;
            }
        };
        encode_part(&part, at, &mut log);
    }
    log
}
