//! `sfn-local worker --activity-arn ARN -- COMMAND [ARGS...]`: a managed worker for an activity.
//!
//! It long-polls the activity and runs COMMAND for each task with the supervision of
//! [`crate::tasks::managed`]: automatic heartbeats, cancellation when the task is over, and one
//! answer from the handler's exit. Ctrl-C (or SIGTERM) stops taking tasks and waits for the
//! running handlers. The tasks come from the database, or with `--endpoint-url` from the Step
//! Functions API (`sfn-local serve`, or AWS).

use crate::asl::model::StateKind;
use crate::asl::resource::{Resource, ResourceKind};
use crate::cli::tasks::{exit, refuse};
use crate::cli::{db, EXIT_USAGE};
use crate::clock::{Clock, SystemClock};
use crate::tasks::api_channel::ApiChannel;
use crate::tasks::command::{parse_binding, BindingError, CommandLine};
use crate::tasks::managed::{
    parse_seconds, ActivityChannel, ActivityWorker, ChannelError, HeartbeatMode, ManagedBindings,
    ManagedOptions, StoreChannel,
};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// Arguments of `worker`.
#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// The activity's ARN, as the Task state's `Resource` names it.
    #[arg(long)]
    pub activity_arn: String,
    /// How many tasks to work on at once.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub concurrency: usize,
    /// `auto`: beat while the handler runs; `manual`: the handler beats itself.
    #[arg(long, value_enum, default_value_t = HeartbeatMode::Auto)]
    pub heartbeat: HeartbeatMode,
    /// Seconds between SIGTERM and SIGKILL for a handler whose task is over.
    #[arg(long, value_name = "SECONDS", default_value = "10", value_parser = parse_seconds)]
    pub kill_after: std::time::Duration,
    /// The worker's name, recorded in `ActivityStarted` (1 to 80 characters).
    #[arg(long)]
    pub worker_name: Option<String>,
    /// Stop after taking N tasks (once their handlers are done).
    #[arg(long, value_name = "N")]
    pub max_tasks: Option<u64>,
    /// The database.
    #[arg(long, value_name = "PATH", conflicts_with = "endpoint_url")]
    pub db: Option<PathBuf>,
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

/// Runs `worker`.
pub fn run(args: WorkerArgs) -> ExitCode {
    const OP: &str = "GetActivityTask";
    if !matches!(
        Resource::parse(&args.activity_arn),
        Ok(Resource {
            kind: ResourceKind::Activity { .. },
            ..
        })
    ) {
        return refuse(
            OP,
            "InvalidArn",
            &format!("Invalid Arn: '{}'", args.activity_arn),
            exit::INVALID_ARN,
        );
    }
    if let Some(w) = &args.worker_name {
        let n = w.chars().count();
        if n == 0 || n > 80 {
            return refuse(
                OP,
                "ValidationException",
                "--worker-name must be 1 to 80 characters",
                exit::VALIDATION,
            );
        }
    }
    if args.concurrency == 0 {
        errln!("error: --concurrency must be at least 1");
        return ExitCode::from(EXIT_USAGE);
    }
    let clock: Arc<dyn Clock> = Arc::new(SystemClock::new(1.0));
    let channel: Box<dyn ActivityChannel> = match &args.endpoint_url {
        Some(url) => match ApiChannel::new(url, &args.activity_arn) {
            Ok(c) => Box::new(c),
            Err(e) => {
                errln!("error: {e}");
                return ExitCode::from(EXIT_USAGE);
            }
        },
        None => match db::open(args.db.clone()) {
            Ok(store) => Box::new(StoreChannel::new(store, clock.clone())),
            Err(e) => {
                errln!("{e}");
                return ExitCode::from(exit::STORE);
            }
        },
    };
    let worker = ActivityWorker {
        activity_arn: args.activity_arn,
        worker_name: args.worker_name,
        command: CommandLine {
            argv: args.command,
            database: None,
        },
        options: ManagedOptions {
            heartbeat: args.heartbeat,
            kill_after: args.kill_after,
        },
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
        let shutdown = async {
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
        };
        worker
            .run(channel.as_ref(), clock.as_ref(), notice, shutdown)
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

/// Checks `--worker STATE=COMMAND` bindings of `run` against the machine: each names a
/// `.waitForTaskToken` Task that no `--task` binding also names.
pub(crate) fn bindings(
    machine: &crate::asl::StateMachine,
    bindings: &[String],
    task_bindings: &[String],
    options: ManagedOptions,
) -> Result<ManagedBindings, String> {
    let mut out = ManagedBindings {
        commands: Default::default(),
        options,
    };
    for binding in bindings {
        if !binding.contains('=') {
            return Err(format!("--worker expects STATE=COMMAND, got '{binding}'"));
        }
        let (state, command) = parse_binding(binding).map_err(|e| match e {
            BindingError::BadCommand { why, .. } => format!("--worker '{binding}': {why}"),
            other => other.to_string(),
        })?;
        let task = machine
            .all_states()
            .into_iter()
            .find_map(|s| match &s.kind {
                StateKind::Task(t) if s.name == state => Some(t),
                _ => None,
            });
        let Some(task) = task else {
            return Err(format!(
                "--worker {binding}: the machine has no Task state named '{state}'"
            ));
        };
        match &task.resource.kind {
            ResourceKind::Activity { .. } => {
                return Err(format!(
                    "--worker {binding}: '{state}' is an activity; serve it with: sfn-local worker --activity-arn {} -- COMMAND",
                    task.resource.arn
                ))
            }
            _ if !task.resource.waits_for_token() => {
                return Err(format!(
                    "--worker {binding}: '{state}' does not wait for a task token (its resource {} has no .waitForTaskToken); bind it with --task",
                    task.resource.arn
                ))
            }
            _ => {}
        }
        if task_bindings
            .iter()
            .any(|t| t.split_once('=').is_some_and(|(s, _)| s == state))
        {
            return Err(format!(
                "--worker {binding}: '{state}' is also bound with --task; choose one"
            ));
        }
        out.commands.insert(state, command);
    }
    Ok(out)
}
