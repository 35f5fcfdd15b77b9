//! A version 2 pack's zstd dictionary (`docs/pack-format.md` §19): trained
//! by the writer on the pack's small files and stored in the index, it
//! primes the decoder of the chunks of small files (codec 3). Small files then compress in
//! chunks of their own (files under 1 KiB share one), and a lazy reader
//! fetches the files it reads and almost nothing else, in a few percent
//! more space than 128 KiB chunks shared by many files would take.
//!
//! [`Dictionary`] is the reader's, checked once at open; [`Trained`] the
//! writer's, which needs the C library (the pure-Rust encoder takes no
//! dictionary, so without `zstd-c` it has no value and packs get none).

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use ruzstd::decoding::{BlockDecodingStrategy, Dictionary as Tables, FrameDecoder};

use super::frame;

/// Incompatible-feature flag (header `incompat_flags` bit 1): the pack has
/// a dictionary, and chunks of codec 3 are decoded with it. (Bit 0 named
/// §19's draft, in which every zstd chunk was: unknown now, so a pack of
/// that draft is refused rather than misread.)
pub(crate) const DICTIONARY: u32 = 2;

/// The longest dictionary a pack may hold: 1 MiB (the writer trains 128 KiB
/// at most), so that what a pack makes a reader hold for it is bounded.
pub(crate) const MAX_DICTIONARY: u32 = 1 << 20;

/// Bytes the offset history takes after the entropy tables, in zstd's
/// dictionary format.
const OFFSETS: usize = 12;
/// More than the entropy tables can take (a Huffman table 128 bytes at
/// most, each FSE table fewer) beside the offset history.
const PAD: usize = 1024 + OFFSETS;

/// Tells dictionaries apart in the thread-local decoders.
static NEXT_KEY: AtomicU64 = AtomicU64::new(1);

/// A pack's dictionary, loaded for decoding.
pub(crate) struct Dictionary {
    bytes: Vec<u8>,
    id: u32,
    key: u64,
    #[cfg(feature = "zstd-c")]
    ddict: zstd::zstd_safe::DDict<'static>,
}

impl std::fmt::Debug for Dictionary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dictionary").field("len", &self.bytes.len()).field("id", &self.id).finish()
    }
}

impl Dictionary {
    /// Loads `bytes`, a dictionary in zstd's format; `None` if it is not
    /// one. The pure-Rust decoder judges it in every build, so a pack opens
    /// or is refused alike whichever decoder then reads its chunks.
    pub(crate) fn load(bytes: &[u8]) -> Option<Dictionary> {
        let tables = tables(bytes)?;
        Some(Dictionary {
            bytes: bytes.to_vec(),
            id: tables.id,
            key: NEXT_KEY.fetch_add(1, Ordering::Relaxed),
            #[cfg(feature = "zstd-c")]
            ddict: zstd::zstd_safe::DDict::try_create(bytes)?,
        })
    }

    /// Its length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Decodes the zstd frame `stored` into `out`, never past its end;
    /// the bytes written, or `None` if it does not decode (to the end of
    /// `stored`) or its header claims more than `out` takes
    /// (`frame::fits`).
    #[cfg(feature = "zstd-c")]
    pub(crate) fn decode(&self, stored: &[u8], out: &mut [u8]) -> Option<usize> {
        if !frame::fits(stored, out.len()) {
            return None;
        }
        frame::one_frame(stored)?;
        thread_local! {
            static DCTX: RefCell<Option<zstd::zstd_safe::DCtx<'static>>> = const { RefCell::new(None) };
        }
        DCTX.with(|d| {
            let mut d = d.try_borrow_mut().ok()?;
            let dctx = match &mut *d {
                Some(dctx) => dctx,
                none => none.insert(zstd::zstd_safe::DCtx::try_create()?),
            };
            dctx.decompress_using_ddict(out, stored, &self.ddict).ok()
        })
    }

    /// Decodes as [`decode`](Self::decode) does, with the pure-Rust
    /// decoder (the browser build's; natively, what tests compare the C
    /// library with).
    #[cfg(not(feature = "zstd-c"))]
    pub(crate) fn decode(&self, stored: &[u8], out: &mut [u8]) -> Option<usize> {
        self.decode_pure(stored, out)
    }

