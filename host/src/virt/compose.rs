//! The guest made a component if it is a preview1 module, and composed
//! with the virtual filesystem.

use std::collections::HashSet;

use anyhow::{Context, Result, bail};
use wac_graph::types::{ItemKind, Package, ResourceId, are_semver_compatible};
use wac_graph::{CompositionGraph, EncodeOptions};
use wasmparser::{Parser, Payload};

use super::uses;

/// The guest as a component: a preview1 module adapted with wasmtime's
/// standard adapter (as `wasm-tools component new --adapt` does: the
/// command adapter for a module with `_start`, else the reactor's); a
/// component as it is.
pub fn component_of(guest: &[u8]) -> Result<Vec<u8>> {
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

/// `guest` with each of its imports that `virt` exports plugged in
/// (matched as semver allows: a guest's `wasi:io/streams@0.2.6` takes the
/// virtual filesystem's 0.2.12); the rest of its imports, and the virtual
/// filesystem's own, are the composition's imports, and its exports are
/// the composition's. With `save`, each `wasi:cli/run` it exports is
/// wrapped so that the virtual filesystem saves the namespace after the
/// run returns (and its exit saves first).
pub(super) fn compose(virt: &[u8], guest: &[u8], save: bool) -> Result<Vec<u8>> {
    guarded(|| compose_unguarded(virt, guest, save))
}

/// wac-graph's answer, or its panic as an error: it panics on components
/// no toolchain makes (a hostile guest's: shapes of types it does not
/// expect), which `packfs virt` must report, not crash on. (The panic's
/// message is printed by the panic hook too, which is global: not ours to
/// swap.)
fn guarded<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let why = payload.downcast_ref::<&str>().map(|s| s.to_string());
            let why = why.or_else(|| payload.downcast_ref::<String>().cloned()).unwrap_or_default();
            bail!("wac-graph could not compose the guest's imports and exports: {why}")
        }
    }
}

