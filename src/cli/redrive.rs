//! `sfn-local redrive-execution --execution-arn ARN [--client-token T]`: AWS's RedriveExecution
//! on the command line. A FAILED, TIMED_OUT or ABORTED execution continues from the states that
//! did not succeed, under the same ARN, driven in the foreground like `resume` (the same task
//! bindings, time scale and exit statuses).

use crate::cli::flags::{DatabaseArgs, RunOutputArgs};
use crate::cli::run::{interrupted, report_outcome};
use crate::cli::EXIT_USAGE;
use crate::engine::redrive::redrive_execution;
use crate::engine::runner::RunError;
use clap::Args;
use std::process::ExitCode;

/// Arguments of `redrive-execution`.
#[derive(Debug, Args)]
pub struct RedriveArgs {
    /// The execution to redrive (ARN or name).
    #[arg(long)]
    pub execution_arn: String,
    /// Idempotency token: a redrive with the token of the last redrive does nothing again.
    #[arg(long)]
    pub client_token: Option<String>,
    /// `--db`, `--durability`.
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// `--format`.
    #[command(flatten)]
    pub output: RunOutputArgs,
    /// `--clock`, `--clock-start`, `--time-scale`, `--seed` (default: the clock the
    /// execution ran on, a virtual one standing where its history ended).
    #[command(flatten)]
    pub clock: crate::cli::flags::ClockArgs,
}

/// Runs `redrive-execution`.
pub fn run(args: RedriveArgs) -> ExitCode {
    if let Some(token) = &args.client_token {
        // AWS: 1 to 64 characters.
        if token.is_empty() || token.chars().count() > 64 {
            errln!("error: ValidationException: --client-token must be 1 to 64 characters long");
            return ExitCode::from(EXIT_USAGE);
        }
    }
    let time = match args.clock.given() {
        true => match args.clock.lower(crate::cli::flags::ClockKind::Real, true) {
            Ok(time) => Some(time),
            Err(e) => return e.exit(),
        },
        false => None,
    };
    let store = match args.database.lower().open() {
        Ok(s) => s,
        Err(e) => return e.exit(),
    };
    let notice = std::rc::Rc::new(|message: &str| errln!("sfn-local: {message}"));
    let (redriven, resumed) = match redrive_execution(
        store.clone(),
        &args.execution_arn,
        args.client_token.as_deref(),
        notice,
        time,
    ) {
        Ok(r) => r,
        Err(RunError::Interrupted(arns)) => return interrupted(&arns),
        Err(e) => {
            errln!("error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let Some(resumed) = resumed else {
        errln!(
            "sfn-local: {} was redriven with this client token already (redrive {}); nothing to do",
            redriven.execution_arn,
            redriven.redrive_count
        );
        return ExitCode::SUCCESS;
    };
    errln!(
        "sfn-local: redrove {} (redrive {}): {}",
        resumed.execution_arn,
        redriven.redrive_count,
        resumed.outcome.status.as_str()
    );
    report_outcome(
        &store,
        &resumed.execution_arn,
        &resumed.outcome,
        args.output.lower(),
    )
}
