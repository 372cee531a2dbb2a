//! `sfn-local resume [--execution-arn ARN | --all]`: continue RUNNING executions whose runner is
//! gone, from their last committed event, in the foreground like `run`.

use crate::cli::run::{interrupted, report_outcome, RunFormat};
use crate::cli::{db, EXIT_USAGE};
use crate::engine::runner::{resume_with_machines, ResumeTarget, RunError};
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
    /// What to print: the output (text) or DescribeExecution's shape (json).
    #[arg(long, value_enum, default_value_t = RunFormat::Text)]
    pub format: RunFormat,
    /// State machines that `states:startExecution*` tasks may start, besides those `run` knew
    /// (stored with each execution).
    #[command(flatten)]
    pub machines: crate::cli::machines::MachineArgs,
}

/// Runs `resume`.
pub fn run(args: ResumeArgs) -> ExitCode {
    let store = match db::open_with(args.db.clone(), args.durability) {
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
    let resumed = match resume_with_machines(store.clone(), target, notice, machines) {
        Ok(r) => r,
        Err(RunError::Interrupted(arns)) => return interrupted(&arns),
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
