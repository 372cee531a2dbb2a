//! The flags that `serve` and `console` share about exposure: which names they answer to,
//! how long clients may take, how many connections they hold, and the warning for an address
//! other than loopback (see [`crate::web`]).

use crate::web::WebOptions;
use clap::Args;
use std::net::IpAddr;
use std::time::Duration;

/// The flags of an HTTP face.
#[derive(Debug, Args)]
pub struct WebArgs {
    /// Also answer requests addressed to NAME (repeatable or comma-separated; `.example` for
    /// every name under it; `<dotless>` for every name without a dot, such as compose service
    /// names; `*` for any name, which counts as an exposed server, as a public suffix such as
    /// `.com` does: refused with --task, --worker, a template's Lambda code or
    /// --allow-http-invoke of any host unless --allow-remote). Without it only localhost and IP addresses are
    /// answered, so that a web page cannot reach the server by pointing its own name at
    /// 127.0.0.1 (DNS rebinding). In Docker, name what clients use, e.g. a compose service's
    /// name: `--allow-host sfn` or SFN_LOCAL_ALLOW_HOSTS=sfn.
    #[arg(
        long = "allow-host",
        value_name = "NAME",
        env = "SFN_LOCAL_ALLOW_HOSTS",
        value_delimiter = ','
    )]
    pub allow_hosts: Vec<String>,
    /// Seconds a client may take to send a request's headers, and stay idle between requests,
    /// before its connection is closed.
    #[arg(long, value_name = "SECONDS", default_value = "10", value_parser = positive_seconds)]
    pub header_timeout: Duration,
    /// Seconds a request's body may take to arrive.
    #[arg(long, value_name = "SECONDS", default_value = "60", value_parser = positive_seconds)]
    pub body_timeout: Duration,
    /// Most connections open at once; more wait until one closes (the log says when).
    #[arg(long, value_name = "N", default_value_t = crate::web::DEFAULT_MAX_CONNECTIONS,
          value_parser = positive_count)]
    pub max_connections: usize,
}

fn positive_seconds(text: &str) -> Result<Duration, String> {
    let d = crate::tasks::managed::parse_seconds(text)?;
    if d.is_zero() {
        return Err(format!("'{text}' must be more than 0 seconds"));
    }
    Ok(d)
}

fn positive_count(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("'{text}' is not a whole number above 0")),
    }
}

impl WebArgs {
    /// The checked options of the server called `name` in its log lines.
    pub fn options(&self, name: &'static str) -> Result<WebOptions, String> {
        Ok(WebOptions {
            hosts: crate::web::hosts::AllowedHosts::parse(&self.allow_hosts)?,
            header_timeout: self.header_timeout,
            body_timeout: self.body_timeout,
            max_connections: self.max_connections,
            name,
        })
    }
}

/// What a server exposes, for [`check_exposure`].
#[derive(Debug, Clone)]
pub struct Exposure {
    /// The address it listens on.
    pub bind: IpAddr,
    /// The `--allow-host` entry that lets any web page in (`*`, or a public suffix such as
    /// `.com`): DNS rebinding reaches it (see [`crate::web::hosts::AllowedHosts::open_to_any_page`]).
    pub open_host: Option<String>,
    /// It runs commands for its clients (`--task`, `--worker`).
    pub runs_commands: bool,
    /// It runs a template's Lambda functions (local code with a handler) for its clients.
    pub runs_template_code: bool,
    /// HTTP Tasks may call any host (`--allow-http-invoke` without a list): a proxy.
    pub proxies_anywhere: bool,
    /// `--allow-remote`.
    pub allow_remote: bool,
}

/// Warns when the server is exposed (an address other than loopback, or a Host name any web
/// page can have accepted: anyone who can reach it, a rebinding page included, can use it,
/// with no authentication), and refuses it when it would run commands (bindings or a
/// template's Lambda code) or proxy requests for them unless `allow_remote`.
pub fn check_exposure(name: &str, exposure: &Exposure) -> Result<(), String> {
    let (how, reach) = match (bind_exposed(exposure.bind), &exposure.open_host) {
        (Some(how), _) => (how, format!("anyone who can reach {}", exposure.bind)),
        (None, Some(entry)) => (allow_host_flag(entry), page_reach(entry)),
        (None, None) => return Ok(()),
    };
    let risky = [
        (
            exposure.runs_commands,
            "--task or --worker bindings",
            "start executions that run those commands on this machine",
        ),
        (
            exposure.runs_template_code,
            "a template's Lambda functions (CodeUri and Handler, run on this machine)",
            "start executions that run those handlers with input of their choosing",
        ),
        (
            exposure.proxies_anywhere,
            "--allow-http-invoke of any host",
            "make this server call any address it can reach",
        ),
    ];
    for (risky, what, harm) in risky {
        if risky && !exposure.allow_remote {
            return Err(format!(
                "{how} with {what}: {reach} could {harm}; bind 127.0.0.1 and name the hosts you use (--allow-host NAME, --allow-http-invoke HOST), or give --allow-remote (SFN_LOCAL_ALLOW_REMOTE=1) if this network is yours alone (a container's, say)"
            ));
        }
    }
    match &exposure.open_host {
        Some(entry) if exposure.bind.is_loopback() => errln!(
            "{name}: warning: {}: {} can use this server, without authentication; name the hosts you use instead",
            allow_host_flag(entry),
            page_reach(entry)
        ),
        _ => errln!(
            "{name}: warning: listening on {}, not only loopback: anyone who can reach this address can use it, without authentication (fine inside a container whose port only you publish)",
            exposure.bind
        ),
    }
    Ok(())
}

/// `--bind ADDRESS` when the address is not loopback.
fn bind_exposed(bind: IpAddr) -> Option<String> {
    (!bind.is_loopback()).then(|| format!("--bind {bind}"))
}

/// The flag as the user gave it, quoted where a shell would expand it.
fn allow_host_flag(entry: &str) -> String {
    format!("--allow-host {}", shell_words::quote(entry))
}

/// Who reaches a server through the `--allow-host` entry `entry`.
fn page_reach(entry: &str) -> String {
    match entry {
        "*" => "any web page (it can point its own name at 127.0.0.1: DNS rebinding)".to_owned(),
        suffix => format!(
            "any web page under {suffix} (a public suffix: anyone can register a name there and point it at 127.0.0.1, DNS rebinding)"
        ),
    }
}
