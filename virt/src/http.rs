//! `wasi:http`, exported for a guest that imports it (feature `http`, the
//! `adapter-http` world): requests, responses and bodies hand out
//! `wasi:io` resources (a body's stream, a future's pollable), and the
//! guest's `wasi:io` is this component's, so each of their resources wraps
//! the host's and forwards every call; the values are the same types,
//! declared twice, and are mirrored across. Requests go out through the
//! host's handler. A guest's incoming handler gets the host's request
//! through `accept` and the bridge (see the world): the wrapper made at
//! composition hands the host's request here and takes the guest's back.
//!
//! A body's stream is counted among what the guest holds (`held`), as a
//! file's or a socket's is: past the limit, `stream` and `write` fail.
//! Every other resource here is one of the host's, bounded as the host
//! bounds its own; each holds two handles in the host's table (the
//! host's resource, and the guest's handle to its wrap), so a per-instance
//! handle limit is reached at half the resources.

use std::cell::RefCell;

use crate::Virt;
use crate::bindings::exports::packfs::virt::http_bridge;
use crate::bindings::exports::wasi::http::{outgoing_handler, types as guest};
use crate::bindings::exports::wasi::io::error::ErrorBorrow;
use crate::bindings::exports::wasi::io::poll::Pollable;
use crate::bindings::exports::wasi::io::streams::{InputStream, OutputStream};
use crate::bindings::wasi::http::{outgoing_handler as host_handler, types as host};
use crate::held::Held;
use crate::io::{IoError, Reader, Ready, Writer};

/// One of the host's resources, as the guest's.
pub(crate) struct Wrap<T> {
    h: T,
}

fn wrap<T>(h: T) -> Wrap<T> {
    Wrap { h }
}

/// The host's resource inside a guest's handle.
macro_rules! host_of {
    ($handle:expr, $t:ty) => {
        $handle.into_inner::<Wrap<$t>>().h
    };
}

/// A value of one side's type as the other side's.
trait Mirror<T> {
    fn mirror(self) -> T;
}

impl<T> Mirror<T> for T {
    fn mirror(self) -> T {
        self
    }
}

/// [`Mirror`] both ways between the host's and the guest's declarations
/// of a variant.
macro_rules! mirror_variant {
    ($a:ty, $b:ty { $($unit:ident),* ; $($payload:ident),* }) => {
        mirror_variant!(@one $a => $b { $($unit),* ; $($payload),* });
        mirror_variant!(@one $b => $a { $($unit),* ; $($payload),* });
    };
    (@one $a:ty => $b:ty { $($unit:ident),* ; $($payload:ident),* }) => {
        impl Mirror<$b> for $a {
            fn mirror(self) -> $b {
                type A = $a;
                type B = $b;
                match self {
                    $(A::$unit => B::$unit,)*
                    $(A::$payload(x) => B::$payload(x.mirror()),)*
                }
            }
        }
    };
}

/// [`Mirror`] both ways between the host's and the guest's declarations
/// of a record.
macro_rules! mirror_record {
    ($a:ty, $b:ty { $($field:ident),* }) => {
        mirror_record!(@one $a => $b { $($field),* });
        mirror_record!(@one $b => $a { $($field),* });
    };
    (@one $a:ty => $b:ty { $($field:ident),* }) => {
        impl Mirror<$b> for $a {
            fn mirror(self) -> $b {
                type B = $b;
                B { $($field: self.$field.mirror()),* }
            }
        }
    };
}

