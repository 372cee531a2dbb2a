//! `stop-execution`: abort a running execution from another process.
//!
//! The request is a row update (and its open task tokens are closed in the same transaction);
//! the execution's `run` notices it within a few tens of milliseconds, writes the aborted
//! states' `*StateAborted` events and `ExecutionAborted`, and exits 4. If no `run` acts on it
//! (the process is gone), this command ends the execution itself after a grace period.

use crate::cli::db;
use crate::cli::tasks::{check_error_cause, exit, refuse};
use crate::clock::{iso8601, system_now};
use crate::engine::history::Details;
use crate::store::{ExecutionStatus, StopOutcome, StoreError};
use clap::Args;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Arguments of `stop-execution`.
#[derive(Debug, Args)]
pub struct StopArgs {
    /// The execution's ARN (or its name).
    #[arg(long)]
    pub execution_arn: String,
    /// The error recorded in `ExecutionAborted` (at most 256 characters), or `file://PATH`.
    #[arg(long, value_parser = crate::cli::param::text_or_file)]
    pub error: Option<String>,
    /// The cause (at most 32,768 characters), or `file://PATH`.
    #[arg(long, value_parser = crate::cli::param::text_or_file)]
    pub cause: Option<String>,
    /// The database.
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

/// How long the execution's runner gets to act on the request before it is presumed gone
/// (however fresh its lease).
const RUNNER_GRACE: Duration = Duration::from_secs(5);

/// Runs `stop-execution`; prints `{"stopDate": ...}` as the AWS CLI does.
pub fn run(args: StopArgs) -> ExitCode {
    const OP: &str = "StopExecution";
    if let Err(code) = check_error_cause(OP, args.error.as_deref(), args.cause.as_deref()) {
        return code;
    }
    let store = match db::open_existing(args.db) {
        Ok(s) => s,
        Err(db::OpenExistingError::Missing(path)) => {
            return refuse(
                OP,
                "ExecutionDoesNotExist",
                &format!(
                    "Execution Does Not Exist: '{}' ({} does not exist)",
                    args.execution_arn,
                    path.display()
                ),
                exit::EXECUTION_DOES_NOT_EXIST,
            )
        }
        Err(e) => return refuse(OP, "ServiceFailure", &e.to_string(), exit::STORE),
    };
    let requested = system_now();
    let arn = match store.request_stop(
        &args.execution_arn,
        args.error.as_deref(),
        args.cause.as_deref(),
        requested,
    ) {
        Ok(StopOutcome::Requested { execution_arn }) => execution_arn,
        Ok(StopOutcome::AlreadyEnded(status)) => {
            // AWS answers a stop of an ended execution without changing it.
            errln!("the execution has already ended ({status}); nothing to stop");
            return match store.execution(&args.execution_arn) {
                Ok(Some(r)) => {
                    outln!(
                        "{}",
                        json!({ "stopDate": iso8601(r.stop_date_ms.unwrap_or(requested)) })
                    );
                    ExitCode::SUCCESS
                }
                _ => ExitCode::SUCCESS,
            };
        }
        Err(StoreError::ExecutionNotFound { .. }) => {
            return refuse(
                OP,
                "ExecutionDoesNotExist",
                &format!(
                    "Execution Does Not Exist: '{}' (in the database {})",
                    args.execution_arn,
                    store.path().display()
                ),
                exit::EXECUTION_DOES_NOT_EXIST,
            )
        }
        Err(e) => return refuse(OP, "ServiceFailure", &e.to_string(), exit::STORE),
    };
    // Wait for the runner to write the end; if it never does, nobody is running it.
    let until = Instant::now() + RUNNER_GRACE;
    loop {
        match store.execution(&arn) {
            Ok(Some(r)) if r.status != ExecutionStatus::Running => {
                outln!(
                    "{}",
                    json!({ "stopDate": iso8601(r.stop_date_ms.unwrap_or(requested)) })
                );
                return ExitCode::SUCCESS;
            }
            // No lease, or a lapsed one: no runner will act (a paused one that wakes up finds
            // the execution ended and writes nothing), so there is nothing to wait for.
            Ok(Some(r))
                if r.owner.is_none() || r.lease_expires_at_ms.is_none_or(|t| t < system_now()) =>
            {
                break
            }
            Ok(_) => {}
            Err(e) => return refuse(OP, "ServiceFailure", &e.to_string(), exit::STORE),
        }
        if Instant::now() >= until {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut details = Details::new();
    if let Some(e) = &args.error {
        details = details.str("error", e);
    }
    if let Some(c) = &args.cause {
        details = details.str("cause", c);
    }
    let now = system_now();
    match store.abort_unattended(&arn, Some(details.build()), args.error, args.cause, now) {
        Ok(_) => {
            errln!(
                "no running `sfn-local run` acted on the request; the execution was aborted here"
            );
            outln!("{}", json!({ "stopDate": iso8601(now) }));
            ExitCode::SUCCESS
        }
        Err(e) => refuse(OP, "ServiceFailure", &e.to_string(), exit::STORE),
    }
}
