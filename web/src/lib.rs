//! # packfs-web
//!
//! PackFS in the browser: the in-memory and pack backends and the overlay of
//! `packfs-core`, bound to JavaScript with wasm-bindgen.
//!
//! ```js
//! import init, { MemFs, Pack, Overlay } from "./pkg/packfs_web.js";
//! await init();
//! const pack = await Pack.fromUrl("assets.pack"); // index only; blobs on read
//! const text = new TextDecoder().decode(await pack.readFile("docs/readme.md"));
//! const fs = new Overlay(pack, { maxBytes: 1 << 20 });
//! await fs.writeFile("notes.txt", "changed");
//! const bytes = await fs.compact(); // a new pack, as a Uint8Array
//! ```
//!
//! Three classes share one set of path methods: [`MemFs`] (writable, in
//! memory), [`Pack`] (read-only; from bytes, or from a URL by HTTP Range
//! requests, fetching each file's bytes on its first read) and [`Overlay`]
//! (a `MemFs` over a `Pack`: changes stay in memory). Methods that may need
//! bytes still on the network return promises (`readFile`, `writeFile`,
//! `compact`, `verify`); the rest answer at once from the index. Errors are
//! `Error`s with `code` (the WASI `error-code` name, see [`error`]) and
//! `errno`. [`p1`] runs WASI preview1 guests over these filesystems (in a
//! Web Worker, by `runner.js`'s `runP1`).
//!
//! Every argument from JavaScript is checked: one of the wrong type is a
//! `TypeError` naming it (`path must be a string`), thrown or, by a method
//! returning a promise, rejected with, before anything is done.
//!
//! ## Modules
//!
//! - In from JavaScript: `arg` (arguments, checked), `options` (options
//!   objects, read into core's types).
//! - The classes: `mem_fs`, `pack` and `overlay`, each with the path
//!   methods `methods` stamps on it, which call `inner` (what every class
//!   holds, and the methods' bodies); [`p1`], a preview1 guest over them.
//! - Under them: [`ops`] (the path operations, host-tested), [`fetch`] (a
//!   pack whose bytes arrive piece by piece over HTTP; core's `Partial`
//!   holds them), `persist` (fetched chunks kept in the Cache API), `opfs`
//!   (the Origin Private File System's synchronous files) and `journal` (a
//!   durable `MemFs` on them), `clock`.
//! - Out to JavaScript: `objects` (results), [`error`], `glue` (JavaScript
//!   helpers that make a result in one call), and `types.d.ts`: the
//!   TypeScript types no Rust signature declares.

#![forbid(unsafe_code)]

mod arg;
mod clock;
pub mod error;
pub mod fetch;
mod glue;
mod guest_memory;
mod inner;
mod journal;
mod mem_fs;
mod methods;
mod objects;
mod opfs;
pub mod ops;
mod options;
mod overlay;
pub mod p1;
pub mod p2;
mod pack;
mod persist;

pub use mem_fs::MemFs;
pub use overlay::Overlay;
pub use pack::Pack;

/// The types of packfs_web.d.ts that no Rust signature declares: options,
/// results and errors.
#[wasm_bindgen::prelude::wasm_bindgen(typescript_custom_section)]
const TYPES: &str = include_str!("types.d.ts");
