//! A journal that opened stays openable: an image (a rewritten log's
//! start) changed at random — parents, link counts, entries, parts
//! dropped or added — is either refused by replay, or gives a tree that
//! passes the consistency check, survives a round of renames and
//! unlinks, and writes an image that replays again. On a3db56c some
//! such images replayed, then made a rename walk for ever, or wrote an
//! image the next open refused.

use std::sync::Arc;

use packfs_core::journal::{Header, encode_part, replay};
use packfs_core::mem::{LOWER_TAG, Part, Quota, ROOT, Shape, Tree};
use packfs_core::pack::{PackFs, write_pack};
use packfs_core::{FileSystem, FileType, Ino, MemFs, OpenOptions, Timestamp};
use proptest::prelude::*;

const NOW: Timestamp = Timestamp { secs: 1_700_000_000, nanos: 0 };
const NAMES: [&str; 4] = ["a", "b", "c", "d"];

/// A part of an image, owned.
#[derive(Debug, Clone)]
enum Owned {
    Inode { ino: Ino, shape: OwnedShape, mode: u32, nlink: u64, times: [Timestamp; 3], orphan: bool },
    Content { ino: Ino, offset: u64, data: Vec<u8> },
    Entry { dir: Ino, name: String, ino: Ino, kind: FileType },
    Gone { lower: Ino },
    End { next_ino: Ino },
}

#[derive(Debug, Clone)]
enum OwnedShape {
    File { size: u64 },
    Lower { ino: Ino, size: u64 },
    Dir { parent: Ino, lower: Option<Ino> },
    Symlink(String),
}

impl Owned {
    fn of(part: Part<'_>) -> Owned {
        match part {
            Part::Inode { ino, shape, mode, nlink, times, orphan } => {
                let shape = match shape {
                    Shape::File { size } => OwnedShape::File { size },
                    Shape::Lower { ino, size } => OwnedShape::Lower { ino, size },
                    Shape::Dir { parent, lower } => OwnedShape::Dir { parent, lower },
                    Shape::Symlink(t) => OwnedShape::Symlink(t.to_owned()),
                };
                Owned::Inode { ino, shape, mode, nlink, times, orphan }
            }
            Part::Content { ino, offset, data } => Owned::Content { ino, offset, data: data.to_vec() },
            Part::Entry { dir, name, ino, kind } => Owned::Entry { dir, name: name.to_owned(), ino, kind },
            Part::Gone { lower } => Owned::Gone { lower },
            Part::End { next_ino } => Owned::End { next_ino },
        }
    }

    fn part(&self) -> Part<'_> {
        match self {
            Owned::Inode { ino, shape, mode, nlink, times, orphan } => {
                let shape = match shape {
                    OwnedShape::File { size } => Shape::File { size: *size },
                    OwnedShape::Lower { ino, size } => Shape::Lower { ino: *ino, size: *size },
                    OwnedShape::Dir { parent, lower } => Shape::Dir { parent: *parent, lower: *lower },
                    OwnedShape::Symlink(t) => Shape::Symlink(t),
                };
                Part::Inode { ino: *ino, shape, mode: *mode, nlink: *nlink, times: *times, orphan: *orphan }
            }
            Owned::Content { ino, offset, data } => Part::Content { ino: *ino, offset: *offset, data },
            Owned::Entry { dir, name, ino, kind } => Part::Entry { dir: *dir, name, ino: *ino, kind: *kind },
            Owned::Gone { lower } => Part::Gone { lower: *lower },
            Owned::End { next_ino } => Part::End { next_ino: *next_ino },
        }
    }
}

/// A change to the tree, by indexes into what it holds at the time.
#[derive(Debug, Clone)]
enum Op {
    Mkdir(usize, usize),
    Create(usize, usize, u8),
    /// Opened, then unlinked: an orphan the image keeps.
    Orphan(usize, usize),
    Link(usize, usize, usize, usize),
    Rename(usize, usize, usize, usize),
    Unlink(usize, usize),
    Rmdir(usize, usize),
    /// A link of an inode by its number (as a log's record names it), the
    /// lower's included, whether or not a name shows it.
    LinkNumber(u64, usize, usize),
    Symlink(usize, usize),
}

