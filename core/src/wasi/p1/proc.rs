//! Everything but files: arguments and environment, clocks, randomness,
//! `poll_oneoff`, the process calls and the socket calls (no descriptor
//! here is a socket).

use super::abi::{
    self, EVENT_FD_READWRITE_HANGUP, EVENT_SIZE, Errno, SUBSCRIPTION_CLOCK_ABSTIME, SUBSCRIPTION_SIZE, clockid,
    eventtype, fdflags, u16_at, u32_at, u64_at,
};
use super::memory::{Memory, check, fill_bytes, read_array, write_bytes, write_u32, write_u64};
use super::{Entry, Exit, Result, Wasi};
use crate::Timestamp;

/// Writes `strings` NUL-terminated from `buf`, with a pointer to each at
/// `ptrs`: `args_get` and `environ_get`.
fn write_strings<M: Memory + ?Sized>(mem: &mut M, strings: &[String], ptrs: u32, buf: u32) -> Result {
    let total: u64 = strings.iter().map(|s| s.len() as u64 + 1).sum();
    check(mem, ptrs, strings.len() as u64 * 4)?;
    check(mem, buf, total)?;
    // Both ranges were checked: every pointer below lies inside memory, so
    // below 2^32, and only the one past the last string may not.
    let (mut at, mut ptr) = (u64::from(buf), u64::from(ptrs));
    let guest = |p: u64| u32::try_from(p).map_err(|_| Errno::FAULT);
    for s in strings {
        write_u32(mem, guest(ptr)?, guest(at)?)?;
        write_bytes(mem, guest(at)?, s.as_bytes())?;
        write_bytes(mem, guest(at + s.len() as u64)?, &[0])?;
        at += s.len() as u64 + 1;
        ptr += 4;
    }
    Ok(())
}

/// `*count` and `*size` of `strings`: `args_sizes_get`, `environ_sizes_get`.
fn write_sizes<M: Memory + ?Sized>(mem: &mut M, strings: &[String], count: u32, size: u32) -> Result {
    let n = u32::try_from(strings.len()).map_err(|_| Errno::OVERFLOW)?;
    let total = strings.iter().map(|s| s.len() + 1).sum::<usize>();
    let total = u32::try_from(total).map_err(|_| Errno::OVERFLOW)?;
    check(mem, count, 4)?;
    check(mem, size, 4)?;
    write_u32(mem, count, n)?;
    write_u32(mem, size, total)
}

/// One `poll_oneoff` subscription, read and checked.
enum Sub {
    Clock { userdata: u64, timeout: u64, absolute: bool, deadline: Option<u64> },
    Fd { userdata: u64, kind: u8, nbytes: u64, flags: u16 },
}

impl Wasi {
    /// `args_get`.
    pub fn args_get<M: Memory + ?Sized>(&mut self, mem: &mut M, argv: u32, buf: u32) -> Result {
        write_strings(mem, &self.args, argv, buf)
    }

    /// `args_sizes_get`.
    pub fn args_sizes_get<M: Memory + ?Sized>(&mut self, mem: &mut M, count: u32, size: u32) -> Result {
        write_sizes(mem, &self.args, count, size)
    }

    /// `environ_get`.
    pub fn environ_get<M: Memory + ?Sized>(&mut self, mem: &mut M, environ: u32, buf: u32) -> Result {
        write_strings(mem, &self.env, environ, buf)
    }

    /// `environ_sizes_get`.
    pub fn environ_sizes_get<M: Memory + ?Sized>(&mut self, mem: &mut M, count: u32, size: u32) -> Result {
        write_sizes(mem, &self.env, count, size)
    }

    /// `clock_res_get`: the CPU-time clocks are `BADF`, as in wasmtime.
    pub fn clock_res_get<M: Memory + ?Sized>(&mut self, mem: &mut M, id: i32, out: u32) -> Result {
        match abi::tag::<u32>(id, clockid::COUNT)? {
            clockid::REALTIME | clockid::MONOTONIC => write_u64(mem, out, self.platform.resolution()),
            _ => Err(Errno::BADF),
        }
    }

    /// `clock_time_get`: the CPU-time clocks are `BADF`, as in wasmtime.
    pub fn clock_time_get<M: Memory + ?Sized>(&mut self, mem: &mut M, id: i32, _precision: u64, out: u32) -> Result {
        let now = match abi::tag::<u32>(id, clockid::COUNT)? {
            clockid::REALTIME => abi::nanos(self.platform.wall_clock())?,
            clockid::MONOTONIC => self.platform.monotonic_clock(),
            _ => return Err(Errno::BADF),
        };
        write_u64(mem, out, now)
    }

