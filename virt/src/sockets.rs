//! `wasi:sockets`, exported for a guest that imports it (feature
//! `sockets`, the `adapter-sockets` world): a socket hands out `wasi:io`
//! resources (a TCP connection's streams, every socket's pollable), and
//! the guest's `wasi:io` is this component's, so every socket wraps the
//! host's and forwards each call. The network, its addresses and error
//! codes hand out none: they are the host's own types, which the guest
//! imports from the host. What the guest holds is counted with its
//! descriptors (`held`): past the limit a new socket, lookup or connection
//! is `new-socket-limit`.

use crate::Virt;
use crate::bindings::exports::wasi::io::poll::Pollable;
use crate::bindings::exports::wasi::io::streams::{InputStream, OutputStream};
use crate::bindings::exports::wasi::sockets::{ip_name_lookup, tcp, tcp_create_socket, udp, udp_create_socket};
use crate::bindings::wasi::sockets as host;
use crate::held::Held;
use crate::io::{Reader, Ready, Writer};

use host::network::{ErrorCode, IpAddressFamily, IpSocketAddress, Network};

type R<T> = Result<T, ErrorCode>;

same_enum!(_shutdown_to_guest, shutdown_type: host::tcp::ShutdownType => tcp::ShutdownType { Receive, Send, Both });

/// `count` places among what the guest holds, or `new-socket-limit`.
fn room(count: usize) -> R<Vec<Held>> {
    (0..count).map(|_| Held::open().ok_or(ErrorCode::NewSocketLimit)).collect()
}

fn pollable(p: crate::bindings::wasi::io::poll::Pollable) -> Pollable {
    Pollable::new(Ready::Host(p))
}

/// The guest's streams over the host's, each holding one of `held`.
fn streams(
    (input, output): (
        crate::bindings::wasi::io::streams::InputStream,
        crate::bindings::wasi::io::streams::OutputStream,
    ),
    held: &mut Vec<Held>,
) -> (InputStream, OutputStream) {
    let input = InputStream::new(Reader::Host { s: input, _held: held.pop() });
    (input, OutputStream::new(Writer::Host { s: output, _held: held.pop() }))
}

/// One of the host's resources, counted among what the guest holds.
pub(crate) struct Counted<T> {
    h: T,
    _held: Held,
}

impl<T> Counted<T> {
    fn new(h: T, held: &mut Vec<Held>) -> Self {
        Counted { h, _held: held.pop().expect("room was made for it") }
    }
}

/// A name lookup under way.
type Resolve = Counted<host::ip_name_lookup::ResolveAddressStream>;

impl ip_name_lookup::Guest for Virt {
    type ResolveAddressStream = Resolve;

    fn resolve_addresses(network: &Network, name: String) -> R<ip_name_lookup::ResolveAddressStream> {
        let mut held = room(1)?;
        let stream = host::ip_name_lookup::resolve_addresses(network, &name)?;
        Ok(ip_name_lookup::ResolveAddressStream::new(Resolve::new(stream, &mut held)))
    }
}

impl ip_name_lookup::GuestResolveAddressStream for Resolve {
    forward! {
        resolve_next_address(&self) -> R<Option<host::network::IpAddress>>;
    }

    fn subscribe(&self) -> Pollable {
        pollable(self.h.subscribe())
    }
}

/// A TCP socket of the host's.
type Tcp = Counted<host::tcp::TcpSocket>;

impl tcp::Guest for Virt {
    type TcpSocket = Tcp;
}

impl tcp_create_socket::Guest for Virt {
    fn create_tcp_socket(f: IpAddressFamily) -> R<tcp::TcpSocket> {
        let mut held = room(1)?;
        let socket = host::tcp_create_socket::create_tcp_socket(f)?;
        Ok(tcp::TcpSocket::new(Tcp::new(socket, &mut held)))
    }
}

impl tcp::GuestTcpSocket for Tcp {
    forward! {
        start_bind(&self, network: &Network, local: IpSocketAddress) -> R<()>;
        finish_bind(&self) -> R<()>;
        start_connect(&self, network: &Network, remote: IpSocketAddress) -> R<()>;
        start_listen(&self) -> R<()>;
        finish_listen(&self) -> R<()>;
        local_address(&self) -> R<IpSocketAddress>;
        remote_address(&self) -> R<IpSocketAddress>;
        is_listening(&self) -> bool;
        address_family(&self) -> IpAddressFamily;
        set_listen_backlog_size(&self, value: u64) -> R<()>;
        keep_alive_enabled(&self) -> R<bool>;
        set_keep_alive_enabled(&self, value: bool) -> R<()>;
        keep_alive_idle_time(&self) -> R<u64>;
        set_keep_alive_idle_time(&self, value: u64) -> R<()>;
        keep_alive_interval(&self) -> R<u64>;
        set_keep_alive_interval(&self, value: u64) -> R<()>;
        keep_alive_count(&self) -> R<u32>;
        set_keep_alive_count(&self, value: u32) -> R<()>;
        hop_limit(&self) -> R<u8>;
        set_hop_limit(&self, value: u8) -> R<()>;
        receive_buffer_size(&self) -> R<u64>;
        set_receive_buffer_size(&self, value: u64) -> R<()>;
        send_buffer_size(&self) -> R<u64>;
        set_send_buffer_size(&self, value: u64) -> R<()>;
    }

