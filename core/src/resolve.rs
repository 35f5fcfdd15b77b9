//! Path resolution above the backend: `..`, symlinks and mount points.
//!
//! A walk starts at a directory, its *root*, and never leaves it: `..` at
//! the root, an absolute path and an absolute symlink target are all
//! [`Error::NotPermitted`] (the error wasmtime-wasi gives for a path that
//! escapes its preopen). Symlinks are followed at most [`MAX_SYMLINK_HOPS`]
//! times per walk; one more is [`Error::Loop`].
//!
//! A path ending in `/` names what its last symlink leads to, so one whose
//! last symlink leads out of the root is refused as leaving it
//! ([`Error::NotPermitted`]) by every walk, whatever the call would answer
//! for the symlink itself: `rmdir("parent/")` with `parent -> ..` is
//! `NotPermitted`, never `NotDir` (see [`resolve_last`]).
//!
//! The walk is written once, over a `Space`: a single filesystem is one
//! space, a [`MountTable`](crate::mount::MountTable) another, whose `step`
//! crosses into a mount where one covers the name.

use std::borrow::Cow;
use std::iter::Peekable;

use crate::path::{Component, MAX_NAME, MAX_PATH, Steps, components, split};
use crate::{Error, FileSystem, FileType, Ino, Result};

/// Most symlinks one walk follows (Linux's `MAXSYMLINKS`).
pub const MAX_SYMLINK_HOPS: usize = 40;

/// A place in a namespace: which filesystem (0 for a lone one), which inode.
pub type At = (u32, Ino);

/// What a walk needs from the namespace it walks.
pub(crate) trait Space {
    /// The node named `name` in directory `dir`, and its type.
    fn step(&self, dir: At, name: &str) -> Result<(At, FileType)>;
    /// A symlink's target.
    fn readlink(&self, at: At) -> Result<String>;
}

/// One filesystem on its own.
struct Single<'f>(&'f dyn FileSystem);

impl Space for Single<'_> {
    fn step(&self, (_, dir): At, name: &str) -> Result<(At, FileType)> {
        let (ino, kind) = self.0.lookup_kind(dir, name)?;
        Ok(((0, ino), kind))
    }
    fn readlink(&self, (_, ino): At) -> Result<String> {
        self.0.readlink(ino)
    }
}

/// The directory holding a path's last component, and that component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parent<'a, D = Ino> {
    /// The directory.
    pub dir: D,
    /// The last component, a valid name.
    pub name: Cow<'a, str>,
    /// The path, or a symlink target followed at its end, ended in `/`:
    /// the entry must be (or become) a directory.
    pub trailing_slash: bool,
}

/// Where a path ends: see [`resolve_last`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Last<'a, D = Ino> {
    /// A path that ends without a name (`.`, `a/..`): the directory.
    Dir(D),
    /// The last directory and name.
    Entry(Parent<'a, D>),
}

#[derive(Clone)]
enum Step<'a> {
    Up,
    Name(Cow<'a, str>),
}

impl<'a> From<Component<'a>> for Step<'a> {
    fn from(c: Component<'a>) -> Self {
        match c {
            Component::Parent => Step::Up,
            Component::Name(n) => Step::Name(Cow::Borrowed(n)),
        }
    }
}

/// Directories below the current one kept in place; deeper ones spill to
/// the heap.
const INLINE_DIRS: usize = 8;

/// Directories from the walk's root down to the current one, `top`. The
/// first [`INLINE_DIRS`] below it live in place, so a walk of an ordinary
/// path does not allocate.
#[derive(Clone)]
struct Dirs {
    top: At,
    /// How many directories lie below `top`.
    depth: usize,
    inline: [At; INLINE_DIRS],
    spilled: Vec<At>,
}

impl Dirs {
    fn new(root: At) -> Self {
        Dirs { top: root, depth: 0, inline: [root; INLINE_DIRS], spilled: Vec::new() }
    }

