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
    /// names; `*` for any name, which counts as an exposed server: refused with --task, --worker
    /// or --allow-http-invoke of any host unless --allow-remote). Without it only localhost and IP addresses are
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
#[derive(Debug, Clone, Copy)]
pub struct Exposure {
    /// The address it listens on.
    pub bind: IpAddr,
    /// `--allow-host '*'`: any name reaches it, DNS rebinding included.
    pub any_host: bool,
    /// It runs commands for its clients (`--task`, `--worker`).
    pub runs_commands: bool,
    /// HTTP Tasks may call any host (`--allow-http-invoke` without a list): a proxy.
    pub proxies_anywhere: bool,
    /// `--allow-remote`.
    pub allow_remote: bool,
}

/// Warns when the server is exposed (an address other than loopback, or any Host name
/// accepted: anyone who can reach it, a rebinding page included, can use it, with no
/// authentication), and refuses it when it would run commands or proxy requests for them
/// unless `allow_remote`.
pub fn check_exposure(name: &str, exposure: Exposure) -> Result<(), String> {
    let Exposure { bind, any_host, .. } = exposure;
    if bind.is_loopback() && !any_host {
        return Ok(());
    }
    let how = match bind.is_loopback() {
        false => format!("--bind {bind}"),
        true => "--allow-host '*'".to_owned(),
    };
    let reach = match bind.is_loopback() {
        false => format!("anyone who can reach {bind}"),
        true => "any web page (it can point its own name at 127.0.0.1)".to_owned(),
    };
    let risky = [
        (
            exposure.runs_commands,
            "--task or --worker bindings",
            "start executions that run those commands on this machine",
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
    match bind.is_loopback() {
        false => errln!(
            "{name}: warning: listening on {bind}, not only loopback: anyone who can reach this address can use it, without authentication (fine inside a container whose port only you publish)"
        ),
        true => errln!(
            "{name}: warning: --allow-host '*': any web page can use this server by pointing its own name at 127.0.0.1 (DNS rebinding), without authentication; name the hosts you use instead"
        ),
    }
    Ok(())
}
