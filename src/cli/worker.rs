//! `sfn-local worker --activity-arn ARN -- COMMAND [ARGS...]`: a managed worker for an activity.
//!
//! It long-polls the activity and runs COMMAND for each task with the supervision of
//! [`crate::tasks::managed`]: automatic heartbeats, cancellation when the task is over, and one
//! answer from the handler's exit. Ctrl-C (or SIGTERM) stops taking tasks and waits for the
//! running handlers. The tasks come from the database, or with `--endpoint-url` from the Step
//! Functions API (`sfn-local serve`, or AWS).

use crate::asl::resource::{Resource, ResourceKind};
use crate::cli::flags::{self, DbArgs, SupervisionArgs};
use crate::cli::tasks::{exit, refuse};
use crate::cli::EXIT_USAGE;
use crate::clock::{Clock, SystemClock};
use crate::tasks::api_channel::ApiChannel;
use crate::tasks::command::CommandLine;
use crate::tasks::managed::{ActivityChannel, ActivityWorker, ChannelError, StoreChannel};
use clap::Args;
use std::process::ExitCode;
use std::sync::Arc;

/// Arguments of `worker`.
#[derive(Debug, Args)]
#[command(mut_args(flags::reword(
    "heartbeat",
    "`auto`: beat while the handler runs; `manual`: the handler beats itself"
)))]
#[command(mut_args(flags::reword(
    "kill_after",
    "Seconds between SIGTERM and SIGKILL for a handler whose task is over"
)))]
#[command(mut_args(flags::edit("db", |a| a.conflicts_with("endpoint_url"))))]
pub struct WorkerArgs {
    /// The activity's ARN, as the Task state's `Resource` names it.
    #[arg(long)]
    pub activity_arn: String,
    /// How many tasks to work on at once.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub concurrency: usize,
    /// `--heartbeat`, `--kill-after`.
    #[command(flatten)]
    pub supervision: SupervisionArgs,
    /// The worker's name, recorded in `ActivityStarted` (1 to 80 characters).
    #[arg(long)]
    pub worker_name: Option<String>,
    /// Stop after taking N tasks (once their handlers are done).
    #[arg(long, value_name = "N")]
    pub max_tasks: Option<u64>,
    /// `--db`.
    #[command(flatten)]
    pub database: DbArgs,
    /// Take and answer tasks through the Step Functions API at URL (`sfn-local serve`, or AWS)
    /// instead of the database; signed with the usual AWS credential variables.
    #[arg(long, value_name = "URL")]
    pub endpoint_url: Option<String>,
    /// The handler: the task input on stdin, `SFN_TASK_TOKEN` set, the result on stdout.
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    pub command: Vec<String>,
}

/// AWS's operation a worker stands for.
const OP: &str = "GetActivityTask";

/// Refuses what AWS would refuse before the first poll: an ARN that is not an activity's, a
/// worker name out of bounds; and a concurrency of 0.
fn check(args: &WorkerArgs) -> Result<(), ExitCode> {
    let is_activity = matches!(
        Resource::parse(&args.activity_arn),
        Ok(Resource {
            kind: ResourceKind::Activity { .. },
            ..
        })
    );
    if !is_activity {
        return Err(refuse(
            OP,
            "InvalidArn",
            &format!("Invalid Arn: '{}'", args.activity_arn),
            exit::INVALID_ARN,
        ));
    }
    if let Some(w) = &args.worker_name {
        let n = w.chars().count();
        if n == 0 || n > 80 {
            return Err(refuse(
                OP,
                "ValidationException",
                "--worker-name must be 1 to 80 characters",
                exit::VALIDATION,
            ));
        }
    }
    if args.concurrency == 0 {
        errln!("error: --concurrency must be at least 1");
        return Err(ExitCode::from(EXIT_USAGE));
    }
    Ok(())
}

/// Where the tasks come from: the Step Functions API at `--endpoint-url`, else the database.
fn channel(
    args: &WorkerArgs,
    clock: &Arc<dyn Clock>,
) -> Result<Box<dyn ActivityChannel>, ExitCode> {
    match &args.endpoint_url {
        Some(url) => match ApiChannel::new(url, &args.activity_arn) {
            Ok(c) => Ok(Box::new(c)),
            Err(e) => {
                errln!("error: {e}");
                Err(ExitCode::from(EXIT_USAGE))
            }
        },
        None => match args.database.lower().open() {
            Ok(store) => Ok(Box::new(StoreChannel::new(store, clock.clone()))),
            Err(e) => {
                errln!("error: {e}");
                Err(ExitCode::from(exit::STORE))
            }
        },
    }
}

/// Runs `worker`.
pub fn run(args: WorkerArgs) -> ExitCode {
    if let Err(code) = check(&args) {
        return code;
    }
    let clock: Arc<dyn Clock> = Arc::new(SystemClock::new(1.0));
    let channel = match channel(&args, &clock) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let worker = ActivityWorker {
        activity_arn: args.activity_arn,
        worker_name: args.worker_name,
        command: CommandLine {
            argv: args.command,
            database: None,
        },
        options: args.supervision.lower(),
        concurrency: args.concurrency,
        max_tasks: args.max_tasks,
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            errln!("error: cannot start the runtime: {e}");
            return ExitCode::from(exit::STORE);
        }
    };
    let notice = std::rc::Rc::new(|m: &str| errln!("sfn-local worker: {m}"));
    let ended = runtime.block_on(async {
        worker
            .run(channel.as_ref(), clock.as_ref(), notice, shutdown())
            .await
    });
    match ended {
        Ok(_) => ExitCode::SUCCESS,
        Err(ChannelError::Refused { code, message }) => {
            let status = match code.as_str() {
                "InvalidArn" => exit::INVALID_ARN,
                "ValidationException" => exit::VALIDATION,
                _ => exit::STORE,
            };
            refuse(OP, &code, &message, status)
        }
        Err(e) => {
            errln!("error: {e}");
            ExitCode::from(exit::STORE)
        }
    }
}

/// Resolves on Ctrl-C or SIGTERM: the worker stops taking tasks and waits for its handlers.
async fn shutdown() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}