    fn push(&mut self, at: At) {
        match self.inline.get_mut(self.depth) {
            Some(slot) => *slot = self.top,
            None => self.spilled.push(self.top),
        }
        self.depth += 1;
        self.top = at;
    }

    /// Goes up one directory; `NotPermitted` at the root.
    fn pop(&mut self) -> Result<()> {
        self.depth = self.depth.checked_sub(1).ok_or(Error::NotPermitted)?;
        self.top = match self.inline.get(self.depth) {
            Some(&at) => at,
            None => self.spilled.pop().ok_or(Error::NotPermitted)?,
        };
        Ok(())
    }
}

pub(crate) struct Walk<'a, 's, S: Space> {
    space: &'s S,
    dirs: Dirs,
    /// The path's own steps not yet taken.
    rest: Peekable<Steps<'a>>,
    /// Steps from symlink targets, taken before `rest`; the next one last.
    todo: Vec<Step<'a>>,
    hops: usize,
    trailing_slash: bool,
    /// The path's last component is `.` (`e/.`, `e/./`): it names the
    /// directory the name before it leads to, as `.` alone names the
    /// start, and has no last name of its own (`rmdir("e/.")` is
    /// `EINVAL`, never a removal of `e`).
    ends_in_dot: bool,
}

// By hand: a derive would ask for `S: Clone`, and the walk holds `&S`.
impl<S: Space> Clone for Walk<'_, '_, S> {
    fn clone(&self) -> Self {
        Walk {
            space: self.space,
            dirs: self.dirs.clone(),
            rest: self.rest.clone(),
            todo: self.todo.clone(),
            hops: self.hops,
            trailing_slash: self.trailing_slash,
            ends_in_dot: self.ends_in_dot,
        }
    }
}

/// The path's last component is `.` (`.`, `a/.`, `a/./`): the walk ends by
/// entering a directory, not at a last name.
fn ends_in_dot(path: &str) -> bool {
    let trimmed = path.trim_end_matches('/');
    trimmed == "." || trimmed.ends_with("/.")
}

impl<'a, 's, S: Space> Walk<'a, 's, S> {
    pub(crate) fn new(space: &'s S, root: At, path: &'a str) -> Result<Self> {
        let (absolute, trailing_slash, steps) = split(path)?;
        if absolute {
            return Err(Error::NotPermitted);
        }
        let rest = steps.peekable();
        let ends_in_dot = ends_in_dot(path);
        Ok(Walk { space, dirs: Dirs::new(root), rest, todo: Vec::new(), hops: 0, trailing_slash, ends_in_dot })
    }

    fn dir(&self) -> At {
        self.dirs.top
    }

