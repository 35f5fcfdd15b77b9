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
/// and export sections alone (every other section is skipped), and
/// whether the look read all of those.
fn kind_of(file: &mut (impl Read + Seek)) -> Result<Look, LoadError> {
    let mut head = Vec::with_capacity(8);
    file.take(8).read_to_end(&mut head).map_err(LoadError::Io)?;
    let form = Form::of(&head)?;
    file.seek(SeekFrom::Start(0)).map_err(LoadError::Io)?;
    Ok(match form {
        Form::Module => Look { kind: Kind::P1, sure: true },
        Form::Component => match speaks_wasi_p3(file).map_err(LoadError::Io)? {
            Some(true) => Look { kind: Kind::P3, sure: true },
            Some(false) => Look { kind: Kind::P2, sure: true },
            None => Look { kind: Kind::P2, sure: false },
        },
    })
}

/// What the look at a guest's bytes found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Look {
    kind: Kind,
    /// It read every import and export name.
    sure: bool,
}

/// What compiled `code` is: a module is p1; a component is 0.3 when it
/// imports or exports a `wasi:` interface of 0.3.
fn kind_of_code(code: &Code) -> Kind {
    match code {
        Code::Module(_) => Kind::P1,
        Code::Component(c) => {
            let (ty, engine) = (c.component_type(), c.engine());
            let mut names = ty.imports(engine).map(|(n, _)| n).chain(ty.exports(engine).map(|(n, _)| n));
            if names.any(is_wasi_p3) { Kind::P3 } else { Kind::P2 }
        }
    }
}

/// `wasm` compiled (through `cache`, under `digest`) for the engine of
/// `kind`, what its bytes were read as. A component whose code says it is
/// the other version (a names section larger than the look reads, say) is
/// compiled again for that one's engine: the same bytes. A module where a
/// component was read, or the reverse, was a file that changed between the
/// look and the read.
fn compile_as<'e>(
    wasm: &[u8],
    Look { kind, sure }: Look,
    cache: Option<(&GuestCache, &Digest32)>,
    engine: &impl Fn(Kind) -> &'e Engine,
) -> Result<Guest, LoadError> {
    let form = Form::of(wasm)?;
    let once = |kind: Kind| match cache {
        None => Ok((compile(engine(kind), form, wasm)?, CacheStatus::Off)),
        Some((cache, digest)) => guest_cache::get_or_store(cache, engine(kind), form, wasm, digest),
    };
    // A component the look took for 0.2 without reading every name, that
    // the engine without concurrency cannot compile (a 0.3 interface's
    // async functions, past what the look reads), may be one for the other
    // engine; one whose names it read is refused as it is.
    let mut built_for = kind;
    let mut compiled = once(kind);
    if kind == Kind::P2
        && !sure
        && matches!(compiled, Err(LoadError::Compile(_)))
        && let Ok(on_p3) = once(Kind::P3)
    {
        (built_for, compiled) = (Kind::P3, Ok(on_p3));
    }
    let (code, status) = compiled?;
    match kind_of_code(&code) {
        actual if actual == built_for => Ok(Guest::new(code, actual, status)),
        actual @ (Kind::P2 | Kind::P3) if kind != Kind::P1 => {
            let (code, status) = once(actual)?;
            Ok(Guest::new(code, actual, status))
        }
        _ => Err(LoadError::Changed),
    }
}

