//! An HTTP handler with files, for `packfs virt`'s bridge of a guest's
//! `wasi:http/incoming-handler` (`host/tests/virt/http.rs`; WASI 0.2
//! only), served by `wasmtime serve`. `GET /file/NAME` answers the file
//! `/NAME` of its tree; `POST /save/NAME` writes the request's body to
//! `/tmp/NAME`, reads it back and answers it in capitals. Anything else,
//! or a failure, is a 404 with the error.
//!
//! Built for wasm32-wasip2 only; the wasm32-wasip1 build is a stub.

fn main() {
    eprintln!("http_serve is a wasi:http handler: run it with `wasmtime serve`");
    std::process::exit(2);
}

#[cfg(target_env = "p2")]
mod serve {
    use std::io::{Read, Write};

    use wasi::exports::http::incoming_handler::Guest;
    use wasi::http::types::{
        Fields, IncomingBody, IncomingRequest, Method, OutgoingBody, OutgoingResponse, ResponseOutparam,
    };

    struct Serve;

    wasi::http::proxy::export!(Serve);

    fn route(request: &IncomingRequest, path: &str) -> Result<Vec<u8>, String> {
        match (request.method(), path.split_once('/').and_then(|(_, p)| p.split_once('/'))) {
            (Method::Get, Some(("file", name))) => std::fs::read(format!("/{name}")).map_err(|e| format!("/{name}: {e}")),
            (Method::Post, Some(("save", name))) => {
                let body = request.consume().map_err(|()| "no body")?;
                let mut got = Vec::new();
                {
                    let mut stream = body.stream().map_err(|()| "no stream")?;
                    stream.read_to_end(&mut got).map_err(|e| format!("read: {e}"))?;
                }
                drop(IncomingBody::finish(body));
                let at = format!("/tmp/{name}");
                std::fs::write(&at, &got).map_err(|e| format!("{at}: {e}"))?;
                Ok(std::fs::read(&at).map_err(|e| format!("{at}: {e}"))?.to_ascii_uppercase())
            }
            _ => Err(format!("no route for {path}")),
        }
    }

    impl Guest for Serve {
        fn handle(request: IncomingRequest, response_out: ResponseOutparam) {
            let path = request.path_with_query().unwrap_or_default();
            let (status, body) = match route(&request, &path) {
                Ok(body) => (200, body),
                Err(e) => (404, e.into_bytes()),
            };
            let headers = Fields::from_list(&[
                ("content-type".to_string(), b"application/octet-stream".to_vec()),
                ("content-length".to_string(), body.len().to_string().into_bytes()),
            ])
            .unwrap();
            let response = OutgoingResponse::new(headers);
            response.set_status_code(status).unwrap();
            let out = response.body().unwrap();
            ResponseOutparam::set(response_out, Ok(response));
            // No flush: once the declared length is written the host may
            // close the stream, and `finish` flushes.
            out.write().unwrap().write_all(&body).unwrap();
            OutgoingBody::finish(out, None).unwrap();
        }
    }
}