mirror_variant!(host::Method, guest::Method { Get, Head, Post, Put, Delete, Connect, Options, Trace, Patch; Other });
mirror_variant!(host::Scheme, guest::Scheme { Http, Https; Other });
mirror_variant!(host::HeaderError, guest::HeaderError { InvalidSyntax, Forbidden, Immutable; });
mirror_record!(host::DnsErrorPayload, guest::DnsErrorPayload { rcode, info_code });
mirror_record!(host::TlsAlertReceivedPayload, guest::TlsAlertReceivedPayload { alert_id, alert_message });
mirror_record!(host::FieldSizePayload, guest::FieldSizePayload { field_name, field_size });
mirror_variant!(host::ErrorCode, guest::ErrorCode {
    DnsTimeout, DestinationNotFound, DestinationUnavailable, DestinationIpProhibited,
    DestinationIpUnroutable, ConnectionRefused, ConnectionTerminated, ConnectionTimeout,
    ConnectionReadTimeout, ConnectionWriteTimeout, ConnectionLimitReached, TlsProtocolError,
    TlsCertificateError, HttpRequestDenied, HttpRequestLengthRequired, HttpRequestMethodInvalid,
    HttpRequestUriInvalid, HttpRequestUriTooLong, HttpResponseIncomplete, HttpResponseTimeout,
    HttpUpgradeFailed, HttpProtocolError, LoopDetected, ConfigurationError;
    DnsError, TlsAlertReceived, HttpRequestBodySize, HttpRequestHeaderSectionSize,
    HttpRequestHeaderSize, HttpRequestTrailerSectionSize, HttpRequestTrailerSize,
    HttpResponseHeaderSectionSize, HttpResponseHeaderSize, HttpResponseBodySize,
    HttpResponseTrailerSectionSize, HttpResponseTrailerSize, HttpResponseTransferCoding,
    HttpResponseContentCoding, InternalError
});

impl Mirror<Option<guest::FieldSizePayload>> for Option<host::FieldSizePayload> {
    fn mirror(self) -> Option<guest::FieldSizePayload> {
        self.map(Mirror::mirror)
    }
}

impl Mirror<Option<host::FieldSizePayload>> for Option<guest::FieldSizePayload> {
    fn mirror(self) -> Option<host::FieldSizePayload> {
        self.map(Mirror::mirror)
    }
}

fn fields(h: host::Fields) -> guest::Fields {
    guest::Fields::new(wrap(h))
}

type HeaderResult = Result<(), guest::HeaderError>;

impl guest::Guest for Virt {
    type Fields = Wrap<host::Fields>;
    type IncomingRequest = Wrap<host::IncomingRequest>;
    type OutgoingRequest = Wrap<host::OutgoingRequest>;
    type RequestOptions = Wrap<host::RequestOptions>;
    type ResponseOutparam = Wrap<host::ResponseOutparam>;
    type IncomingResponse = Wrap<host::IncomingResponse>;
    type IncomingBody = Wrap<host::IncomingBody>;
    type FutureTrailers = Wrap<host::FutureTrailers>;
    type OutgoingResponse = Wrap<host::OutgoingResponse>;
    type OutgoingBody = Wrap<host::OutgoingBody>;
    type FutureIncomingResponse = Wrap<host::FutureIncomingResponse>;

    fn http_error_code(err: ErrorBorrow<'_>) -> Option<guest::ErrorCode> {
        match err.get::<IoError>() {
            IoError::Host(e) => host::http_error_code(e).map(Mirror::mirror),
            // A file's error is never an HTTP one.
            IoError::Fs(_) => None,
        }
    }
}

impl guest::GuestFields for Wrap<host::Fields> {
    fn new() -> Self {
        wrap(host::Fields::new())
    }

    fn from_list(entries: Vec<(String, Vec<u8>)>) -> Result<guest::Fields, guest::HeaderError> {
        host::Fields::from_list(&entries).map(fields).map_err(Mirror::mirror)
    }

    fn get(&self, name: String) -> Vec<Vec<u8>> {
        self.h.get(&name)
    }

    fn has(&self, name: String) -> bool {
        self.h.has(&name)
    }

    fn set(&self, name: String, value: Vec<Vec<u8>>) -> HeaderResult {
        self.h.set(&name, &value).map_err(Mirror::mirror)
    }

    fn delete(&self, name: String) -> HeaderResult {
        self.h.delete(&name).map_err(Mirror::mirror)
    }

    fn append(&self, name: String, value: Vec<u8>) -> HeaderResult {
        self.h.append(&name, &value).map_err(Mirror::mirror)
    }