fn compose_unguarded(virt: &[u8], guest: &[u8], save: bool) -> Result<Vec<u8>> {
    let mut graph = CompositionGraph::new();
    let virt = Package::from_bytes("packfs:virt", None, virt.to_vec(), graph.types_mut())?;
    let guest = Package::from_bytes("guest:component", None, guest.to_vec(), graph.types_mut())
        .context("reading the guest component")?;
    let imports: Vec<String> = graph.types()[guest.ty()].imports.keys().cloned().collect();
    let exports: Vec<String> = graph.types()[guest.ty()].exports.keys().cloned().collect();
    let virt_exports: Vec<String> = graph.types()[virt.ty()].exports.keys().cloned().collect();
    let virt_imports: Vec<String> = graph.types()[virt.ty()].imports.keys().cloned().collect();
    if imports.iter().any(|i| i.starts_with("packfs:")) {
        bail!("the guest imports {CONTROL}, the virtual filesystem's own interface");
    }
    if let Some(i) = imports.iter().find(|i| i.starts_with("wasi:http/incoming-handler@")) {
        bail!("the guest imports {i}: packfs virt does not serve a guest an incoming handler (a middleware's) yet");
    }
    if !imports.iter().any(|i| i.starts_with("wasi:filesystem/")) {
        bail!("the guest imports no wasi:filesystem: it has no files to virtualize");
    }
    let guest_ty = guest.ty();
    let virt = graph.register_package(virt)?;
    let guest = graph.register_package(guest)?;
    let (v, g) = (graph.instantiate(virt), graph.instantiate(guest));
    for import in &imports {
        match plug_for(import, &virt_exports) {
            Some(export) => {
                let from = graph.alias_instance_export(v, export)?;
                graph.set_instantiation_argument(g, import, from).with_context(|| format!("plugging in {import}"))?;
            }
            // An interface the virtual filesystem serves, in a version it
            // cannot serve, would be the host's: its files, or wasi:io
            // resources the guest's files cannot be mixed with.
            None if must_plug(import, save) => {
                bail!("the guest imports {import}, which packfs virt must serve and cannot in that version")
            }
            None => {}
        }
    }
    let types = graph.types();
    let world = &types[guest_ty];
    // An import typed as another (a type shared by two imports, or an
    // `implements` label) would be taken for that one: a guest's own
    // import could get the host's exit, which skips a save.
    for import in &imports {
        if let ItemKind::Instance(i) = &world.imports[import]
            && let Some(id) = types[*i].id.as_ref().filter(|id| *id != import)
        {
            bail!("the guest imports {import} as {id}: packfs virt cannot tell the two apart");
        }
    }
    // The bridge serves an incoming handler's `handle` alone: any other
    // function the guest exports there would be dropped.
    for export in exports.iter().filter(|e| e.starts_with("wasi:http/incoming-handler@0.2")) {
        if let ItemKind::Instance(i) = &world.exports[export]
            && types[*i].exports.iter().any(|(name, item)| matches!(item, ItemKind::Func(_)) && name != "handle")
        {
            bail!("the guest exports {export} with more than `handle`, which packfs virt's bridge alone serves");
        }
    }
    // What stays a host import cannot name a resource of what was plugged
    // in: the component's own, which no host can hand it.
    let plugged: Vec<(&String, HashSet<ResourceId>)> = imports
        .iter()
        .filter(|i| plugs(i, &virt_exports))
        .map(|i| (i, uses::defined_resources(types, &world.imports[i])))
        .collect();
    for import in imports.iter().filter(|i| !plugs(i, &virt_exports)) {
        let named = uses::resources(types, &world.imports[import]);
        if let Some((used, _)) = plugged.iter().find(|(_, own)| !named.is_disjoint(own)) {
            bail!(
                "the guest imports {import}, which names resources of {used}: a host cannot hand it the virtual filesystem's own"
            );
        }
    }
    let runs: Vec<&String> = exports.iter().filter(|e| e.starts_with("wasi:cli/run@")).collect();
    if save && runs.is_empty() {
        bail!("--save needs a command (a guest exporting wasi:cli/run), to save after its run");
    }
    // A WASI 0.3 guest's run first starts the task that writes the
    // virtual filesystem's 0.3 streams (virt/src/pump.rs).
    let pumps = virt_exports.iter().any(|e| e == PUMP);
    // A guest's incoming handler takes the guest's request, which only
    // the virtual filesystem makes from the host's (virt/src/http.rs).
    let bridges = virt_exports.iter().any(|e| e == BRIDGE);
    for export in &exports {
        let mut from = graph.alias_instance_export(g, export)?;
        if export.starts_with("wasi:http/incoming-handler@0.2") {
            if !bridges {
                bail!("the guest exports {export}, but imports no wasi:http: packfs virt cannot bridge its requests");
            }
            let host_types = virt_imports.iter().find(|i| i.starts_with("wasi:http/types@"));
            let host_types = host_types.context("the virtual filesystem imports no wasi:http/types")?;
            let guest_types = virt_exports.iter().find(|e| e.starts_with("wasi:http/types@"));
            let guest_types = guest_types.context("the virtual filesystem exports no wasi:http/types")?;
            let wrapper = handler_wrapper(export, host_types)?;
            let wrapper = Package::from_bytes("packfs:handler", None, wrapper, graph.types_mut())?;
            let wrapper = graph.register_package(wrapper)?;
            let w = graph.instantiate(wrapper);
            for (arg, node) in [
                ("guest-types", graph.alias_instance_export(v, guest_types)?),
                (ACCEPT, graph.alias_instance_export(v, ACCEPT)?),
                (BRIDGE, graph.alias_instance_export(v, BRIDGE)?),
                ("guest-handler", from),
            ] {
                graph.set_instantiation_argument(w, arg, node).with_context(|| format!("bridging {export}: {arg}"))?;
            }
            from = graph.alias_instance_export(w, export)?;
        }
        if pumps && export.starts_with("wasi:cli/run@0.3") {
            let wrapper = Package::from_bytes("packfs:start", None, start_wrapper(export)?, graph.types_mut())?;
            let wrapper = graph.register_package(wrapper)?;
            let w = graph.instantiate(wrapper);
            let pump = graph.alias_instance_export(v, PUMP)?;
            graph.set_instantiation_argument(w, PUMP, pump)?;
            graph.set_instantiation_argument(w, "guest-run", from)?;
            from = graph.alias_instance_export(w, export)?;
        }
        if save && runs.contains(&export) {
            let wrapper = Package::from_bytes("packfs:save", None, wrapper(export)?, graph.types_mut())?;
            let wrapper = graph.register_package(wrapper)?;
            let w = graph.instantiate(wrapper);
            let control = graph.alias_instance_export(v, CONTROL)?;
            graph.set_instantiation_argument(w, CONTROL, control)?;
            graph.set_instantiation_argument(w, "guest-run", from)?;
            from = graph.alias_instance_export(w, export)?;
        }
        graph.export(from, export)?;
    }
    graph.encode(EncodeOptions::default()).context("encoding the composition")
}