fn op() -> impl Strategy<Value = Op> {
    let (d, n) = (0..8usize, 0..NAMES.len());
    prop_oneof![
        (d.clone(), n.clone()).prop_map(|(d, n)| Op::Mkdir(d, n)),
        (d.clone(), n.clone(), any::<u8>()).prop_map(|(d, n, b)| Op::Create(d, n, b)),
        (d.clone(), n.clone()).prop_map(|(d, n)| Op::Orphan(d, n)),
        (d.clone(), n.clone(), d.clone(), n.clone()).prop_map(|(a, b, c, e)| Op::Link(a, b, c, e)),
        (d.clone(), n.clone(), d.clone(), n.clone()).prop_map(|(a, b, c, e)| Op::Rename(a, b, c, e)),
        (d.clone(), n.clone()).prop_map(|(d, n)| Op::Unlink(d, n)),
        (d.clone(), n.clone()).prop_map(|(d, n)| Op::Rmdir(d, n)),
        (0..24u64, d.clone(), n.clone()).prop_map(|(k, d, n)| Op::LinkNumber(k, d, n)),
        (d, n).prop_map(|(d, n)| Op::Symlink(d, n)),
    ]
}

/// A change to an image: which part (an index taken modulo its length),
/// what to do, and a number to do it with.
#[derive(Debug, Clone)]
struct Mutation {
    at: usize,
    how: u8,
    with: u64,
}

fn mutation() -> impl Strategy<Value = Mutation> {
    (any::<usize>(), 0..12u8, any::<u64>()).prop_map(|(at, how, with)| Mutation { at, how, with })
}

/// The directories of `tree` reached from the root, in order.
fn dirs(tree: &Tree) -> Vec<Ino> {
    let mut out = vec![ROOT];
    let mut i = 0;
    while i < out.len() && out.len() < 64 {
        for e in tree.read_dir(out[i], None, 64).unwrap_or_default() {
            if e.kind == FileType::Dir {
                out.push(e.ino);
            }
        }
        i += 1;
    }
    out
}

fn apply(tree: &mut Tree, op: &Op) {
    let ds = dirs(tree);
    let d = |i: usize| ds[i % ds.len()];
    // Errors are answers too: only what the tree does after matters here.
    let _ = match *op {
        Op::Mkdir(p, n) => tree.mkdir(d(p), NAMES[n], 0o755, NOW).map(drop),
        Op::Create(p, n, b) => tree
            .open(d(p), NAMES[n], &OpenOptions::create(), NOW)
            .and_then(|f| tree.write_at(f, 0, &[b; 3], NOW))
            .map(drop),
        Op::Orphan(p, n) => {
            tree.open(d(p), NAMES[n], &OpenOptions::create(), NOW).and_then(|_| tree.unlink(d(p), NAMES[n], NOW))
        }
        Op::Link(p, n, q, m) => tree.lookup(d(p), NAMES[n]).and_then(|ino| tree.link(ino, d(q), NAMES[m], NOW)),
        Op::Rename(p, n, q, m) => tree.rename(d(p), NAMES[n], d(q), NAMES[m], NOW),
        Op::Unlink(p, n) => tree.unlink(d(p), NAMES[n], NOW),
        Op::Rmdir(p, n) => tree.rmdir(d(p), NAMES[n], NOW),
        // Numbers 2..12 here, and the lower's 1..12.
        Op::LinkNumber(k, q, m) => {
            let ino = if k < 12 { k } else { (k - 11) | LOWER_TAG };
            tree.link(ino, d(q), NAMES[m], NOW)
        }
        Op::Symlink(p, n) => tree.symlink(d(p), NAMES[n], "a/b", NOW).map(drop),
    };
}

fn image(tree: &Tree) -> Vec<Owned> {
    let mut parts = Vec::new();
    tree.image(|p| {
        parts.push(Owned::of(p));
        Ok::<_, ()>(())
    })
    .unwrap();
    parts
}

/// Replays `parts` as a version-2 log onto `tree`.
fn replay_image(tree: &mut Tree, parts: &[Owned]) -> packfs_core::Result<()> {
    let mut body = Vec::new();
    for p in parts {
        encode_part(&p.part(), NOW, &mut body);
    }
    replay(tree, &Header { generation: 0, created: NOW, image: true }, &body).map(drop)
}

