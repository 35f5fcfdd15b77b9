//! The image placed in the virtual filesystem's module: appended to its
//! memory as a data segment at the end of the initial pages (which grow
//! to hold it), and its address and length written after the marker the
//! module keeps for them (`virt/src/image.rs`). Everything else is copied
//! as it is.

use anyhow::{Result, bail, ensure};
use wasm_encoder::reencode::{Error as ReencodeError, Reencode, RoundtripReencoder, utils};
use wasm_encoder::{ConstExpr, DataSection, MemoryType, Module};
use wasmparser::{DataKind, Parser, Payload};

/// What the module keeps before the image's address and length.
const MARKER: &[u8; 8] = b"PFSVIMAT";

const PAGE: u64 = 65536;

/// Where the marker is: data segment `segment`, at `at` within it.
struct Marker {
    segment: u32,
    at: usize,
}

/// `module` with `image` placed in it.
pub(super) fn place(module: &[u8], image: &[u8]) -> Result<Vec<u8>> {
    let (pages, marker) = survey(module)?;
    let base = pages * PAGE;
    let len = image.len() as u64;
    let end_pages = (base + len).div_ceil(PAGE);
    // A 32-bit memory: the image must end within 4 GiB, leaving room to grow.
    ensure!(end_pages < 65536, "the image ({len} bytes) does not fit in a 32-bit memory");
    let mut placer = Placer { image, base, len, end_pages, marker, next_segment: 0 };
    let mut out = Module::new();
    placer.parse_core_module(&mut out, Parser::new(0), module).map_err(|e| anyhow::anyhow!("{e:?}"))?;
    Ok(out.finish())
}

/// The module's initial pages and where its marker is: one 32-bit memory,
/// and the marker exactly once, in an active segment.
fn survey(module: &[u8]) -> Result<(u64, Marker)> {
    let (mut pages, mut marker) = (None, None);
    for payload in Parser::new(0).parse_all(module) {
        match payload? {
            Payload::MemorySection(s) => {
                for m in s {
                    let m = m?;
                    ensure!(pages.is_none() && !m.memory64 && !m.shared, "not the virtual filesystem's module");
                    pages = Some(m.initial);
                }
            }
            Payload::DataSection(s) => {
                for (segment, d) in s.into_iter().enumerate() {
                    let d = d?;
                    let Some(at) = d.data.windows(MARKER.len()).position(|w| w == MARKER) else { continue };
                    ensure!(marker.is_none() && matches!(d.kind, DataKind::Active { .. }), "the marker twice");
                    ensure!(d.data.len() >= at + 16, "a marker without room for the image's place");
                    marker = Some(Marker { segment: segment as u32, at });
                }
            }
            _ => {}
        }
    }
    match (pages, marker) {
        (Some(p), Some(m)) => Ok((p, m)),
        _ => bail!("not the virtual filesystem's module (no memory or no marker)"),
    }
}

struct Placer<'a> {
    image: &'a [u8],
    base: u64,
    len: u64,
    end_pages: u64,
    marker: Marker,
    next_segment: u32,
}

impl Reencode for Placer<'_> {
    type Error = std::convert::Infallible;

    fn memory_type(&mut self, ty: wasmparser::MemoryType) -> Result<MemoryType, ReencodeError<Self::Error>> {
        let mut ty = RoundtripReencoder.memory_type(ty)?;
        ty.minimum = ty.minimum.max(self.end_pages);
        if let Some(max) = ty.maximum {
            ty.maximum = Some(max.max(self.end_pages));
        }
        Ok(ty)
    }

    fn data_count(&mut self, count: u32) -> Result<u32, ReencodeError<Self::Error>> {
        Ok(count + 1)
    }

    fn parse_data(
        &mut self,
        data: &mut DataSection,
        datum: wasmparser::Data<'_>,
    ) -> Result<(), ReencodeError<Self::Error>> {
        let segment = self.next_segment;
        self.next_segment += 1;
        if segment != self.marker.segment {
            return utils::parse_data(self, data, datum);
        }
        let DataKind::Active { memory_index, offset_expr } = datum.kind else { unreachable!("checked by survey") };
        let mut bytes = datum.data.to_vec();
        let at = self.marker.at + MARKER.len();
        bytes[at..at + 4].copy_from_slice(&(self.base as u32).to_le_bytes());
        bytes[at + 4..at + 8].copy_from_slice(&(self.len as u32).to_le_bytes());
        data.active(memory_index, &self.const_expr(offset_expr)?, bytes);
        Ok(())
    }

    fn parse_data_section(
        &mut self,
        data: &mut DataSection,
        section: wasmparser::DataSectionReader<'_>,
    ) -> Result<(), ReencodeError<Self::Error>> {
        utils::parse_data_section(self, data, section)?;
        // The image, last.
        data.active(0, &ConstExpr::i32_const(self.base as i32), self.image.iter().copied());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(data: &str) -> Vec<u8> {
        wat::parse_str(format!("(module (memory 3) {data})")).unwrap()
    }

    #[test]
    fn the_image_lands_past_the_initial_pages_and_its_place_after_the_marker() {
        let m = module(r#"(data (i32.const 16) "xPFSVIMAT\00\00\00\00\00\00\00\00y")"#);
        let image = vec![7u8; 70_000];
        let out = place(&m, &image).unwrap();
        wasmparser::Validator::new().validate_all(&out).unwrap();
        let (mut min, mut segments) = (0, Vec::new());
        for payload in Parser::new(0).parse_all(&out) {
            match payload.unwrap() {
                Payload::MemorySection(s) => min = s.into_iter().next().unwrap().unwrap().initial,
                Payload::DataSection(s) => segments.extend(s.into_iter().map(|d| d.unwrap().data.to_vec())),
                _ => {}
            }
        }
        // 3 pages, then 70,000 bytes: 2 pages more.
        assert_eq!(min, 5);
        let mut marked = b"xPFSVIMAT".to_vec();
        marked.extend_from_slice(&(3 * 65536u32).to_le_bytes());
        marked.extend_from_slice(&70_000u32.to_le_bytes());
        marked.push(b'y');
        assert_eq!(segments, [marked, image]);
    }

    #[test]
    fn a_module_without_one_marker_with_room_is_refused() {
        for data in [
            "",
            r#"(data (i32.const 0) "PFSVIMAT\00\00\00\00\00\00\00\00") (data (i32.const 64) "PFSVIMAT\00\00\00\00\00\00\00\00")"#,
            r#"(data (i32.const 0) "PFSVIMAT\00\00\00")"#,
            r#"(data "PFSVIMAT\00\00\00\00\00\00\00\00")"#,
        ] {
            assert!(place(&module(data), b"x").is_err(), "{data}");
        }
        assert!(place(&wat::parse_str("(module)").unwrap(), b"x").is_err());
        // Past 4 GiB.
        let m = module(r#"(data (i32.const 0) "PFSVIMAT\00\00\00\00\00\00\00\00")"#);
        let huge = vec![0; (1 << 32) - 65536 * 3];
        assert!(place(&m, &huge).is_err());
    }
}