/// The virtual filesystem's export that a guest's `import` takes, if any
/// (matched as semver allows; never its own interfaces, nor `accept`).
fn plug_for<'a>(import: &str, virt_exports: &'a [String]) -> Option<&'a String> {
    virt_exports
        .iter()
        .filter(|e| !e.starts_with("packfs:") && *e != ACCEPT)
        .find(|e| *e == import || are_semver_compatible(e, import))
}

fn plugs(import: &str, virt_exports: &[String]) -> bool {
    plug_for(import, virt_exports).is_some()
}

/// Whether a guest's import of `name` must be the virtual filesystem's:
/// its files (0.2's and 0.3's), and, at 0.2, what hands out `wasi:io`
/// resources (sockets and HTTP among them: sockets' network and addresses
/// stay the host's); with `save`, its exit too, which saves first. (0.3's stdio
/// and clocks hand out none: they are the host's.)
fn must_plug(name: &str, save: bool) -> bool {
    let (interface, version) = name.split_once('@').unwrap_or((name, ""));
    let files = matches!(interface, "wasi:filesystem/types" | "wasi:filesystem/preopens");
    let io = matches!(
        interface,
        "wasi:io/error"
            | "wasi:io/poll"
            | "wasi:io/streams"
            | "wasi:cli/stdin"
            | "wasi:cli/stdout"
            | "wasi:cli/stderr"
            | "wasi:clocks/monotonic-clock"
            | "wasi:sockets/ip-name-lookup"
            | "wasi:sockets/tcp"
            | "wasi:sockets/tcp-create-socket"
            | "wasi:sockets/udp"
            | "wasi:sockets/udp-create-socket"
            | "wasi:http/types"
            | "wasi:http/outgoing-handler"
    );
    files || (io && !version.starts_with("0.3")) || (save && interface == "wasi:cli/exit")
}

/// The guest component's imports, by name.
pub(super) fn imports_of(guest: &[u8]) -> Result<Vec<String>> {
    guarded(|| {
        let mut graph = CompositionGraph::new();
        let guest = Package::from_bytes("guest:component", None, guest.to_vec(), graph.types_mut())
            .context("reading the guest component")?;
        Ok(graph.types()[guest.ty()].imports.keys().cloned().collect())
    })
}

/// The virtual filesystem's own interface.
const CONTROL: &str = "packfs:virt/control";

/// The virtual filesystem's interface that starts its 0.3 streams' task.
const PUMP: &str = "packfs:virt/pump";

/// A component exporting a WASI 0.3 `run` (named `name`, as the guest's)
/// that starts the virtual filesystem's stream task, then calls the
/// guest's run.
fn start_wrapper(name: &str) -> Result<Vec<u8>> {
    let wat = format!(
        r#"(component
  (import "{PUMP}" (instance $pump (export "start" (func async))))
  (import "guest-run" (instance $guest (export "run" (func async (result (result))))))
  (alias export $pump "start" (func $start))
  (alias export $guest "run" (func $run))
  (core func $start (canon lower (func $start)))
  (core func $run (canon lower (func $run)))
  (core module $m
    (import "" "start" (func $start))
    (import "" "run" (func $run (result i32)))
    (func (export "run") (result i32)
      (call $start)
      (call $run)))
  (core instance $i (instantiate $m (with "" (instance (export "start" (func $start)) (export "run" (func $run))))))
  (func $wrapped async (result (result)) (canon lift (core func $i "run")))
  (instance $out (export "run" (func $wrapped)))
  (export "{name}" (instance $out)))"#
    );
    wat::parse_str(wat).context("the run wrapper")
}

