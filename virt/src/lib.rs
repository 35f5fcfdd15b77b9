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
//! `passthrough`: a host directory passed through; `sockets` (feature
//! `sockets`): the host's sockets, wrapped for their `wasi:io` resources;
//! `http` (feature `http`): `wasi:http`, wrapped for the same reason.

/// The same enum, both ways: the host's type (imported) and the guest's
/// (exported) are the same shape, and distinct Rust types.
macro_rules! same_enum {
    ($to:ident, $from:ident: $a:path => $b:path { $($v:ident),* $(,)? }) => {
        pub(crate) fn $to(x: $a) -> $b {
            use $a as A;
            use $b as B;
            match x { $(A::$v => B::$v),* }
        }
        #[allow(dead_code, reason = "one direction of the pair may be unused")]
        pub(crate) fn $from(x: $b) -> $a {
            use $a as A;
            use $b as B;
            match x { $(B::$v => A::$v),* }
        }
    };
}

/// Methods that are the host's own, called as they are on the host's
/// resource, `self.h`.
#[cfg(any(feature = "sockets", feature = "http"))]
macro_rules! forward {
    ($($name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*) => {
        $(fn $name(&self $(, $arg: $ty)*) -> $ret {
            self.h.$name($($arg),*)
        })*
    };
}

mod cli;
mod convert;
mod fs;
#[cfg(feature = "p3")]
mod fs3;
mod held;
mod host;
mod host_pack;
#[cfg(feature = "http")]
mod http;
mod image;
mod io;
mod namespace;
mod passthrough;
#[cfg(feature = "p3")]
mod pump;
mod save;
#[cfg(feature = "sockets")]
mod sockets;

#[cfg(any(
    all(feature = "sockets", feature = "p3"),
    all(feature = "sockets", feature = "http"),
    all(feature = "http", feature = "p3")
))]
compile_error!("one world per module: `sockets`, `http` or `p3`");

mod bindings {
    // wit/ holds two versions of wasi:filesystem and of wasi:clocks (0.3's
    // for `adapter-p3`), so wit-bindgen names their modules by version:
    // they are named here as the code names them.
    pub(crate) mod generated {
        #[cfg(not(any(feature = "sockets", feature = "http", feature = "p3")))]
        wit_bindgen::generate!({ path: "wit", world: "adapter", generate_all, pub_export_macro: true });
        #[cfg(feature = "sockets")]
        wit_bindgen::generate!({ path: "wit", world: "adapter-sockets", generate_all, pub_export_macro: true });
        #[cfg(feature = "http")]
        wit_bindgen::generate!({ path: "wit", world: "adapter-http", generate_all, pub_export_macro: true });
        #[cfg(feature = "p3")]
        wit_bindgen::generate!({ path: "wit", world: "adapter-p3", generate_all, pub_export_macro: true });
    }
    pub(crate) use generated::export;
    #[cfg(feature = "p3")]
    pub(crate) use generated::{wit_future, wit_stream};
    pub(crate) mod wasi {
        pub(crate) use super::generated::wasi::clocks0_2_12 as clocks;
        pub(crate) use super::generated::wasi::filesystem0_2_12 as filesystem;
        #[cfg(feature = "http")]
        pub(crate) use super::generated::wasi::http;
        #[cfg(feature = "sockets")]
        pub(crate) use super::generated::wasi::sockets;
        pub(crate) use super::generated::wasi::{cli, io, random};
    }
    pub(crate) mod exports {
        pub(crate) use super::generated::exports::packfs;
        pub(crate) mod wasi {
            pub(crate) use super::super::generated::exports::wasi::clocks0_2_12 as clocks;
            pub(crate) use super::super::generated::exports::wasi::filesystem0_2_12 as filesystem;
            #[cfg(feature = "p3")]
            pub(crate) use super::super::generated::exports::wasi::filesystem0_3_0 as filesystem3;
            #[cfg(feature = "http")]
            pub(crate) use super::super::generated::exports::wasi::http;
            #[cfg(feature = "sockets")]
            pub(crate) use super::super::generated::exports::wasi::sockets;
            pub(crate) use super::super::generated::exports::wasi::{cli, io};
        }
    }
}

bindings::export!(Virt with_types_in bindings::generated);

/// The component's exports.
struct Virt;
