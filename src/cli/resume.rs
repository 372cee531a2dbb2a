//! `sfn-local resume [--execution-arn ARN | --all]`: continue RUNNING executions whose runner is
//! gone, from their last committed event, in the foreground like `run`.

use crate::cli::flags::bindings::checked_programs;
use crate::cli::flags::{
    Database, DatabaseArgs, EndpointArgs, FlagError, RunFormat, RunOutputArgs,
};
use crate::cli::run::{interrupted, report_outcome};
use crate::cli::tasks::{exit, refuse};
use crate::engine::runner::{
    resume_executions_bound, ResumeBindings, ResumeTarget, Resumed, RunError,
};
use crate::store::Store;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// Arguments of `resume`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["execution_arn", "all"])))]
#[command(mut_args(crate::cli::flags::reword(
    "endpoints",
    "Call a service's integrations at a local endpoint: SERVICE=URL (repeatable), over the \
     endpoints the run had"
)))]
pub struct ResumeArgs {
    /// The execution to resume (ARN or name).
    #[arg(long)]
    pub execution_arn: Option<String>,
    /// Every RUNNING execution whose runner is gone (its lease lapsed).
    #[arg(long)]
    pub all: bool,
    /// `--db`, `--durability`.
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// Run a local program for a Task state: STATE=COMMAND (repeatable); supplies a binding the
    /// run lacked or replaces the one it had, for this resume.
    #[arg(long = "task", value_name = "STATE=COMMAND")]
    pub tasks: Vec<String>,
    /// Run a managed handler for a `.waitForTaskToken` state: STATE=COMMAND (repeatable), as
    /// for `run`; supplies or replaces the handler the run had.
    #[arg(long = "worker", value_name = "STATE=COMMAND")]
    pub workers: Vec<String>,
    /// Who beats for `--worker` handlers: `auto` (sfn-local) or `manual` (the handler).
    #[arg(long, value_enum)]
    pub heartbeat: Option<crate::tasks::managed::HeartbeatMode>,
    /// Seconds between SIGTERM and SIGKILL for a `--worker` handler whose task is over.
    #[arg(long, value_name = "SECONDS", value_parser = crate::tasks::managed::parse_seconds)]
    pub kill_after: Option<std::time::Duration>,
    /// `--endpoint`, over the endpoints the run had.
    #[command(flatten)]
    pub endpoints: EndpointArgs,
    /// A MockConfigFile holding mocked Task results (with `--test-case`).
    #[arg(long, value_name = "FILE", requires = "test_case")]
    pub mock_config: Option<PathBuf>,
    /// The test case of the mock config whose mocks the resumed execution uses from here on.
    #[arg(long, value_name = "NAME", requires = "mock_config")]
    pub test_case: Option<String>,
    /// The local S3 of distributed Maps' ItemReader/ResultWriter (see `run`).
    #[arg(long, value_name = "DIR")]
    pub s3_dir: Option<PathBuf>,
    /// `--format`.
    #[command(flatten)]
    pub output: RunOutputArgs,
    /// State machines that `states:startExecution*` tasks may start, besides those `run` knew
    /// (stored with each execution).
    #[command(flatten)]
    pub machines: crate::cli::machines::MachineArgs,
    /// `--clock`, `--clock-start`, `--time-scale`, `--seed` (default: the clock each execution
    /// ran on; one that ran on a virtual clock continues on one standing where its history
    /// ended).
    #[command(flatten)]
    pub clock: crate::cli::flags::ClockArgs,
}

