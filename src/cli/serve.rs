//! `sfn-local serve`: the AWS Step Functions API on localhost (see [`crate::serve`]).

use crate::cli::flags::{self, AccountArgs, DatabaseArgs, FlagError, SupervisionArgs};
use crate::cli::EXIT_USAGE;
use crate::serve::{MachineTask, ServeConfig};
use clap::Args;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `serve`.
#[derive(Debug, Args)]
#[command(mut_args(flags::reword(
    "region",
    "The region of ARNs for unsigned requests (a signed request's own region wins)"
)))]
pub struct ServeArgs {
    /// The port (Step Functions Local's is 8083; 0 picks a free one).
    #[arg(long, default_value_t = 8083)]
    pub port: u16,
    /// The address to listen on. Only loopback unless you name another address here.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub bind: IpAddr,
    /// `--region`, `--account-id`.
    #[command(flatten)]
    pub account: AccountArgs,
    /// `--db`, `--durability`.
    #[command(flatten)]
    pub database: DatabaseArgs,
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
    /// `--heartbeat`, `--kill-after`.
    #[command(flatten)]
    pub supervision: SupervisionArgs,
    /// The history cap (AWS: 25000). 0 removes it.
    #[arg(long, default_value_t = crate::engine::history::MAX_HISTORY_EVENTS)]
    pub max_history_events: i64,
    /// How many threads run executions (each hosts many).
    #[arg(long, default_value_t = 2)]
    pub execution_threads: usize,
}

/// Lowers `serve`'s flags into the server's configuration.
fn lower(args: ServeArgs) -> Result<ServeConfig, FlagError> {
    let time_scale = flags::time_scale::check(args.time_scale)?;
    let tasks = args
        .tasks
        .iter()
        .map(|t| MachineTask::parse(t))
        .collect::<Result<Vec<_>, _>>()?;
    let workers = args
        .workers
        .iter()
        .map(|w| MachineTask::parse_flag("--worker", w))
        .collect::<Result<Vec<_>, _>>()?;
    let account = args.account.lower();
    Ok(ServeConfig {
        bind: SocketAddr::new(args.bind, args.port),
        region: account.region,
        account_id: account.account_id,
        time_scale,
        mock_config: args.mock_config,
        tasks,
        workers,
        worker_options: args.supervision.lower(),
        max_history_events: args.max_history_events,
        threads: args.execution_threads,
    })
}

/// Runs `serve` until SIGINT or SIGTERM.
pub fn run(args: ServeArgs) -> ExitCode {
    let database = args.database.lower();
    let config = match lower(args) {
        Ok(c) => c,
        Err(e) => return e.exit(),
    };
    let store = match database.open() {
        Ok(s) => s,
        Err(e) => return e.exit(),
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
