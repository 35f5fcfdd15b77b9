//! The host's filesystem, as the image names places in it: a host path is
//! under one of the preopens the host gives the component, by the
//! preopen's name (`/out/after.pack` under `/out`). Only what the image
//! names is ever reached: a saved pack, a host's pack, a host directory
//! passed through.

use packfs_core::Error;

use crate::bindings::wasi::filesystem::{preopens, types as host};

/// The host's preopen holding `path` (the longest that does) and the rest
/// of `path` below it (empty for the preopen itself). A relative path is
/// also under a preopen named `.` (`wasmtime run --dir .`).
pub(crate) fn place(path: &str) -> Option<(host::Descriptor, String)> {
    let mut best: Option<(host::Descriptor, String, usize)> = None;
    for (dir, name) in preopens::get_directories() {
        let name = name.trim_end_matches('/');
        let relative = name == "." && !path.starts_with('/') && !path.starts_with("./");
        let path = if relative { format!("./{path}") } else { path.to_string() };
        let rest = match path.strip_prefix(name) {
            Some("") | Some("/") => "",
            Some(r) => match r.strip_prefix('/') {
                Some(r) => r,
                None => continue,
            },
            None => continue,
        };
        if best.as_ref().is_none_or(|b| name.len() > b.2) {
            best = Some((dir, rest.trim_end_matches('/').to_string(), name.len()));
        }
    }
    best.map(|(d, rest, _)| (d, rest))
}

/// The host's error as PackFS's, where it has one; else `EIO` saying it.
pub(crate) fn error(what: &str, e: host::ErrorCode) -> Error {
    use host::ErrorCode as E;
    match e {
        E::NoEntry => Error::NotFound,
        E::Access => Error::Access,
        E::NotPermitted => Error::NotPermitted,
        E::IsDirectory => Error::IsDir,
        E::NotDirectory => Error::NotDir,
        E::Loop => Error::Loop,
        E::NameTooLong => Error::NameTooLong,
        e => Error::Os(packfs_core::OsError::new(what.to_string(), std::io::Error::other(format!("{e:?}")))),
    }
}
