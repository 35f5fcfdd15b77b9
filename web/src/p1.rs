//! WASI preview1 guests over this crate's filesystems: [`Preview1`] is
//! core's `wasi_snapshot_preview1` ([`packfs_core::wasi::p1`]). A guest
//! imports trampolines (which `imports.js` builds) to this module's direct
//! exports (`Direct`'s), so its calls reach core with no JavaScript
//! between; its `WebAssembly.Memory` is reached by a wasm copier, or where
//! there is none by JavaScript copies.
//!
//! It is meant for a Web Worker: a read of a lazy pack's file whose bytes
//! are not here yet waits on a synchronous HTTP Range request for them
//! (which a worker may make and a page may not), so a guest reads a pack it
//! was never given in full, fetching only what it reads. Sleeping
//! (`poll_oneoff` on a clock) waits with `Atomics.wait` where the page is
//! cross-origin isolated, else spins.

// Guest pointers and lengths are 32 bits, JavaScript's numbers 53: a silent
// truncation here reads or writes the wrong guest bytes.
#![warn(clippy::cast_possible_truncation)]

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};
use std::sync::Arc;

use js_sys::{Array, Function, Object, Reflect, Uint8Array, WebAssembly};
use packfs_core::wasi::Access;
use packfs_core::wasi::p1::calls::{self, FUNCTIONS, Outcome, ValType, WasmResult};
use packfs_core::wasi::p1::io::{Bytes, Discard};
use packfs_core::wasi::p1::{Errno, Exit, Input, Output, Platform, Wasi, WasiBuilder};
use packfs_core::{Code, FileSystem, Timestamp};
use wasm_bindgen::prelude::*;

use crate::arg;
use crate::clock::clock;
use crate::error::{JsResult, js_error, to_js, type_error};
use crate::fetch::Remote;
use crate::guest_memory::GuestMemory;
use crate::inner::Inner;
use crate::mem_fs::MemFs;
use crate::overlay::Overlay;
use crate::pack::Pack;

#[wasm_bindgen(inline_js = r#"
export class GuestExit extends Error {
  constructor(code) { super(`the guest exited with status ${code}`); this.exitCode = code; }
}
export function exit_error(code) { return new GuestExit(code); }
export function monotonic_ns() { return BigInt(Math.round(performance.now() * 1e6)); }
export function random_fill(buf) {
  for (let i = 0; i < buf.length; i += 65536) crypto.getRandomValues(buf.subarray(i, i + 65536));
}
export function sleep_ms(ms) {
  try {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
  } catch {
    const end = performance.now() + ms;
    while (performance.now() < end) {}
  }
}
"#)]
extern "C" {
    fn exit_error(code: u32) -> JsValue;
    fn monotonic_ns() -> u64;
    fn random_fill(buf: &Uint8Array);
    fn sleep_ms(ms: f64);
}

/// The page's (or worker's) clocks, `crypto.getRandomValues` and sleep.
struct BrowserPlatform;

impl Platform for BrowserPlatform {
    fn wall_clock(&self) -> Timestamp {
        clock()()
    }

    fn monotonic_clock(&self) -> u64 {
        monotonic_ns()
    }

    fn random(&mut self, buf: &mut [u8]) {
        for piece in buf.chunks_mut(1 << 16) {
            #[allow(clippy::cast_possible_truncation, reason = "a piece is at most 64 KiB")]
            let view = Uint8Array::new_with_length(piece.len() as u32);
            random_fill(&view);
            view.copy_to(piece);
        }
    }

    fn sleep(&mut self, nanos: u64) {
        sleep_ms(nanos as f64 / 1e6);
    }

    fn resolution(&self) -> u64 {
        // performance.now() is coarsened to 5 µs or more in browsers.
        5_000
    }
}

/// A JavaScript callback taking each write's bytes.
///
/// `Send`, as core's [`Output`] must be, with no `unsafe` here: wasm-bindgen
/// makes `JsValue` (so `Function`) `Send` only without the `atomics` target
/// feature, that is where wasm32 has no threads (and on the host, where
/// there is no JavaScript to call). A threaded build is refused below.
struct Callback(Function);