    /// `random_get`.
    pub fn random_get<M: Memory + ?Sized>(&mut self, mem: &mut M, buf: u32, len: u32) -> Result {
        check(mem, buf, u64::from(len))?;
        let Wasi { platform, scratch, .. } = self;
        fill_bytes(mem, buf, len, scratch, |b| {
            platform.random(b);
            Ok(b.len())
        })?;
        Ok(())
    }

    /// `sched_yield`: nothing to yield to.
    pub fn sched_yield<M: Memory + ?Sized>(&mut self, _mem: &mut M) -> Result {
        Ok(())
    }

    /// `proc_raise`: `NOTSUP`, as in wasmtime.
    pub fn proc_raise<M: Memory + ?Sized>(&mut self, _mem: &mut M, sig: i32) -> Result {
        abi::tag::<u8>(sig, 31)?;
        Err(Errno::NOTSUP)
    }

    /// `proc_exit`: the guest ends with `code`.
    pub fn proc_exit<M: Memory + ?Sized>(&mut self, _mem: &mut M, code: u32) -> Exit {
        Exit(code)
    }

    /// `sock_accept`: no descriptor is a socket.
    pub fn sock_accept<M: Memory + ?Sized>(&mut self, _mem: &mut M, fd: u32, flags: i32, _out: u32) -> Result {
        abi::flags::<u16>(flags, fdflags::ALL)?;
        self.fds.get(fd)?;
        Err(Errno::NOTSOCK)
    }

    /// `sock_recv`: no descriptor is a socket.
    #[allow(clippy::too_many_arguments, reason = "the preview1 signature")]
    pub fn sock_recv<M: Memory + ?Sized>(
        &mut self,
        _mem: &mut M,
        fd: u32,
        _iovs: u32,
        _len: u32,
        flags: i32,
        _nread: u32,
        _oflags: u32,
    ) -> Result {
        abi::flags::<u16>(flags, abi::RIFLAGS_ALL)?;
        self.fds.get(fd)?;
        Err(Errno::NOTSOCK)
    }

    /// `sock_send`: no descriptor is a socket.
    pub fn sock_send<M: Memory + ?Sized>(
        &mut self,
        _mem: &mut M,
        fd: u32,
        _iovs: u32,
        _len: u32,
        flags: i32,
        _nwritten: u32,
    ) -> Result {
        abi::flags::<u16>(flags, u16::MAX)?; // `siflags` is a u16, with no flags defined
        self.fds.get(fd)?;
        Err(Errno::NOTSOCK)
    }

    /// `sock_shutdown`: no descriptor is a socket.
    pub fn sock_shutdown<M: Memory + ?Sized>(&mut self, _mem: &mut M, fd: u32, how: i32) -> Result {
        abi::flags::<u8>(how, abi::SDFLAGS_ALL)?;
        self.fds.get(fd)?;
        Err(Errno::NOTSOCK)
    }

