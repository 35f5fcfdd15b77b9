// The page's end of what a runner's worker asks of it and sends it (see
// runner.js, which uses it, and worker.js, the other end): the guest's
// stdin, pulled a piece at a time or read first; a pack's bytes fetched for
// a blocking read where the worker has no synchronous XMLHttpRequest; and
// the guest's stdout and stderr, handed to the page's callbacks with as
// much in flight as the worker is let send.

/** A piece of stdin as bytes; `null` for the end. */
function piece(v, what) {
  if (v === null || v === undefined) return null;
  if (typeof v === "string") return new TextEncoder().encode(v);
  if (v instanceof Uint8Array) return v;
  if (v instanceof ArrayBuffer) return new Uint8Array(v);
  throw new TypeError(`${what} gave ${typeof v}, not a Uint8Array, an ArrayBuffer or a string`);
}

/** `stdin` (a ReadableStream, an async iterable or a function) as
 *  `next()`, a promise of the next non-empty piece or `null` at the end,
 *  and `close()`, after which it gives nothing more. */
export function pieces(stdin) {
  if (typeof stdin === "function") {
    let ended = false;
    return {
      async next() {
        // An empty piece ends it too: a function that keeps giving nothing
        // would otherwise be called without end.
        const b = ended ? null : piece(await stdin(), "stdin");
        if (b === null || b.length === 0) ended = true;
        return ended ? null : b;
      },
      close() {
        ended = true;
      },
    };
  }
  // A ReadableStream's reader, or any async iterable's iterator (a Node
  // Readable): the same pieces, the same end.
  const web = typeof ReadableStream === "function" && stdin instanceof ReadableStream;
  const it = web ? stdin.getReader() : stdin[Symbol.asyncIterator]();
  return {
    async next() {
      for (;;) {
        const { value, done } = await (web ? it.read() : it.next());
        if (done) return null;
        const b = piece(value, "stdin's stream");
        if (b.length > 0) return b;
      }
    },
    close() {
      // Called as the run ends, from the worker's listener: an iterator's
      // `return` that throws, at once or later, must not escape into it.
      try {
        Promise.resolve(web ? it.cancel() : it.return?.()).catch(() => {});
      } catch {
        // The source is given up either way.
      }
    },
  };
}

/** Most bytes of stdin read to its end before the guest starts (a page
 *  that is not cross-origin isolated cannot feed it as it reads). */
const MAX_DRAINED = 256 << 20;

/** All of `src`'s pieces, in one array, at most {@link MAX_DRAINED} bytes.
 *  It gives the event loop a turn every MiB or so, so that a timeout, an
 *  abort or `close()` (which closes `src`) takes effect meanwhile, however
 *  fast a source answers (a function's promises resolve in microtasks,
 *  between which no timer runs). */
export async function drain(src) {
  const all = [];
  let total = 0;
  let since = 0;
  for (let b; (b = await src.next()) !== null; ) {
    total += b.length;
    if (total > MAX_DRAINED) {
      src.close();
      throw new Error(`more than ${MAX_DRAINED >> 20} MiB to read before the guest starts (a page that is not cross-origin isolated reads it first)`);
    }
    all.push(b);
    if ((since += b.length) >= 1 << 20) {
      since = 0;
      await new Promise((turn) => setTimeout(turn, 0));
    }
  }
  const out = new Uint8Array(total);
  all.reduce((at, b) => (out.set(b, at), at + b.length), 0);
  return out;
}

/** Most bytes of an answer the page hands the worker at a time. */
const PIECE = 1 << 20;
/** Most milliseconds the page's fetch for a worker's blocking read may
 *  take, as a browser worker's own synchronous request may. */
const FETCH_TIMEOUT = 60_000;
const EMPTY = new Uint8Array(0);

/**
 * The page's end of what its worker asks and waits for (the guest's pulled
 * stdin; where there is no synchronous XMLHttpRequest, a pack's bytes): a
 * shared buffer, `[state, length]` then a piece. The worker sets state 0,
 * posts its question and waits; the answer's next piece goes in, length
 * is set (-1 at the end, -2 if it failed), then state 1, and it wakes. An
 * answer longer than a piece is taken in turns (`more`). `signal` ends
 * the page's fetches with the run.
 */
