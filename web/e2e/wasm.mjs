// Hand-assembled preview1 guests for the tests that need a module shaped
// just so (a memory that grows, or is shared; a guest run again and again).

const sleb = (n) => {
  const out = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && !(b & 0x40)) || (n === -1 && b & 0x40)) return [...out, b];
    out.push(b | 0x80);
  }
};
const konst = (n) => [0x41, ...sleb(n)];
const str = (s) => [s.length, ...Buffer.from(s)];
const section = (id, body) => [id, body.length, ...body];
const store = (addr, value) => [...konst(addr), ...konst(value), 0x36, 2, 0];
/** fd_write(1, [the iovec at `iov`], 1, `nwritten`), its errno left. */
const write = (iov, nwritten) => [...konst(1), ...konst(iov), ...konst(1), ...konst(nwritten), 0x10, 0];

/** A module whose `_start` runs `code` (fd_write is function 0, proc_exit
 *  1), with one page of memory (two at most, and shared, if `shared`) and
 *  `data` at 0. */
function module(code, data, shared) {
  const body = [0, ...code, 0x0b];
  return new Uint8Array([
    0, 0x61, 0x73, 0x6d, 1, 0, 0, 0,
    ...section(1, [3, 0x60, 4, 0x7f, 0x7f, 0x7f, 0x7f, 1, 0x7f, 0x60, 1, 0x7f, 0, 0x60, 0, 0]),
    ...section(2, [2, ...str("wasi_snapshot_preview1"), ...str("fd_write"), 0, 0,
      ...str("wasi_snapshot_preview1"), ...str("proc_exit"), 0, 1]),
    ...section(3, [1, 2]),
    ...section(5, shared ? [1, 3, 1, 2] : [1, 0, 1]),
    ...section(7, [2, ...str("memory"), 2, 0, ...str("_start"), 0, 2]),
    ...section(10, [1, body.length, ...body]),
    ...section(11, [1, 0, ...konst(0), 0x0b, data.length, ...data]),
  ]);
}

/** A guest that writes "ok\n" to stdout, grows its memory by a page, then
 *  writes "grew\n" from the new page (its iovec and bytes there) and exits
 *  with that fd_write's errno: packfs-web keeps what it learnt of the
 *  guest's memory between calls, so this checks it sees the grown one. */
export function growingGuest({ shared = false } = {}) {
  const code = [
    ...write(0, 100), 0x1a, // fd_write(1, [iovec at 0], 1, 100); drop
    ...konst(1), 0x40, 0, 0x1a, // memory.grow 1; drop
    ...store(65536, 65544), ...store(65540, 5), // the iovec at 65536: 5 bytes at 65544
    ...store(65544, 0x77657267), ...store(65548, 10), // "grew\n"
    ...write(65536, 65552), 0x10, 1, // proc_exit(fd_write(1, [iovec at 65536], 1, 65552))
  ];
  // The iovec at 0: 3 bytes at 8, "ok\n".
  return module(code, [8, 0, 0, 0, 3, 0, 0, 0, ...Buffer.from("ok\n")], shared);
}

/** A guest whose `_start` writes `text` (under 120 bytes) to stdout and
 *  returns, so that it may run again. */
export function writingGuest(text) {
  const bytes = Buffer.from(text);
  return module([...write(0, 128), 0x1a], [8, 0, 0, 0, bytes.length, 0, 0, 0, ...bytes], false);
}

/** A guest that calls fd_write `calls` times, each in a `try` whose
 *  `catch_all` takes whatever it throws (wasm exception handling), from
 *  its `hammer` export, or from its start section too when `inStart` (so
 *  before its Preview1 is started: every call refused); its `_start` then
 *  writes "ok\n". Refused calls throw from the trampoline; thrown from
 *  within packfs-web, each left its shadow stack behind. */
export function catchingGuest({ calls, inStart = false }) {
  const hammer = [
    1, 1, 0x7f, // one i32 local: the count
    0x03, 0x40, // loop
    0x06, 0x40, ...write(0, 100), 0x1a, 0x19, 0x0b, // try fd_write; drop catch_all end
    0x20, 0, ...konst(1), 0x6a, 0x22, 0, ...konst(calls), 0x49, 0x0d, 0, // count += 1; br_if count < calls
    0x0b, 0x0b,
  ];
  const start = [0, ...write(0, 100), 0x1a, 0x0b];
  const code = [2, hammer.length, ...hammer, start.length, ...start];
  return new Uint8Array([
    0, 0x61, 0x73, 0x6d, 1, 0, 0, 0,
    ...section(1, [3, 0x60, 4, 0x7f, 0x7f, 0x7f, 0x7f, 1, 0x7f, 0x60, 1, 0x7f, 0, 0x60, 0, 0]),
    ...section(2, [2, ...str("wasi_snapshot_preview1"), ...str("fd_write"), 0, 0,
      ...str("wasi_snapshot_preview1"), ...str("proc_exit"), 0, 1]),
    ...section(3, [2, 2, 2]),
    ...section(5, [1, 0, 1]),
    ...section(7, [3, ...str("memory"), 2, 0, ...str("_start"), 0, 3, ...str("hammer"), 0, 2]),
    ...(inStart ? section(8, [2]) : []),
    ...section(10, code),
    ...section(11, [1, 0, ...konst(0), 0x0b, 11, 8, 0, 0, 0, 3, 0, 0, 0, ...Buffer.from("ok\n")]),
  ]);
}

/** A guest whose `_start` writes 1 MiB to stdout a write, until a write
 *  fails (then returns). */
export function floodingGuest() {
  const code = [
    0x03, 0x40, // loop
    ...write(0, 8), 0x45, 0x0d, 0, // br_if (fd_write(...) == 0) to the loop
    0x0b,
  ];
  const body = [0, ...code, 0x0b];
  return new Uint8Array([
    0, 0x61, 0x73, 0x6d, 1, 0, 0, 0,
    ...section(1, [2, 0x60, 4, 0x7f, 0x7f, 0x7f, 0x7f, 1, 0x7f, 0x60, 0, 0]),
    ...section(2, [1, ...str("wasi_snapshot_preview1"), ...str("fd_write"), 0, 0]),
    ...section(3, [1, 1]),
    ...section(5, [1, 0, 17]),
    ...section(7, [2, ...str("memory"), 2, 0, ...str("_start"), 0, 1]),
    ...section(10, [1, body.length, ...body]),
    // The iovec at 0: 1 MiB at 65536.
    ...section(11, [1, 0, ...konst(0), 0x0b, 8, 0, 0, 1, 0, 0, 0, 0x10, 0]),
  ]);
}
