//! Which WASI a component speaks, from its bytes, before an engine is
//! chosen: a WASI 0.3 component needs an engine with the component model's
//! concurrency, which p1 modules and 0.2 components run slower on.

use std::io::{self, Read, Seek, SeekFrom};

use wasmparser::{BinaryReader, ComponentExportSectionReader, ComponentImportSectionReader, Parser};

/// Most bytes of one import or export section read: their names are
/// small, and a larger one is not a component any toolchain makes.
const MAX_NAMES_SECTION: u64 = 16 << 20;

/// Sections up to this size are read past rather than seeked over.
const SMALL: u64 = 64 << 10;

/// Section ids of a component's imports and exports.
const IMPORTS: u8 = 10;
const EXPORTS: u8 = 11;

/// Whether `name` is an interface of a `wasi:` package at version 0.3
/// (`wasi:filesystem/types@0.3.0`).
pub(super) fn is_wasi_p3(name: &str) -> bool {
    name.strip_prefix("wasi:")
        .and_then(|rest| rest.split_once('@'))
        .is_some_and(|(_, version)| version.starts_with("0.3."))
}

/// Whether the component in `file` imports or exports an interface of
/// WASI 0.3 ([`is_wasi_p3`]): `Some` once the look knows, `None` when a
/// names section was past what it reads, or did not parse. Only its own
/// top-level import and export sections are read; every other section is
/// skipped, so a warm start, which does not read the module, reads only
/// those. A core module, or bytes that are no component, are not 0.3 (the
/// load says what they are).
pub(crate) fn speaks_wasi_p3(file: &mut (impl Read + Seek)) -> io::Result<Option<bool>> {
    let mut head = [0u8; 8];
    if file.read_exact(&mut head).is_err() || !Parser::is_component(&head) {
        return Ok(Some(false));
    }
    let mut read_all = true;
    loop {
        let mut id = [0u8; 1];
        if file.read(&mut id)? == 0 {
            return Ok(read_all.then_some(false));
        }
        let Some(len) = leb_u32(file)? else { return Ok(read_all.then_some(false)) };
        let len = u64::from(len);
        if id[0] != IMPORTS && id[0] != EXPORTS {
            // Small sections (types, aliases) are read past, so a buffered
            // reader keeps its buffer; modules are seeked over.
            if len <= SMALL {
                io::copy(&mut file.by_ref().take(len), &mut io::sink())?;
            } else {
                file.seek(SeekFrom::Current(len as i64))?;
            }
            continue;
        }
        if len > MAX_NAMES_SECTION {
            return Ok(None);
        }
        let mut bytes = Vec::new();
        file.by_ref().take(len).read_to_end(&mut bytes)?;
        match names(id[0], &bytes) {
            Some(names) if names.iter().any(|n| is_wasi_p3(n)) => return Ok(Some(true)),
            Some(_) => {}
            None => read_all = false,
        }
    }
}

/// The names an import or export section gives, if it parses.
fn names(id: u8, bytes: &[u8]) -> Option<Vec<String>> {
    let reader = BinaryReader::new(bytes, 0);
    if id == IMPORTS {
        let section = ComponentImportSectionReader::new(reader).ok()?;
        section.into_iter().map(|i| i.ok().map(|i| i.name.name.to_owned())).collect()
    } else {
        let section = ComponentExportSectionReader::new(reader).ok()?;
        section.into_iter().map(|e| e.ok().map(|e| e.name.name.to_owned())).collect()
    }
}

/// A section's length: an unsigned LEB128 of at most five bytes, or
/// `None` at the end of the file or past 32 bits.
fn leb_u32(file: &mut impl Read) -> io::Result<Option<u32>> {
    let mut value = 0u64;
    for shift in (0..35).step_by(7) {
        let mut byte = [0u8; 1];
        if file.read(&mut byte)? == 0 {
            return Ok(None);
        }
        value |= u64::from(byte[0] & 0x7f) << shift;
        if byte[0] & 0x80 == 0 {
            return Ok(u32::try_from(value).ok());
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_0_3_interfaces() {
        assert!(is_wasi_p3("wasi:filesystem/types@0.3.0"));
        assert!(is_wasi_p3("wasi:cli/run@0.3.1"));
        assert!(!is_wasi_p3("wasi:filesystem/types@0.2.6"));
        assert!(!is_wasi_p3("wasi:cli/run@0.30.0"));
        assert!(!is_wasi_p3("example:wasi/x@0.3.0"));
        assert!(!is_wasi_p3("wasi:cli/run"));
    }

    #[test]
    fn not_a_component_is_not_0_3() {
        for bytes in [&b""[..], b"\0asm\x01\0\0\0", b"\0asm\x0d\0\x01\0\x0a\xff\xff\xff\xff\xff", b"garbage!"] {
            assert_ne!(speaks_wasi_p3(&mut io::Cursor::new(bytes)).unwrap(), Some(true));
        }
    }

    /// Sections that declare any length, huge ones included, over bodies
    /// of a few bytes: the look ends, reading no more than is there, and
    /// never past a section's 16 MiB (what a malformed component can make
    /// the host hold is what it is, not what it says).
    #[test]
    fn sections_declaring_huge_lengths_cost_what_is_there() {
        use proptest::prelude::*;
        let length = prop_oneof![
            Just(u32::MAX),
            Just(MAX_NAMES_SECTION as u32),
            Just(MAX_NAMES_SECTION as u32 + 1),
            Just(SMALL as u32 + 1),
            0u32..64,
            any::<u32>(),
        ];
        let section =
            (prop_oneof![Just(IMPORTS), Just(EXPORTS), 0u8..16], length, prop::collection::vec(any::<u8>(), 0..64));
        proptest!(|(sections in prop::collection::vec(section, 0..8), tail in prop::collection::vec(any::<u8>(), 0..16))| {
            let mut bytes = b"\0asm\x0d\0\x01\0".to_vec();
            for (id, len, body) in &sections {
                bytes.push(*id);
                let mut n = *len;
                loop {
                    let b = (n & 0x7f) as u8;
                    n >>= 7;
                    bytes.push(if n == 0 { b } else { b | 0x80 });
                    if n == 0 { break; }
                }
                bytes.extend_from_slice(body);
            }
            bytes.extend_from_slice(&tail);
            // Ends, without a panic; a cursor never fails to read.
            prop_assert!(speaks_wasi_p3(&mut io::Cursor::new(&bytes[..])).is_ok());
        });
    }
}