export function channel(src, signal) {
  const shared = new SharedArrayBuffer(8 + PIECE);
  const state = new Int32Array(shared, 0, 2);
  const data = new Uint8Array(shared, 8);
  // Two remainders, kept apart: a guest may read part of a stdin piece,
  // then a file of a lazy pack (a fetch, its body sent in turns), then the
  // rest of the piece, which must still be there.
  /** What the last piece of stdin held beyond what the guest took. */
  let unread = EMPTY;
  /** What the answer to the last fetch has not sent yet. */
  let unsent = EMPTY;
  const reply = (n) => {
    Atomics.store(state, 1, n);
    Atomics.store(state, 0, 1);
    Atomics.notify(state, 0);
  };
  /** Sends up to `max` bytes of `bytes`; returns the rest. */
  const send = (bytes, max) => {
    const n = Math.min(max, bytes.length, data.length);
    data.set(bytes.subarray(0, n));
    reply(n);
    return bytes.subarray(n);
  };
  return {
    shared,
    async stdin(max) {
      try {
        while (unread.length === 0) {
          const b = await src.next();
          if (b === null) return reply(-1);
          unread = b;
        }
        unread = send(unread, max);
      } catch {
        reply(-2);
      }
    },
    async fetch(url, range, limit) {
      let head;
      let body = EMPTY;
      try {
        const r = await fetchRange(url, range, limit, signal);
        head = { status: r.status, contentRange: r.contentRange, validator: r.validator, length: r.body.length };
        body = r.body;
      } catch (e) {
        head = { error: `${e?.message ?? e}`.slice(0, 4096) };
      }
      // The head goes whole (it is small); the body follows, on `more`.
      send(new TextEncoder().encode(JSON.stringify(head)), PIECE);
      unsent = body;
    },
    more() {
      unsent = send(unsent, PIECE);
    },
  };
}

/** A GET of `url` with `range` as its `Range` header: status, headers
 *  and at most `limit` body bytes (more fails, and the rest is not read),
 *  within {@link FETCH_TIMEOUT}. */
async function fetchRange(url, range, limit, signal) {
  const timeout = AbortSignal.timeout(FETCH_TIMEOUT);
  const r = await fetch(url, { headers: { Range: range }, signal: AbortSignal.any ? AbortSignal.any([signal, timeout]) : signal });
  const chunks = [];
  let total = 0;
  for await (const c of /** @type {AsyncIterable<Uint8Array>} */ (/** @type {unknown} */ (r.body ?? []))) {
    total += c.length;
    if (limit !== undefined && total > limit) {
      throw new Error(`${url} answered ${range} with more than the ${limit} bytes asked for`);
    }
    chunks.push(c);
  }
  const body = new Uint8Array(total);
  chunks.reduce((at, c) => (body.set(c, at), at + c.length), 0);
  const header = (name) => r.headers.get(name);
  return { status: r.status, contentRange: header("Content-Range"), validator: header("ETag") ?? header("Last-Modified"), body };
}

/** What a write costs against the bounds below: its size in KiB, rounded
 *  up (at least 1). Counted in bytes, a guest writing a byte at a time
 *  could have millions of messages in flight, each costing the page far
 *  more than its byte. (A write is at most 1 MiB here, as core copies a
 *  guest's bytes out a MiB at a time: the Int32 counter is far from full.) */
export const OUTPUT_UNIT = 1024;
/** Most output, in {@link OUTPUT_UNIT}s, the page may have been sent and
 *  not yet handed to its callbacks: past it, a write waits (where the page
 *  is cross-origin isolated, so the worker can wait) ... */
const OUTPUT_IN_FLIGHT = (4 << 20) / OUTPUT_UNIT;
/** ... or, where it is not (the worker cannot wait for the page), the most
 *  a run may write to stdout and stderr together: a write past it fails
 *  (EIO). */
const OUTPUT_UNWAITED = (256 << 20) / OUTPUT_UNIT;

/** The shared flow counter's slots: units in flight, then each stream's
 *  state (see {@link outputs}). */
const IN_FLIGHT = 0;
export const STREAM_SLOT = { stdout: 1, stderr: 2 };
/** A stream's state: its callback has not failed; has, and the guest has
 *  not been told; has, and the guest was told (a write of its got EIO). */
export const OPEN = 0, BROKEN = 1, TOLD = 2;

/** Throws a TypeError unless `v` (the option `what`) is undefined or an
 *  output sink {@link writeTo} takes: runP1 and wasiImports check alike. */
export function checkSink(v, what) {
  if (v !== undefined && typeof v !== "function" && typeof v?.write !== "function") {
    const shown = v === null ? "null" : typeof v;
    throw new TypeError(`${what} must be a function or a writable stream (a Node Writable, a WritableStream's writer, Deno.stdout), not ${shown}`);
  }
}

/**
 * Hands `bytes` to the sink `to`, and calls `done(failed, error)` once it
 * has taken them. A function has at once, unless it returns a promise:
 * then once that settles. A stream (any `write` method) has when its
 * `write(bytes, callback)` calls back (a Node Writable), or when the
 * promise `write` returns settles (a WritableStream's writer; Deno.stdout,
 * whose promise of a count short of the bytes leaves the rest to write).
 * A throw or a rejection, of any value, is a failure. Returns whether the
 * sink answered with a promise: its next write must wait for it.
 */
