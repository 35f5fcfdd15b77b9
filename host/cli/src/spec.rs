//! What `packfs run`'s arguments say: a `--mount`'s guest path and
//! SOURCE (with its limits), sizes, times and `--env` pairs, parsed and
//! shown back as given.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use packfs_core::mem::Quota;
use packfs_core::path::validate_name;

/// Where a mount's filesystem comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// `mem`: an empty in-memory tree.
    Mem(Quota),
    /// `PACK`: a pack file, mapped, read-only.
    Pack(PathBuf),
    /// `PACK+mem`: an in-memory overlay over a pack.
    PackOverlay(PathBuf, Quota),
    /// `dir:PATH`, `dir-ro:PATH`: a host directory.
    Dir {
        /// The directory.
        path: PathBuf,
        /// Every change refused (`dir-ro:`).
        read_only: bool,
    },
    /// `journal:DIR`: a durable in-memory tree ([`Journal`](packfs_os::journal::Journal)).
    Journal(PathBuf, Quota),
    /// `host:PACK`, `host:PACK+mem[:LIMITS]` (`packfs virt` only): a pack
    /// the component reads through its host's filesystem, with an overlay
    /// if `Some`.
    Host(PathBuf, Option<Quota>),
}

impl FromStr for Source {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let path = |kind: &str, p: &str| {
            if p.is_empty() { Err(format!("`{kind}` needs a path")) } else { Ok(PathBuf::from(p)) }
        };
        Ok(if s == "mem" {
            Source::Mem(Quota::default())
        } else if let Some(opts) = s.strip_prefix("mem:") {
            Source::Mem(parse_limits(opts)?)
        } else if let Some(p) = s.strip_prefix("dir:") {
            Source::Dir { path: path("dir:", p)?, read_only: false }
        } else if let Some(p) = s.strip_prefix("dir-ro:") {
            Source::Dir { path: path("dir-ro:", p)?, read_only: true }
        } else if let Some(p) = s.strip_prefix("host:") {
            match p.parse()? {
                Source::Pack(p) => Source::Host(p, None),
                Source::PackOverlay(p, q) => Source::Host(p, Some(q)),
                _ => return Err(format!("`host:` takes a pack (host:PACK or host:PACK+mem), not `{p}`")),
            }
        } else if let Some(p) = s.strip_prefix("journal:") {
            // `journal:DIR:LIMITS`, where the last `:` starts the limits.
            match p.rsplit_once(':').filter(|(_, opts)| opts.starts_with("max-")) {
                Some((dir, opts)) => Source::Journal(path("journal:", dir)?, parse_limits(opts)?),
                None => Source::Journal(path("journal:", p)?, Quota::default()),
            }
        } else if let Some(p) = s.strip_suffix("+mem") {
            Source::PackOverlay(path("PACK+mem", p)?, Quota::default())
        } else if let Some((p, opts)) = s.rsplit_once("+mem:") {
            Source::PackOverlay(path("PACK+mem", p)?, parse_limits(opts)?)
        } else if s.is_empty() {
            return Err("empty SOURCE (a pack, PACK+mem, mem, dir:PATH, dir-ro:PATH or journal:DIR)".into());
        } else {
            Source::Pack(PathBuf::from(s))
        })
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Mem(l) => write!(f, "mem{}", LimitsShown(l)),
            Source::Pack(p) => write!(f, "{}", p.display()),
            Source::PackOverlay(p, l) => write!(f, "{}+mem{}", p.display(), LimitsShown(l)),
            Source::Dir { path, read_only: false } => write!(f, "dir:{}", path.display()),
            Source::Dir { path, read_only: true } => write!(f, "dir-ro:{}", path.display()),
            Source::Journal(p, l) => write!(f, "journal:{}{}", p.display(), LimitsShown(l)),
            Source::Host(p, None) => write!(f, "host:{}", p.display()),
            Source::Host(p, Some(l)) => write!(f, "host:{}+mem{}", p.display(), LimitsShown(l)),
        }
    }
}

/// A mount's limits as given: `:max-bytes=N,max-inodes=N`, or nothing.
pub(crate) struct LimitsShown<'a>(pub(crate) &'a Quota);

