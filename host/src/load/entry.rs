//! A load: a guest from bytes or from a file, its kind found first so that
//! it compiles for the engine that kind runs on, through the cache when
//! there is one.

use std::fs::File;
use std::io::{BufReader, Cursor, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use rustix::fs::FileType;
use sha2::{Digest, Sha256};
use wasmtime::Engine;

use crate::load::guest::{CacheStatus, Code, Form, Guest, Kind, LoadError, compile};
use crate::load::guest_cache::{self, Digest32, GuestCache};
use crate::load::identity::FileId;
use crate::load::version::{is_wasi_p3, speaks_wasi_p3};

/// Where a guest's bytes are: in memory, or in a file, which a warm load
/// through the cache only opens and `fstat`s.
#[derive(Debug, Clone, Copy)]
pub enum Source<'a> {
    /// A module or component's bytes.
    Bytes(&'a [u8]),
    /// The file holding them.
    File(&'a Path),
}

impl<'a> From<&'a [u8]> for Source<'a> {
    fn from(wasm: &'a [u8]) -> Self {
        Source::Bytes(wasm)
    }
}

impl<'a, const N: usize> From<&'a [u8; N]> for Source<'a> {
    fn from(wasm: &'a [u8; N]) -> Self {
        Source::Bytes(wasm)
    }
}

impl<'a> From<&'a Vec<u8>> for Source<'a> {
    fn from(wasm: &'a Vec<u8>) -> Self {
        Source::Bytes(wasm)
    }
}

impl<'a> From<&'a Path> for Source<'a> {
    fn from(path: &'a Path) -> Self {
        Source::File(path)
    }
}

impl<'a> From<&'a PathBuf> for Source<'a> {
    fn from(path: &'a PathBuf) -> Self {
        Source::File(path)
    }
}

/// Loads `source` for the engine `engine` gives its kind.
pub(crate) fn load<'e>(
    source: Source<'_>,
    cache: Option<&GuestCache>,
    engine: impl Fn(Kind) -> &'e Engine,
) -> Result<Guest, LoadError> {
    match source {
        Source::Bytes(wasm) => from_bytes(wasm, cache, engine),
        Source::File(path) => from_file(path, cache, engine),
    }
}

/// What the guest in `file` is, from its header and its top-level import
/// and export sections alone (every other section is skipped).
fn kind_of(file: &mut (impl Read + Seek)) -> Result<Kind, LoadError> {
    let mut head = Vec::with_capacity(8);
    file.take(8).read_to_end(&mut head).map_err(LoadError::Io)?;
    let form = Form::of(&head)?;
    file.seek(SeekFrom::Start(0)).map_err(LoadError::Io)?;
    Ok(match form {
        Form::Module => Kind::P1,
        Form::Component if speaks_wasi_p3(file).map_err(LoadError::Io)? => Kind::P3,
        Form::Component => Kind::P2,
    })
}

/// The guest `code` is, compiled for `kind`'s engine, if it is that kind:
/// a file changed between the look at its header and imports and its
/// compile may have become another.
fn guest(code: Code, kind: Kind, status: CacheStatus) -> Result<Guest, LoadError> {
    let same = match (&code, kind) {
        (Code::Module(_), Kind::P1) => true,
        (Code::Component(c), Kind::P2 | Kind::P3) => speaks_p3(c) == (kind == Kind::P3),
        _ => false,
    };
    if !same {
        return Err(LoadError::Changed);
    }
    Ok(Guest::new(code, kind, status))
}

/// Whether the compiled `component` imports or exports a `wasi:`
/// interface of 0.3, as its bytes said before it was compiled.
fn speaks_p3(component: &wasmtime::component::Component) -> bool {
    let (ty, engine) = (component.component_type(), component.engine());
    let mut names = ty.imports(engine).map(|(n, _)| n).chain(ty.exports(engine).map(|(n, _)| n));
    names.any(is_wasi_p3)
}

