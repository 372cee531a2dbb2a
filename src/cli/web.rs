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
    /// every name under it; `*` for any name). Without it only localhost and IP addresses are
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

/// Warns when `bind` is not loopback (anyone who can reach the address can use the server,
/// which has no authentication), and refuses it when the server would run commands for them
/// (`runs_commands`) unless `allow_remote`.
pub fn check_exposure(
    name: &str,
    bind: IpAddr,
    runs_commands: bool,
    allow_remote: bool,
) -> Result<(), String> {
    if bind.is_loopback() {
        return Ok(());
    }
    if runs_commands && !allow_remote {
        return Err(format!(
            "--bind {bind} with --task or --worker bindings: anyone who can reach {bind} could start executions that run those commands on this machine; bind 127.0.0.1, or give --allow-remote (SFN_LOCAL_ALLOW_REMOTE=1) if this network is yours alone (a container's, say)"
        ));
    }
    errln!(
        "{name}: warning: listening on {bind}, not only loopback: anyone who can reach this address can use it, without authentication (fine inside a container whose port only you publish)"
    );
    Ok(())
}
