// The page's end of what a runner's worker asks of it (see runner.js,
// which uses it, and worker.js, the other end): the guest's stdin, pulled
// a piece at a time or read first; and a pack's bytes fetched for a
// blocking read where the worker has no synchronous XMLHttpRequest. What
// the worker sends the page (the guest's output) is output.js's.

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
