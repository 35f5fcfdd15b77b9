// The guest's stdout and stderr on the page (see runner.js, which uses
// it, and worker.js, which sends them): handed to the page's sinks with as
// much in flight as the worker is let send; and the sinks themselves, as
// runP1 and wasiImports take them.

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
