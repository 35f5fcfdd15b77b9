//! A tree's *image*: the upper layer as a sequence of [`Part`]s that
//! rebuild it exactly, inode numbers, orphans and whiteouts included. A
//! journal rewrites its log as the image followed by later changes
//! (`docs/journal-format.md` §10), so that the log stays in proportion to
//! the tree while handles, which name inode numbers, stay open.

use std::sync::Arc;

use super::inode::counted;
use super::*;
use crate::mem::content::Content;

/// Bytes of file content per [`Part::Content`]: records stay small
/// whatever the file.
pub const CONTENT_PIECE: usize = 1 << 20;

/// What an inode of an image is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape<'a> {
    /// A file of `size` bytes, which [`Part::Content`] fills (the rest is
    /// a hole).
    File {
        /// Its size.
        size: u64,
    },
    /// A lower file whose bytes were not copied up.
    Lower {
        /// Its number in the lower.
        ino: Ino,
        /// Its size.
        size: u64,
    },
    /// A directory.
    Dir {
        /// Its parent directory.
        parent: Ino,
        /// The lower directory merged into it, if any.
        lower: Option<Ino>,
    },
    /// A symbolic link.
    Symlink(&'a str),
}

/// One piece of a tree's image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)] // the fields are the inode record's
pub enum Part<'a> {
    /// An inode and its record; `orphan` when it has no name left.
    Inode { ino: Ino, shape: Shape<'a>, mode: u32, nlink: u64, times: [Timestamp; 3], orphan: bool },
    /// Bytes of file `ino` at `offset`, within its size.
    Content { ino: Ino, offset: u64, data: &'a [u8] },
    /// An entry of directory `dir`; `ino` 0 is a whiteout (a lower name
    /// removed).
    Entry { dir: Ino, name: &'a str, ino: Ino, kind: FileType },
    /// A lower inode adopted and since removed.
    Gone { lower: Ino },
    /// The image's end: the next inode number the tree hands out.
    End { next_ino: Ino },
}

impl Tree {
    /// Checks a lower inode `ino` of an image against the lower: it is
    /// there, of the kind the image says, and not the lower's root (which
    /// is [`ROOT`] here); a file not copied up reads its own bytes, all of
    /// them, and a merged directory merges its own.
    fn restorable_lower(&self, ino: Ino, shape: &Shape<'_>) -> std::result::Result<(), &'static str> {
        let lower = self.lower.as_deref().ok_or("a lower inode in an image without a lower")?;
        let lino = ino & !LOWER_TAG;
        let md = lower.metadata(lino).map_err(|_| "a lower inode the lower does not have")?;
        let agrees = lino != lower.root()
            && match *shape {
                Shape::Lower { ino, size } => ino == lino && size == md.size && md.kind == FileType::File,
                Shape::File { .. } => md.kind == FileType::File,
                Shape::Dir { lower, .. } => lower.is_none_or(|l| l == lino) && md.kind == FileType::Dir,
                Shape::Symlink(target) => {
                    md.kind == FileType::Symlink && lower.readlink(lino).is_ok_and(|t| t == target)
                }
            };
        if !agrees {
            return Err("a lower inode that is not what the lower has");
        }
        Ok(())
    }

    /// Emits the image of this tree's own layer (over the same lower, if
    /// any): every inode, then every entry, then the lower inodes gone, then
    /// [`Part::End`].
    pub fn image<E>(&self, mut emit: impl FnMut(Part<'_>) -> std::result::Result<(), E>) -> std::result::Result<(), E> {
        for (&ino, inode) in self.inodes.iter() {
            let shape = match &inode.data {
                Data::File(c) => Shape::File { size: c.len() },
                &Data::Lower { ino, size } => Shape::Lower { ino, size },
                &Data::Dir { parent, lower } => Shape::Dir { parent, lower },
                Data::Symlink(target) => Shape::Symlink(target),
            };
            let (mode, nlink, times) = (inode.mode, inode.nlink, [inode.atime, inode.mtime, inode.ctime]);
            emit(Part::Inode { ino, shape, mode, nlink, times, orphan: self.orphans.get(&ino).is_some() })?;
            if let Data::File(content) = &inode.data {
                for (offset, bytes) in content.extents() {
                    for (i, data) in bytes.chunks(CONTENT_PIECE).enumerate() {
                        emit(Part::Content { ino, offset: offset + (i * CONTENT_PIECE) as u64, data })?;
                    }
                }
            }
        }
        for (key, &(ino, kind)) in self.dirents.iter() {
            emit(Part::Entry { dir: key.dir, name: &key.name, ino, kind })?;
        }
        for (&lower, ()) in self.seen.iter() {
            if self.inodes.get(&(lower | LOWER_TAG)).is_none() && self.lower.as_ref().is_some_and(|l| l.root() != lower)
            {
                emit(Part::Gone { lower })?;
            }
        }
        emit(Part::End { next_ino: self.next_ino })
    }

    /// Takes one part of an image, in the order [`Tree::image`] emits them,
    /// onto a tree just made (by [`Tree::new`] or [`Tree::overlay`] over
    /// the image's lower). A part that contradicts the tree so far is
    /// refused, saying why; the caller checks that the image reaches its
    /// end.
    pub fn restore(&mut self, part: Part<'_>) -> std::result::Result<(), &'static str> {
        let lower = |ino: Ino| ino & LOWER_TAG != 0;
        match part {
            Part::Inode { ino, shape, mode, nlink, times: [atime, mtime, ctime], orphan } => {
                if ino == WHITEOUT || ino >= LOWER_TAG << 1 {
                    return Err("an inode number out of range");
                }
                if lower(ino) && self.lower.is_none() {
                    return Err("a lower inode in an image without a lower");
                }
                // Only an orphan has no link: unlinking a named inode with
                // none would take its count below zero.
                if (nlink == 0) != orphan || nlink > u64::from(u32::MAX) {
                    return Err("a link count that disagrees with the inode's names");
                }
                // A size no write could make: every count of the tree
                // (charges, extents) stays within what a live one reaches.
                if let Shape::File { size } | Shape::Lower { size, .. } = shape
                    && size > crate::MAX_FILE_SIZE
                {
                    return Err("a file larger than a tree holds");
                }
                if lower(ino) {
                    self.restorable_lower(ino, &shape)?;
                }
                let data = match shape {
                    Shape::File { size } => {
                        let mut content = Content::default();
                        content.set_len(size);
                        Data::File(content)
                    }
                    Shape::Lower { ino: lino, size } if lower(ino) => Data::Lower { ino: lino, size },
                    // Only the root and lower directories merge, each with
                    // its own lower directory.
                    Shape::Dir { parent, lower: None } => Data::Dir { parent, lower: None },
                    Shape::Dir { parent, lower: Some(l) } if lower(ino) || ino == ROOT => {
                        Data::Dir { parent, lower: Some(l) }
                    }
                    Shape::Symlink(target) if super::data::check_target(target).is_ok() => {
                        Data::Symlink(Arc::from(target))
                    }
                    Shape::Symlink(_) => return Err("a symbolic link no tree could make"),
                    _ => return Err("a lower inode or a merged directory that is not the lower's"),
                };
                let inode = Inode { data, mode: mode & 0o7777, nlink, atime, mtime, ctime };
                match self.inodes.get(&ino) {
                    // The new tree's root gives way to the image's.
                    Some(old) if ino == ROOT && matches!(inode.data, Data::Dir { .. }) => {
                        self.usage.bytes -= old.charge(ino);
                        self.usage.inodes -= 1;
                    }
                    Some(_) => return Err("an inode twice, or a root that is not a directory"),
                    None => {}
                }
                // What a live tree could count (it refuses a write past it).
                self.usage.bytes =
                    self.usage.bytes.checked_add(inode.charge(ino)).ok_or("a tree larger than a tree holds")?;
                self.usage.inodes += u64::from(counted(ino));
                if lower(ino) {
                    self.seen.insert(ino & !LOWER_TAG, ());
                } else {
                    self.next_ino = self.next_ino.max(ino + 1);
                }
                if orphan {
                    self.orphans.insert(ino, ());
                    self.unreaped.push(ino);
                }
                self.put_inode(ino, inode);
            }
            Part::Content { ino, offset, data } => {
                let Some(Inode { data: Data::File(content), .. }) = self.inodes.get_mut(&ino) else {
                    return Err("content for an inode that is not a file");
                };
                if offset.checked_add(data.len() as u64).is_none_or(|end| end > content.len()) {
                    return Err("content past its file's size");
                }
                content.write(offset, data);
            }
            Part::Entry { dir, name, ino, kind } => {
                if !matches!(self.inodes.get(&dir), Some(Inode { data: Data::Dir { .. }, .. })) {
                    return Err("an entry in what is not a directory");
                }
                let names_an_inode = self.inodes.get(&ino).is_some_and(|i| i.kind() == kind);
                if crate::path::validate_name(name).is_err() || !(names_an_inode || ino == WHITEOUT) {
                    return Err("an entry naming no inode of its kind");
                }
                self.insert_dirent(dir, name.into(), (ino, kind));
            }
            Part::Gone { lower: lino } => {
                if lower(lino) || self.lower.is_none() {
                    return Err("a lower inode gone from an image without a lower");
                }
                self.seen.insert(lino, ());
            }
            Part::End { next_ino } => {
                if next_ino < self.next_ino || next_ino > LOWER_TAG {
                    return Err("a next inode number already taken, or out of range");
                }
                self.next_ino = next_ino;
                // Checked whole, over a lower too (listing it costs what
                // opening a pack costs): a tree whose names, links and
                // parents disagree could make a rename walk a cycle, or
                // leave names of nothing, which the next image would not
                // restore.
                if self.check_consistency().is_err() {
                    return Err("an image whose names, links and parents disagree");
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::{Header, encode_part, replay};
    use crate::{MemFs, OpenOptions, Snapshot};

    /// The image and the changes after it, as a version-2 log body.
    fn rewritten(fs: &MemFs, after: impl FnOnce(&MemFs)) -> Vec<u8> {
        let mut body = Vec::new();
        let now = Timestamp::new(9, 0);
        fs.settled(|t| {
            t.image(|part| {
                encode_part(&part, now, &mut body);
                Ok::<_, ()>(())
            })
        })
        .unwrap();
        after(fs);
        body
    }

    /// What the image keeps that no path shows: an open file with no name
    /// (written to after the image, reaped at the end of the replay), and
    /// a lower inode removed, which stays removed by number.
    #[test]
    fn orphans_and_removed_lower_inodes_survive_an_image() {
        let now = Timestamp::new(1, 0);
        let base = MemFs::new();
        let f = base.open(ROOT, "lower", &OpenOptions::create()).unwrap();
        base.write_at(f, 0, b"below").unwrap();
        let lower: Arc<dyn FileSystem> = Arc::new(base.snapshot());
        let mut tree = Tree::overlay(lower.clone(), now, Quota::default()).unwrap();
        let gone = tree.lookup(ROOT, "lower").unwrap();
        tree.unlink(ROOT, "lower", now).unwrap();
        let open = tree.open(ROOT, "open", &OpenOptions::create(), now).unwrap();
        tree.write_at(open, 0, b"held", now).unwrap();
        tree.unlink(ROOT, "open", now).unwrap();
        // The orphan is held, as a handle would hold it.
        tree.reap_unless(|ino| ino == open);
        assert_eq!(tree.orphans(), [open]);

        let mut body = Vec::new();
        tree.image(|part| {
            encode_part(&part, now, &mut body);
            Ok::<_, ()>(())
        })
        .unwrap();
        let mut with_write = body.clone();
        crate::journal::encode(&crate::mem::Op::WriteAt { ino: open, offset: 4, data: b"!" }, now, &mut with_write)
            .unwrap();
        let header = Header { generation: 1, created: now, image: true };
        let mut back = Tree::overlay(lower.clone(), now, Quota::default()).unwrap();
        replay(&mut back, &header, &with_write).unwrap();
        assert_eq!(back.metadata(gone), Err(Error::NotFound), "a removed lower inode stays removed");
        assert_eq!(back.metadata(open), Err(Error::NotFound), "the orphan, written to, then reaped");
        assert_eq!(back.usage(), {
            tree.reap_all();
            tree.usage()
        });
        Snapshot::from(back).check_consistency().unwrap();
    }

    /// A file bigger than a content piece, with a hole, comes back byte for
    /// byte; a `MemFs` rewritten mid-run keeps handing out new numbers.
    #[test]
    fn big_sparse_files_come_back_whole() {
        let fs = MemFs::new();
        let f = fs.open(ROOT, "big", &OpenOptions::create()).unwrap();
        let data: Vec<u8> = (0..CONTENT_PIECE * 2 + 3).map(|i| (i * 7 % 251) as u8).collect();
        fs.write_at(f, 5000, &data).unwrap();
        let body = rewritten(&fs, |_| {});
        let mut back = Tree::new(Timestamp::new(0, 0), Quota::default());
        let header = Header { generation: 0, created: Timestamp::new(0, 0), image: true };
        replay(&mut back, &header, &body).unwrap();
        let mut buf = vec![1; data.len() + 5000];
        assert_eq!(back.read_at(f, 0, &mut buf), Ok(buf.len()));
        assert!(buf[..5000].iter().all(|&b| b == 0) && buf[5000..] == data[..]);
        let next = back.open(ROOT, "next", &OpenOptions::create(), Timestamp::new(0, 0)).unwrap();
        assert_eq!(next, f + 1);
    }

    /// Parts that contradict the tree are refused, not taken.
    #[test]
    fn contradictory_parts_are_refused() {
        let t0 = [Timestamp::new(0, 0); 3];
        let file =
            |ino, size| Part::Inode { ino, shape: Shape::File { size }, mode: 0, nlink: 1, times: t0, orphan: false };
        let mut tree = Tree::new(Timestamp::new(0, 0), Quota::default());
        assert!(tree.restore(file(0, 0)).is_err());
        assert!(tree.restore(file(ROOT, 0)).is_err(), "a root that is a file");
        assert!(tree.restore(file(LOWER_TAG | 5, 0)).is_err(), "a lower number, no lower");
        let lower = Part::Inode {
            ino: LOWER_TAG | 6,
            shape: Shape::Lower { ino: 6, size: 1 },
            mode: 0,
            nlink: 1,
            times: t0,
            orphan: false,
        };
        assert!(tree.restore(lower).is_err(), "no lower");
        assert!(tree.restore(file(8, u64::MAX)).is_err(), "a size past MAX_FILE_SIZE");
        assert!(tree.restore(file(7, 3)).is_ok());
        assert!(tree.restore(file(7, 3)).is_err(), "twice");
        assert!(tree.restore(Part::Content { ino: 7, offset: 2, data: b"ab" }).is_err(), "past its size");
        assert!(tree.restore(Part::Content { ino: ROOT, offset: 0, data: b"a" }).is_err(), "not a file");
        let entry = |dir, name, ino, kind| Part::Entry { dir, name, ino, kind };
        assert!(tree.restore(entry(7, "x", 7, FileType::File)).is_err(), "in a file");
        assert!(tree.restore(entry(ROOT, "x", 7, FileType::Dir)).is_err(), "of the wrong kind");
        assert!(tree.restore(entry(ROOT, "a/b", 7, FileType::File)).is_err(), "a bad name");
        assert!(tree.restore(entry(ROOT, "x", 7, FileType::File)).is_ok());
        assert!(tree.restore(Part::Gone { lower: 3 }).is_err(), "no lower");
        assert!(tree.restore(Part::End { next_ino: 7 }).is_err(), "7 is taken");
        assert!(tree.restore(Part::End { next_ino: 8 }).is_ok());
    }
    const T0: [Timestamp; 3] = [Timestamp { secs: 0, nanos: 0 }; 3];

    fn dir(ino: Ino, parent: Ino, lower: Option<Ino>, nlink: u64) -> Part<'static> {
        Part::Inode { ino, shape: Shape::Dir { parent, lower }, mode: 0o755, nlink, times: T0, orphan: nlink == 0 }
    }

    fn file(ino: Ino, nlink: u64) -> Part<'static> {
        Part::Inode { ino, shape: Shape::File { size: 0 }, mode: 0o644, nlink, times: T0, orphan: nlink == 0 }
    }

    fn entry(dir: Ino, name: &str, ino: Ino, kind: FileType) -> Part<'_> {
        Part::Entry { dir, name, ino, kind }
    }

    /// A pack with directories `a` and `b` (`a/x` in it) and files `f`
    /// (empty) and `g`: a lower, and the numbers its inodes have over it.
    fn lower_pack() -> (Arc<dyn FileSystem>, [Ino; 5]) {
        let fs = MemFs::new();
        let a = fs.mkdir(ROOT, "a", 0o755).unwrap();
        fs.mkdir(ROOT, "b", 0o755).unwrap();
        fs.mkdir(a, "x", 0o755).unwrap();
        fs.close(fs.open(ROOT, "f", &OpenOptions::create()).unwrap());
        let g = fs.open(ROOT, "g", &OpenOptions::create()).unwrap();
        fs.write_at(g, 0, b"g").unwrap();
        fs.close(g);
        let mut bytes = Vec::new();
        crate::pack::write_pack(&fs.snapshot(), &mut bytes).unwrap();
        let pack = crate::pack::PackFs::open(bytes).unwrap();
        let ino = |path: &str| crate::resolve::resolve(&pack, pack.root(), path, false).unwrap() | LOWER_TAG;
        let inos = [ino("a"), ino("b"), ino("a/x"), ino("f"), ino("g")];
        (Arc::new(pack), inos)
    }

    /// The image `parts` replayed as a version-2 log onto `tree`.
    fn replayed(mut tree: Tree, parts: &[Part<'_>]) -> Result<Tree> {
        let mut body = Vec::new();
        for part in parts {
            encode_part(part, Timestamp::new(0, 0), &mut body);
        }
        let header = Header { generation: 0, created: Timestamp::new(0, 0), image: true };
        replay(&mut tree, &header, &body)?;
        Ok(tree)
    }

    fn inode(ino: Ino, shape: Shape<'_>, nlink: u64) -> Part<'_> {
        Part::Inode { ino, shape, mode: 0o644, nlink, times: T0, orphan: nlink == 0 }
    }

    /// Images no live tree could have written, each of which a3db56c
    /// replayed (but the merged upper directory): a root whose parent is
    /// its own subdirectory, and over a pack two directories each other's
    /// parent (a directory rename then walked their parents for ever,
    /// under the writer lock); two removed directories with an entry from
    /// one to the other (the reap left the entry, and the next image could
    /// not be restored: the journal never opened again); over a pack, a
    /// removed file with a name, two names on a file of one link, a lower
    /// directory that is another's, a file that reads another lower file's
    /// bytes; and what review found the first fix let through: a next inode
    /// number past the upper's, a lower name hidden whose inode was never
    /// taken (a link by number then raised the lower's count), a live lower
    /// directory merging nothing, more bytes than a tree counts (a panic in
    /// the check), symbolic links no tree makes (the checkpoint failed, and
    /// with it every later open). Each is refused.
    #[test]
    fn images_no_tree_could_write_are_refused() {
        use FileType::{Dir, File, Symlink};
        let now = Timestamp::new(0, 0);
        let fresh = || Tree::new(now, Quota::default());
        let (lower, [a, b, x, f, g]) = lower_pack();
        let over = || Tree::overlay(lower.clone(), now, Quota::default()).unwrap();
        let end = |next_ino| Part::End { next_ino };
        let big = Shape::File { size: crate::MAX_FILE_SIZE };
        let long = "x".repeat(crate::path::MAX_PATH + 1);
        let lino = |ino: Ino| ino & !LOWER_TAG;
        #[rustfmt::skip]
        let bad_images: Vec<(&str, Tree, Vec<Part<'_>>)> = vec![
            ("a root under its own subdirectory", fresh(),
                vec![dir(ROOT, 2, None, 3), dir(2, ROOT, None, 2), entry(ROOT, "a", 2, Dir), end(3)]),
            ("two directories each other's parent", over(),
                vec![dir(a, b, Some(lino(a)), 3), dir(b, a, Some(lino(b)), 2), end(2)]),
            ("an entry between removed directories", fresh(),
                vec![dir(2, ROOT, None, 0), dir(3, 2, None, 0), entry(2, "x", 3, Dir), end(4)]),
            ("a removed file with a name", over(), vec![file(2, 0), entry(ROOT, "n", 2, File), end(3)]),
            ("two names, one link", over(),
                vec![file(2, 1), entry(ROOT, "n", 2, File), entry(ROOT, "m", 2, File), end(3)]),
            ("a lower file named again with its count", over(),
                vec![inode(f, Shape::Lower { ino: lino(f), size: 0 }, 1), entry(ROOT, "n", f, File), end(2)]),
            ("a lower directory moved without its parent", over(), vec![dir(x, b, Some(lino(x)), 2), end(2)]),
            ("a lower file reading another's bytes", over(),
                vec![inode(f, Shape::Lower { ino: lino(g), size: 0 }, 1), end(2)]),
            ("a merged directory of the upper", over(),
                vec![dir(2, ROOT, Some(lino(a)), 2), entry(ROOT, "n", 2, Dir), end(3)]),
            ("a next inode number past the upper's", fresh(), vec![end(1 << 48)]),
            ("a lower name hidden, its inode never taken", over(), vec![entry(ROOT, "g", 0, File), end(2)]),
            ("a live lower directory merging nothing", over(), vec![dir(a, ROOT, None, 3), end(2)]),
            ("a lower inode gone that the lower does not have", over(), vec![Part::Gone { lower: 999 }, end(2)]),
            ("more bytes than a tree counts", fresh(), vec![
                inode(2, big, 1), inode(3, big, 1), inode(4, big, 1),
                entry(ROOT, "a", 2, File), entry(ROOT, "b", 3, File), entry(ROOT, "c", 4, File), end(5),
            ]),
            ("a symbolic link to nothing", fresh(),
                vec![inode(2, Shape::Symlink(""), 1), entry(ROOT, "l", 2, Symlink), end(3)]),
            ("a symbolic link with a NUL", fresh(),
                vec![inode(2, Shape::Symlink("a\0b"), 1), entry(ROOT, "l", 2, Symlink), end(3)]),
            ("a symbolic link longer than a path", fresh(),
                vec![inode(2, Shape::Symlink(&long), 1), entry(ROOT, "l", 2, Symlink), end(3)]),
        ];
        for (what, tree, parts) in bad_images {
            let e = replayed(tree, &parts).err();
            let bad_image = |e: &Error| {
                matches!(
                    e,
                    Error::CorruptJournal(crate::journal::CorruptJournal {
                        kind: crate::journal::CorruptJournalKind::BadImage { .. },
                        ..
                    })
                )
            };
            assert!(e.as_ref().is_some_and(bad_image), "{what}: {e:?}");
        }
        // What a tree over the pack writes is taken, a removed lower file
        // and directory and a lower link included.
        let mut tree = over();
        tree.mkdir(a, "new", 0o755, now).unwrap();
        tree.rename(ROOT, "f", b, "g", now).unwrap();
        tree.rmdir(a, "x", now).unwrap();
        tree.symlink(ROOT, "l", "g", now).unwrap();
        tree.reap_all();
        let mut body = Vec::new();
        tree.image(|p| {
            encode_part(&p, now, &mut body);
            Ok::<_, ()>(())
        })
        .unwrap();
        let header = Header { generation: 0, created: now, image: true };
        replay(&mut over(), &header, &body).unwrap();
    }

    /// A tree whose parents form a cycle (restored part by part, never
    /// checked whole): a directory rename ends with an error, not a walk
    /// for ever; dropping links never takes a count below zero; and a
    /// removed directory reaped with entries still in it takes them, and
    /// their charges, with it.
    #[test]
    fn a_tree_that_disagrees_with_itself_never_hangs_nor_wraps() {
        let now = Timestamp::new(0, 0);
        let mut tree = Tree::new(now, Quota::default());
        for part in [dir(ROOT, 2, None, 3), dir(2, ROOT, None, 2), entry(ROOT, "a", 2, FileType::Dir)] {
            tree.restore(part).unwrap();
        }
        tree.mkdir(ROOT, "d", 0o755, now).unwrap();
        assert!(matches!(tree.rename(ROOT, "d", 2, "d", now), Err(Error::Backend { .. })));

        let mut tree = Tree::new(now, Quota::default());
        let empty = tree.usage();
        for part in [file(2, 1), entry(ROOT, "g", 2, FileType::File), entry(ROOT, "h", 2, FileType::File)] {
            tree.restore(part).unwrap();
        }
        tree.unlink(ROOT, "g", now).unwrap();
        tree.unlink(ROOT, "h", now).unwrap();
        tree.reap_all();
        assert_eq!(tree.usage(), empty);

        let mut tree = Tree::new(now, Quota::default());
        for part in [dir(2, ROOT, None, 0), dir(3, 2, None, 0), entry(2, "x", 3, FileType::Dir)] {
            tree.restore(part).unwrap();
        }
        tree.reap_all();
        assert_eq!(tree.usage(), empty, "the entry and both directories given back");
        tree.check_consistency().unwrap();
    }
}