// With threads a JavaScript function belongs to the thread that made it;
// a guest's stdout then needs a way to reach it, which this module has not.
#[cfg(target_feature = "atomics")]
compile_error!("packfs-web has no threaded build: preview1's stdout and stderr call JavaScript functions");

/// Input pulled from a JavaScript function as the guest reads: called with
/// the most bytes the read takes, it returns a `Uint8Array` (of any length:
/// what the read does not take is kept for the next), or `null` or an empty
/// array at the end. A throw, or anything else returned, is `EIO`. The
/// runner's worker makes one that waits on the page for each piece.
struct Pull {
    f: Function,
    /// What the last call returned and reads have not taken yet.
    kept: Bytes,
}

impl Input for Pull {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        let n = self.kept.read(buf)?;
        if n > 0 || buf.is_empty() {
            return Ok(n);
        }
        let got = self.f.call1(&JsValue::NULL, &JsValue::from_f64(buf.len() as f64)).map_err(|_| Errno::IO)?;
        if got.is_null() || got.is_undefined() {
            return Ok(0);
        }
        self.kept = Bytes::new(got.dyn_into::<Uint8Array>().map_err(|_| Errno::IO)?.to_vec());
        self.kept.read(buf)
    }
}

impl Output for Callback {
    fn write(&mut self, data: &[u8]) -> Result<(), Errno> {
        self.0.call1(&JsValue::NULL, &Uint8Array::from(data)).map(drop).map_err(|_| Errno::IO)
    }
}

fn get(options: &JsValue, key: &str) -> JsValue {
    Reflect::get(options, &key.into()).unwrap_or(JsValue::UNDEFINED)
}

fn invalid(what: &str) -> JsValue {
    js_error(Code::Invalid, what)
}

/// A preopen's `readOnly`: absent, `true` or `false`.
fn access(read_only: &JsValue) -> JsResult<Access> {
    match read_only.as_bool() {
        Some(true) => Ok(Access::ReadOnly),
        Some(false) => Ok(Access::ReadWrite),
        None if read_only.is_undefined() || read_only.is_null() => Ok(Access::ReadWrite),
        None => Err(type_error("readOnly must be true or false")),
    }
}

/// A preview1 guest's state: build it, preopen filesystems, give it the
/// instance's memory, then let the guest's imports [`call`](Self::call) it
/// (or, faster, reach it through packfs-web's direct exports with its
/// [`id`](Self::id): see `imports.js`).
#[wasm_bindgen]
pub struct Preview1 {
    builder: Option<WasiBuilder>,
    guest: Rc<RefCell<Guest>>,
    id: u32,
    /// The preopens' guest paths so far: each once.
    paths: Vec<String>,
}

impl Drop for Preview1 {
    fn drop(&mut self) {
        GUESTS.with(|g| g.borrow_mut().retain(|(id, _)| *id != self.id));
    }
}

/// What a guest's calls run on once it has started.
#[derive(Default)]
struct Guest {
    wasi: Option<Wasi>,
    memory: Option<GuestMemory>,
    /// The lazy packs under the preopens, to fetch what a call wanted.
    remotes: Vec<Rc<Remote>>,
}

impl Guest {
    /// Runs one preview1 call: `None` before [`Preview1::start`]. A call
    /// that failed for want of a lazy pack's bytes fetches them, blocking,
    /// and runs again ([`calls::loading`]).
    fn run(
        &mut self,
        mut call: impl FnMut(&mut Wasi, &mut GuestMemory) -> Result<Option<i32>, Exit>,
    ) -> Option<Result<Option<i32>, Exit>> {
        let (Some(wasi), Some(mem)) = (&mut self.wasi, &mut self.memory) else {
            return None;
        };
        // What earlier calls wanted is not this call's to fetch.
        for r in &self.remotes {
            r.pack.take_wanted();
        }
        // Every pack fetches what it wanted; a failed fetch leaves the
        // call's errno.
        let remotes = &self.remotes;
        let fetch = || {
            let mut got = false;
            for r in remotes {
                got |= r.fetch_wanted_blocking().unwrap_or(false);
            }
            got
        };
        Some(calls::loading(|| call(wasi, mem), fetch))
    }
}