    /// `poll_oneoff`: waits until a subscription is ready — files and
    /// stdio always are; clocks when their time comes — and writes an event
    /// for each ready one; `*nevents` gets their count.
    pub fn poll_oneoff<M: Memory + ?Sized>(
        &mut self,
        mem: &mut M,
        subs: u32,
        events: u32,
        n: u32,
        nevents: u32,
    ) -> Result {
        if n == 0 {
            // It would wait forever.
            return Err(Errno::INVAL);
        }
        let bytes = |size: u32| u64::from(n) * u64::from(size);
        check(mem, subs, bytes(SUBSCRIPTION_SIZE))?;
        check(mem, events, bytes(EVENT_SIZE))?;
        check(mem, nevents, 4)?;
        // Two passes over the subscriptions, so that the host holds none
        // of them (a guest may pass millions): the first checks each and
        // finds whether one is ready now, else the first clock to wait
        // for; the second writes the events of those ready, in order.
        let start = self.platform.monotonic_clock();
        let wall = self.platform.wall_clock();
        let mut first: Option<u64> = None;
        let mut any_fd = false;
        for i in 0..n {
            match self.subscription(mem, subs, i, start, wall)? {
                Sub::Clock { timeout, absolute: false, .. } if n == 1 => {
                    // One relative sleep, on any clock: wasmtime's special
                    // case, reporting one byte as it does.
                    self.platform.sleep(timeout);
                    let userdata = u64_at(&read_array::<{ SUBSCRIPTION_SIZE as usize }>(mem, subs)?, 0);
                    let event = abi::event(userdata, Errno::SUCCESS, eventtype::CLOCK, 1, 0);
                    write_bytes(mem, events, &event)?;
                    return write_u32(mem, nevents, 1);
                }
                Sub::Clock { deadline, .. } => {
                    let deadline = deadline.ok_or(Errno::INVAL)?;
                    first = Some(first.map_or(deadline, |f| f.min(deadline)));
                }
                Sub::Fd { .. } => any_fd = true,
            }
        }
        if !any_fd {
            let now = self.platform.monotonic_clock();
            if let Some(first) = first.filter(|&f| f > now) {
                self.platform.sleep(first - now);
            }
        }
        // Deadlines as the call began; due if they have passed now.
        let now = self.platform.monotonic_clock();
        let mut ready = 0u32;
        for i in 0..n {
            let event = match self.subscription(mem, subs, i, start, wall)? {
                Sub::Clock { userdata, deadline: Some(deadline), .. } if deadline <= now => {
                    abi::event(userdata, Errno::SUCCESS, eventtype::CLOCK, 0, 0)
                }
                Sub::Clock { .. } => continue,
                Sub::Fd { userdata, kind, nbytes, flags } => abi::event(userdata, Errno::SUCCESS, kind, nbytes, flags),
            };
            write_bytes(mem, events + ready * EVENT_SIZE, &event)?;
            ready += 1;
        }
        write_u32(mem, nevents, ready)
    }

    /// Subscription `i` of the array at `subs`: a clock and when it is
    /// due on the monotonic clock (`start` and `wall` being the clocks when
    /// the call began; `None` for the CPU-time clocks, which only a single
    /// relative sleep may use), or a descriptor and what it is ready with.
    fn subscription<M: Memory + ?Sized>(&self, mem: &M, subs: u32, i: u32, start: u64, wall: Timestamp) -> Result<Sub> {
        let sub: [u8; SUBSCRIPTION_SIZE as usize] = read_array(mem, subs + i * SUBSCRIPTION_SIZE)?;
        let userdata = u64_at(&sub, 0);
        match abi::tag::<u8>(sub[8], 3)? {
            eventtype::CLOCK => {
                let id = abi::tag::<u32>(u32_at(&sub, 16), clockid::COUNT)?;
                let timeout = u64_at(&sub, 24);
                let flags = abi::flags::<u16>(u16_at(&sub, 40), SUBSCRIPTION_CLOCK_ABSTIME)?;
                let absolute = flags != 0;
                let deadline = match (id, absolute) {
                    (clockid::MONOTONIC, true) => Some(timeout),
                    (clockid::MONOTONIC | clockid::REALTIME, false) => Some(start.saturating_add(timeout)),
                    (clockid::REALTIME, true) => Some(start.saturating_add(timeout.saturating_sub(abi::nanos(wall)?))),
                    _ => None,
                };
                Ok(Sub::Clock { userdata, timeout, absolute, deadline })
            }
            kind => {
                let (nbytes, flags) = self.fd_readiness(u32_at(&sub, 16), kind == eventtype::FD_READ)?;
                Ok(Sub::Fd { userdata, kind, nbytes, flags })
            }
        }
    }

    /// What an `fd_read` (`read`) or `fd_write` subscription on `fd` is
    /// ready with: `(nbytes, flags)` as wasmtime reports them. A regular
    /// file is ready for both whatever it was opened for, as `poll(2)` on
    /// Linux says and wasmtime answers: the read or write itself refuses.
    fn fd_readiness(&self, fd: u32, read: bool) -> Result<(u64, u16)> {
        match (self.fds.get(fd)?, read) {
            (Entry::Stdin(_), true) | (Entry::Stdout(_) | Entry::Stderr(_), false) => Ok((1, 0)),
            (Entry::File(f), true) => {
                let at_end = f.desc.stat()?.size <= f.position;
                Ok((1, if at_end { EVENT_FD_READWRITE_HANGUP } else { 0 }))
            }
            (Entry::File(_), false) => Ok((1, 0)),
            _ => Err(Errno::BADF),
        }
    }
}
