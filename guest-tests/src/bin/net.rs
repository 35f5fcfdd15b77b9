//! Sockets beside files, for `packfs virt`'s passthrough of `wasi:sockets`
//! (`host/tests/virt/sockets.rs`; WASI 0.2 only): `net TCP_ADDR UDP_ADDR`
//! with an echo server at each. Over TCP it sends a file's contents and
//! writes the reply to a file, read back; over UDP it sends a datagram;
//! then it looks `localhost` up. Each step prints its result or error.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs, UdpSocket};
use std::{env, fs, io};

use packfs_guests::describe;

fn tcp(addr: &str) -> io::Result<String> {
    fs::write("/sent.txt", "hello over tcp\n")?;
    let mut stream = TcpStream::connect(addr)?;
    stream.write_all(&fs::read("/sent.txt")?)?;
    stream.shutdown(Shutdown::Write)?;
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply)?;
    fs::write("/reply.txt", &reply)?;
    fs::read_to_string("/reply.txt")
}

fn udp(addr: &str) -> io::Result<String> {
    let socket = UdpSocket::bind("127.0.0.1:0")?;
    socket.send_to(b"ping", addr)?;
    let mut buf = [0; 64];
    let (n, _) = socket.recv_from(&mut buf)?;
    Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
}

fn lookup() -> io::Result<bool> {
    Ok(("localhost", 80).to_socket_addrs()?.any(|a| a.ip().is_loopback()))
}

fn main() {
    let args: Vec<String> = env::args().collect();
    let show = |step: &str, r: io::Result<String>| match r {
        Ok(v) => println!("{step}: ok {v:?}"),
        Err(e) => println!("{step}: err {}", describe(&e)),
    };
    show("tcp", tcp(&args[1]));
    show("udp", udp(&args[2]));
    show("lookup", lookup().map(|loopback| format!("loopback {loopback}")));
    println!("done");
}
