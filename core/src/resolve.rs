//! Path resolution above the backend: `..` and symlinks.
//!
//! A walk starts at a directory inode, its *root*, and never leaves it: `..`
//! at the root, an absolute path and an absolute symlink target are all
//! [`Error::NotPermitted`] (the error wasmtime-wasi gives for a path that
//! escapes its preopen). Symlinks are followed at most [`MAX_SYMLINK_HOPS`]
//! times per walk; one more is [`Error::Loop`].

use std::borrow::Cow;

use crate::path::{Component, components};
use crate::{Error, FileSystem, FileType, Ino, Result};

/// Most symlinks one walk follows (Linux's `MAXSYMLINKS`).
pub const MAX_SYMLINK_HOPS: usize = 40;

/// The directory holding a path's last component, and that component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parent<'a> {
    /// The directory.
    pub dir: Ino,
    /// The last component, a valid name.
    pub name: Cow<'a, str>,
    /// The path ended in `/`: the entry must be (or become) a directory.
    pub trailing_slash: bool,
}

enum Step<'a> {
    Up,
    Name(Cow<'a, str>),
}

struct Walk<'a, 'f> {
    fs: &'f dyn FileSystem,
    /// Directories from the root down to the current one.
    stack: Vec<Ino>,
    /// Steps still to take, the next one last.
    todo: Vec<Step<'a>>,
    hops: usize,
}

impl<'a, 'f> Walk<'a, 'f> {
    fn new(fs: &'f dyn FileSystem, root: Ino, path: &'a str) -> Result<(Self, bool)> {
        let c = components(path)?;
        if c.absolute {
            return Err(Error::NotPermitted);
        }
        let todo = c.parts.iter().rev().map(|p| match *p {
            Component::Parent => Step::Up,
            Component::Name(n) => Step::Name(Cow::Borrowed(n)),
        });
        Ok((Walk { fs, stack: vec![root], todo: todo.collect(), hops: 0 }, c.trailing_slash))
    }

    fn dir(&self) -> Ino {
        self.stack[self.stack.len() - 1]
    }

    fn up(&mut self) -> Result<()> {
        if self.stack.len() == 1 {
            return Err(Error::NotPermitted);
        }
        self.stack.pop();
        Ok(())
    }

    /// Replaces the symlink `ino` by its target's steps.
    fn splice(&mut self, ino: Ino) -> Result<()> {
        self.hops += 1;
        if self.hops > MAX_SYMLINK_HOPS {
            return Err(Error::Loop);
        }
        let target = self.fs.readlink(ino)?;
        let c = components(&target)?;
        if c.absolute {
            return Err(Error::NotPermitted);
        }
        if c.trailing_slash && c.parts.is_empty() {
            return Ok(());
        }
        for part in c.parts.iter().rev() {
            self.todo.push(match *part {
                Component::Parent => Step::Up,
                Component::Name(n) => Step::Name(Cow::Owned(n.to_owned())),
            });
        }
        Ok(())
    }

    /// Takes every step but the last name; returns that name, if the path
    /// ends in one (`a/..` and `.` do not).
    fn walk_to_last(&mut self) -> Result<Option<Cow<'a, str>>> {
        while let Some(step) = self.todo.pop() {
            match step {
                Step::Up => self.up()?,
                Step::Name(name) if self.todo.is_empty() => return Ok(Some(name)),
                Step::Name(name) => {
                    let ino = self.fs.lookup(self.dir(), &name)?;
                    match self.fs.metadata(ino)?.kind {
                        FileType::Dir => self.stack.push(ino),
                        FileType::Symlink => self.splice(ino)?,
                        FileType::File => return Err(Error::NotDir),
                    }
                }
            }
        }
        Ok(None)
    }
}

/// The inode `path` names, relative to `root`, following a symlink in the
/// last component when `follow` is set (always when the path ends in `/`).
pub fn resolve(fs: &dyn FileSystem, root: Ino, path: &str, follow: bool) -> Result<Ino> {
    let (mut walk, trailing_slash) = Walk::new(fs, root, path)?;
    loop {
        let Some(name) = walk.walk_to_last()? else { return Ok(walk.dir()) };
        let ino = fs.lookup(walk.dir(), &name)?;
        match fs.metadata(ino)?.kind {
            FileType::Symlink if follow || trailing_slash => walk.splice(ino)?,
            FileType::File if trailing_slash => return Err(Error::NotDir),
            _ => return Ok(ino),
        }
    }
}

/// The directory holding `path`'s last component, and that name, for
/// operations that create, remove or rename it (the last component is never
/// followed). A path without a last name (`.`, `a/..`) is `Invalid`.
pub fn resolve_parent<'a>(fs: &dyn FileSystem, root: Ino, path: &'a str) -> Result<Parent<'a>> {
    let (mut walk, trailing_slash) = Walk::new(fs, root, path)?;
    let name = walk.walk_to_last()?.ok_or(Error::Invalid)?;
    Ok(Parent { dir: walk.dir(), name, trailing_slash })
}