impl fmt::Display for LimitsShown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sep = ':';
        for (key, v) in [("max-bytes", self.0.max_bytes), ("max-inodes", self.0.max_inodes)] {
            if let Some(v) = v {
                write!(f, "{sep}{key}={v}")?;
                sep = ',';
            }
        }
        Ok(())
    }
}

/// `max-bytes=N,max-inodes=N`, either or both.
fn parse_limits(s: &str) -> Result<Quota, String> {
    let mut limits = Quota::default();
    for opt in s.split(',') {
        let (key, v) = opt.split_once('=').ok_or_else(|| format!("`{opt}`: expected max-bytes=N or max-inodes=N"))?;
        let slot = match key {
            "max-bytes" => &mut limits.max_bytes,
            "max-inodes" => &mut limits.max_inodes,
            _ => return Err(format!("unknown mount limit `{key}` (max-bytes, max-inodes)")),
        };
        if slot.is_some() {
            return Err(format!("`{key}` given twice"));
        }
        let base = if key == "max-bytes" { 1024 } else { 1000 };
        *slot = Some(parse_count(v, base).map_err(|e| format!("{key}: {e}"))?);
    }
    Ok(limits)
}

/// A count with an optional k, M or G suffix, in powers of `base`.
fn parse_count(s: &str, base: u64) -> Result<u64, String> {
    let (digits, scale) = match s.char_indices().last() {
        Some((i, 'k' | 'K')) => (&s[..i], base),
        Some((i, 'M')) => (&s[..i], base * base),
        Some((i, 'G')) => (&s[..i], base * base * base),
        _ => (s, 1),
    };
    let n: u64 = digits.parse().map_err(|_| format!("`{s}` is not a number (suffixes k, M, G)"))?;
    n.checked_mul(scale).ok_or_else(|| format!("`{s}` is too large"))
}

pub(crate) fn parse_bytes(s: &str) -> Result<u64, String> {
    parse_count(s, 1024)
}

pub(crate) fn parse_seconds(s: &str) -> Result<std::time::Duration, String> {
    let secs: f64 = s.parse().map_err(|_| format!("`{s}` is not a number of seconds"))?;
    std::time::Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("`{s}`: the timeout must be a positive number of seconds"))
}

/// One `--mount GUEST_PATH=SOURCE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MountSpec {
    /// Normalized: `/`, or `/a/b` (no empty, `.` or `..` component, no
    /// trailing `/`).
    pub(crate) guest_path: String,
    pub(crate) source: Source,
}

impl MountSpec {
    /// Components below the root: 0 for `/`.
    pub(crate) fn depth(&self) -> usize {
        self.guest_path.split('/').filter(|c| !c.is_empty()).count()
    }
}

impl FromStr for MountSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (guest, source) = s.split_once('=').ok_or("expected GUEST_PATH=SOURCE")?;
        Ok(MountSpec { guest_path: guest_path(guest)?, source: source.parse()? })
    }
}

/// An absolute guest path, normalized: `//a/b/` is `/a/b`.
fn guest_path(s: &str) -> Result<String, String> {
    if !s.starts_with('/') {
        return Err(format!("guest path `{s}` is not absolute"));
    }
    let mut out = String::new();
    for c in s.split('/').filter(|c| !c.is_empty()) {
        if c == "." || c == ".." {
            return Err(format!("guest path `{s}` has a `{c}` component"));
        }
        validate_name(c).map_err(|e| format!("guest path `{s}`: {e}"))?;
        out.push('/');
        out.push_str(c);
    }
    Ok(if out.is_empty() { "/".into() } else { out })
}

