//! The guest's linear memory, as the embedder lends it for one call.
//!
//! Every pointer and length a guest passes is checked here before use: one
//! out of bounds is [`Errno::FAULT`], never a panic or a trap, and no
//! host allocation depends on a guest's number without a bound.

use super::abi::{Errno, IOVEC_SIZE, u32_at};

/// A guest's linear memory.
///
/// wasmtime lends the memory itself (`[u8]` implements this), so reads and
/// writes of file data go straight between the file and the guest. An
/// embedder whose guest memory lives elsewhere (a browser's
/// `WebAssembly.Memory`, seen from another module) implements
/// [`read`](Self::read) and [`write`](Self::write) as copies and leaves
/// the slices to their defaults.
pub trait Memory {
    /// The memory's size in bytes.
    fn size(&self) -> u64;

    /// Whether `ptr..ptr + len` lies within the memory: every range a call
    /// reads or writes is checked with it first. The default asks
    /// [`size`](Self::size); a memory whose size is costly to learn may
    /// answer from the size it learnt last while that suffices, since a
    /// memory only grows.
    fn contains(&self, ptr: u32, len: u64) -> bool {
        u64::from(ptr) + len <= self.size()
    }

    /// Copies `buf.len()` bytes from `ptr`. The range is within
    /// [`size`](Self::size) (callers check).
    fn read(&self, ptr: u32, buf: &mut [u8]);

    /// Copies `data` to `ptr`. The range is within [`size`](Self::size).
    fn write(&mut self, ptr: u32, data: &[u8]);

    /// The bytes at `ptr..ptr + len`, in place, if this memory can lend
    /// them. The range is within [`size`](Self::size).
    fn slice(&self, _ptr: u32, _len: u32) -> Option<&[u8]> {
        None
    }

    /// As [`slice`](Self::slice), writable.
    fn slice_mut(&mut self, _ptr: u32, _len: u32) -> Option<&mut [u8]> {
        None
    }
}

/// `ptr..ptr + len` as indices, if they fit a `usize` (on a 32-bit host the
/// end of a 4 GiB memory does not).
fn span(ptr: u32, len: usize) -> Option<std::ops::Range<usize>> {
    let start = usize::try_from(ptr).ok()?;
    Some(start..start.checked_add(len)?)
}

impl Memory for [u8] {
    fn size(&self) -> u64 {
        self.len() as u64
    }

    fn read(&self, ptr: u32, buf: &mut [u8]) {
        if let Some(src) = span(ptr, buf.len()).and_then(|r| self.get(r)) {
            buf.copy_from_slice(src);
        }
    }

    fn write(&mut self, ptr: u32, data: &[u8]) {
        if let Some(dst) = span(ptr, data.len()).and_then(|r| self.get_mut(r)) {
            dst.copy_from_slice(data);
        }
    }

    fn slice(&self, ptr: u32, len: u32) -> Option<&[u8]> {
        self.get(span(ptr, usize::try_from(len).ok()?)?)
    }

    fn slice_mut(&mut self, ptr: u32, len: u32) -> Option<&mut [u8]> {
        self.get_mut(span(ptr, usize::try_from(len).ok()?)?)
    }
}

/// Most bytes one read or write moves through a copy buffer at a time, for
/// memories that cannot lend slices: bounds the host memory one call takes.
pub(crate) const COPY_CHUNK: usize = 1 << 20;

/// `n` bytes, but at most `max`: the count a step moved of the `max` it
/// was offered (a callee claiming more is held to what it was given).
pub(crate) fn at_most(n: usize, max: u32) -> u32 {
    u32::try_from(n).map_or(max, |n| n.min(max))
}

/// Most iovecs one call takes (POSIX `IOV_MAX`, wasi-libc's too); more is
/// `INVAL`, as `readv(2)` says.
pub(crate) const MAX_IOVECS: u32 = 1024;

/// `ptr..ptr + len` lies within `mem`.
pub(crate) fn check(mem: &(impl Memory + ?Sized), ptr: u32, len: u64) -> Result<(), Errno> {
    if mem.contains(ptr, len) { Ok(()) } else { Err(Errno::FAULT) }
}

/// Reads a fixed-size record.
pub(crate) fn read_array<const N: usize>(mem: &(impl Memory + ?Sized), ptr: u32) -> Result<[u8; N], Errno> {
    check(mem, ptr, N as u64)?;
    let mut b = [0; N];
    mem.read(ptr, &mut b);
    Ok(b)
}