    fn entries(&self) -> Vec<(String, Vec<u8>)> {
        self.h.entries()
    }

    fn clone(&self) -> guest::Fields {
        fields(self.h.clone())
    }
}

impl guest::GuestIncomingRequest for Wrap<host::IncomingRequest> {
    forward! {
        path_with_query(&self) -> Option<String>;
        authority(&self) -> Option<String>;
    }

    fn method(&self) -> guest::Method {
        self.h.method().mirror()
    }

    fn scheme(&self) -> Option<guest::Scheme> {
        self.h.scheme().map(Mirror::mirror)
    }

    fn headers(&self) -> guest::Headers {
        fields(self.h.headers())
    }

    fn consume(&self) -> Result<guest::IncomingBody, ()> {
        self.h.consume().map(|b| guest::IncomingBody::new(wrap(b)))
    }
}

impl guest::GuestOutgoingRequest for Wrap<host::OutgoingRequest> {
    forward! {
        path_with_query(&self) -> Option<String>;
        authority(&self) -> Option<String>;
    }

    fn new(headers: guest::Headers) -> Self {
        wrap(host::OutgoingRequest::new(host_of!(headers, host::Fields)))
    }

    fn body(&self) -> Result<guest::OutgoingBody, ()> {
        self.h.body().map(|b| guest::OutgoingBody::new(wrap(b)))
    }

    fn method(&self) -> guest::Method {
        self.h.method().mirror()
    }

    fn set_method(&self, method: guest::Method) -> Result<(), ()> {
        self.h.set_method(&method.mirror())
    }

    fn set_path_with_query(&self, path_with_query: Option<String>) -> Result<(), ()> {
        self.h.set_path_with_query(path_with_query.as_deref())
    }

    fn scheme(&self) -> Option<guest::Scheme> {
        self.h.scheme().map(Mirror::mirror)
    }

    fn set_scheme(&self, scheme: Option<guest::Scheme>) -> Result<(), ()> {
        self.h.set_scheme(scheme.map(Mirror::mirror).as_ref())
    }

    fn set_authority(&self, authority: Option<String>) -> Result<(), ()> {
        self.h.set_authority(authority.as_deref())
    }

    fn headers(&self) -> guest::Headers {
        fields(self.h.headers())
    }
}

impl guest::GuestRequestOptions for Wrap<host::RequestOptions> {
    forward! {
        connect_timeout(&self) -> Option<u64>;
        set_connect_timeout(&self, duration: Option<u64>) -> Result<(), ()>;
        first_byte_timeout(&self) -> Option<u64>;
        set_first_byte_timeout(&self, duration: Option<u64>) -> Result<(), ()>;
        between_bytes_timeout(&self) -> Option<u64>;
        set_between_bytes_timeout(&self, duration: Option<u64>) -> Result<(), ()>;
    }

    fn new() -> Self {
        wrap(host::RequestOptions::new())
    }
}

impl guest::GuestResponseOutparam for Wrap<host::ResponseOutparam> {
    fn set(param: guest::ResponseOutparam, response: Result<guest::OutgoingResponse, guest::ErrorCode>) {
        let response = response.map(|r| host_of!(r, host::OutgoingResponse)).map_err(Mirror::mirror);
        host::ResponseOutparam::set(host_of!(param, host::ResponseOutparam), response);
    }
}

impl guest::GuestIncomingResponse for Wrap<host::IncomingResponse> {
    forward! {
        status(&self) -> u16;
    }

    fn headers(&self) -> guest::Headers {
        fields(self.h.headers())
    }

    fn consume(&self) -> Result<guest::IncomingBody, ()> {
        self.h.consume().map(|b| guest::IncomingBody::new(wrap(b)))
    }
}

impl guest::GuestIncomingBody for Wrap<host::IncomingBody> {
    fn stream(&self) -> Result<InputStream, ()> {
        let held = Held::open().ok_or(())?;
        self.h.stream().map(|s| InputStream::new(Reader::Host { s, _held: Some(held) }))
    }

