//! Where a remote pack is: `s3://BUCKET/KEY`, or an `http://` / `https://`
//! URL. Anything else is a local path.

use std::fmt;

/// A pack in an object store or on a web server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// An object in an S3-compatible store.
    S3 {
        /// The bucket.
        bucket: String,
        /// The object's key.
        key: String,
    },
    /// A URL served over HTTP(S), read with Range requests.
    Http {
        /// The whole URL.
        url: String,
    },
}

/// Why a URL names no pack.
#[derive(Debug, thiserror::Error)]
#[error("{url}: {why}")]
pub struct BadLocation {
    url: String,
    why: &'static str,
}

impl Location {
    /// The location `s` names; `None` when it is no URL (a local path),
    /// an error when it is one PackFS cannot read.
    pub fn parse(s: &str) -> Option<Result<Location, BadLocation>> {
        let bad = |why| Some(Err(BadLocation { url: s.to_owned(), why }));
        let (scheme, rest) = s.split_once("://")?;
        match scheme {
            "s3" => {
                let Some((bucket, key)) = rest.split_once('/') else { return bad("no key after the bucket") };
                if bucket.is_empty() || key.is_empty() || key.ends_with('/') {
                    return bad("expected s3://BUCKET/KEY");
                }
                if s.chars().any(char::is_control) {
                    return bad("control characters in the URL");
                }
                Some(Ok(Location::S3 { bucket: bucket.to_owned(), key: key.to_owned() }))
            }
            "http" | "https" => {
                let host = rest.split(['/', '?', '#']).next().unwrap_or("");
                if host.is_empty() {
                    return bad("no host");
                }
                let path = &rest[host.len()..];
                if path.contains(['?', '#']) {
                    return bad("query strings and fragments are not supported");
                }
                if path.is_empty() || path.ends_with('/') {
                    return bad("expected a file's URL, not a directory's");
                }
                if s.chars().any(|c| c.is_control() || c == ' ') {
                    return bad("spaces or control characters in the URL");
                }
                Some(Ok(Location::Http { url: s.to_owned() }))
            }
            _ if scheme.chars().all(|c| c.is_ascii_alphanumeric()) && !scheme.is_empty() => {
                bad("unsupported scheme (s3, http and https are)")
            }
            _ => None,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::S3 { bucket, key } => write!(f, "s3://{bucket}/{key}"),
            Location::Http { url } => f.write_str(url),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_paths_are_told_apart() {
        let s3 = Location::parse("s3://b/dir/k.pack").unwrap().unwrap();
        assert_eq!(s3, Location::S3 { bucket: "b".into(), key: "dir/k.pack".into() });
        assert_eq!(s3.to_string(), "s3://b/dir/k.pack");
        assert!(matches!(Location::parse("https://h:8080/d/a%20b.pack"), Some(Ok(Location::Http { .. }))));
        for path in ["a.pack", "/tmp/x.pack", "./s3:/x", "C:x"] {
            assert!(Location::parse(path).is_none(), "{path}");
        }
        for bad in [
            "s3://b",
            "s3:///k",
            "s3://b/",
            "http://",
            "http://h/",
            "http://h",
            "ftp://h/x",
            "http://h/a b",
            "http://h/a.pack?sig=1",
        ] {
            assert!(matches!(Location::parse(bad), Some(Err(_))), "{bad}");
        }
    }
}

#[cfg(test)]
mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any string is a path, a location or an error, never a panic; a
        /// location's text names it again.
        #[test]
        fn any_string_parses(s in "(s3|https?|ftp|)(://)?[ -~\u{80}-\u{10ffff}]{0,40}") {
            if let Some(Ok(l)) = Location::parse(&s) {
                prop_assert_eq!(Location::parse(&l.to_string()).unwrap().unwrap(), l);
            }
        }
    }
}