/// Changes `parts` as `m` says, with inode numbers the image uses.
fn mutate(parts: &mut Vec<Owned>, m: &Mutation) {
    let inos: Vec<Ino> =
        parts.iter().filter_map(|p| if let Owned::Inode { ino, .. } = p { Some(*ino) } else { None }).collect();
    let pick = |n: u64| if inos.is_empty() { ROOT } else { inos[(n % inos.len() as u64) as usize] };
    let at = m.at % parts.len();
    match (m.how, &mut parts[at]) {
        (0, Owned::Inode { shape: OwnedShape::Dir { parent, .. }, .. }) => *parent = pick(m.with),
        (1, Owned::Inode { nlink, orphan, .. }) => {
            *nlink = m.with % 4;
            *orphan = *nlink == 0;
        }
        (2, Owned::End { .. }) => {}
        (2, _) => {
            parts.remove(at);
        }
        (3, &mut Owned::Entry { ino, kind, .. }) => {
            parts.insert(at + 1, Owned::Entry { dir: pick(m.with), name: "z".into(), ino, kind });
        }
        (4, Owned::Entry { dir, .. }) => *dir = pick(m.with),
        (5, Owned::Entry { ino, .. }) => *ino = pick(m.with),
        (6, Owned::Inode { shape: OwnedShape::Dir { lower, .. }, .. }) => {
            *lower = if m.with.is_multiple_of(2) { None } else { Some(pick(m.with / 2) & !LOWER_TAG) };
        }
        (7, _) => parts.insert(at.min(parts.len() - 1), Owned::Gone { lower: (m.with % 16) + 1 }),
        // Numbers near every bound: the tag, the mount table's bits.
        (8, Owned::End { next_ino }) => {
            *next_ino =
                [*next_ino + 1, LOWER_TAG - 1, LOWER_TAG, LOWER_TAG + 1, 1 << 48, m.with][(m.with % 6) as usize];
        }
        (9, Owned::Inode { shape: OwnedShape::Lower { ino, size }, .. }) => match m.with % 3 {
            0 => *ino = (m.with / 3) % 16,
            1 => *size += 1,
            _ => *size = m.with,
        },
        (10, Owned::Inode { shape: OwnedShape::File { size }, .. }) => {
            *size = [packfs_core::MAX_FILE_SIZE, *size + 1, m.with][(m.with % 3) as usize];
        }
        (11, Owned::Inode { shape: OwnedShape::Symlink(target), .. }) => {
            *target = ["", "a\0b", &"x".repeat(4097)][(m.with % 3) as usize].to_owned();
        }
        _ => {}
    }
}

/// A lower of a few directories and files, packed.
fn lower() -> Arc<dyn FileSystem> {
    let fs = MemFs::new();
    let a = fs.mkdir(fs.root(), "a", 0o755).unwrap();
    let b = fs.mkdir(a, "b", 0o755).unwrap();
    for (dir, name) in [(fs.root(), "c"), (a, "d"), (b, "c")] {
        let f = fs.open(dir, name, &OpenOptions::create()).unwrap();
        fs.write_at(f, 0, name.as_bytes()).unwrap();
        fs.close(f);
    }
    fs.link(fs.lookup(a, "d").unwrap(), b, "d").unwrap();
    let mut bytes = Vec::new();
    write_pack(&fs.snapshot(), &mut bytes).unwrap();
    Arc::new(PackFs::open(bytes).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    #[test]
    fn whatever_replay_accepts_it_can_write_back(
        over_a_pack in any::<bool>(),
        ops in proptest::collection::vec(op(), 0..24),
        mutations in proptest::collection::vec(mutation(), 1..4),
        after in proptest::collection::vec(op(), 0..12),
    ) {
        let lower = over_a_pack.then(lower);
        let fresh = || match &lower {
            Some(l) => Tree::overlay(l.clone(), NOW, Quota::default()).unwrap(),
            None => Tree::new(NOW, Quota::default()),
        };
        let mut tree = fresh();
        for op in &ops {
            apply(&mut tree, op);
        }
        let mut parts = image(&tree);
        for m in &mutations {
            mutate(&mut parts, m);
        }
        let mut back = fresh();
        if replay_image(&mut back, &parts).is_err() {
            return Ok(()); // refused: nothing to keep openable
        }
        back.check_consistency().map_err(TestCaseError::fail)?;
        // A journal goes on: changes (a rename of a new directory into
        // each directory among them), then its next rewrite.
        let _ = back.mkdir(ROOT, "new", 0o755, NOW); // NoSpace: numbers or bytes used up
        for d in dirs(&back) {
            let _ = back.rename(ROOT, "new", d, "new", NOW);
            let _ = back.rename(d, "new", ROOT, "new", NOW);
        }
        for op in &after {
            apply(&mut back, op);
        }
        back.check_consistency().map_err(TestCaseError::fail)?;
        let mut again = fresh();
        replay_image(&mut again, &image(&back)).map_err(|e| TestCaseError::fail(format!("not written back: {e}")))?;
    }
}