    fn next_step(&mut self) -> Option<Step<'a>> {
        self.todo.pop().or_else(|| self.rest.next().map(Step::from))
    }

    /// No step is left.
    fn done(&mut self) -> bool {
        self.todo.is_empty() && self.rest.peek().is_none()
    }

    /// Replaces the symlink `at` by its target's steps. A target that ends
    /// in `/` in the last component makes the path's end one too, and one
    /// that ends in `/.` a directory to walk into, as the path's own would.
    fn splice(&mut self, at: At) -> Result<()> {
        self.hops += 1;
        if self.hops > MAX_SYMLINK_HOPS {
            return Err(Error::Loop);
        }
        let target = self.space.readlink(at)?;
        let c = components(&target)?;
        if c.absolute {
            return Err(Error::NotPermitted);
        }
        if self.done() {
            self.trailing_slash |= c.trailing_slash;
            self.ends_in_dot |= ends_in_dot(&target);
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
    /// ends in one (`a/..`, `.` and `a/.` do not).
    fn walk_to_last(&mut self) -> Result<Option<Cow<'a, str>>> {
        while let Some(step) = self.next_step() {
            match step {
                Step::Up => self.dirs.pop()?,
                Step::Name(name) if self.done() && !self.ends_in_dot => return Ok(Some(name)),
                Step::Name(name) => {
                    let (at, kind) = self.space.step(self.dir(), &name)?;
                    match kind {
                        FileType::Dir => self.dirs.push(at),
                        FileType::Symlink => self.splice(at)?,
                        FileType::File => return Err(Error::NotDir),
                    }
                }
            }
        }
        Ok(None)
    }

    /// The node the whole path names.
    pub(crate) fn resolve(mut self, follow: bool) -> Result<At> {
        loop {
            let Some(name) = self.walk_to_last()? else { return Ok(self.dir()) };
            let (at, kind) = self.space.step(self.dir(), &name)?;
            match kind {
                FileType::Symlink if follow || self.trailing_slash => self.splice(at)?,
                FileType::File if self.trailing_slash => return Err(Error::NotDir),
                _ => return Ok(at),
            }
        }
    }

    /// `NotPermitted` if the path ends in `/` and its last name, `name` in
    /// the current directory, is a symlink that, followed, leads out of
    /// the root: such a path names what lies outside, and is refused as
    /// leaving, before anything a call would say of the symlink itself
    /// (`rmdir` or `rename` `NotDir`, `mkdir` or a new link `Exists`, an
    /// exclusive create `Exists`). The rest of the walk is taken on a copy,
    /// so the walk itself goes on from the name; other errors on the way
    /// (a loop, a missing or non-directory target) are left to the call.
    fn refuse_leaving_slash(&self, name: &str) -> Result<()> {
        if !self.trailing_slash {
            return Ok(());
        }
        let Ok((at, FileType::Symlink)) = self.space.step(self.dir(), name) else { return Ok(()) };
        let mut probe = self.clone();
        match probe.splice(at).and_then(|()| probe.resolve(true)) {
            Err(Error::NotPermitted) => Err(Error::NotPermitted),
            _ => Ok(()),
        }
    }

    /// Where the path ends: the last directory and name, with a symlink
    /// there followed (within the same budget of hops) for as long as
    /// `follow` returns one; or, for a path that ends without a name, the
    /// directory it ends in. A path ending in `/` whose last symlink leads
    /// out of the root is `NotPermitted` ([`refuse_leaving_slash`]).
    ///
    /// [`refuse_leaving_slash`]: Self::refuse_leaving_slash
    fn resolve_last(mut self, mut follow: impl FnMut(&Parent<'a, At>) -> Result<Option<At>>) -> Result<Last<'a, At>> {
        loop {
            let Some(name) = self.walk_to_last()? else { return Ok(Last::Dir(self.dir())) };
            self.refuse_leaving_slash(&name)?;
            let p = Parent { dir: self.dir(), name, trailing_slash: self.trailing_slash };
            match follow(&p)? {
                Some(link) => self.splice(link)?,
                None => return Ok(Last::Entry(p)),
            }
        }
    }

    /// The directory holding the last name, and the name; `NotPermitted`
    /// as for [`resolve_last`](Self::resolve_last).
    pub(crate) fn resolve_parent(mut self) -> Result<Parent<'a, At>> {
        let name = self.walk_to_last()?.ok_or(Error::Invalid)?;
        self.refuse_leaving_slash(&name)?;
        Ok(Parent { dir: self.dir(), name, trailing_slash: self.trailing_slash })
    }
}

/// The common case of [`Walk::resolve`] without its machinery: a path of
/// names only (`a/b/c`: relative; no empty component, `.`, `..` or
/// trailing `/`; no NUL; no name over [`MAX_NAME`]) whose walk meets no
/// symlink it must follow, in one pass over the path. `None` for any other
/// path or walk: the full walk then starts over and retakes the same steps,
/// so both give the same answer. Errors included: a step's error stands
/// only once [`split`] finds nothing wrong with the whole path (what the
/// full walk checks before its first step), which costs a second pass only
/// on the way out with an error.
fn quick<S: Space>(space: &S, root: At, path: &str, follow: bool) -> Option<Result<At>> {
    let bytes = path.as_bytes();
    if bytes.len() > MAX_PATH {
        return None;
    }
    let failed = |e| split(path).is_ok().then_some(Err(e));
    let (mut at, mut start) = (root, 0);
    loop {
        let end = next_slash_or_nul(bytes, start).unwrap_or(bytes.len());
        let last = end == bytes.len();
        if !last && bytes.get(end) != Some(&b'/') {
            return None;
        }
        // Both ends are at a `/` or an end of the path: char boundaries.
        let name = path.get(start..end)?;
        if name.is_empty() || name.len() > MAX_NAME || name == "." || name == ".." {
            return None;
        }
        match space.step(at, name) {
            Ok((_, FileType::Symlink)) if follow || !last => return None,
            Ok((found, _)) if last => return Some(Ok(found)),
            Ok((next, FileType::Dir)) => at = next,
            Ok(_) => return failed(Error::NotDir),
            Err(e) => return failed(e),
        }
        start = end + 1;
    }
}

/// The position of the first `/` or NUL in `bytes` at or after `from`,
/// eight bytes at a time.
fn next_slash_or_nul(bytes: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    // The high bit of each byte that is zero, exact up to the first such
    // byte (a borrow can mark bytes above it, never below).
    let zeros = |w: u64| w.wrapping_sub(ONES) & !w & (ONES << 7);
    let mut i = from;
    while let Some(chunk) = bytes.get(i..).and_then(<[u8]>::first_chunk::<8>) {
        let w = u64::from_le_bytes(*chunk);
        let marks = zeros(w) | zeros(w ^ (ONES * u64::from(b'/')));
        if marks != 0 {
            return Some(i + (marks.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    let tail = bytes.get(i..)?;
    tail.iter().position(|&b| b == b'/' || b == 0).map(|k| i + k)
}

/// The node `path` names from `root` in `space`: [`quick`] where it can,
/// else the full [`Walk`].
pub(crate) fn resolve_in<S: Space>(space: &S, root: At, path: &str, follow: bool) -> Result<At> {
    match quick(space, root, path, follow) {
        Some(found) => found,
        None => Walk::new(space, root, path)?.resolve(follow),
    }
}

/// The inode `path` names, relative to `root`, following a symlink in the
/// last component when `follow` is set (always when the path ends in `/`).
pub fn resolve(fs: &dyn FileSystem, root: Ino, path: &str, follow: bool) -> Result<Ino> {
    resolve_in(&Single(fs), (0, root), path, follow).map(|(_, ino)| ino)
}

/// The directory holding `path`'s last component, and that name, for
/// operations that create, remove or rename it (the last component is never
/// followed). A path without a last name (`.`, `a/..`) is `Invalid`; one
/// ending in `/` whose last name is a symlink leading out of `root` is
/// `NotPermitted`.
pub fn resolve_parent<'a>(fs: &dyn FileSystem, root: Ino, path: &'a str) -> Result<Parent<'a>> {
    let p = Walk::new(&Single(fs), (0, root), path)?.resolve_parent()?;
    Ok(Parent { dir: p.dir.1, name: p.name, trailing_slash: p.trailing_slash })
}

/// Where `path` ends, from `root`: the last directory and name, or the
/// directory a path without a last name (`.`, `a/..`) ends in. `follow`
/// sees each last name the walk reaches and returns the symlink to follow
/// there, if any (opening with `O_CREAT` follows a symlink to its missing
/// target, for example): the walk goes on through its target from where
/// the symlink is, each one counted against [`MAX_SYMLINK_HOPS`] like any
/// other. A path ending in `/` whose last name is a symlink leading out of
/// `root` is `NotPermitted`, before `follow` sees it.
pub fn resolve_last<'a>(
    fs: &dyn FileSystem,
    root: Ino,
    path: &'a str,
    mut follow: impl FnMut(&Parent<'a>) -> Result<Option<Ino>>,
) -> Result<Last<'a>> {
    let outer = |p: &Parent<'a, At>| Parent { dir: p.dir.1, name: p.name.clone(), trailing_slash: p.trailing_slash };
    let last = Walk::new(&Single(fs), (0, root), path)?.resolve_last(|p| Ok(follow(&outer(p))?.map(|ino| (0, ino))))?;
    Ok(match last {
        Last::Dir((_, ino)) => Last::Dir(ino),
        Last::Entry(p) => Last::Entry(outer(&p)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemFs, OpenOptions};

    /// The quick walk answers every path exactly as the full walk does:
    /// paths it takes, paths it leaves, and errors met before and after
    /// what the full walk checks first.
    #[test]
    fn quick_walk_answers_as_the_full_walk() {
        let fs = MemFs::new();
        let a = fs.mkdir(fs.root(), "a", 0o755).unwrap();
        let b = fs.mkdir(a, "b", 0o755).unwrap();
        fs.open(b, "f", &OpenOptions::create()).unwrap();
        fs.symlink(a, "up", "..").unwrap();
        fs.symlink(a, "lf", "b/f").unwrap();
        fs.symlink(fs.root(), "loop", "loop").unwrap();
        fs.symlink(fs.root(), "abs", "/a").unwrap();
        let long = "n".repeat(MAX_NAME + 1);
        let mut paths: Vec<String> = [
            "a",
            "a/b",
            "a/b/f",
            "a/b/f/",
            "a/b/f/x",
            "a/b/x",
            "x/y",
            "a/up",
            "a/up/a/b/f",
            "a/lf",
            "a/lf/",
            "a/lf/x",
            "loop",
            "loop/x",
            "abs",
            "abs/b",
            "a//b",
            "a/./b",
            "./a",
            "a/b/..",
            "..",
            "a/../..",
            "/a",
            "",
            ".",
            "a/",
            "a/b/f\0",
            "x/y\0",
            "a/b/f/x\0",
            "a\0/b",
        ]
        .map(String::from)
        .to_vec();
        paths.push(format!("x/{long}"));
        paths.push(format!("a/b/f/{long}"));
        paths.push(format!("a/{}", "n".repeat(MAX_NAME)));
        paths.push("a/".repeat(MAX_PATH));
        let space = Single(&fs);
        for path in &paths {
            for follow in [false, true] {
                let full = Walk::new(&space, (0, fs.root()), path).and_then(|w| w.resolve(follow));
                assert_eq!(resolve_in(&space, (0, fs.root()), path, follow), full, "{path:?} {follow}");
            }
        }
    }

    /// `resolve_last` goes on through the symlinks `follow` picks, from
    /// where each one is, and a target ending in `/` must be a directory.
    #[test]
    fn last_symlinks_are_followed_where_they_are() {
        let fs = MemFs::new();
        let a = fs.mkdir(fs.root(), "a", 0o755).unwrap();
        let b = fs.mkdir(a, "b", 0o755).unwrap();
        let f = fs.open(b, "f", &OpenOptions::create()).unwrap();
        fs.symlink(b, "up", "../b/f").unwrap();
        fs.symlink(b, "missing", "../new").unwrap();
        fs.symlink(b, "dot", "..").unwrap();
        fs.symlink(b, "fslash", "f/").unwrap();
        let links = |p: &Parent<'_>| match fs.lookup_kind(p.dir, &p.name) {
            Ok((ino, FileType::Symlink)) => Ok(Some(ino)),
            Ok(_) | Err(Error::NotFound) => Ok(None),
            Err(e) => Err(e),
        };
        let entry = |dir, name: &'static str| Last::Entry(Parent { dir, name: name.into(), trailing_slash: false });
        assert_eq!(resolve_last(&fs, fs.root(), "a/b/up", links), Ok(entry(b, "f")));
        assert_eq!(resolve_last(&fs, fs.root(), "a/b/missing", links), Ok(entry(a, "new")));
        assert_eq!(resolve_last(&fs, fs.root(), "a/b/dot", links), Ok(Last::Dir(a)));
        assert_eq!(resolve_last(&fs, b, "up", links), Err(Error::NotPermitted), "no way above the root");
        assert_eq!(resolve_last(&fs, fs.root(), "a/b/up", |_| Ok(None)), Ok(entry(b, "up")));
        let slash = Last::Entry(Parent { dir: b, name: "f".into(), trailing_slash: true });
        assert_eq!(resolve_last(&fs, fs.root(), "a/b/fslash", links), Ok(slash));
        assert_eq!(resolve(&fs, fs.root(), "a/b/fslash", true), Err(Error::NotDir));
        assert_eq!(resolve(&fs, fs.root(), "a/b/up", true), Ok(f));
    }

    /// A path ending in `/` through a symlink that leads out of the root
    /// (`..`, `../x`, absolute, a chain, `..` reached through a directory)
    /// is refused as leaving it, where a walk that only finds the parent
    /// used to hand the symlink's name to the call (`rmdir("parent/")`
    /// answered `NotDir`, wasmtime `NotPermitted`). One that stays inside,
    /// or fails on the way for something else, is left to the call.
    #[test]
    fn a_slash_through_a_symlink_out_is_refused_as_leaving() {
        let fs = MemFs::new();
        let root = fs.root();
        let a = fs.mkdir(root, "a", 0o755).unwrap();
        fs.mkdir(root, "e", 0o755).unwrap();
        for (name, target) in
            [("parent", ".."), ("esc", "../x"), ("abs", "/a"), ("chain", "parent"), ("deep", "e/../..")]
        {
            fs.symlink(root, name, target).unwrap();
        }
        fs.symlink(a, "up2", "../..").unwrap();
        fs.symlink(a, "up1", "..").unwrap();
        fs.symlink(root, "loop", "loop").unwrap();
        fs.symlink(root, "dangling", "nowhere/..").unwrap();
        let refused = ["parent/", "parent//", "esc/", "abs/", "chain/", "deep/", "a/up2/", "a/../parent/"];
        for path in refused {
            assert_eq!(resolve_parent(&fs, root, path).map(|_| ()), Err(Error::NotPermitted), "{path}");
            let last = resolve_last(&fs, root, path, |_| Ok(None));
            assert_eq!(last.map(|_| ()), Err(Error::NotPermitted), "{path}");
        }
        // Without the `/`, the name is the symlink's own.
        for path in ["parent", "esc", "abs", "chain", "deep", "a/up2"] {
            assert!(resolve_parent(&fs, root, path).is_ok(), "{path}");
        }
        // Inside, or failing before it could leave: the symlink's name.
        for path in ["a/up1/", "loop/", "dangling/"] {
            let p = resolve_parent(&fs, root, path).unwrap();
            assert!(p.trailing_slash, "{path}");
            assert!(resolve_last(&fs, root, path, |_| Ok(None)).is_ok(), "{path}");
        }
        // From `a`, `up1` is its root's parent.
        assert_eq!(resolve_parent(&fs, a, "up1/").map(|_| ()), Err(Error::NotPermitted));
    }

    #[test]
    fn slashes_and_nuls_are_found_a_word_at_a_time() {
        for path in ["", "/", "abc", "abcdefgh/", "abcdefghijklmno/p", "abcdefghijklmnop\0", "\u{e9}\u{e9}/\u{e9}"] {
            let bytes = path.as_bytes();
            for from in 0..=bytes.len() {
                let want = bytes[from..].iter().position(|&b| b == b'/' || b == 0).map(|k| from + k);
                assert_eq!(next_slash_or_nul(bytes, from), want, "{path:?} {from}");
            }
        }
    }
}