/// The virtual filesystem's interface that hands a guest's incoming
/// handler the request `accept` took.
const BRIDGE: &str = "packfs:virt/http-bridge";

/// The virtual filesystem's function that takes the host's request (a
/// top-level export: it is typed by the host's `wasi:http/types`, which
/// an interface of its own could not name). Never plugged into a guest.
const ACCEPT: &str = "accept";

/// A component exporting the host's `wasi:http/incoming-handler` (named
/// `name`, as the guest's; its types from the host's `host_types`) that
/// hands the host's request and response-outparam to the virtual
/// filesystem's `accept`, takes the guest's from the bridge, and calls the
/// guest's handler with them.
fn handler_wrapper(name: &str, host_types: &str) -> Result<Vec<u8>> {
    let wat = format!(
        r#"(component
  (import "{host_types}" (instance $host
    (export "incoming-request" (type (sub resource)))
    (export "response-outparam" (type (sub resource)))))
  (alias export $host "incoming-request" (type $hreq))
  (alias export $host "response-outparam" (type $hout))
  (import "guest-types" (instance $gtypes
    (export "incoming-request" (type (sub resource)))
    (export "response-outparam" (type (sub resource)))))
  (alias export $gtypes "incoming-request" (type $greq))
  (alias export $gtypes "response-outparam" (type $gout))
  (import "{ACCEPT}" (func $accept (param "request" (own $hreq)) (param "response-out" (own $hout))))
  (import "{BRIDGE}" (instance $bridge
    (export "take-request" (func (result (own $greq))))
    (export "take-outparam" (func (result (own $gout))))))
  (import "guest-handler" (instance $guest
    (export "handle" (func (param "request" (own $greq)) (param "response-out" (own $gout))))))
  (alias export $bridge "take-request" (func $take-request))
  (alias export $bridge "take-outparam" (func $take-outparam))
  (alias export $guest "handle" (func $handle))
  (core func $accept (canon lower (func $accept)))
  (core func $take-request (canon lower (func $take-request)))
  (core func $take-outparam (canon lower (func $take-outparam)))
  (core func $handle (canon lower (func $handle)))
  (core module $m
    (import "" "accept" (func $accept (param i32 i32)))
    (import "" "take-request" (func $take-request (result i32)))
    (import "" "take-outparam" (func $take-outparam (result i32)))
    (import "" "handle" (func $handle (param i32 i32)))
    (func (export "handle") (param i32 i32)
      (call $accept (local.get 0) (local.get 1))
      (call $handle (call $take-request) (call $take-outparam))))
  (core instance $i (instantiate $m (with "" (instance
    (export "accept" (func $accept))
    (export "take-request" (func $take-request))
    (export "take-outparam" (func $take-outparam))
    (export "handle" (func $handle))))))
  (func $wrapped (param "request" (own $hreq)) (param "response-out" (own $hout)) (canon lift (core func $i "handle")))
  (instance $out (export "handle" (func $wrapped)))
  (export "{name}" (instance $out)))"#
    );
    wat::parse_str(wat).context("the incoming handler's wrapper")
}

/// A component exporting `run` (named `name`, as the guest's) that calls
/// the guest's run, then `save`: the run fails if the save does.
fn wrapper(name: &str) -> Result<Vec<u8>> {
    let wat = format!(
        r#"(component
  (import "{CONTROL}" (instance $control (export "save" (func (result (result))))))
  (import "guest-run" (instance $guest (export "run" (func (result (result))))))
  (alias export $control "save" (func $save))
  (alias export $guest "run" (func $run))
  (core func $save (canon lower (func $save)))
  (core func $run (canon lower (func $run)))
  (core module $m
    (import "" "save" (func $save (result i32)))
    (import "" "run" (func $run (result i32)))
    (func (export "run") (result i32)
      (local $status i32)
      (local.set $status (call $run))
      (if (call $save) (then (local.set $status (i32.const 1))))
      (local.get $status)))
  (core instance $i (instantiate $m (with "" (instance (export "save" (func $save)) (export "run" (func $run))))))
  (func $wrapped (result (result)) (canon lift (core func $i "run")))
  (instance $out (export "run" (func $wrapped)))
  (export "{name}" (instance $out)))"#
    );
    wat::parse_str(wat).context("the run wrapper")
}
