//! `sfn-local serve`: the AWS Step Functions API on localhost (see [`crate::serve`]).

use crate::cli::{db, EXIT_USAGE};
use crate::serve::{MachineTask, ServeConfig};
use clap::Args;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The port (Step Functions Local's is 8083; 0 picks a free one).
    #[arg(long, default_value_t = 8083)]
    pub port: u16,
    /// The address to listen on. Only loopback unless you name another address here.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub bind: IpAddr,
    /// The region of ARNs for unsigned requests (a signed request's own region wins).
    #[arg(long)]
    pub region: Option<String>,
    /// The account id in ARNs.
    #[arg(long, default_value = "123456789012")]
    pub account_id: String,
    /// The database (default: SFN_LOCAL_DB, else the XDG state directory).
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// How hard each commit tries to survive a crash (see the README).
    #[arg(long, value_enum, default_value_t = db::DurabilityArg::Normal)]
    pub durability: db::DurabilityArg,
    /// A MockConfigFile (Step Functions Local's format) for `stateMachineArn#TestCase`.
    #[arg(long, value_name = "FILE", env = "SFN_MOCK_CONFIG")]
    pub mock_config: Option<PathBuf>,
    /// Multiply every duration executions wait for (Step Functions Local's WAIT_TIME_SCALE).
    #[arg(long, value_name = "F", env = "WAIT_TIME_SCALE", default_value_t = 1.0)]
    pub time_scale: f64,
    /// Run a local program for a Task state of one state machine: MACHINE:STATE=COMMAND
    /// (repeatable).
    #[arg(long = "task", value_name = "MACHINE:STATE=COMMAND")]
    pub tasks: Vec<String>,
    /// Run a managed handler for a `.waitForTaskToken` state of one state machine:
    /// MACHINE:STATE=COMMAND (repeatable). Its stdout answers the task; heartbeats and
    /// cancellation are done for it (see "Workers").
    #[arg(long = "worker", value_name = "MACHINE:STATE=COMMAND")]
    pub workers: Vec<String>,
    /// Who beats for `--worker` handlers: `auto` (sfn-local) or `manual` (the handler).
    #[arg(long, value_enum, default_value_t = crate::tasks::managed::HeartbeatMode::Auto)]
    pub heartbeat: crate::tasks::managed::HeartbeatMode,
    /// Seconds between SIGTERM and SIGKILL for a `--worker` handler whose task is over.
    #[arg(long, value_name = "SECONDS", default_value = "10", value_parser = crate::tasks::managed::parse_seconds)]
    pub kill_after: std::time::Duration,
    /// The history cap (AWS: 25000). 0 removes it.
    #[arg(long, default_value_t = crate::engine::history::MAX_HISTORY_EVENTS)]
    pub max_history_events: i64,
    /// How many threads run executions (each hosts many).
    #[arg(long, default_value_t = 2)]
    pub execution_threads: usize,
    /// Let HTTP Tasks (`http:invoke`) call their ApiEndpoint: any host, or only the HOST or
    /// HOST:PORT listed. Off by default: a server that calls whatever URL a request names is a
    /// proxy into this machine for anyone who reaches it.
    #[arg(long, value_name = "HOST", num_args = 0.., value_delimiter = ',')]
    pub allow_http_invoke: Option<Vec<String>>,
    /// Allow a --bind address other than loopback even with --task or --worker bindings.
    #[arg(long, env = "SFN_LOCAL_ALLOW_REMOTE")]
    pub allow_remote: bool,
    /// Who may address the server and how long clients may take.
    #[command(flatten)]
    pub web: crate::cli::web::WebArgs,
}

/// Runs `serve` until SIGINT or SIGTERM.
pub fn run(args: ServeArgs) -> ExitCode {
    if !(args.time_scale.is_finite() && args.time_scale >= 0.0) {
        errln!("error: --time-scale must be a non-negative number");
        return ExitCode::from(EXIT_USAGE);
    }
    let mut tasks = Vec::new();
    for t in &args.tasks {
        match MachineTask::parse(t) {
            Ok(task) => tasks.push(task),
            Err(e) => {
                errln!("error: {e}");
                return ExitCode::from(EXIT_USAGE);
            }
        }
    }
    let mut workers = Vec::new();
    for w in &args.workers {
        match MachineTask::parse_flag("--worker", w) {
            Ok(worker) => workers.push(worker),
            Err(e) => {
                errln!("error: {e}");
                return ExitCode::from(EXIT_USAGE);
            }
        }
    }
    let exposure = crate::cli::web::check_exposure(
        "sfn-local serve",
        args.bind,
        !(tasks.is_empty() && workers.is_empty()),
        args.allow_remote,
    );
    let web = match exposure.and_then(|()| args.web.options("sfn-local serve")) {
        Ok(web) => web,
        Err(e) => {
            errln!("error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let store = match db::open_with(args.db.clone(), args.durability) {
        Ok(s) => s,
        Err(e) => {
            errln!("{e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let region = args
        .region
        .or_else(|| std::env::var("AWS_REGION").ok().filter(|r| !r.is_empty()))
        .or_else(|| {
            std::env::var("AWS_DEFAULT_REGION")
                .ok()
                .filter(|r| !r.is_empty())
        })
        .unwrap_or_else(|| "us-east-1".into());
    let config = ServeConfig {
        bind: SocketAddr::new(args.bind, args.port),
        region,
        account_id: args.account_id,
        time_scale: args.time_scale,
        mock_config: args.mock_config,
        tasks,
        workers,
        worker_options: crate::tasks::managed::ManagedOptions {
            heartbeat: args.heartbeat,
            kill_after: args.kill_after,
        },
        max_history_events: args.max_history_events,
        threads: args.execution_threads,
        web,
        http_invoke: crate::tasks::http::HttpAccess::from_flag(args.allow_http_invoke.as_deref()),
    };
    let path = store.path().display().to_string();
    let result = crate::serve::run(store, config, |addr, resumed| {
        if resumed > 0 {
            errln!("sfn-local serve: resumed {resumed} execution(s) whose runner was gone");
        }
        errln!("sfn-local serve: listening on http://{addr} (database {path})");
    });
    match result {
        Ok(()) => {
            errln!("sfn-local serve: stopped; running executions stay RUNNING and resume on the next start");
            ExitCode::SUCCESS
        }
        Err(e) => {
            errln!("error: {e}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}
