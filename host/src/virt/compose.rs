//! The guest made a component if it is a preview1 module, and composed
//! with the virtual filesystem.

use anyhow::{Context, Result, bail};
use wac_graph::types::Package;
use wac_graph::{CompositionGraph, EncodeOptions};
use wasmparser::{Parser, Payload};

/// The guest as a component: a preview1 module adapted with wasmtime's
/// standard adapter (as `wasm-tools component new --adapt` does: the
/// command adapter for a module with `_start`, else the reactor's); a
/// component as it is, if it speaks WASI 0.2.
pub(super) fn component_of(guest: &[u8]) -> Result<Vec<u8>> {
    if wasmparser::Parser::is_core_wasm(guest) {
        let command = exports_start(guest)?;
        let adapter = if command {
            wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_COMMAND_ADAPTER
        } else {
            wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER
        };
        return wit_component::ComponentEncoder::default()
            .module(guest)
            .and_then(|e| e.adapter("wasi_snapshot_preview1", adapter))
            .and_then(|e| e.validate(true).encode())
            .context("adapting the preview1 module to a component");
    }
    if !wasmparser::Parser::is_component(guest) {
        bail!("not a WebAssembly module or component");
    }
    Ok(guest.to_vec())
}

fn exports_start(module: &[u8]) -> Result<bool> {
    for payload in Parser::new(0).parse_all(module) {
        if let Payload::ExportSection(s) = payload.context("reading the module")? {
            for e in s {
                if e.context("reading the module")?.name == "_start" {
                    return Ok(true);
                }
            }
        }
    }
    Ok(false)
}

/// `guest` with each of its imports that `virt` exports (matched as
/// semver allows: a guest's `wasi:io/streams@0.2.6` takes the virtual
/// filesystem's 0.2.12) plugged in; the rest of its imports, and the
/// virtual filesystem's own, are the composition's imports.
pub(super) fn plug(virt: &[u8], guest: &[u8]) -> Result<Vec<u8>> {
    let mut graph = CompositionGraph::new();
    let virt = Package::from_bytes("packfs:virt", None, virt.to_vec(), graph.types_mut())?;
    let guest = Package::from_bytes("guest:component", None, guest.to_vec(), graph.types_mut())
        .context("reading the guest component")?;
    let imports: Vec<String> = graph.types()[guest.ty()].imports.keys().cloned().collect();
    if let Some(p3) = imports.iter().find(|i| i.starts_with("wasi:filesystem/") && i.contains("@0.3")) {
        bail!("the guest imports {p3}: packfs virt serves WASI 0.2 components and preview1 modules");
    }
    // Their streams and pollables would be the host's, not the guest's.
    if let Some(io) = imports.iter().find(|i| i.starts_with("wasi:sockets/") || i.starts_with("wasi:http/")) {
        bail!("the guest imports {io}, which hands out wasi:io resources that packfs virt does not pass through yet");
    }
    if !imports.iter().any(|i| i.starts_with("wasi:filesystem/")) {
        bail!("the guest imports no wasi:filesystem: it has no files to virtualize");
    }
    let virt = graph.register_package(virt)?;
    let guest = graph.register_package(guest)?;
    wac_graph::plug(&mut graph, vec![virt], guest).context("composing the guest with the virtual filesystem")?;
    graph.encode(EncodeOptions::default()).context("encoding the composition")
}