    /// [`decode`](Self::decode) with the pure-Rust decoder, which keeps the
    /// last dictionary it was given per thread: a dictionary's tables are
    /// built once, not per chunk.
    #[cfg_attr(all(feature = "zstd-c", not(test)), allow(dead_code))]
    pub(crate) fn decode_pure(&self, mut stored: &[u8], out: &mut [u8]) -> Option<usize> {
        use std::io::Read;
        thread_local! {
            static DECODER: RefCell<Option<(u64, FrameDecoder)>> = const { RefCell::new(None) };
        }
        // The decoder sets aside the window the frame declares.
        if !frame::fits(stored, out.len()) {
            return None;
        }
        DECODER.with(|d| {
            let mut d = d.try_borrow_mut().ok()?;
            if d.as_ref().is_none_or(|(key, _)| *key != self.key) {
                let mut dec = FrameDecoder::new();
                dec.add_dict(tables(&self.bytes)?).ok()?;
                *d = Some((self.key, dec));
            }
            let (_, dec) = d.as_mut()?;
            dec.init(&mut stored).ok()?;
            // A frame that names no dictionary (the writer names none: the
            // pack has one) is decoded with the pack's; one that names
            // another failed `init`.
            dec.force_dict(self.id).ok()?;
            let mut written = 0;
            loop {
                dec.decode_blocks(&mut stored, BlockDecodingStrategy::UptoBlocks(1)).ok()?;
                written += dec.read(&mut out[written..]).ok()?;
                if dec.can_collect() != 0 {
                    return None;
                }
                if dec.is_finished() {
                    return stored.is_empty().then_some(written);
                }
            }
        })
    }
}

/// The pure-Rust decoder's tables for dictionary `bytes`, or `None` if it
/// is not one. Its parser indexes past the end of a dictionary whose tables
/// take all of it, so it is given the bytes followed by more zeros than the
/// tables and the offset history can take: the tables then parse as they
/// would, and the dictionary is sound only if what follows them (offsets
/// and content) fits in the real bytes, the zeros taken off again.
fn tables(bytes: &[u8]) -> Option<Tables> {
    if bytes.len() < 8 + OFFSETS {
        return None;
    }
    let mut padded = Vec::with_capacity(bytes.len() + PAD);
    padded.extend_from_slice(bytes);
    padded.resize(bytes.len() + PAD, 0);
    let mut t = Tables::decode_dict(&padded).ok()?;
    let content = t.dict_content.len().checked_sub(PAD)?;
    t.dict_content.truncate(content);
    // zstd's format: the offsets may not be 0 and, for the content to
    // hold what they point at, not beyond it.
    let sound = t.id != 0 && t.offset_hist.iter().all(|&o| o != 0 && o as usize <= content);
    sound.then_some(t)
}

/// A dictionary the writer trained, prepared for compressing.
#[cfg(feature = "zstd-c")]
pub(crate) struct Trained {
    bytes: Vec<u8>,
    cdict: zstd::zstd_safe::CDict<'static>,
}

/// Without the C library there is no trainer, nor an encoder that takes a
/// dictionary: there are no trained dictionaries.
#[cfg(not(feature = "zstd-c"))]
pub(crate) enum Trained {}

#[cfg(feature = "zstd-c")]
impl Trained {
    /// A dictionary of at most `max_len` bytes trained on `samples` (their
    /// bytes end to end, and each one's length), for zstd at `level`;
    /// `None` when zstd's trainer finds too little to go on. The same
    /// samples give the same dictionary.
    pub(crate) fn train(samples: &[u8], sizes: &[usize], max_len: usize, level: i32) -> Option<Trained> {
        let mut bytes = Vec::with_capacity(max_len);
        zstd::zstd_safe::train_from_buffer(&mut bytes, samples, sizes).ok()?;
        // Whatever zstd writes, this reader must load.
        if bytes.len() > MAX_DICTIONARY as usize {
            return None;
        }
        tables(&bytes)?;
        let cdict = zstd::zstd_safe::CDict::try_create(&bytes, level)?;
        Some(Trained { bytes, cdict })
    }

    /// The dictionary's bytes, as the pack stores them.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Their length, the header's `dict_len` (at most `MAX_DICTIONARY`).
    pub(crate) fn len(&self) -> u32 {
        u32::try_from(self.bytes.len()).unwrap_or(MAX_DICTIONARY)
    }

    /// A compressor using it, for one thread.
    pub(crate) fn compressor(&self) -> Option<Compressor<'_>> {
        use zstd::zstd_safe::{CCtx, CParameter};
        let mut cctx = CCtx::try_create()?;
        cctx.ref_cdict(&self.cdict).ok()?;
        // The frames need not name the dictionary: the pack has one.
        cctx.set_parameter(CParameter::DictIdFlag(false)).ok()?;
        cctx.set_parameter(CParameter::ChecksumFlag(false)).ok()?;
        Some(Compressor(cctx))
    }
}