    fn finish(this: guest::IncomingBody) -> guest::FutureTrailers {
        guest::FutureTrailers::new(wrap(host::IncomingBody::finish(host_of!(this, host::IncomingBody))))
    }
}

impl guest::GuestFutureTrailers for Wrap<host::FutureTrailers> {
    fn subscribe(&self) -> Pollable {
        Pollable::new(Ready::Host(self.h.subscribe()))
    }

    fn get(&self) -> Option<Result<Result<Option<guest::Trailers>, guest::ErrorCode>, ()>> {
        self.h.get().map(|r| r.map(|r| r.map(|t| t.map(fields)).map_err(Mirror::mirror)))
    }
}

impl guest::GuestOutgoingResponse for Wrap<host::OutgoingResponse> {
    forward! {
        status_code(&self) -> u16;
        set_status_code(&self, status_code: u16) -> Result<(), ()>;
    }

    fn new(headers: guest::Headers) -> Self {
        wrap(host::OutgoingResponse::new(host_of!(headers, host::Fields)))
    }

    fn headers(&self) -> guest::Headers {
        fields(self.h.headers())
    }

    fn body(&self) -> Result<guest::OutgoingBody, ()> {
        self.h.body().map(|b| guest::OutgoingBody::new(wrap(b)))
    }
}

impl guest::GuestOutgoingBody for Wrap<host::OutgoingBody> {
    fn write(&self) -> Result<OutputStream, ()> {
        let held = Held::open().ok_or(())?;
        self.h.write().map(|s| OutputStream::new(Writer::Host { s, _held: Some(held) }))
    }

    fn finish(this: guest::OutgoingBody, trailers: Option<guest::Trailers>) -> Result<(), guest::ErrorCode> {
        let trailers = trailers.map(|t| host_of!(t, host::Fields));
        host::OutgoingBody::finish(host_of!(this, host::OutgoingBody), trailers).map_err(Mirror::mirror)
    }
}

impl guest::GuestFutureIncomingResponse for Wrap<host::FutureIncomingResponse> {
    fn subscribe(&self) -> Pollable {
        Pollable::new(Ready::Host(self.h.subscribe()))
    }

    fn get(&self) -> Option<Result<Result<guest::IncomingResponse, guest::ErrorCode>, ()>> {
        let response = |r| guest::IncomingResponse::new(wrap(r));
        self.h.get().map(|r| r.map(|r| r.map(response).map_err(Mirror::mirror)))
    }
}

impl outgoing_handler::Guest for Virt {
    fn handle(
        request: guest::OutgoingRequest,
        options: Option<guest::RequestOptions>,
    ) -> Result<guest::FutureIncomingResponse, guest::ErrorCode> {
        let options = options.map(|o| host_of!(o, host::RequestOptions));
        host_handler::handle(host_of!(request, host::OutgoingRequest), options)
            .map(|f| guest::FutureIncomingResponse::new(wrap(f)))
            .map_err(Mirror::mirror)
    }
}

thread_local! {
    /// The host's request `accept` took, until the bridge hands it on.
    static ACCEPTED: RefCell<Option<host::IncomingRequest>> = const { RefCell::new(None) };
    /// Its response-outparam, likewise.
    static OUTPARAM: RefCell<Option<host::ResponseOutparam>> = const { RefCell::new(None) };
}

impl crate::bindings::generated::Guest for Virt {
    fn accept(request: host::IncomingRequest, response_out: host::ResponseOutparam) {
        ACCEPTED.replace(Some(request));
        OUTPARAM.replace(Some(response_out));
    }
}

// Only the wrapper calls these, each once right after `accept` (a guest
// importing `packfs:` is refused): anything else is a bug, and traps.
impl http_bridge::Guest for Virt {
    fn take_request() -> guest::IncomingRequest {
        guest::IncomingRequest::new(wrap(ACCEPTED.take().expect("accept came first")))
    }

    fn take_outparam() -> guest::ResponseOutparam {
        guest::ResponseOutparam::new(wrap(OUTPARAM.take().expect("accept came first")))
    }
}
