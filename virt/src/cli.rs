//! Stdio and the monotonic clock, exported: they hand out `wasi:io`
//! resources, which the guest gets from this component, so each wraps the
//! host's own.

use crate::Virt;
use crate::bindings::exports::wasi::cli::{stderr, stdin, stdout};
use crate::bindings::exports::wasi::clocks::monotonic_clock;
use crate::bindings::exports::wasi::io::{poll, streams};
use crate::bindings::wasi::cli as host_cli;
use crate::bindings::wasi::clocks::monotonic_clock as host_clock;
use crate::io::{Reader, Ready, Writer};

impl stdin::Guest for Virt {
    fn get_stdin() -> streams::InputStream {
        streams::InputStream::new(Reader::Host { s: host_cli::stdin::get_stdin(), _held: None })
    }
}

impl stdout::Guest for Virt {
    fn get_stdout() -> streams::OutputStream {
        streams::OutputStream::new(Writer::Host { s: host_cli::stdout::get_stdout(), _held: None })
    }
}

impl stderr::Guest for Virt {
    fn get_stderr() -> streams::OutputStream {
        streams::OutputStream::new(Writer::Host { s: host_cli::stderr::get_stderr(), _held: None })
    }
}

impl monotonic_clock::Guest for Virt {
    fn now() -> monotonic_clock::Instant {
        host_clock::now()
    }

    fn resolution() -> monotonic_clock::Duration {
        host_clock::resolution()
    }

    fn subscribe_instant(when: monotonic_clock::Instant) -> poll::Pollable {
        poll::Pollable::new(Ready::Host(host_clock::subscribe_instant(when)))
    }

    fn subscribe_duration(when: monotonic_clock::Duration) -> poll::Pollable {
        poll::Pollable::new(Ready::Host(host_clock::subscribe_duration(when)))
    }
}