#[cfg(not(feature = "zstd-c"))]
impl Trained {
    pub(crate) fn train(_: &[u8], _: &[usize], _: usize, _: i32) -> Option<Trained> {
        None
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        match *self {}
    }

    pub(crate) fn len(&self) -> u32 {
        match *self {}
    }

    pub(crate) fn compressor(&self) -> Option<Compressor<'_>> {
        match *self {}
    }
}

/// Compresses with a [`Trained`] dictionary.
#[cfg(feature = "zstd-c")]
pub(crate) struct Compressor<'d>(zstd::zstd_safe::CCtx<'d>);

/// (None without the C library.)
#[cfg(not(feature = "zstd-c"))]
pub(crate) struct Compressor<'d>(std::convert::Infallible, std::marker::PhantomData<&'d ()>);

impl Compressor<'_> {
    /// Compresses `input` as one frame into `out` (cleared first); `false`
    /// if the library failed (only on allocation).
    pub(crate) fn compress(&mut self, input: &[u8], out: &mut Vec<u8>) -> bool {
        out.clear();
        #[cfg(feature = "zstd-c")]
        {
            out.reserve(zstd::zstd_safe::compress_bound(input.len()));
            self.0.compress2(out, input).is_ok()
        }
        #[cfg(not(feature = "zstd-c"))]
        {
            let _ = input;
            match self.0 {}
        }
    }
}

#[cfg(all(test, feature = "zstd-c"))]
mod tests {
    use super::*;

    #[allow(clippy::cast_possible_truncation, reason = "picks below the words' count")]
    fn samples() -> (Vec<u8>, Vec<usize>) {
        let mut rng = packfs_test_support::Rng::new(3);
        let words = ["import", "def", "return", "self", "class", "None", "for", "in", "if", "else", "(", ")", ":"];
        let (mut all, mut sizes) = (Vec::new(), Vec::new());
        for _ in 0..400 {
            let start = all.len();
            for _ in 0..rng.below(600) + 20 {
                all.extend_from_slice(words[rng.below(words.len() as u64) as usize].as_bytes());
                all.push(if rng.below(8) == 0 { b'\n' } else { b' ' });
            }
            sizes.push(all.len() - start);
        }
        (all, sizes)
    }

    /// What the C library compresses with a trained dictionary both
    /// decoders decode, to the bytes, and smaller than without it.
    #[test]
    fn both_decoders_decode_what_the_writer_compresses() {
        let (all, sizes) = samples();
        let trained = Trained::train(&all, &sizes, 16 << 10, 15).expect("trains");
        let dict = Dictionary::load(trained.bytes()).expect("loads");
        let mut c = trained.compressor().unwrap();
        let (mut at, mut with, mut without) = (0, 0, 0);
        for &n in &sizes[..50] {
            let input = &all[at..at + n];
            at += n;
            let mut stored = Vec::new();
            assert!(c.compress(input, &mut stored));
            with += stored.len();
            without += zstd::bulk::compress(input, 15).unwrap().len();
            for decode in [Dictionary::decode, Dictionary::decode_pure] {
                let mut out = vec![0; n];
                assert_eq!(decode(&dict, &stored, &mut out), Some(n));
                assert_eq!(out, input);
                // Short of room, or with bytes after the frame: refused.
                assert_eq!(decode(&dict, &stored, &mut out[..n - 1]), None);
                let mut longer = stored.clone();
                longer.push(0);
                assert_eq!(decode(&dict, &longer, &mut out), None);
            }
        }
        assert!(with * 4 < without * 3, "{with} bytes with the dictionary, {without} without");
    }

    /// A dictionary cut short, or with any one byte changed, loads or is
    /// refused without a panic; a pack's dictionary that loads decodes
    /// what it can (the checks on stored bytes come first in a pack).
    #[test]
    fn damaged_dictionaries_do_not_panic() {
        let (all, sizes) = samples();
        let trained = Trained::train(&all, &sizes, 8 << 10, 15).unwrap();
        let bytes = trained.bytes();
        for n in 0..bytes.len().min(2000) {
            let _ = Dictionary::load(&bytes[..n]);
        }
        for i in (0..bytes.len()).step_by(7) {
            let mut bad = bytes.to_vec();
            bad[i] ^= 0x5a;
            if let Some(d) = Dictionary::load(&bad) {
                let mut out = vec![0; 64];
                let _ =
                    d.decode_pure(&[0x28, 0xb5, 0x2f, 0xfd, 0x20, 0x04, 0x21, 0, 0, b'a', b'b', b'c', b'd'], &mut out);
            }
        }
        assert!(Dictionary::load(&[0; 100]).is_none());
    }
}
