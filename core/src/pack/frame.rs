//! One zstd frame (RFC 8878), as a pack stores an index region or a chunk:
//! what its header declares, checked before anything is decoded, and the
//! decoders behind that check.
//!
//! ```text
//! frame header
//! size  field                 meaning
//!    4  magic                 28 b5 2f fd
//!    1  descriptor            bits 7-6 content size field's width (0: 0 or 1
//!                             byte, 1: 2, 2: 4, 3: 8); bit 5 single segment;
//!                             bit 3 reserved, 0; bits 1-0 dictionary ID width
//!  0-1  window descriptor     absent in a single segment: the window is then
//!                             the content size; else 2^(10 + e) * (1 + m/8)
//!  0-4  dictionary ID
//!  0-8  content size          little-endian; a 2-byte field holds it - 256
//! ```
//!
//! A frame may declare a window of up to 2 TiB and a content size of up to
//! 2^64 - 1 in a few bytes, and a decoder sizes its buffers by them: the
//! pure-Rust decoder keeps a whole window before it yields a byte. So every
//! frame is judged by its header against the length its structure must
//! decode to, before a byte of memory is set aside for it
//! ([`fits`]; `docs/pack-format.md` §17.8): a declared content size must be
//! that length, and a declared window at most the larger of that length
//! and 128 KiB, rounded up to a power of two. That admits every frame the
//! reference writers make (the C library's declare their content size and
//! a window no larger than it; the pure-Rust encoder's, 128 KiB), and
//! bounds a decoder's memory by the structure's own limit.

/// A frame's first four bytes.
const MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// The window every frame may declare, whatever it decodes to: the
/// pure-Rust encoder's (and the largest block's).
const MIN_WINDOW: u64 = 128 << 10;

/// What a frame's header declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Declared {
    /// The window in bytes (the content size, in a single segment).
    pub(crate) window: u64,
    /// The content size, where the header gives it.
    pub(crate) content: Option<u64>,
}

/// What the header at the start of `input` declares; `None` if it is not
/// a zstd frame's header (a skippable frame is not one), or is cut short.
pub(crate) fn declared(input: &[u8]) -> Option<Declared> {
    let (magic, rest) = input.split_first_chunk::<4>()?;
    let (&descriptor, rest) = rest.split_first().filter(|_| *magic == MAGIC)?;
    if descriptor & 0x08 != 0 {
        return None;
    }
    let single = descriptor & 0x20 != 0;
    let (window, rest) = match single {
        true => (None, rest),
        false => {
            let (&w, rest) = rest.split_first()?;
            let base = 1u64 << (10 + (w >> 3));
            (Some(base + base / 8 * u64::from(w & 7)), rest)
        }
    };
    let rest = rest.get([0, 1, 2, 4][usize::from(descriptor & 3)]..)?;
    let width = [usize::from(single), 2, 4, 8][usize::from(descriptor >> 6)];
    let content = match rest.get(..width)? {
        [] => None,
        field => {
            let mut le = [0u8; 8];
            le[..width].copy_from_slice(field);
            let n = u64::from_le_bytes(le);
            Some(if width == 2 { n + 256 } else { n })
        }
    };
    Some(Declared { window: window.or(content)?, content })
}

/// The largest window a frame decoding to `len` bytes may declare.
pub(crate) fn max_window(len: usize) -> u64 {
    (len as u64).max(MIN_WINDOW).next_power_of_two()
}

/// Whether `input` starts with a frame header whose claims fit a structure
/// that decodes to exactly `len` bytes: a content size, if declared, of
/// `len`, and a window of at most [`max_window`]`(len)`.
pub(crate) fn fits(input: &[u8], len: usize) -> bool {
    declared(input).is_some_and(|d| d.content.is_none_or(|c| c == len as u64) && d.window <= max_window(len))
}

/// Decodes the one zstd frame `input` into `out`, which it must fill
/// exactly; the frame judged by [`fits`] first. With the C library where
/// it is built in (several times faster; its one-shot decoding writes into
/// `out` directly and needs no window), else with the pure-Rust decoder.
pub(crate) fn decode(input: &[u8], out: &mut [u8]) -> Option<()> {
    if !fits(input, out.len()) {
        return None;
    }
    (decode_checked(input, out)? == out.len()).then_some(())
}