pub(crate) fn parse_env(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some(("", _)) => Err("empty variable name".into()),
        Some((k, v)) => Ok((k.into(), v.into())),
        None => Err("expected K=V".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(s: &str) -> Result<Source, String> {
        s.parse()
    }

    #[test]
    fn sources() {
        assert_eq!(src("mem"), Ok(Source::Mem(Quota::default())));
        let both = Quota { max_bytes: Some(64 << 20), max_inodes: Some(10_000) };
        assert_eq!(src("mem:max-bytes=64M,max-inodes=10k"), Ok(Source::Mem(both)));
        assert_eq!(
            src("a.pack+mem:max-inodes=5"),
            Ok(Source::PackOverlay("a.pack".into(), Quota { max_inodes: Some(5), ..Quota::default() }))
        );
        assert_eq!(src("app.pack"), Ok(Source::Pack("app.pack".into())));
        assert_eq!(src("./mem"), Ok(Source::Pack("./mem".into())));
        assert_eq!(src("/x/app.pack+mem"), Ok(Source::PackOverlay("/x/app.pack".into(), Quota::default())));
        assert_eq!(src("dir:/srv/data"), Ok(Source::Dir { path: "/srv/data".into(), read_only: false }));
        assert_eq!(src("dir-ro:rel/d"), Ok(Source::Dir { path: "rel/d".into(), read_only: true }));
        assert_eq!(src("journal:state"), Ok(Source::Journal("state".into(), Quota::default())));
        let both = Quota { max_bytes: Some(64 << 20), max_inodes: Some(10_000) };
        assert_eq!(src("journal:state:max-bytes=64M,max-inodes=10k"), Ok(Source::Journal("state".into(), both)));
        assert_eq!(src("journal:a:b"), Ok(Source::Journal("a:b".into(), Quota::default())));
        // Only the prefix is a keyword.
        assert_eq!(src("dir:a=b:c"), Ok(Source::Dir { path: "a=b:c".into(), read_only: false }));
        assert_eq!(src("journal:x+mem"), Ok(Source::Journal("x+mem".into(), Quota::default())));
        assert_eq!(src("host:/p/a.pack"), Ok(Source::Host("/p/a.pack".into(), None)));
        let five = Quota { max_inodes: Some(5), ..Quota::default() };
        assert_eq!(src("host:/p/a.pack+mem:max-inodes=5"), Ok(Source::Host("/p/a.pack".into(), Some(five))));
        for bad in [
            "",
            "dir:",
            "dir-ro:",
            "journal:",
            "+mem",
            "mem:",
            "mem:max-bytes",
            "mem:max-bytes=1x",
            "mem:size=1",
            "mem:max-bytes=1,max-bytes=2",
            "mem:max-bytes=99999999999G",
            "p+mem:max-inodes=-1",
            "host:",
            "host:mem",
            "host:dir:/x",
            "host:host:/x",
        ] {
            assert!(src(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn sources_display_as_parsed() {
        for s in [
            "mem",
            "a.pack",
            "a.pack+mem",
            "dir:d",
            "dir-ro:d",
            "journal:j",
            "mem:max-bytes=7",
            "a+mem:max-bytes=1,max-inodes=2",
            "host:/p/a.pack",
            "host:a+mem",
            "host:a+mem:max-bytes=1",
        ] {
            assert_eq!(src(s).unwrap().to_string(), s);
        }
    }

    #[test]
    fn mount_specs() {
        let spec = |s: &str| s.parse::<MountSpec>();
        assert_eq!(
            spec("/=app.pack+mem"),
            Ok(MountSpec { guest_path: "/".into(), source: Source::PackOverlay("app.pack".into(), Quota::default()) })
        );
        assert_eq!(spec("//tmp/=mem").unwrap().guest_path, "/tmp");
        assert_eq!(spec("/a//b/=mem").unwrap().guest_path, "/a/b");
        assert_eq!(spec("/a/./b=mem").map(|s| s.guest_path), Err("guest path `/a/./b` has a `.` component".into()));
        assert_eq!(spec("/d=dir:x=y").unwrap().source, Source::Dir { path: "x=y".into(), read_only: false });
        assert_eq!(spec("/a/b/c=mem").unwrap().depth(), 3);
        assert_eq!(spec("/=mem").unwrap().depth(), 0);
        for bad in ["mem", "tmp=mem", "/tmp", "/tmp=", "/../x=mem", "=mem", "/a\0b=mem"] {
            assert!(spec(bad).is_err(), "{bad:?}");
        }
        let long = format!("/{}=mem", "n".repeat(300));
        assert!(spec(&long).is_err());
    }

    #[test]
    fn env_pairs() {
        assert_eq!(parse_env("K=V"), Ok(("K".into(), "V".into())));
        assert_eq!(parse_env("K="), Ok(("K".into(), "".into())));
        assert_eq!(parse_env("K=a=b"), Ok(("K".into(), "a=b".into())));
        assert!(parse_env("K").is_err());
        assert!(parse_env("=V").is_err());
    }
}
