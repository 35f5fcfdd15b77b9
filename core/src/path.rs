//! Names and paths: validation and lexical normalization.
//!
//! A backend only ever sees single, validated [names](validate_name); a path
//! is split here into [`Component`]s and walked above the backend (see
//! [`crate::resolve`]), where `..` and symlinks are resolved against the
//! root the walk started under.

use crate::{Error, Result};

/// Longest name of one directory entry, in bytes (POSIX `NAME_MAX`).
pub const MAX_NAME: usize = 255;
/// Longest path accepted, in bytes (POSIX `PATH_MAX`).
pub const MAX_PATH: usize = 4096;

/// Checks that `name` can be a directory entry: not empty, not `.` or `..`,
/// no `/` or NUL, at most [`MAX_NAME`] bytes.
pub fn validate_name(name: &str) -> Result<()> {
    // NUL first, as in a path: wherever it is, it is what is wrong.
    if name.as_bytes().contains(&0) {
        return Err(Error::Invalid);
    }
    if name.len() > MAX_NAME {
        return Err(Error::NameTooLong);
    }
    if name.is_empty() || name == "." || name == ".." || name.bytes().any(|b| b == b'/' || b == 0) {
        return Err(Error::Invalid);
    }
    Ok(())
}

/// One step of a path walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Component<'a> {
    /// Go to the parent (`..`), never above the walk's root.
    Parent,
    /// Enter the entry of this (validated) name.
    Name(&'a str),
}

/// A path split into components: empty components and `.` are dropped, as
/// POSIX does for `a//b/./c`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Components<'a> {
    /// The path started with `/`.
    pub absolute: bool,
    /// The path ended with `/` (or `/.`): its last component must be a directory.
    pub trailing_slash: bool,
    /// The steps, in order.
    pub parts: Vec<Component<'a>>,
}

/// Splits and validates `path`. An empty path is `NotFound` (POSIX ENOENT);
/// NUL anywhere is `Invalid`; an over-long path or component is `NameTooLong`.
pub fn components(path: &str) -> Result<Components<'_>> {
    let (absolute, trailing_slash, steps) = split(path)?;
    Ok(Components { absolute, trailing_slash, parts: steps.collect() })
}

/// What [`components`] checks and finds, without collecting the steps:
/// (absolute, trailing slash, the steps as an iterator).
pub(crate) fn split(path: &str) -> Result<(bool, bool, Steps<'_>)> {
    if path.len() > MAX_PATH {
        return Err(Error::NameTooLong);
    }
    if path.is_empty() {
        return Err(Error::NotFound);
    }
    if path.as_bytes().contains(&0) {
        return Err(Error::Invalid);
    }
    // A component that is a name is not empty, `.` or `..` and holds no `/`
    // or NUL, so of `validate_name`'s checks only the length is left, and
    // none is too long in a path no longer than a name.
    if path.len() > MAX_NAME && path.split('/').any(|part| part.len() > MAX_NAME) {
        return Err(Error::NameTooLong);
    }
    let trailing_slash = path.ends_with('/') || path.ends_with("/.") || path == ".";
    Ok((path.starts_with('/'), trailing_slash, Steps { rest: path }))
}

/// A path's components, in order, as [`split`] yields them: empty
/// components and `.` dropped.
#[derive(Debug, Clone)]
pub(crate) struct Steps<'a> {
    rest: &'a str,
}

impl<'a> Iterator for Steps<'a> {
    type Item = Component<'a>;

    fn next(&mut self) -> Option<Component<'a>> {
        loop {
            let bytes = self.rest.as_bytes();
            let start = bytes.iter().position(|&b| b != b'/')?;
            let len = bytes.iter().skip(start).position(|&b| b == b'/').unwrap_or(bytes.len() - start);
            // Both ends are at a `/` or an end of the path: char boundaries.
            let part = self.rest.get(start..start + len)?;
            self.rest = self.rest.get(start + len..)?;
            match part {
                "." => {}
                ".." => return Some(Component::Parent),
                name => return Some(Component::Name(name)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(validate_name("a.txt"), Ok(()));
        assert_eq!(validate_name(&"x".repeat(MAX_NAME)), Ok(()));
        assert_eq!(validate_name(&"x".repeat(MAX_NAME + 1)), Err(Error::NameTooLong));
        for bad in ["", ".", "..", "a/b", "a\0b"] {
            assert_eq!(validate_name(bad), Err(Error::Invalid), "{bad:?}");
        }
        // Multi-byte UTF-8 counts bytes, not chars.
        assert_eq!(validate_name(&"é".repeat(128)), Err(Error::NameTooLong));
    }

    #[test]
    fn paths() {
        let c = components("/a//b/./c/").unwrap();
        assert!(c.absolute && c.trailing_slash);
        assert_eq!(c.parts, [Component::Name("a"), Component::Name("b"), Component::Name("c")]);
        let c = components("../x/..").unwrap();
        assert!(!c.absolute && !c.trailing_slash);
        assert_eq!(c.parts, [Component::Parent, Component::Name("x"), Component::Parent]);
        assert_eq!(components(".").unwrap().parts, []);
        assert_eq!(components(""), Err(Error::NotFound));
        assert_eq!(components("a\0/b"), Err(Error::Invalid));
        assert_eq!(components(&"a/".repeat(MAX_PATH)), Err(Error::NameTooLong));
        assert_eq!(components(&format!("{}/b", "n".repeat(300))), Err(Error::NameTooLong));
        // NUL is reported before a long name, wherever each is.
        assert_eq!(components(&format!("{}/b\0", "n".repeat(300))), Err(Error::Invalid));
        assert_eq!(components(&format!("a/{}", "n".repeat(MAX_NAME))).map(|c| c.parts.len()), Ok(2));
        let c = components("//a/.//..///b.").unwrap();
        assert!(c.absolute && !c.trailing_slash);
        assert_eq!(c.parts, [Component::Name("a"), Component::Parent, Component::Name("b.")]);
        assert_eq!(components("/").unwrap().parts, []);
        assert_eq!(components("./.").unwrap().parts, []);
    }
}
