//! `sfn-local resume [--execution-arn ARN | --all]`: continue RUNNING executions whose runner is
//! gone, from their last committed event, in the foreground like `run`.

use crate::cli::run::{interrupted, report_outcome, RunFormat};
use crate::cli::{db, EXIT_USAGE};
use crate::engine::runner::{resume_executions_with, Bindings, ResumeTarget, RunError};
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
    /// What to print: the output (text) or DescribeExecution's shape (json).
    #[arg(long, value_enum, default_value_t = RunFormat::Text)]
    pub format: RunFormat,
    /// No progress display on stderr (it is only drawn when stderr is a terminal).
    #[arg(long, short)]
    pub quiet: bool,
    /// With the progress display, also print one line per finished state.
    #[arg(long, short)]
    pub verbose: bool,
    /// State machines that `states:startExecution*` tasks may start, besides those `run` knew
    /// (stored with each execution).
    #[command(flatten)]
    pub machines: crate::cli::machines::MachineArgs,
}

/// Runs `resume`.
pub fn run(args: ResumeArgs) -> ExitCode {
    let mut bindings = Bindings::new();
    for binding in &args.tasks {
        let checked = crate::tasks::command::parse_binding(binding)
            .map_err(|e| e.to_string())
            .and_then(|(state, command)| {
                command
                    .check_program()
                    .map_err(|e| format!("--task {binding}: {e}"))?;
                Ok((state, command.with_absolute_program()))
            });
        match checked {
            Ok((state, command)) => {
                bindings.insert(state, command);
            }
            Err(e) => {
                errln!("error: {e}");
                return ExitCode::from(EXIT_USAGE);
            }
        }
    }
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
    let progress = crate::cli::progress::wanted(args.quiet, args.format == RunFormat::Json)
        .then(|| crate::cli::progress::Progress::start(store.clone(), watched, args.verbose));
    let resumed = resume_executions_with(store.clone(), target, notice, &bindings, machines);
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
