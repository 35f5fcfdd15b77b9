//! What the embedder supplies: the guest's stdio, and its clocks,
//! randomness and sleep ([`Platform`]). The core has none of these of its
//! own (it has no OS); the host gives the process's, a browser Worker its
//! own.

use std::sync::{Arc, Mutex};

use super::abi::Errno;
use crate::Timestamp;

/// Where a guest's stdin comes from.
pub trait Input: Send {
    /// Reads into `buf`, waiting for at least one byte; 0 at the end.
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Errno>;

    /// A terminal (`fd_fdstat_get` says character device).
    fn is_terminal(&self) -> bool {
        false
    }
}

/// Where a guest's stdout or stderr goes.
pub trait Output: Send {
    /// Takes all of `data`.
    fn write(&mut self, data: &[u8]) -> Result<(), Errno>;

    /// A terminal (`fd_fdstat_get` says character device).
    fn is_terminal(&self) -> bool {
        false
    }
}

/// No input: every read is at the end.
#[derive(Debug, Default, Clone, Copy)]
pub struct Empty;

impl Input for Empty {
    fn read(&mut self, _buf: &mut [u8]) -> Result<usize, Errno> {
        Ok(0)
    }
}

/// Input from bytes given up front.
#[derive(Debug, Default, Clone)]
pub struct Bytes {
    data: Vec<u8>,
    at: usize,
}

impl Bytes {
    /// Input that reads `data`, then ends.
    pub fn new(data: impl Into<Vec<u8>>) -> Self {
        Bytes { data: data.into(), at: 0 }
    }
}

impl Input for Bytes {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        let rest = self.data.get(self.at..).unwrap_or_default();
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        self.at += n;
        Ok(n)
    }
}

/// Output that goes nowhere.
#[derive(Debug, Default, Clone, Copy)]
pub struct Discard;

impl Output for Discard {
    fn write(&mut self, _data: &[u8]) -> Result<(), Errno> {
        Ok(())
    }
}

/// Output kept in memory, up to a limit; a write past it fails with `IO`
/// and keeps nothing of itself. Clones share the bytes.
#[derive(Debug, Clone)]
pub struct Capture {
    bytes: Arc<Mutex<Vec<u8>>>,
    limit: usize,
}

impl Capture {
    /// Keeps up to `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Capture { bytes: Arc::default(), limit }
    }

    /// What was written so far.
    pub fn contents(&self) -> Vec<u8> {
        self.bytes.lock().map(|b| b.clone()).unwrap_or_default()
    }
}

impl Output for Capture {
    fn write(&mut self, data: &[u8]) -> Result<(), Errno> {
        let mut bytes = self.bytes.lock().map_err(|_| Errno::IO)?;
        if bytes.len().saturating_add(data.len()) > self.limit {
            return Err(Errno::IO);
        }
        bytes.extend_from_slice(data);
        Ok(())
    }
}

/// Output handed to a function, a write at a time.
pub struct Callback<F>(pub F);

impl<F: FnMut(&[u8]) + Send> Output for Callback<F> {
    fn write(&mut self, data: &[u8]) -> Result<(), Errno> {
        (self.0)(data);
        Ok(())
    }
}

/// Clocks, randomness and sleep for one guest.
pub trait Platform: Send {
    /// The wall clock (`clock_time_get(realtime)`).
    fn wall_clock(&self) -> Timestamp;

    /// A monotonic clock in nanoseconds from an arbitrary start.
    fn monotonic_clock(&self) -> u64;

    /// Fills `buf` with random bytes (`random_get`: a CSPRNG where the
    /// embedder has one).
    fn random(&mut self, buf: &mut [u8]);

    /// Blocks for `nanos` nanoseconds (`poll_oneoff` on clocks).
    fn sleep(&mut self, nanos: u64);

    /// The resolution of the wall and monotonic clocks, in nanoseconds.
    fn resolution(&self) -> u64 {
        1
    }
}