    fn finish_connect(&self) -> R<(InputStream, OutputStream)> {
        let mut held = room(2)?;
        Ok(streams(self.h.finish_connect()?, &mut held))
    }

    fn accept(&self) -> R<(tcp::TcpSocket, InputStream, OutputStream)> {
        let mut held = room(3)?;
        let (socket, input, output) = self.h.accept()?;
        let (input, output) = streams((input, output), &mut held);
        Ok((tcp::TcpSocket::new(Tcp::new(socket, &mut held)), input, output))
    }

    fn subscribe(&self) -> Pollable {
        pollable(self.h.subscribe())
    }

    fn shutdown(&self, how: tcp::ShutdownType) -> R<()> {
        self.h.shutdown(shutdown_type(how))
    }
}

/// A UDP socket of the host's, and its datagram streams.
type Udp = Counted<host::udp::UdpSocket>;
type Incoming = Counted<host::udp::IncomingDatagramStream>;
type Outgoing = Counted<host::udp::OutgoingDatagramStream>;

impl udp::Guest for Virt {
    type UdpSocket = Udp;
    type IncomingDatagramStream = Incoming;
    type OutgoingDatagramStream = Outgoing;
}

impl udp_create_socket::Guest for Virt {
    fn create_udp_socket(f: IpAddressFamily) -> R<udp::UdpSocket> {
        let mut held = room(1)?;
        let socket = host::udp_create_socket::create_udp_socket(f)?;
        Ok(udp::UdpSocket::new(Udp::new(socket, &mut held)))
    }
}

impl udp::GuestUdpSocket for Udp {
    forward! {
        start_bind(&self, network: &Network, local: IpSocketAddress) -> R<()>;
        finish_bind(&self) -> R<()>;
        local_address(&self) -> R<IpSocketAddress>;
        remote_address(&self) -> R<IpSocketAddress>;
        address_family(&self) -> IpAddressFamily;
        unicast_hop_limit(&self) -> R<u8>;
        set_unicast_hop_limit(&self, value: u8) -> R<()>;
        receive_buffer_size(&self) -> R<u64>;
        set_receive_buffer_size(&self, value: u64) -> R<()>;
        send_buffer_size(&self) -> R<u64>;
        set_send_buffer_size(&self, value: u64) -> R<()>;
    }

    fn stream(&self, remote: Option<IpSocketAddress>) -> R<(udp::IncomingDatagramStream, udp::OutgoingDatagramStream)> {
        let mut held = room(2)?;
        let (incoming, outgoing) = self.h.stream(remote)?;
        let incoming = udp::IncomingDatagramStream::new(Incoming::new(incoming, &mut held));
        Ok((incoming, udp::OutgoingDatagramStream::new(Outgoing::new(outgoing, &mut held))))
    }

    fn subscribe(&self) -> Pollable {
        pollable(self.h.subscribe())
    }
}

impl udp::GuestIncomingDatagramStream for Incoming {
    fn receive(&self, max: u64) -> R<Vec<udp::IncomingDatagram>> {
        let got = self.h.receive(max)?;
        Ok(got.into_iter().map(|d| udp::IncomingDatagram { data: d.data, remote_address: d.remote_address }).collect())
    }

    fn subscribe(&self) -> Pollable {
        pollable(self.h.subscribe())
    }
}

impl udp::GuestOutgoingDatagramStream for Outgoing {
    forward! {
        check_send(&self) -> R<u64>;
    }

    fn send(&self, datagrams: Vec<udp::OutgoingDatagram>) -> R<u64> {
        let datagrams: Vec<host::udp::OutgoingDatagram> = datagrams
            .into_iter()
            .map(|d| host::udp::OutgoingDatagram { data: d.data, remote_address: d.remote_address })
            .collect();
        self.h.send(&datagrams)
    }

    fn subscribe(&self) -> Pollable {
        pollable(self.h.subscribe())
    }
}