thread_local! {
    /// This thread's live guests by id, for the direct exports. An id is
    /// never given twice, so a call from an instance whose `Preview1` was
    /// freed finds nothing, whatever guests came after it.
    static GUESTS: RefCell<Vec<(u32, Weak<RefCell<Guest>>)>> = const { RefCell::new(Vec::new()) };
    static NEXT_ID: Cell<u32> = const { Cell::new(1) };
}

/// What a guest call made from within one of the same guest's calls (a
/// stdout callback that calls the guest again) is told: its state is the
/// outer call's until that returns.
const REENTERED: &str = "a guest call from within one of its own calls (a callback calling its guest again)";

/// Why a direct export refused a call, as the negative number it returns
/// in place of an errno (errnos are 0 to 76): the guest's trampoline
/// throws then (`imports.js`, with [`Preview1::last_refusal`]'s words), once
/// packfs-web's frames are gone. Throwing from within them would skip
/// giving back the export's shadow stack: 12,000 refused calls caught by
/// the guest overran it, and every later run of the worker failed.
#[derive(Clone, Copy)]
#[repr(i32)]
enum Refusal {
    /// No such guest, or one not started.
    NoGuest = -1,
    /// Made from within one of the guest's own calls.
    Reentered = -2,
    /// `proc_exit`, which has no direct export (it throws: `direct!`).
    Exit = -3,
}

impl Refusal {
    fn words(code: i32) -> &'static str {
        match code {
            -1 => "a guest call with no started Preview1 to run on",
            -2 => REENTERED,
            -3 => "proc_exit through a direct export",
            _ => "a guest call refused",
        }
    }
}

thread_local! {
    /// Direct exports under way on this thread. One left counted when none
    /// runs means a call was unwound through packfs-web's frames (a trap
    /// inside them, or a JavaScript exception from an import that does not
    /// catch), whose shadow stack and borrows are then in doubt: the
    /// runner retires the worker ([`Preview1::in_doubt`]).
    static UNDER_WAY: Cell<u32> = const { Cell::new(0) };
    /// The last refusal's code, for the trampoline's words.
    static LAST_REFUSAL: Cell<i32> = const { Cell::new(0) };
}

/// A direct export's call on guest `id`: its errno, or a [`Refusal`]'s
/// negative number (the trampoline throws for it). Nothing is thrown from
/// here, so every call returns through the export's epilogue.
fn direct(id: u32, call: impl FnMut(&mut Wasi, &mut GuestMemory) -> Result<Option<i32>, Exit>) -> i32 {
    UNDER_WAY.with(|u| u.set(u.get() + 1));
    let guest = GUESTS.with(|g| g.borrow().iter().find(|(i, _)| *i == id).and_then(|(_, g)| g.upgrade()));
    let outcome = match guest.as_deref().map(RefCell::try_borrow_mut) {
        Some(Ok(mut g)) => g.run(call).ok_or(Refusal::NoGuest),
        Some(Err(_)) => Err(Refusal::Reentered),
        None => Err(Refusal::NoGuest),
    };
    drop(guest);
    UNDER_WAY.with(|u| u.set(u.get() - 1));
    match outcome {
        Ok(Ok(errno)) => errno.unwrap_or(0),
        Ok(Err(_)) => refused(Refusal::Exit),
        Err(why) => refused(why),
    }
}

/// `why`'s code, kept for [`Preview1::last_refusal`].
fn refused(why: Refusal) -> i32 {
    LAST_REFUSAL.with(|l| l.set(why as i32));
    why as i32
}

/// One export per preview1 function: the guest's id, then the function's
/// own wasm parameters. wasm-bindgen names each `direct_` and the function
/// (and adds a JavaScript twin, a static method of `Direct`, which nothing
/// uses); a guest reaches them through a trampoline that passes its id
/// (`imports.js`). `proc_exit` has none: it ends the guest by throwing,
/// which the JavaScript lowering does ([`Preview1::call`]), never from
/// within packfs-web's frames.
macro_rules! direct {
    (@ [$($done:tt)*]) => {
        #[wasm_bindgen]
        impl Direct { $($done)* }
    };
    (@ [$($done:tt)*] proc_exit($($arg:ident: $ty:ty),*); $($rest:tt)*) => { direct!(@ [$($done)*] $($rest)*); };
    (@ [$($done:tt)*] $name:ident($($arg:ident: $ty:ty),* $(,)?); $($rest:tt)*) => {
        direct!(@ [$($done)*
            #[allow(clippy::too_many_arguments, reason = "the preview1 signature")]
            pub fn $name(guest: u32, $($arg: $ty),*) -> i32 {
                direct(guest, |wasi, mem| Outcome::into_wasm(wasi.$name(mem, $($arg),*)).map(WasmResult::value))
            }
        ] $($rest)*);
    };
    ($($list:tt)*) => { direct!(@ [] $($list)*); };
}

