//! A guest using sockets beside its files (`net`, WASI 0.2): composed
//! with the virtual filesystem, whose sockets then wrap the host's (they
//! hand out `wasi:io` resources, which are the component's), it must
//! print on each host what the same guest prints unvirtualized on
//! wasmtime-wasi with the same network access: TCP and UDP echoes over
//! loopback and a name lookup where the host grants the network (wasmtime-
//! wasi, the `wasmtime` command), the host's refusals where it does not
//! (wasmtime-py, which has no way to grant it).

use super::*;
use packfs_core::mem::Quota;
use std::io::{Read, Write};
use std::net::{TcpListener, UdpSocket};

/// Echo servers on loopback, for the rest of the process: TCP answers what
/// it read, in capitals, UDP `pong:` and the datagram.
fn servers() -> (String, String) {
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addrs = (tcp.local_addr().unwrap().to_string(), udp.local_addr().unwrap().to_string());
    std::thread::spawn(move || {
        for mut conn in tcp.incoming().flatten() {
            let mut got = Vec::new();
            if conn.read_to_end(&mut got).is_ok() {
                let _ = conn.write_all(&got.to_ascii_uppercase());
            }
        }
    });
    std::thread::spawn(move || {
        let mut buf = [0; 64];
        while let Ok((n, from)) = udp.recv_from(&mut buf) {
            let _ = udp.send_to(&[b"pong:", &buf[..n]].concat(), from);
        }
    });
    addrs
}

/// `component` on wasmtime-wasi, `/` a directory of its own, the network
/// granted or not.
fn on_wasmtime_wasi(component: &[u8], args: &[&str], network: bool) -> (i32, String, String) {
    let root = tempfile::tempdir().unwrap();
    let component = Component::new(engine(), component).unwrap();
    let (stdout, stderr) = (MemoryOutputPipe::new(1 << 20), MemoryOutputPipe::new(1 << 20));
    let mut b = WasiCtx::builder();
    b.preopened_dir(root.path(), "/", FsPerms::ReadWrite).unwrap();
    if network {
        b.inherit_network().allow_ip_name_lookup(true).allow_tcp(true).allow_udp(true);
    }
    b.stdout(stdout.clone()).stderr(stderr.clone()).args(args);
    let status = oracle::P2::new(engine(), &component).and_then(|o| o.run(b.build())).unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (status, text(&stdout.contents()), text(&stderr.contents()))
}

fn imports(component: &[u8]) -> Vec<String> {
    let component = Component::new(engine(), component).unwrap();
    component.component_type().imports(engine()).map(|(name, _)| name.to_string()).collect()
}

#[test]
fn a_guest_keeps_its_sockets_through_the_virtual_filesystem() {
    let (tcp, udp) = servers();
    let args = ["net", tcp.as_str(), udp.as_str()];
    let guest = std::fs::read(support::rust_guest("net", "wasm32-wasip2")).unwrap();
    let with_network = on_wasmtime_wasi(&guest, &args, true);
    let want = "tcp: ok \"HELLO OVER TCP\\n\"\nudp: ok \"pong:ping\"\nlookup: ok \"loopback true\"\ndone\n";
    assert_eq!((with_network.0, with_network.1.as_str()), (0, want), "{}", with_network.2);
    let without = on_wasmtime_wasi(&guest, &args, false);
    assert!(without.1.starts_with("tcp: err ") && without.1.ends_with("done\n"), "{without:?}");

    let virt = Virt::new().mount("/", Source::Mem(Quota::default())).build(&guest).unwrap();
    // Its network and addresses are the host's; what hands out streams and
    // pollables is the component's, wrapping the host's.
    assert!(imports(&virt).iter().any(|i| i.starts_with("wasi:sockets/network@")));
    let got = on_wasmtime_wasi(&virt, &args, true);
    assert_eq!((got.0, got.1.as_str()), (0, want), "virtualized, on wasmtime-wasi: {}", got.2);
    let got = on_wasmtime_wasi(&virt, &args, false);
    assert_eq!(got.1, without.1, "virtualized, on wasmtime-wasi without the network: {}", got.2);
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &virt).unwrap();
    if let Some(cli) = std::env::var_os("PACKFS_WASMTIME") {
        let mut c = Command::new(cli);
        c.args(["run", "-S", "inherit-network,allow-ip-name-lookup"]).arg(file.path()).args(&args[1..]);
        let (status, out, err) = command(c);
        assert_eq!((status, out.as_str()), (0, want), "virtualized, on the wasmtime command: {err}");
    }
    if let Some(python) = std::env::var_os("PACKFS_PYTHON") {
        let out_dir = tempfile::tempdir().unwrap();
        let mut c = Command::new(python);
        let script = support::workspace().join("host/tests/virt/run_component.py");
        c.arg(script).arg(file.path()).arg(out_dir.path()).args(args);
        let (status, out, err) = command(c);
        assert_eq!((status, out), (0, without.1.clone()), "virtualized, on wasmtime-py: {err}");
    }

    // A guest without sockets gets a component that imports none.
    let toolbox = std::fs::read(support::rust_guest("toolbox", "wasm32-wasip2")).unwrap();
    let plain = Virt::new().mount("/", Source::Mem(Quota::default())).build(&toolbox).unwrap();
    let sockets: Vec<String> = imports(&plain).into_iter().filter(|i| i.starts_with("wasi:sockets/")).collect();
    assert!(sockets.is_empty(), "{sockets:?}");
}