/// Writes `data` at `ptr`.
pub(crate) fn write_bytes(mem: &mut (impl Memory + ?Sized), ptr: u32, data: &[u8]) -> Result<(), Errno> {
    check(mem, ptr, data.len() as u64)?;
    mem.write(ptr, data);
    Ok(())
}

/// Writes a u32 result.
pub(crate) fn write_u32(mem: &mut (impl Memory + ?Sized), ptr: u32, v: u32) -> Result<(), Errno> {
    write_bytes(mem, ptr, &v.to_le_bytes())
}

/// Writes a u64 result.
pub(crate) fn write_u64(mem: &mut (impl Memory + ?Sized), ptr: u32, v: u64) -> Result<(), Errno> {
    write_bytes(mem, ptr, &v.to_le_bytes())
}

/// A guest string of `len` bytes at `ptr`: `FAULT` outside memory, `ILSEQ`
/// if not UTF-8 (as wasmtime). `max` bounds the copy: a longer string is
/// `NAMETOOLONG` before any byte is copied.
pub(crate) fn read_str(mem: &(impl Memory + ?Sized), ptr: u32, len: u32, max: usize) -> Result<String, Errno> {
    check(mem, ptr, u64::from(len))?;
    if len as usize > max {
        return Err(Errno::NAMETOOLONG);
    }
    let mut buf = vec![0; len as usize];
    mem.read(ptr, &mut buf);
    String::from_utf8(buf).map_err(|_| Errno::ILSEQ)
}

/// An iovec array whose records and buffers all lie within memory, its
/// records read once, when the call starts (as wasmtime reads them): a
/// read into a buffer over the array itself does not change where later
/// pieces go, and a memory reached by copies is asked once.
#[derive(Debug, Clone)]
pub(crate) struct Iovecs {
    /// The records, as `(buf, len)`: here for the few most calls pass,
    /// else in `more`.
    few: [(u32, u32); FEW_IOVECS],
    more: Vec<(u32, u32)>,
    count: u32,
}

/// Iovecs kept without an allocation.
const FEW_IOVECS: usize = 4;

impl Iovecs {
    /// Reads and checks the array at `ptr` and every buffer it names.
    pub(crate) fn new(mem: &(impl Memory + ?Sized), ptr: u32, count: u32) -> Result<Self, Errno> {
        if count > MAX_IOVECS {
            return Err(Errno::INVAL);
        }
        check(mem, ptr, u64::from(count) * u64::from(IOVEC_SIZE))?;
        let size = count as usize * IOVEC_SIZE as usize;
        let mut raw = [0; FEW_IOVECS * IOVEC_SIZE as usize];
        let mut big = Vec::new();
        let bytes = if count as usize <= FEW_IOVECS {
            &mut raw[..size]
        } else {
            big.resize(size, 0);
            &mut big[..]
        };
        mem.read(ptr, bytes);
        let records = bytes.chunks_exact(IOVEC_SIZE as usize).map(|r| (u32_at(r, 0), u32_at(r, 4)));
        let mut iovs = Iovecs { few: [(0, 0); FEW_IOVECS], more: Vec::new(), count };
        if count as usize <= FEW_IOVECS {
            for (slot, r) in iovs.few.iter_mut().zip(records) {
                *slot = r;
            }
        } else {
            iovs.more = records.collect();
        }
        for &(buf, len) in iovs.list() {
            check(mem, buf, u64::from(len))?;
        }
        Ok(iovs)
    }

    fn list(&self) -> &[(u32, u32)] {
        if self.count as usize <= FEW_IOVECS { &self.few[..self.count as usize] } else { &self.more }
    }

    /// The bytes the buffers hold together (as many as a call moves: at
    /// most `u32::MAX`).
    pub(crate) fn total(&self) -> u64 {
        self.list().iter().map(|&(_, len)| u64::from(len)).sum::<u64>().min(u64::from(u32::MAX))
    }