/// The holder of the direct exports (see `direct!`).
#[doc(hidden)]
#[wasm_bindgen(skip_typescript)]
pub struct Direct {}

packfs_core::for_each_p1_function!(direct);

#[wasm_bindgen]
impl Preview1 {
    /// A guest's state from `{ args, env, stdin, stdout, stderr }`: `args`
    /// an array of strings (the first the program's name), `env` an object
    /// of strings, `stdin` bytes or a function pulled from as the guest
    /// reads (called with the most bytes a read takes, it returns a
    /// `Uint8Array`, or `null` at the end), `stdout`/`stderr` functions
    /// called with each write's bytes (discarded without).
    #[wasm_bindgen(constructor)]
    pub fn new(#[wasm_bindgen(unchecked_param_type = "Preview1Options")] options: JsValue) -> JsResult<Preview1> {
        if !options.is_undefined() && !options.is_object() {
            return Err(type_error("options must be an object"));
        }
        let mut b = Wasi::builder(Box::new(BrowserPlatform));
        let args = get(&options, "args");
        if !args.is_undefined() {
            let args: Array = args.dyn_into().map_err(|_| type_error("options.args must be an array of strings"))?;
            for (i, a) in args.iter().enumerate() {
                let a = a.as_string().ok_or_else(|| type_error("options.args must be an array of strings"))?;
                // C's argv ends each string at its first NUL: the guest
                // would see less than was given.
                if a.contains('\0') {
                    return Err(type_error(&format!(
                        "options.args[{i}] holds a NUL character, which an argument cannot"
                    )));
                }
                b = b.arg(a);
            }
        }
        let env = get(&options, "env");
        if !env.is_undefined() {
            let env: Object = env.dyn_into().map_err(|_| type_error("options.env must be an object of strings"))?;
            for pair in Object::entries(&env).iter() {
                let pair: Array = pair.unchecked_into();
                let (k, v) = (pair.get(0).as_string(), pair.get(1).as_string());
                let (Some(k), Some(v)) = (k, v) else {
                    return Err(type_error("options.env must be an object of strings"));
                };
                // The guest reads `NAME=value`: a name holding `=` would
                // split elsewhere, a NUL end it early.
                if k.is_empty() || k.contains(['=', '\0']) || v.contains('\0') {
                    return Err(type_error(&format!(
                        "options.env {k:?}: a name must be non-empty without '=' or NUL, a value without NUL"
                    )));
                }
                b = b.env(k, v);
            }
        }
        let stdin = get(&options, "stdin");
        let stdin: Box<dyn Input> = if let Some(bytes) = stdin.dyn_ref::<Uint8Array>() {
            Box::new(Bytes::new(bytes.to_vec()))
        } else if let Some(f) = stdin.dyn_ref::<Function>() {
            Box::new(Pull { f: f.clone(), kept: Bytes::default() })
        } else if stdin.is_undefined() {
            Box::new(Bytes::default())
        } else {
            return Err(type_error("options.stdin must be a Uint8Array or a function"));
        };
        let output = |key: &str| -> JsResult<Box<dyn Output>> {
            let f = get(&options, key);
            match f.dyn_into::<Function>() {
                Ok(f) => Ok(Box::new(Callback(f))),
                Err(f) if f.is_undefined() => Ok(Box::new(Discard)),
                Err(_) => Err(type_error(&format!("options.{key} must be a function"))),
            }
        };
        b = b.stdin(stdin).stdout(output("stdout")?).stderr(output("stderr")?);
        let id = NEXT_ID.with(|n| {
            let id = n.get();
            n.set(id.checked_add(1).ok_or_else(|| invalid("no guest ids left on this thread"))?);
            Ok::<_, JsValue>(id)
        })?;
        let guest = Rc::<RefCell<Guest>>::default();
        GUESTS.with(|g| g.borrow_mut().push((id, Rc::downgrade(&guest))));
        Ok(Preview1 { builder: Some(b), guest, id, paths: Vec::new() })
    }