#[cfg(feature = "zstd-c")]
fn decode_checked(input: &[u8], out: &mut [u8]) -> Option<usize> {
    thread_local! {
        static DECODER: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { std::cell::RefCell::new(None) };
    }
    // The C library would go on to a second frame; the pure-Rust decoder,
    // and so the browser, would not.
    one_frame(input)?;
    DECODER.with(|d| {
        let mut d = d.try_borrow_mut().ok()?;
        if d.is_none() {
            *d = zstd::bulk::Decompressor::new().ok();
        }
        d.as_mut()?.decompress_to_buffer(input, out).ok()
    })
}

/// `Some` if `input` is exactly one frame, as the C library walks it.
#[cfg(feature = "zstd-c")]
pub(crate) fn one_frame(input: &[u8]) -> Option<()> {
    (zstd::zstd_safe::find_frame_compressed_size(input).ok()? == input.len()).then_some(())
}

#[cfg(not(feature = "zstd-c"))]
fn decode_checked(input: &[u8], out: &mut [u8]) -> Option<usize> {
    decode_pure(input, out)
}

/// The pure-Rust decoder into `out` (the browser build's; natively, what
/// tests compare the C library with): a block at a time, refusing as soon
/// as the frame yields more than `out` takes.
#[cfg_attr(all(feature = "zstd-c", not(test)), allow(dead_code))]
fn decode_pure(input: &[u8], out: &mut [u8]) -> Option<usize> {
    use std::io::Read;
    let mut written = 0;
    let rest = blocks(input, |dec| {
        written += dec.read(&mut out[written..]).ok()?;
        // Bytes left to collect: more than `out` holds.
        (dec.can_collect() == 0).then_some(())
    })?;
    rest.is_empty().then_some(written)
}

/// Decodes the one zstd frame at the start of `input` into `out` (empty,
/// with `len` bytes reserved by the caller), which must come to exactly
/// `len` bytes; returns what follows the frame. The frame is judged by
/// [`fits`] first, and decoded a block at a time: memory follows what the
/// frame yields, within the window `fits` allowed, not what it claims.
pub(crate) fn decode_to_vec<'a>(input: &'a [u8], out: &mut Vec<u8>, len: usize) -> Option<&'a [u8]> {
    use std::io::Read;
    if !fits(input, len) {
        return None;
    }
    let rest = blocks(input, |dec| {
        let (start, n) = (out.len(), dec.can_collect());
        if n > len.saturating_sub(start) {
            return None;
        }
        out.resize(start + n, 0);
        let got = dec.read(&mut out[start..]).ok()?;
        out.truncate(start + got);
        Some(())
    })?;
    (out.len() == len).then_some(rest)
}

