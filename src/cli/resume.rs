//! `sfn-local resume [--execution-arn ARN | --all]`: continue RUNNING executions whose runner is
//! gone, from their last committed event, in the foreground like `run`.

use crate::cli::run::{interrupted, report_outcome, RunFormat};
use crate::cli::{db, EXIT_USAGE};
use crate::engine::runner::{
    resume_executions_bound, Bindings, ResumeBindings, ResumeTarget, RunError,
};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `resume`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["execution_arn", "all"])))]
pub struct ResumeArgs {
    /// The execution to resume (ARN or name).
    #[arg(long)]
    pub execution_arn: Option<String>,
    /// Every RUNNING execution whose runner is gone (its lease lapsed).
    #[arg(long)]
    pub all: bool,
    /// The database (default: SFN_LOCAL_DB, else the XDG state directory).
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// How hard each commit tries to survive a crash (see the README).
    #[arg(long, value_enum, default_value_t = db::DurabilityArg::Normal)]
    pub durability: db::DurabilityArg,
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
    /// Call a service's integrations at a local endpoint: SERVICE=URL (repeatable), over the
    /// endpoints the run had.
    #[arg(long = "endpoint", value_name = "SERVICE=URL")]
    pub endpoints: Vec<String>,
    /// A MockConfigFile holding mocked Task results (with `--test-case`).
    #[arg(long, value_name = "FILE", requires = "test_case")]
    pub mock_config: Option<PathBuf>,
    /// The test case of the mock config whose mocks the resumed execution uses from here on.
    #[arg(long, value_name = "NAME", requires = "mock_config")]
    pub test_case: Option<String>,
    /// The local S3 of distributed Maps' ItemReader/ResultWriter (see `run`).
    #[arg(long, value_name = "DIR")]
    pub s3_dir: Option<PathBuf>,
    /// What to print: the output (text) or DescribeExecution's shape (json).
    #[arg(long, value_enum, default_value_t = RunFormat::Text)]
    pub format: RunFormat,
    /// State machines that `states:startExecution*` tasks may start, besides those `run` knew
    /// (stored with each execution).
    #[command(flatten)]
    pub machines: crate::cli::machines::MachineArgs,
}

/// Parses and checks `--task`/`--worker` bindings: the program must be there and executable.
fn checked(flag: &str, given: &[String]) -> Result<Bindings, String> {
    let mut bindings = Bindings::new();
    for binding in given {
        let (state, command) =
            crate::tasks::command::parse_binding(binding).map_err(|e| e.to_string())?;
        command
            .check_program()
            .map_err(|e| format!("{flag} {binding}: {e}"))?;
        bindings.insert(state, command.with_absolute_program());
    }
    Ok(bindings)
}

/// The binding options as the runner takes them, checked before anything is resumed.
fn bindings(args: &ResumeArgs) -> Result<ResumeBindings, String> {
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
    crate::tasks::aws::Endpoints::parse(&args.endpoints, |_| None).map_err(|e| e.to_string())?;
    let defaults = crate::tasks::managed::ManagedOptions::default();
    let worker_options = (args.heartbeat.is_some() || args.kill_after.is_some()).then(|| {
        crate::tasks::managed::ManagedOptions {
            heartbeat: args.heartbeat.unwrap_or(defaults.heartbeat),
            kill_after: args.kill_after.unwrap_or(defaults.kill_after),
        }
    });
    Ok(ResumeBindings {
        tasks: checked("--task", &args.tasks)?,
        workers: checked("--worker", &args.workers)?,
        worker_options,
        endpoints: args.endpoints.clone(),
        mocks,
        s3_dir: args
            .s3_dir
            .as_ref()
            .map(|d| std::path::absolute(d).unwrap_or_else(|_| d.clone())),
    })
}

/// Runs `resume`.
pub fn run(args: ResumeArgs) -> ExitCode {
    let bindings = match bindings(&args) {
        Ok(b) => b,
        Err(e) => {
            errln!("error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    // Nothing can be resumed from a database that does not exist: say so, create nothing.
    let path = db::resolve(args.db.clone());
    if !path.is_file() {
        if let Some(arn) = &args.execution_arn {
            return crate::cli::tasks::refuse(
                "ResumeExecution",
                "ExecutionDoesNotExist",
                &format!(
                    "Execution Does Not Exist: '{arn}' ({} does not exist)",
                    path.display()
                ),
                crate::cli::tasks::exit::EXECUTION_DOES_NOT_EXIST,
            );
        }
        errln!(
            "sfn-local: there is no database at {}; nothing to resume",
            path.display()
        );
        return ExitCode::SUCCESS;
    }
    let store = match db::open_with(Some(path), args.durability) {
        Ok(s) => s,
        Err(e) => {
            errln!("{e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let target = match args.execution_arn {
        Some(arn) => ResumeTarget::One(arn),
        None => ResumeTarget::All,
    };
    let machines = match args.machines.load(None) {
        Ok(m) => m,
        Err(e) => {
            errln!("error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
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
    let progress = crate::cli::progress::wanted(
        crate::cli::ui::quiet(),
        args.format == RunFormat::Json,
    )
    .then(|| {
        crate::cli::progress::Progress::start(store.clone(), watched, crate::cli::ui::verbose())
    });
    let resumed = resume_executions_bound(store.clone(), target, notice, &bindings, machines);
    drop(progress);
    let resumed = match resumed {
        Ok(r) => r,
        Err(RunError::Interrupted(arns)) => return interrupted(&arns),
        Err(e @ RunError::ExecutionDoesNotExist { .. }) => {
            return crate::cli::tasks::refuse(
                "ResumeExecution",
                "ExecutionDoesNotExist",
                &e.to_string(),
                crate::cli::tasks::exit::EXECUTION_DOES_NOT_EXIST,
            )
        }
        Err(e) => {
            errln!("error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    if resumed.is_empty() {
        errln!("sfn-local: no RUNNING execution without a live runner; nothing to resume");
        return ExitCode::SUCCESS;
    }
    let mut status = ExitCode::SUCCESS;
    let mut first_failure = None;
    for r in &resumed {
        errln!(
            "sfn-local: resumed {} after event {}: {}",
            r.execution_arn,
            r.replayed,
            r.outcome.status.as_str()
        );
        let code = report_outcome(&store, &r.execution_arn, &r.outcome, args.format);
        if first_failure.is_none() && r.outcome.status != crate::engine::Status::Succeeded {
            first_failure = Some(code);
        }
    }
    if let Some(code) = first_failure {
        status = code;
    }
    status
}
