//! The virtual filesystem `packfs virt` composes into a guest. The guest's
//! `wasi:filesystem` is served here, from PackFS's one descriptor model
//! (`packfs_core::wasi::descriptor`), over the namespace the embedded
//! image describes (`packfs_core::virt`). Because a file hands out
//! `wasi:io` streams, `wasi:io` is served here too, and so is every
//! interface the guest imports that hands out `wasi:io` resources (stdio,
//! the monotonic clock): each wraps the host's own resource and forwards.
//!
//! Here: the bindings; `image`: finding the embedded image; `namespace`:
//! the mount table it describes, built on the guest's first call; `fs`:
//! `wasi:filesystem`; `io`: `wasi:io`; `cli`: stdio and the clock; `save`:
//! the namespace written as a pack after the run; `host`: places in the
//! host's filesystem the image names; `host_pack`: a pack read from one;
//! `passthrough`: a host directory passed through.

mod cli;
mod convert;
mod fs;
mod held;
mod host;
mod host_pack;
mod image;
mod io;
mod namespace;
mod passthrough;
mod save;

mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "adapter",
        generate_all,
        pub_export_macro: true,
    });
}

bindings::export!(Virt with_types_in bindings);

/// The component's exports.
struct Virt;
