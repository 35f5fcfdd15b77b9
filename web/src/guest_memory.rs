//! A preview1 guest's `WebAssembly.Memory`, seen from packfs-web: another
//! instance's memory, reached by copies ([`GuestMemory`]). Where the
//! engine has multi-memory and the memory is not shared, a copier module
//! per guest does them in wasm; elsewhere a JavaScript mover.

// Guest pointers and lengths are 32 bits, JavaScript's numbers 53: a silent
// truncation here reads or writes the wrong guest bytes.
#![warn(clippy::cast_possible_truncation)]

use std::cell::Cell;

use js_sys::WebAssembly;
use packfs_core::wasi::p1::Memory;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(inline_js = r#"
// Copies between packfs-web's memory and a guest's with no JavaScript on
// the way: packfs-web imports `move_bytes`, an export of a small wasm
// module (`SWITCH`), so the call stays in wasm. It calls slot `slot` of
// its table, where `bind_copier` puts a copier made for one guest: a wasm
// module that imports both memories (multi-memory) and copies with
// `memory.copy`. Slot 2s copies to guest s, 2s + 1 from it.
const SWITCH = new WebAssembly.Instance(new WebAssembly.Module(new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
  // types: (slot, to, from, len), and a copier's (to, from, len)
  0x01, 0x0e, 0x02, 0x60, 0x04, 0x7f, 0x7f, 0x7f, 0x7f, 0x00, 0x60, 0x03, 0x7f, 0x7f, 0x7f, 0x00,
  0x03, 0x02, 0x01, 0x00, // one function
  0x04, 0x04, 0x01, 0x70, 0x00, 0x00, // a funcref table, empty
  // exports "move" (the function) and "slots" (the table)
  0x07, 0x10, 0x02, 0x04, 0x6d, 0x6f, 0x76, 0x65, 0x00, 0x00, 0x05, 0x73, 0x6c, 0x6f, 0x74, 0x73, 0x01, 0x00,
  // move: call_indirect slots[slot](to, from, len)
  0x0a, 0x0f, 0x01, 0x0d, 0x00, 0x20, 0x01, 0x20, 0x02, 0x20, 0x03, 0x20, 0x00, 0x11, 0x01, 0x00, 0x0b,
])));
export const move_bytes = SWITCH.exports.move;

// A copier: imports m.guest (memory 0) and m.wasm (memory 1), exports
// to_guest and from_guest. null where the engine has no multi-memory.
const COPIER = (() => {
  try {
    return new WebAssembly.Module(new Uint8Array([
      0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
      0x01, 0x07, 0x01, 0x60, 0x03, 0x7f, 0x7f, 0x7f, 0x00, // type (to, from, len)
      0x02, 0x16, 0x02, // imports
      0x01, 0x6d, 0x05, 0x67, 0x75, 0x65, 0x73, 0x74, 0x02, 0x00, 0x00, // m.guest: memory, min 0
      0x01, 0x6d, 0x04, 0x77, 0x61, 0x73, 0x6d, 0x02, 0x00, 0x00, // m.wasm: memory, min 0
      0x03, 0x03, 0x02, 0x00, 0x00, // two functions
      0x07, 0x19, 0x02, // exports
      0x08, 0x74, 0x6f, 0x5f, 0x67, 0x75, 0x65, 0x73, 0x74, 0x00, 0x00, // to_guest
      0x0a, 0x66, 0x72, 0x6f, 0x6d, 0x5f, 0x67, 0x75, 0x65, 0x73, 0x74, 0x00, 0x01, // from_guest
      0x0a, 0x1b, 0x02,
      0x0c, 0x00, 0x20, 0x00, 0x20, 0x01, 0x20, 0x02, 0xfc, 0x0a, 0x00, 0x01, 0x0b, // memory.copy guest <- wasm
      0x0c, 0x00, 0x20, 0x00, 0x20, 0x01, 0x20, 0x02, 0xfc, 0x0a, 0x01, 0x00, 0x0b, // memory.copy wasm <- guest
    ]));
  } catch {
    return null;
  }
})();
const free = [];

// A slot pair copying between `guest` and `wasm` (packfs-web's memory),
// or -1: no multi-memory, or a shared guest memory (the copier imports an
// unshared one).
export function bind_copier(guest, wasm) {
  if (!COPIER) return -1;
  let copier;
  try {
    copier = new WebAssembly.Instance(COPIER, { m: { guest, wasm } });
  } catch {
    return -1;
  }
  const slots = SWITCH.exports.slots;
  const s = free.length ? free.pop() : slots.grow(2) / 2;
  slots.set(2 * s, copier.exports.to_guest);
  slots.set(2 * s + 1, copier.exports.from_guest);
  return s;
}

export function unbind_copier(s) {
  SWITCH.exports.slots.set(2 * s, null);
  SWITCH.exports.slots.set(2 * s + 1, null);
  free.push(s);
}
"#)]
extern "C" {
    /// Copies `len` bytes from `from` to `to` by slot `slot` of the copiers.
    fn move_bytes(slot: i32, to: i32, from: i32, len: i32);
    /// A copier pair for `guest` and packfs-web's memory: its slot, or -1.
    fn bind_copier(guest: &WebAssembly::Memory, wasm: &JsValue) -> i32;
    fn unbind_copier(slot: i32);
}