/// A hit hashes `wasm` (SHA-256, for its key) and maps the artifact.
fn from_bytes<'e>(
    wasm: &[u8],
    cache: Option<&GuestCache>,
    engine: impl Fn(Kind) -> &'e Engine,
) -> Result<Guest, LoadError> {
    let look = kind_of(&mut Cursor::new(wasm))?;
    let digest: Option<Digest32> = cache.map(|_| Sha256::digest(wasm).into());
    compile_as(wasm, look, cache.zip(digest.as_ref()), &engine)
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
    let look = kind_of(&mut BufReader::new(&file))?;
    let kind = look.kind;
    (&file).seek(SeekFrom::Start(0)).map_err(LoadError::Io)?;
    let Some(cache) = cache else {
        return compile_as(&read(&file)?, look, None, &engine);
    };
    let id = FileId::of(&st);
    if let Some(digest) = guest_cache::digest_of(cache, &id)
        && let Some(code) = guest_cache::hit(cache, engine(kind), &guest_cache::key(engine(kind), &digest))
        && kind_of_code(&code) == kind
    {
        return Ok(Guest::new(code, kind, CacheStatus::Hit));
    }
    let wasm = read(&file)?;
    let digest: Digest32 = Sha256::digest(&wasm).into();
    let guest = compile_as(&wasm, look, Some((cache, &digest)), &engine)?;
    // What was read is what the identity names only if it did not change
    // meanwhile.
    if rustix::fs::fstat(&file).is_ok_and(|st| FileId::of(&st) == id) {
        guest_cache::record(cache, &id, &digest);
    }
    Ok(guest)
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

    fn component(wat: &str) -> Vec<u8> {
        wat::parse_str(wat).unwrap()
    }

    /// A component whose 0.3 name the look at its bytes missed (its import
    /// section past the most the look reads) is compiled again for the
    /// 0.3 engine, not refused as changed (found by review); and the kind
    /// of compiled code is what its names say.
    #[test]
    fn the_code_s_kind_decides_when_the_look_missed_it() {
        let engine_of = |concurrent: bool| {
            let mut config = wasmtime::Config::new();
            config.concurrency_support(concurrent).wasm_component_model_async(concurrent);
            Engine::new(&config).unwrap()
        };
        let (main, concurrent) = (engine_of(false), engine_of(true));
        let engine = |kind: Kind| if kind == Kind::P3 { &concurrent } else { &main };
        let p3 = component(r#"(component (import "wasi:cli/environment@0.3.0" (instance)))"#);
        // Read as 0.2: compiled again for the 0.3 engine.
        let unsure = |kind| Look { kind, sure: false };
        let guest = compile_as(&p3, unsure(Kind::P2), None, &engine).unwrap();
        assert_eq!(guest.kind(), Kind::P3);
        assert!(Engine::same(guest.component().unwrap().engine(), &concurrent));
        let p2 = component("(component)");
        assert_eq!(compile_as(&p2, unsure(Kind::P3), None, &engine).unwrap().kind(), Kind::P2);
        // A module where a component was read: the file changed.
        let module = wat::parse_str("(module)").unwrap();
        assert!(matches!(compile_as(&module, unsure(Kind::P2), None, &engine), Err(LoadError::Changed)));
        assert!(matches!(compile_as(&p2, unsure(Kind::P1), None, &engine), Err(LoadError::Changed)));
        // Past the look's 16 MiB import section, from bytes and as a file.
        // One import section: the imports name a type defined before them.
        let mut big = String::from("(component (type $i (instance))");
        // (At most 1,000 instances a component: fewer, longer names.)
        for i in 0..800 {
            big += &format!(r#" (import "x{i}-{}" (instance (type $i)))"#, "n".repeat(22 << 10));
        }
        // WASI 0.3's functions are async: only the 0.3 engine compiles it.
        big += r#" (import "wasi:cli/environment@0.3.0" (instance (export "f" (func async)))))"#;
        let big = component(&big);
        assert!(big.len() > 16 << 20);
        let look = kind_of(&mut Cursor::new(&big[..])).unwrap();
        assert_eq!(look, Look { kind: Kind::P2, sure: false }, "the look stops at the limit");
        assert_eq!(from_bytes(&big, None, engine).unwrap().kind(), Kind::P3);
    }

    /// A component whose names the look read whole, all of 0.2, that the
    /// engine without concurrency refuses (an async function type) is
    /// refused at once: never compiled whole for the 0.3 engine first,
    /// which cost a hostile upload a full compile and a cached artifact
    /// (found by review).
    #[test]
    fn a_component_the_look_read_whole_is_not_tried_on_the_other_engine() {
        let mut config = wasmtime::Config::new();
        config.concurrency_support(false);
        let main = Engine::new(&config).unwrap();
        config.concurrency_support(true).wasm_component_model_async(true);
        let concurrent = Engine::new(&config).unwrap();
        let asked = std::cell::RefCell::new(Vec::new());
        let engine = |kind: Kind| {
            asked.borrow_mut().push(kind);
            if kind == Kind::P3 { &concurrent } else { &main }
        };
        let c = component(r#"(component (import "x" (instance (export "f" (func async)))))"#);
        assert!(matches!(from_bytes(&c, None, engine), Err(LoadError::Compile(_))));
        assert_eq!(*asked.borrow(), [Kind::P2]);
    }
}