/// Decodes the one zstd frame at the start of `input` a block at a time,
/// letting `take` collect what each block yields (`None`: stop, a
/// failure); returns what follows the frame.
fn blocks(mut input: &[u8], mut take: impl FnMut(&mut ruzstd::decoding::FrameDecoder) -> Option<()>) -> Option<&[u8]> {
    use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};
    let mut dec = FrameDecoder::new();
    dec.init(&mut input).ok()?;
    loop {
        dec.decode_blocks(&mut input, BlockDecodingStrategy::UptoBlocks(1)).ok()?;
        take(&mut dec)?;
        if dec.is_finished() {
            return Some(input);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::fuzzing::{FramePart, Head, zstd_frame_declaring};

    #[test]
    fn headers_declare_what_they_say() {
        let bytes = [b'a'; 300];
        let parts = [FramePart::Bytes(&bytes)];
        for (head, want) in [
            (Head::window(7 << 3), Declared { window: 128 << 10, content: None }),
            (Head::window(31 << 3 | 7), Declared { window: (1 << 41) + (1 << 38) * 7, content: None }),
            (Head::window(0).content(300), Declared { window: 1024, content: Some(300) }),
            (Head::single(300), Declared { window: 300, content: Some(300) }),
            (Head::single(200), Declared { window: 200, content: Some(200) }),
            (Head::single(1 << 40), Declared { window: 1 << 40, content: Some(1 << 40) }),
            (Head::single(70_000), Declared { window: 70_000, content: Some(70_000) }),
        ] {
            assert_eq!(declared(&zstd_frame_declaring(head, &parts)), Some(want), "{head:?}");
        }
        assert_eq!(declared(b"\x28\xb5\x2f"), None);
        assert_eq!(declared(b"\x50\x2a\x4d\x18\0\0\0\0"), None, "a skippable frame");
        assert_eq!(declared(b"\x28\xb5\x2f\xfd\x08\x38"), None, "the reserved bit");
        assert_eq!(declared(b"\x28\xb5\x2f\xfd\xc0\x38\x01"), None, "a content size cut short");
    }

    /// Each decoder refuses a frame whose header claims more than its
    /// structure takes, before decoding: the claims are all a 2 TiB window
    /// costs (a window of that size decoded would abort the process).
    #[test]
    fn frames_claiming_too_much_are_refused_unread() {
        let zeros = [FramePart::Zeros(4 << 20)];
        for head in [Head::window(31 << 3 | 7), Head::single(1 << 40), Head::window(7 << 3).content(5 << 20)] {
            let frame = zstd_frame_declaring(head, &zeros);
            let mut out = vec![0u8; 4 << 20];
            assert_eq!(decode(&frame, &mut out), None, "{head:?}");
            assert!(!fits(&frame, out.len()), "{head:?}");
            let mut v = Vec::with_capacity(4 << 20);
            assert_eq!(decode_to_vec(&frame, &mut v, 4 << 20), None, "{head:?}");
            assert!(v.is_empty(), "{head:?}: decoded {} bytes", v.len());
        }
        // The same frame declaring what it holds decodes, with each decoder.
        for head in [Head::window(12 << 3), Head::single(4 << 20), Head::window(7 << 3).content(4 << 20)] {
            let frame = zstd_frame_declaring(head, &zeros);
            let mut out = vec![1u8; 4 << 20];
            assert_eq!(decode(&frame, &mut out), Some(()), "{head:?}");
            assert!(out.iter().all(|&b| b == 0));
            out.fill(1);
            assert_eq!(decode_pure(&frame, &mut out), Some(4 << 20), "{head:?}");
            assert!(out.iter().all(|&b| b == 0));
            let mut v = Vec::with_capacity(4 << 20);
            assert_eq!(decode_to_vec(&frame, &mut v, 4 << 20), Some(&[][..]), "{head:?}");
            assert_eq!(v.len(), 4 << 20);
        }
    }

    /// The writers' frames fit: the C library's and the pure-Rust
    /// encoder's, at the lengths around each boundary.
    #[test]
    fn the_writers_frames_fit() {
        for len in [1, 4095, 4096, 4097, 65_536, 128 << 10, (128 << 10) + 1, 1 << 20, (1 << 20) + 7, 3 << 20] {
            #[allow(clippy::cast_possible_truncation, reason = "i % 7 fits a byte")]
            let data: Vec<u8> = (0..len).map(|i| (i % 7) as u8).collect();
            let ours = ruzstd::encoding::compress_to_vec(&data[..], ruzstd::encoding::CompressionLevel::Fastest);
            assert!(fits(&ours, len), "ruzstd at {len}: {:?}", declared(&ours));
            #[cfg(feature = "zstd-c")]
            for level in [1, 3, 19] {
                let c = zstd::bulk::compress(&data, level).unwrap();
                assert!(fits(&c, len), "zstd {level} at {len}: {:?}", declared(&c));
                let mut out = vec![0; len];
                assert_eq!(decode(&c, &mut out), Some(()));
                assert_eq!(out, data);
            }
            let mut out = vec![0; len];
            assert_eq!(decode_pure(&ours, &mut out), Some(len));
            assert_eq!(out, data);
        }
    }
}