/// The binding options as the runner takes them, checked before anything is resumed.
fn bindings(args: &ResumeArgs) -> Result<ResumeBindings, FlagError> {
    let mocks = match (&args.mock_config, &args.test_case) {
        (Some(file), Some(case)) => {
            let text = std::fs::read_to_string(file)
                .map_err(|e| format!("cannot read the mock config {}: {e}", file.display()))?;
            let config = crate::tasks::mock::MockConfig::parse(&text)
                .map_err(|e| format!("the mock config {}: {e}", file.display()))?;
            Some((config, case.clone()))
        }
        _ => None,
    };
    let endpoints = args.endpoints.check()?;
    let defaults = crate::tasks::managed::ManagedOptions::default();
    let worker_options = (args.heartbeat.is_some() || args.kill_after.is_some()).then(|| {
        crate::tasks::managed::ManagedOptions {
            heartbeat: args.heartbeat.unwrap_or(defaults.heartbeat),
            kill_after: args.kill_after.unwrap_or(defaults.kill_after),
        }
    });
    let time = match args.clock.given() {
        true => Some(args.clock.lower(crate::cli::flags::ClockKind::Real, true)?),
        false => None,
    };
    Ok(ResumeBindings {
        time,
        tasks: checked_programs("--task", &args.tasks)?,
        workers: checked_programs("--worker", &args.workers)?,
        worker_options,
        endpoints,
        mocks,
        s3_dir: args.s3_dir.as_deref().map(crate::cli::flags::s3::absolute),
    })
}

/// Opens the database to resume in. Nothing can be resumed from one that does not exist: that
/// is said (AWS's `ExecutionDoesNotExist` for a named execution), and nothing is created.
fn open(args: &ResumeArgs, database: &Database) -> Result<Arc<Store>, ExitCode> {
    let path = &database.path;
    if path.is_file() {
        return database.open().map_err(FlagError::exit);
    }
    if let Some(arn) = &args.execution_arn {
        return Err(refuse(
            "ResumeExecution",
            "ExecutionDoesNotExist",
            &format!(
                "Execution Does Not Exist: '{arn}' ({} does not exist)",
                path.display()
            ),
            exit::EXECUTION_DOES_NOT_EXIST,
        ));
    }
    errln!(
        "sfn-local: there is no database at {}; nothing to resume",
        path.display()
    );
    Err(ExitCode::SUCCESS)
}

/// Runs `resume`.
pub fn run(args: ResumeArgs) -> ExitCode {
    let bindings = match bindings(&args) {
        Ok(b) => b,
        Err(e) => return e.exit(),
    };
    let database = args.database.lower();
    let store = match open(&args, &database) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let target = match &args.execution_arn {
        Some(arn) => ResumeTarget::One(arn.clone()),
        None => ResumeTarget::All,
    };
    let machines = match args.machines.load(None) {
        Ok(m) => m,
        Err(e) => return FlagError::Usage(e).exit(),
    };
    let format = args.output.lower();
    let notice = std::rc::Rc::new(|message: &str| errln!("sfn-local: {message}"));
    let watched = match &target {
        ResumeTarget::One(arn) => vec![arn.clone()],
        ResumeTarget::All => store
            .running_executions()
            .unwrap_or_default()
            .into_iter()
            .map(|r| r.execution_arn)
            .collect(),
    };
    let progress = crate::cli::progress::wanted(crate::cli::ui::quiet(), format == RunFormat::Json)
        .then(|| {
            crate::cli::progress::Progress::start(store.clone(), watched, crate::cli::ui::verbose())
        });
    let resumed = resume_executions_bound(store.clone(), target, notice, &bindings, machines);
    drop(progress);
    match resumed {
        Ok(resumed) => report(&store, &resumed, format),
        Err(RunError::Interrupted(arns)) => interrupted(&arns),
        Err(e @ RunError::ExecutionDoesNotExist { .. }) => refuse(
            "ResumeExecution",
            "ExecutionDoesNotExist",
            &e.to_string(),
            exit::EXECUTION_DOES_NOT_EXIST,
        ),
        Err(e) => FlagError::Usage(e.to_string()).exit(),
    }
}

/// Reports each resumed execution's end as `run` does; the exit status is that of the first
/// that did not succeed.
fn report(store: &Store, resumed: &[Resumed], format: RunFormat) -> ExitCode {
    if resumed.is_empty() {
        errln!("sfn-local: no RUNNING execution without a live runner; nothing to resume");
        return ExitCode::SUCCESS;
    }
    let mut first_failure = None;
    for r in resumed {
        errln!(
            "sfn-local: resumed {} after event {}: {}",
            r.execution_arn,
            r.replayed,
            r.outcome.status.as_str()
        );
        let code = report_outcome(store, &r.execution_arn, &r.outcome, format);
        if first_failure.is_none() && r.outcome.status != crate::engine::Status::Succeeded {
            first_failure = Some(code);
        }
    }
    first_failure.unwrap_or(ExitCode::SUCCESS)
}