#[wasm_bindgen(inline_js = r#"
// Where there is no copier (see `move_bytes`): copies between packfs-web's
// memory and a guest's in JavaScript, making no object per
// copy: a view of each memory is kept and taken again only when a grow has
// detached it (its length is then 0) or, for the guest's, when packfs-web
// asks for its length (`refresh`: a grown SharedArrayBuffer leaves the
// old view as it was, valid for the length packfs-web last learnt).
// Short copies go byte by byte, which beats making a subarray for `set`.
export class Mover {
  constructor(guest, wasm) {
    this.guest = guest;
    this.wasm = wasm;
    this.g = new Uint8Array(guest.buffer);
    this.w = new Uint8Array(wasm.buffer);
  }
  refresh() {
    this.g = new Uint8Array(this.guest.buffer);
    return this.g.byteLength;
  }
  theirs() {
    if (this.g.byteLength === 0) this.g = new Uint8Array(this.guest.buffer);
    return this.g;
  }
  mine() {
    if (this.w.byteLength === 0) this.w = new Uint8Array(this.wasm.buffer);
    return this.w;
  }
  to_guest(to, from, len) {
    const g = this.theirs(), w = this.mine();
    if (len <= 64) for (let i = 0; i < len; i++) g[to + i] = w[from + i];
    else g.set(w.subarray(from, from + len), to);
  }
  from_guest(to, from, len) {
    const g = this.theirs(), w = this.mine();
    if (len <= 64) for (let i = 0; i < len; i++) w[to + i] = g[from + i];
    else w.set(g.subarray(from, from + len), to);
  }
}
"#)]
extern "C" {
    type Mover;
    #[wasm_bindgen(constructor)]
    fn new(guest: &WebAssembly::Memory, wasm: &JsValue) -> Mover;
    /// The guest memory's length now, up to 2^32; its view taken again.
    #[wasm_bindgen(method)]
    fn refresh(this: &Mover) -> f64;
    /// Copies `len` bytes at `from` in packfs-web's memory to `to` in the guest's.
    #[wasm_bindgen(method)]
    fn to_guest(this: &Mover, to: u32, from: u32, len: u32);
    /// Copies `len` bytes at `from` in the guest's memory to `to` in packfs-web's.
    #[wasm_bindgen(method)]
    fn from_guest(this: &Mover, to: u32, from: u32, len: u32);
}

/// Where `bytes` are in packfs-web's own memory, for the mover. A wasm32
/// address is 32 bits; elsewhere (host tests) no guest memory exists.
fn address(bytes: &[u8]) -> u32 {
    u32::try_from(bytes.as_ptr().addr()).expect("a wasm32 address")
}

/// The guest's memory, reached by its copier slot pair (`move_bytes`)
/// where the engine made one, else through the [`Mover`]. Its length is
/// asked of JavaScript only when a range falls outside the length learnt
/// last: a memory only grows, and asking is a crossing.
pub(crate) struct GuestMemory {
    mover: Mover,
    /// The copier slot pair, if any.
    copier: Option<i32>,
    /// Its length when last asked, up to 2^32.
    size: Cell<u64>,
}

impl GuestMemory {
    pub(crate) fn new(memory: WebAssembly::Memory) -> Self {
        let wasm = wasm_bindgen::memory();
        let slot = bind_copier(&memory, &wasm);
        GuestMemory { mover: Mover::new(&memory, &wasm), copier: (slot >= 0).then_some(slot), size: Cell::new(0) }
    }

    /// `len` as the mover takes it: callers move at most a copy chunk or a
    /// bounded string at a time, far below 4 GiB.
    fn len(len: usize) -> u32 {
        u32::try_from(len).expect("a copy is far smaller than 4 GiB")
    }
}

impl Drop for GuestMemory {
    fn drop(&mut self) {
        if let Some(slot) = self.copier {
            unbind_copier(slot);
        }
    }
}

impl Memory for GuestMemory {
    fn size(&self) -> u64 {
        #[allow(
            clippy::cast_possible_truncation,
            reason = "a byte length is an integer below 2^53: u64 holds it exactly"
        )]
        let size = self.mover.refresh() as u64;
        self.size.set(size);
        size
    }

    fn contains(&self, ptr: u32, len: u64) -> bool {
        let end = u64::from(ptr) + len;
        end <= self.size.get() || end <= self.size()
    }

    fn read(&self, ptr: u32, buf: &mut [u8]) {
        let (to, len) = (address(buf), Self::len(buf.len()));
        match self.copier {
            Some(s) => move_bytes(2 * s + 1, to.cast_signed(), ptr.cast_signed(), len.cast_signed()),
            None => self.mover.from_guest(to, ptr, len),
        }
    }

    fn write(&mut self, ptr: u32, data: &[u8]) {
        let (from, len) = (address(data), Self::len(data.len()));
        match self.copier {
            Some(s) => move_bytes(2 * s, ptr.cast_signed(), from.cast_signed(), len.cast_signed()),
            None => self.mover.to_guest(ptr, from, len),
        }
    }
}