    /// Every buffer's bytes end to end (cut at `u32::MAX` in all), for a
    /// call that is one change however many buffers it names (a file's
    /// write, applied whole or not at all): lent where one buffer holds
    /// them all and the memory lends it, else gathered into `scratch`
    /// (`NOMEM` if that much cannot be had).
    pub(crate) fn gather<'a>(
        &self,
        mem: &'a (impl Memory + ?Sized),
        scratch: &'a mut Vec<u8>,
    ) -> Result<&'a [u8], Errno> {
        let total = self.total();
        let mut full = self.list().iter().filter(|&&(_, len)| len > 0);
        if let (Some(&(buf, len)), None) = (full.next(), full.next())
            && let Some(bytes) = mem.slice(buf, len)
        {
            return Ok(bytes);
        }
        scratch.clear();
        let total = usize::try_from(total).map_err(|_| Errno::NOMEM)?;
        scratch.try_reserve_exact(total).map_err(|_| Errno::NOMEM)?;
        for &(buf, len) in self.list() {
            let (at, n) = (scratch.len(), (len as usize).min(total - scratch.len()));
            scratch.resize(at + n, 0);
            mem.read(buf, &mut scratch[at..]);
        }
        Ok(scratch)
    }

    /// The first buffer that is not empty.
    pub(crate) fn first(&self) -> Option<(u32, u32)> {
        self.list().iter().copied().find(|&(_, len)| len > 0)
    }

    /// Moves bytes through each buffer in turn: `step(mem, buf, len,
    /// done)` moves up to `len` bytes at `buf`, `done` having been moved
    /// before it. Stops at a buffer taken short; returns the count, which
    /// fits a u32 (buffers past that are cut).
    pub(crate) fn each<M: Memory + ?Sized>(
        &self,
        mem: &mut M,
        mut step: impl FnMut(&mut M, u32, u32, u32) -> Result<u32, Errno>,
    ) -> Result<u32, Errno> {
        let mut done: u32 = 0;
        for &(buf, len) in self.list() {
            let len = len.min(u32::MAX - done);
            if len == 0 {
                continue;
            }
            match step(mem, buf, len, done) {
                Ok(n) => {
                    let n = n.min(len);
                    done += n;
                    if n < len {
                        break;
                    }
                }
                // What was moved stays moved, as with readv(2)/writev(2).
                Err(_) if done > 0 => break,
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }
}

/// Runs `step(at, n)` over `len` bytes, a [`COPY_CHUNK`] of `n` bytes at
/// offset `at` at a time; stops at a piece taken short. An error after
/// some bytes is a short count, as with `read(2)` and `write(2)`.
fn pieces(len: u32, mut step: impl FnMut(u32, usize) -> Result<usize, Errno>) -> Result<u32, Errno> {
    let mut done = 0;
    while done < len {
        let n = at_most(COPY_CHUNK, len - done);
        let took = match step(done, n as usize) {
            Ok(took) => at_most(took, n),
            Err(_) if done > 0 => break,
            Err(e) => return Err(e),
        };
        done += took;
        if took < n {
            break;
        }
    }
    Ok(done)
}

/// Calls `f` with the guest bytes at `ptr..ptr + len` — in place where the
/// memory lends them, else copied a [`COPY_CHUNK`] at a time, `f` then
/// seeing each piece in turn (see [`pieces`]). Returns the bytes taken.
pub(crate) fn with_bytes(
    mem: &(impl Memory + ?Sized),
    ptr: u32,
    len: u32,
    scratch: &mut Vec<u8>,
    mut f: impl FnMut(&[u8]) -> Result<usize, Errno>,
) -> Result<u32, Errno> {
    if let Some(bytes) = mem.slice(ptr, len) {
        return f(bytes).map(|n| at_most(n, len));
    }
    pieces(len, |at, n| {
        scratch.resize(n, 0);
        mem.read(ptr + at, &mut scratch[..n]);
        f(&scratch[..n])
    })
}

/// Calls `f` to fill the guest bytes at `ptr..ptr + len` — in place where
/// the memory lends them, else through a copy buffer a [`COPY_CHUNK`] at a
/// time (see [`pieces`]). Returns the bytes filled.
pub(crate) fn fill_bytes(
    mem: &mut (impl Memory + ?Sized),
    ptr: u32,
    len: u32,
    scratch: &mut Vec<u8>,
    mut f: impl FnMut(&mut [u8]) -> Result<usize, Errno>,
) -> Result<u32, Errno> {
    if let Some(bytes) = mem.slice_mut(ptr, len) {
        return f(bytes).map(|n| at_most(n, len));
    }
    pieces(len, |at, n| {
        scratch.resize(n, 0);
        let got = f(&mut scratch[..n])?.min(n);
        mem.write(ptr + at, &scratch[..got]);
        Ok(got)
    })
}