    /// The import names of `wasi_snapshot_preview1`, in the order
    /// [`call`](Self::call) numbers them.
    pub fn functions() -> Vec<String> {
        FUNCTIONS.iter().map(|(name, _)| name.to_string()).collect()
    }

    /// Each function's parameters, in the same order: `i` for a 32-bit
    /// one, `I` for a 64-bit one (passed to [`call`](Self::call) as two
    /// numbers, its low and high 32 bits).
    pub fn signatures() -> Vec<String> {
        FUNCTIONS
            .iter()
            .map(|(_, params)| params.iter().map(|t| if *t == ValType::I64 { 'I' } else { 'i' }).collect())
            .collect()
    }

    fn add(&mut self, path: &str, inner: &Inner, fs: Arc<dyn FileSystem>, access: Access) -> JsResult<()> {
        // A guest resolves its paths against the preopens' own: one with
        // `..` names no directory, and a second of a name is never found.
        if path.is_empty() || path.contains('\0') || path.split('/').any(|c| c == "..") {
            return Err(type_error(&format!("preopen path {path:?}: not empty, without '..' or NUL")));
        }
        if self.paths.iter().any(|p| p == path) {
            return Err(type_error(&format!("preopen path {path:?}: given twice")));
        }
        let b = self.builder.take().ok_or_else(|| invalid("preopen after start"))?;
        self.paths.push(path.to_owned());
        self.builder = Some(b.preopen(path, fs, access));
        if let Some(r) = &inner.remote {
            self.guest.try_borrow_mut().map_err(|_| js_error(Code::Busy, REENTERED))?.remotes.push(r.clone());
        }
        Ok(())
    }

    /// Shows `tree`, a `MemFs`, a `Pack` or an `Overlay`, to the guest at
    /// `path` (descriptors 3, 4, ... in order); `readOnly` refuses every
    /// change (a pack always does).
    pub fn preopen(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
        #[wasm_bindgen(unchecked_param_type = "MemFs | Pack | Overlay")] tree: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "boolean")] read_only: JsValue,
    ) -> JsResult<()> {
        let path = arg::string(&path, "path")?;
        let access = access(&read_only)?;
        if let Ok(mem) = arg::shared::<MemFs>(&tree, "tree", "MemFs") {
            return self.add(&path, &mem.inner, mem.mem.clone(), access);
        }
        if let Ok(overlay) = arg::shared::<Overlay>(&tree, "tree", "Overlay") {
            return self.add(&path, &overlay.inner, overlay.mem.clone(), access);
        }
        let pack: Pack = arg::shared(&tree, "tree", "MemFs, Pack or Overlay")?;
        self.add(&path, &pack.inner, pack.pack.clone(), Access::ReadOnly)
    }

    /// @deprecated `preopen(path, tree, readOnly)` takes every tree.
    #[wasm_bindgen(js_name = preopenMemFs)]
    pub fn preopen_memfs(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
        #[wasm_bindgen(unchecked_param_type = "MemFs")] fs: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "boolean")] read_only: JsValue,
    ) -> JsResult<()> {
        let (path, fs): (_, MemFs) = (arg::string(&path, "path")?, arg::shared(&fs, "fs", "MemFs")?);
        let access = access(&read_only)?;
        self.add(&path, &fs.inner, fs.mem.clone(), access)
    }

    /// @deprecated `preopen(path, pack)` takes every tree.
    #[wasm_bindgen(js_name = preopenPack)]
    pub fn preopen_pack(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Pack")] pack: JsValue,
    ) -> JsResult<()> {
        let (path, pack): (_, Pack) = (arg::string(&path, "path")?, arg::shared(&pack, "pack", "Pack")?);
        self.add(&path, &pack.inner, pack.pack.clone(), Access::ReadOnly)
    }

    /// @deprecated `preopen(path, tree, readOnly)` takes every tree.
    #[wasm_bindgen(js_name = preopenOverlay)]
    pub fn preopen_overlay(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Overlay")] overlay: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "boolean")] read_only: JsValue,
    ) -> JsResult<()> {
        let (path, fs): (_, Overlay) = (arg::string(&path, "path")?, arg::shared(&overlay, "overlay", "Overlay")?);
        let access = access(&read_only)?;
        self.add(&path, &fs.inner, fs.mem.clone(), access)
    }

