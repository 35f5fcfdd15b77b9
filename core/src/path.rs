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
    if path.len() > MAX_PATH {
        return Err(Error::NameTooLong);
    }
    if path.is_empty() {
        return Err(Error::NotFound);
    }
    if path.as_bytes().contains(&0) {
        return Err(Error::Invalid);
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => parts.push(Component::Parent),
            name => {
                validate_name(name)?;
                parts.push(Component::Name(name));
            }
        }
    }
    let trailing_slash = path.ends_with('/') || path.ends_with("/.") || path == ".";
    Ok(Components { absolute: path.starts_with('/'), trailing_slash, parts })
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
    }
}
