//! HTTP beside files, for `packfs virt`'s passthrough of `wasi:http`
//! (`host/tests/virt/http.rs`; WASI 0.2 only): `http_fetch URL REFUSED`.
//! It posts `/request.txt` from its tree to URL (through an output stream
//! the host's body hands out), writes the reply's body to `/reply.txt` and
//! reads it back; then, with a response ready and a file's stream open,
//! it polls both (a host's pollable beside one of the tree's) and says
//! whether the response was reported; then it asks REFUSED, where nothing listens, and
//! prints the error. Each step prints what it got, digests for bodies.
//!
//! Built for wasm32-wasip2 only; the wasm32-wasip1 build is a stub.

#[cfg(target_env = "p2")]
fn main() {
    fetch::main();
}

#[cfg(not(target_env = "p2"))]
fn main() {
    eprintln!("http_fetch is a wasm32-wasip2 component");
    std::process::exit(2);
}

#[cfg(target_env = "p2")]
mod fetch {
    use std::io::{Read, Write};

    use packfs_guests::digest;
    use wasi::http::outgoing_handler;
    use wasi::filesystem::preopens;
    use wasi::filesystem::types::{DescriptorFlags, OpenFlags, PathFlags};
    use wasi::http::types::{
        Fields, FutureIncomingResponse, IncomingBody, Method, OutgoingBody, OutgoingRequest, Scheme,
    };

    struct Reply {
        status: u16,
        echo: Vec<Vec<u8>>,
        body: Vec<u8>,
        trailers: usize,
    }

    /// The request sent, its body written and finished.
    fn send(url: &str, body: Option<&[u8]>) -> Result<FutureIncomingResponse, String> {
        let rest = url.strip_prefix("http://").ok_or("not an http:// URL")?;
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let mut headers = vec![("x-packfs".to_string(), b"yes".to_vec())];
        if let Some(body) = body {
            headers.push(("content-length".to_string(), body.len().to_string().into_bytes()));
        }
        let headers = Fields::from_list(&headers).map_err(|e| format!("headers: {e:?}"))?;
        let request = OutgoingRequest::new(headers);
        request.set_method(&if body.is_some() { Method::Post } else { Method::Get }).unwrap();
        request.set_scheme(Some(&Scheme::Http)).unwrap();
        request.set_authority(Some(authority)).unwrap();
        request.set_path_with_query(Some(&format!("/{path}"))).unwrap();
        let out = request.body().unwrap();
        let future = outgoing_handler::handle(request, None).map_err(|e| format!("handle: {e:?}"))?;
        if let Some(body) = body {
            // No flush: once the declared length is written the host may
            // close the stream, and `finish` flushes.
            out.write().unwrap().write_all(body).map_err(|e| format!("write: {e}"))?;
        }
        OutgoingBody::finish(out, None).map_err(|e| format!("finish: {e:?}"))?;
        Ok(future)
    }

    fn request(url: &str, body: Option<&[u8]>) -> Result<Reply, String> {
        let future = send(url, body)?;
        future.subscribe().block();
        let response = future.get().expect("ready").expect("once").map_err(|e| format!("response: {e:?}"))?;
        let (status, echo) = (response.status(), response.headers().get("x-echo"));
        let incoming = response.consume().unwrap();
        let mut body = Vec::new();
        {
            let mut stream = incoming.stream().unwrap();
            stream.read_to_end(&mut body).map_err(|e| format!("read: {e}"))?;
        }
        let trailers = IncomingBody::finish(incoming);
        trailers.subscribe().block();
        let trailers = trailers.get().expect("ready").expect("once").map_err(|e| format!("trailers: {e:?}"))?;
        // None were sent: hosts say so with none or with an empty set.
        let trailers = trailers.map_or(0, |t| t.entries().len());
        Ok(Reply { status, echo, body, trailers })
    }

    fn post(url: &str) -> Result<String, String> {
        let sent = std::fs::read("/request.txt").map_err(|e| format!("/request.txt: {e}"))?;
        let reply = request(url, Some(&sent))?;
        std::fs::write("/reply.txt", &reply.body).map_err(|e| format!("/reply.txt: {e}"))?;
        let back = std::fs::read("/reply.txt").map_err(|e| format!("/reply.txt: {e}"))?;
        let echo: Vec<String> = reply.echo.iter().map(|v| String::from_utf8_lossy(v).into_owned()).collect();
        Ok(format!(
            "status {} echo {echo:?} trailers {} sent {} {} got {} {}",
            reply.status,
            reply.trailers,
            sent.len(),
            digest(&sent),
            back.len(),
            digest(&back)
        ))
    }

    /// Whether `poll` over a ready response's pollable and a file stream's
    /// reports the response. (Whether it reports the stream is the host's
    /// to say: wasmtime's file streams are ready once a read in the
    /// background is done, a tree's in memory at once.)
    fn poll_mixed(url: &str) -> Result<String, String> {
        let future = send(url, None)?;
        future.subscribe().block();
        let root = preopens::get_directories().into_iter().find(|(_, path)| path == "/");
        let (root, _) = root.ok_or("no / preopen")?;
        let file = root
            .open_at(PathFlags::empty(), "request.txt", OpenFlags::empty(), DescriptorFlags::READ)
            .map_err(|e| format!("open: {e:?}"))?;
        let stream = file.read_via_stream(0).map_err(|e| format!("read-via-stream: {e:?}"))?;
        let (response, bytes) = (future.subscribe(), stream.subscribe());
        let ready = wasi::io::poll::poll(&[&response, &bytes]);
        Ok(format!("response reported {}", ready.contains(&0)))
    }

    pub(crate) fn main() {
        let args: Vec<String> = std::env::args().collect();
        let show = |step: &str, r: Result<String, String>| match r {
            Ok(v) => println!("{step}: ok {v}"),
            Err(e) => println!("{step}: err {e}"),
        };
        show("post", post(&args[1]));
        show("get", request(&args[1], None).map(|r| format!("status {} {}", r.status, String::from_utf8_lossy(&r.body))));
        show("poll", poll_mixed(&args[1]));
        show("refused", request(&args[2], None).map(|r| format!("status {}", r.status)));
        println!("done");
    }
}