    /// Gives the guest's exported memory; the preopens are then fixed.
    pub fn start(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "WebAssembly.Memory")] memory: JsValue,
    ) -> JsResult<()> {
        let memory: WebAssembly::Memory =
            memory.dyn_into().map_err(|_| type_error("memory must be a WebAssembly.Memory"))?;
        let mut guest = self.guest.try_borrow_mut().map_err(|_| js_error(Code::Busy, REENTERED))?;
        let b = self.builder.take().ok_or_else(|| invalid("started twice"))?;
        guest.wasi = Some(b.build().map_err(|e| to_js(&e, None))?);
        guest.memory = Some(GuestMemory::new(memory));
        Ok(())
    }

    /// What the last direct export refused on this thread said (its answer
    /// a negative number in place of an errno): the words the trampoline
    /// throws just after.
    #[wasm_bindgen(js_name = lastRefusal)]
    pub fn last_refusal() -> String {
        Refusal::words(LAST_REFUSAL.with(Cell::get)).to_owned()
    }

    /// Whether packfs-web's state on this thread is in doubt: a direct
    /// call was unwound through its frames (a trap inside them), leaving
    /// its shadow stack or a borrow behind. Asked when no guest call runs;
    /// a runner then retires its worker rather than run the next guest on
    /// it.
    #[wasm_bindgen(js_name = inDoubt)]
    pub fn in_doubt() -> bool {
        UNDER_WAY.with(Cell::get) != 0
    }

    /// This guest's number on this thread, never given to another: what
    /// its trampoline passes to packfs-web's direct exports (`imports.js`).
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Calls preview1 function number `index` with the guest's arguments
    /// as numbers, as [`signatures`](Self::signatures) lays them out (the
    /// rest zeros); returns the errno. Throws a `GuestExit` (with
    /// `exitCode`) for `proc_exit`, and an `Error` for a call made from
    /// within one of the guest's own calls (a stdout callback calling the
    /// guest again), as the direct exports do. A call that failed for want
    /// of a lazy pack's bytes fetches them, blocking, and runs again
    /// ([`calls::loading`]).
    #[allow(clippy::too_many_arguments, reason = "the widest preview1 call, in numbers: no array per call")]
    pub fn call(
        &mut self,
        index: u32,
        a0: f64,
        a1: f64,
        a2: f64,
        a3: f64,
        a4: f64,
        a5: f64,
        a6: f64,
        a7: f64,
        a8: f64,
        a9: f64,
        a10: f64,
    ) -> JsResult<i32> {
        let (name, params) = FUNCTIONS.get(index as usize).ok_or_else(|| invalid("no such preview1 function"))?;
        let raw = [a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10];
        // Each is an integer: an i32 in its signed range, or a u32 half of
        // an i64; `as` keeps it (and saturates anything else).
        #[allow(clippy::cast_possible_truncation, reason = "an integer number within i64, as said above")]
        let mut words = raw.iter().map(|&x| x as i64);
        let mut values = [0i64; 9];
        for (v, t) in values.iter_mut().zip(params.iter()) {
            let lo = words.next().unwrap_or(0);
            *v = match t {
                // An i32 arrives as a JS number in its signed range.
                ValType::I32 => lo,
                ValType::I64 => (lo & 0xffff_ffff) | (words.next().unwrap_or(0) << 32),
            };
        }
        let values = &values[..params.len()];
        // `values` has the function's own arity, so `calls::call` runs it.
        // Refused, not a panic, while the guest's own call holds it: the
        // error is thrown once this function has returned.
        let mut guest = self.guest.try_borrow_mut().map_err(|_| js_error(Code::Busy, REENTERED))?;
        let outcome = guest.run(|wasi, mem| calls::call(wasi, mem, name, values).unwrap_or(Ok(None)));
        match outcome {
            None => Err(invalid("a guest call before start")),
            Some(Ok(errno)) => Ok(errno.unwrap_or(0)),
            Some(Err(exit)) => Err(exit_error(exit.0)),
        }
    }
}