/// A hit hashes `wasm` (SHA-256, for its key) and maps the artifact.
fn from_bytes<'e>(
    wasm: &[u8],
    cache: Option<&GuestCache>,
    engine: impl Fn(Kind) -> &'e Engine,
) -> Result<Guest, LoadError> {
    let kind = kind_of(&mut Cursor::new(wasm))?;
    let engine = engine(kind);
    let form = Form::of(wasm)?;
    let (code, status) = match cache {
        None => (compile(engine, form, wasm)?, CacheStatus::Off),
        Some(cache) => guest_cache::get_or_store(cache, engine, form, wasm, &Sha256::digest(wasm).into())?,
    };
    guest(code, kind, status)
}

/// When the cache has seen this file as it is now (same device, inode,
/// size, mtime and ctime) and holds its compiled code, the file is only
/// opened, `fstat`ed and its import and export sections read; otherwise
/// it is read and hashed as [`from_bytes`] does, and its identity recorded
/// for the next time, unless it changed within the cache's racy window.
/// Only a regular file has an identity that stands for its content: a
/// pipe or a device is read once, whole.
fn from_file<'e>(
    path: &Path,
    cache: Option<&GuestCache>,
    engine: impl Fn(Kind) -> &'e Engine,
) -> Result<Guest, LoadError> {
    let file = File::open(path).map_err(LoadError::Io)?;
    let st = rustix::fs::fstat(&file).map_err(|e| LoadError::Io(e.into()))?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return from_bytes(&read(&file)?, cache, engine);
    }
    let kind = kind_of(&mut BufReader::new(&file))?;
    let engine = engine(kind);
    (&file).seek(SeekFrom::Start(0)).map_err(LoadError::Io)?;
    let Some(cache) = cache else {
        let wasm = read(&file)?;
        return guest(compile(engine, Form::of(&wasm)?, &wasm)?, kind, CacheStatus::Off);
    };
    let id = FileId::of(&st);
    if let Some(digest) = guest_cache::digest_of(cache, &id)
        && let Some(code) = guest_cache::hit(cache, engine, &guest_cache::key(engine, &digest))
    {
        return guest(code, kind, CacheStatus::Hit);
    }
    let wasm = read(&file)?;
    let digest: Digest32 = Sha256::digest(&wasm).into();
    let (code, status) = guest_cache::get_or_store(cache, engine, Form::of(&wasm)?, &wasm, &digest)?;
    // What was read is what the identity names only if it did not change
    // meanwhile.
    if rustix::fs::fstat(&file).is_ok_and(|st| FileId::of(&st) == id) {
        guest_cache::record(cache, &id, &digest);
    }
    guest(code, kind, status)
}

/// The rest of the file.
fn read(mut file: &File) -> Result<Vec<u8>, LoadError> {
    let mut wasm = Vec::new();
    file.read_to_end(&mut wasm).map_err(LoadError::Io)?;
    Ok(wasm)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file that changed between the look at its kind and its compile is
    /// refused, not given a kind its code is not (found by review).
    #[test]
    fn code_of_another_kind_than_was_read_is_refused() {
        let engine = Engine::default();
        let module = Code::Module(wasmtime::Module::new(&engine, wat::parse_str("(module)").unwrap()).unwrap());
        let p2 = wasmtime::component::Component::new(&engine, wat::parse_str("(component)").unwrap()).unwrap();
        let p3 = wat::parse_str(r#"(component (import "wasi:cli/environment@0.3.0" (instance)))"#).unwrap();
        let p3 = wasmtime::component::Component::new(&engine, p3).unwrap();
        let refused = |code, kind| matches!(guest(code, kind, CacheStatus::Off), Err(LoadError::Changed));
        assert!(refused(module.clone(), Kind::P2) && refused(module.clone(), Kind::P3));
        assert!(refused(Code::Component(p2.clone()), Kind::P1) && refused(Code::Component(p2.clone()), Kind::P3));
        assert!(refused(Code::Component(p3.clone()), Kind::P2));
        assert!(!refused(module, Kind::P1) && !refused(Code::Component(p2), Kind::P2));
        assert!(!refused(Code::Component(p3), Kind::P3));
    }
}
