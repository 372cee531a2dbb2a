//! What the two HTTP faces (serve's API and the console it mounts, or `sfn-local console`
//! alone) share to be safe to leave running while you browse the web on the same machine.
//!
//! A web page can reach a server on localhost in two ways, and both are closed here:
//!
//! - **DNS rebinding**: a page on `evil.example` points its own name at 127.0.0.1, and its
//!   scripts then talk to this server "same-origin". Every request's `Host` must name this
//!   machine (`localhost`, an IP address) or a name the user allowed ([`hosts`]).
//! - **Cross-site requests**: the API keeps AWS's protocol (`X-Amz-Target`, a custom header,
//!   needs a CORS preflight that this server never grants); the console's form posts check
//!   `Origin`/`Sec-Fetch-Site` and carry a per-process token (in `console`).
//!
//! [`listen::serve`] runs the connection loop with hyper's header-read timeout (which also
//! closes idle keep-alive connections), a deadline for reading a request's body, and a cap on
//! open connections.

pub mod hosts;
pub mod listen;

use std::time::Duration;

/// How a face's server guards itself.
#[derive(Debug, Clone)]
pub struct WebOptions {
    /// The names requests may be addressed to, beyond localhost and IP addresses.
    pub hosts: hosts::AllowedHosts,
    /// How long a connection may take to send a request's head, and stay idle between
    /// requests.
    pub header_timeout: Duration,
    /// How long a request's body may take to arrive, once its head has.
    pub body_timeout: Duration,
    /// How many connections may be open at once; more wait to be accepted.
    pub max_connections: usize,
    /// Who speaks in log lines (`sfn-local serve`, `sfn-local console`).
    pub name: &'static str,
}

impl WebOptions {
    /// The defaults: localhost and IP addresses only, 10 s for a head (or idle between
    /// requests), 60 s for a body, 512 connections.
    pub fn new(name: &'static str) -> WebOptions {
        WebOptions {
            hosts: hosts::AllowedHosts::default(),
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            name,
        }
    }
}

/// The default of `--header-timeout`.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// The default of `--body-timeout`.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(60);
/// The default of `--max-connections`.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

/// Prints a line on stderr as `NAME: message` (a closed stderr is not an error).
pub(crate) fn log(name: &str, message: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr().lock(), "{name}: {message}");
}
