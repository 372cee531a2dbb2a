//! `sfn-local redrive-execution --execution-arn ARN [--client-token T]`: AWS's RedriveExecution
//! on the command line. A FAILED, TIMED_OUT or ABORTED execution continues from the states that
//! did not succeed, under the same ARN, driven in the foreground like `resume` (the same task
//! bindings, time scale and exit statuses).

use crate::cli::run::{interrupted, report_outcome, RunFormat};
use crate::cli::{db, EXIT_USAGE};
use crate::engine::redrive::redrive_execution;
use crate::engine::runner::RunError;
use clap::Args;
use std::path::PathBuf;
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
    /// The database (default: SFN_LOCAL_DB, else the XDG state directory).
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// How hard each commit tries to survive a crash (see the README).
    #[arg(long, value_enum, default_value_t = db::DurabilityArg::Normal)]
    pub durability: db::DurabilityArg,
    /// What to print: the output (text) or DescribeExecution's shape (json).
    #[arg(long, value_enum, default_value_t = RunFormat::Text)]
    pub format: RunFormat,
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
    let store = match db::open_with(args.db.clone(), args.durability) {
        Ok(s) => s,
        Err(e) => {
            errln!("{e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let notice = std::rc::Rc::new(|message: &str| errln!("sfn-local: {message}"));
    let (redriven, resumed) = match redrive_execution(
        store.clone(),
        &args.execution_arn,
        args.client_token.as_deref(),
        notice,
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
        args.format,
    )
}
