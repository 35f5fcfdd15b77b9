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
                let data = match shape {
                    Shape::File { size } => {
                        let mut content = Content::default();
                        content.set_len(size);
                        Data::File(content)
                    }
                    Shape::Lower { ino: lino, size } if lower(ino) && self.lower.is_some() => {
                        Data::Lower { ino: lino, size }
                    }
                    Shape::Dir { parent, lower: below } if below.is_none() || self.lower.is_some() => {
                        Data::Dir { parent, lower: below }
                    }
                    Shape::Symlink(target) => Data::Symlink(Arc::from(target)),
                    _ => return Err("a lower inode in an image without a lower"),
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
                self.usage.bytes = self.usage.bytes.saturating_add(inode.charge(ino));
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
                if next_ino < self.next_ino || lower(next_ino) {
                    return Err("a next inode number already taken");
                }
                self.next_ino = next_ino;
                // With no lower the whole tree is here, and is checked
                // whole; over a lower, link counts are taken as written
                // (checking them would list the whole lower).
                if self.lower.is_none() && self.check_consistency().is_err() {
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
}
