// The guest benchmark's clock: the guest times each phase itself with the
// WASI monotonic clock, so every runtime must hand it the same precise one.
// Imported by the page (guest.js) and bundled into the peers' workers.

/** The grain of performance.now() here, in nanoseconds: the smallest step
 *  it takes (Chromium: 5 µs when cross-origin isolated, 100 µs when not). */
export function grainNs() {
  let grain = Infinity;
  let last = performance.now();
  for (let steps = 0; steps < 200; ) {
    const t = performance.now();
    if (t !== last) {
      grain = Math.min(grain, t - last);
      last = t;
      steps++;
    }
  }
  return Math.round(grain * 1e6);
}

const MONOTONIC = 1;

/**
 * Replaces `imports.clock_time_get` for the monotonic clock with
 * performance.now() in nanoseconds, as PackFS's runP1 and
 * browser_wasi_shim compute it (@tybys/wasm-util truncates it to whole
 * milliseconds, @runno/wasi reads Date). `memory()` returns the guest's
 * memory once it is instantiated. Other clocks go to the runtime's own.
 */
export function preciseClock(imports, memory) {
  const own = imports.clock_time_get;
  let view = null;
  imports.clock_time_get = (id, precision, ptr) => {
    if (id !== MONOTONIC) return own(id, precision, ptr);
    const buffer = memory().buffer;
    if (view?.buffer !== buffer) view = new DataView(buffer);
    view.setBigUint64(ptr, BigInt(Math.round(performance.now() * 1e6)), true);
    return 0;
  };
}