export function writeTo(to, bytes, done) {
  let once = false;
  const end = (failed, error) => {
    if (once) return;
    once = true;
    done(failed, error);
  };
  const fail = (e) => end(true, e);
  try {
    const r = typeof to === "function" ? to(bytes) : to.write(bytes, (e) => end(!!e, e));
    if (typeof r?.then !== "function") {
      if (typeof to === "function") end(false);
      return false;
    }
    r.then((n) => {
      if (typeof to === "function" || !Number.isSafeInteger(n) || n >= bytes.length) return end(false);
      if (n <= 0) return fail(new Error(`the stream wrote ${n} of ${bytes.length} bytes`));
      writeTo(to, bytes.subarray(n), end);
    }, fail);
    return true;
  } catch (e) {
    fail(e);
    return false;
  }
}

/**
 * The page's end of the guest's output: `sinks.stdout` and `sinks.stderr`
 * (each checked by {@link checkSink}), fed from the worker's messages.
 * `isolated`: the worker can share memory with the page, and so wait.
 *
 * A sink that fails (see {@link writeTo}) takes nothing more for the rest
 * of the run (a later write's bytes would follow a gap); the guest's next
 * write to it fails with EIO, as the WASI class's would. A sink that
 * answers with promises is handed each write once the one before has
 * settled (an async function's writes, or Deno.stdout's, must not
 * overlap); a write counts as in flight until taken.
 * `config` is what the worker's `output` takes; `hand(type, bytes)` gives
 * a message's bytes to its sink; `settled()` resolves once every stream
 * has written all it was handed, to a failure the guest was never told of
 * (`{ type, error }`), or null; `close()` ends the run's listening.
 */
export function outputs(sinks, isolated) {
  const flow = isolated ? new Int32Array(new SharedArrayBuffer(4 * 3)) : null;
  const failed = { stdout: null, stderr: null };
  /** Each stream's last write, once its sink has answered with a promise:
   *  the next write waits for it. */
  const last = { stdout: null, stderr: null };
  /** Every write not taken yet: the run resolves after. */
  const pending = new Set();
  const taken = (n) => {
    if (flow) {
      Atomics.sub(flow, IN_FLIGHT, Math.max(1, Math.ceil(n / OUTPUT_UNIT)));
      Atomics.notify(flow, IN_FLIGHT);
    }
  };
  // Said before the bytes are taken: a worker waiting on the flow wakes
  // to find its stream broken.
  const broke = (type, error) => {
    failed[type] ??= error ?? new Error(`${type}: the stream's write failed`);
    if (flow) Atomics.compareExchange(flow, STREAM_SLOT[type], OPEN, BROKEN);
  };
  // A Node stream's "error" event, heard by no one, ends the process: the
  // run listens while it lasts (a failure of the stream's, as a write's).
  const unlisten = [];
  for (const type of ["stdout", "stderr"]) {
    const to = sinks[type];
    if (typeof to?.on !== "function" || typeof to.off !== "function") continue;
    const heard = (e) => broke(type, e);
    to.on("error", heard);
    unlisten.push(() => to.off("error", heard));
  }
  // Whether the sink answered with a promise is known once it is called:
  // `last` is set after, in `hand`.
  let promised = false;
  const write = (type, bytes) =>
    new Promise((done) => {
      // Broken by a write this one waited for.
      if (failed[type] !== null) return taken(bytes.length), done();
      promised = writeTo(sinks[type], bytes, (failedNow, error) => {
        if (failedNow) broke(type, error);
        taken(bytes.length);
        done();
      });
    });
  return {
    config: {
      flow: flow?.buffer ?? null,
      unit: OUTPUT_UNIT,
      inFlight: OUTPUT_IN_FLIGHT,
      unwaited: OUTPUT_UNWAITED,
      stdout: sinks.stdout !== undefined,
      stderr: sinks.stderr !== undefined,
    },
    hand(type, bytes) {
      if (failed[type] !== null) return taken(bytes.length);
      promised = false;
      const p = last[type] ? last[type].then(() => write(type, bytes)) : write(type, bytes);
      if (last[type] || promised) last[type] = p;
      pending.add(p);
      p.then(() => pending.delete(p));
    },
    async settled() {
      await Promise.all(pending);
      for (const type of ["stdout", "stderr"]) {
        const told = flow !== null && Atomics.load(flow, STREAM_SLOT[type]) === TOLD;
        if (failed[type] !== null && !told) return { type, error: failed[type] };
      }
      return null;
    },
    /** Stops listening to the streams' "error" events. */
    close() {
      for (const off of unlisten.splice(0)) off();
    },
  };
}
