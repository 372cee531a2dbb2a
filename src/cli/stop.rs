//! `stop-execution`: abort a running execution from another process.
//!
//! The request is a row update (and its open task tokens are closed in the same transaction);
//! the execution's `run` notices it within a few tens of milliseconds, writes the aborted
//! states' `*StateAborted` events and `ExecutionAborted`, and exits 4. If no `run` acts on it
//! (the process is gone), this command ends the execution itself after a grace period.

use crate::cli::db;
use crate::cli::flags::DbArgs;
use crate::cli::tasks::{check_error_cause, exit, refuse};
use crate::clock::{iso8601, system_now, Millis};
use crate::engine::history::Details;
use crate::store::{ExecutionStatus, StopOutcome, Store, StoreError};
use clap::Args;
use serde_json::json;
use std::process::ExitCode;
use std::sync::Arc;
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
    /// `--db`.
    #[command(flatten)]
    pub database: DbArgs,
}

/// How long the execution's runner gets to act on the request before it is presumed gone
/// (however fresh its lease).
const RUNNER_GRACE: Duration = Duration::from_secs(5);

/// AWS's operation.
const OP: &str = "StopExecution";

/// Runs `stop-execution`; prints `{"stopDate": ...}` as the AWS CLI does.
pub fn run(args: StopArgs) -> ExitCode {
    if let Err(code) = check_error_cause(OP, args.error.as_deref(), args.cause.as_deref()) {
        return code;
    }
    let store = match open(&args) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let requested = system_now();
    let arn = match request(&store, &args, requested) {
        Ok(arn) => arn,
        Err(code) => return code,
    };
    match wait_for_runner(&store, &arn) {
        Ok(Some(stopped)) => {
            outln!(
                "{}",
                json!({ "stopDate": iso8601(stopped.unwrap_or(requested)) })
            );
            ExitCode::SUCCESS
        }
        Ok(None) => abort_here(&store, &arn, args),
        Err(code) => code,
    }
}

/// The database, which must exist: an execution cannot be in one that was never created.
fn open(args: &StopArgs) -> Result<Arc<Store>, ExitCode> {
    match args.database.lower().open_existing() {
        Ok(s) => Ok(s),
        Err(db::OpenExistingError::Missing(path)) => Err(refuse(
            OP,
            "ExecutionDoesNotExist",
            &format!(
                "Execution Does Not Exist: '{}' ({} does not exist)",
                args.execution_arn,
                path.display()
            ),
            exit::EXECUTION_DOES_NOT_EXIST,
        )),
        Err(e) => Err(refuse(OP, "ServiceFailure", &e.to_string(), exit::STORE)),
    }
}

/// Records the stop request and returns the execution's ARN; an execution that has ended is
/// answered at once (`Err(SUCCESS)`), as AWS answers it, without changing it.
fn request(store: &Store, args: &StopArgs, requested: Millis) -> Result<String, ExitCode> {
    let outcome = store.request_stop(
        &args.execution_arn,
        args.error.as_deref(),
        args.cause.as_deref(),
        requested,
    );
    match outcome {
        Ok(StopOutcome::Requested { execution_arn }) => Ok(execution_arn),
        Ok(StopOutcome::AlreadyEnded(status)) => {
            errln!("the execution has already ended ({status}); nothing to stop");
            if let Ok(Some(r)) = store.execution(&args.execution_arn) {
                outln!(
                    "{}",
                    json!({ "stopDate": iso8601(r.stop_date_ms.unwrap_or(requested)) })
                );
            }
            Err(ExitCode::SUCCESS)
        }
        Err(StoreError::ExecutionNotFound { .. }) => Err(refuse(
            OP,
            "ExecutionDoesNotExist",
            &format!(
                "Execution Does Not Exist: '{}' (in the database {})",
                args.execution_arn,
                store.path().display()
            ),
            exit::EXECUTION_DOES_NOT_EXIST,
        )),
        Err(e) => Err(refuse(OP, "ServiceFailure", &e.to_string(), exit::STORE)),
    }
}

/// Waits for the runner to write the end: `Some(stop date)` when it did, `None` when nobody is
/// running the execution (no lease, a lapsed one, or no answer within [`RUNNER_GRACE`]).
fn wait_for_runner(store: &Store, arn: &str) -> Result<Option<Option<Millis>>, ExitCode> {
    let until = Instant::now() + RUNNER_GRACE;
    loop {
        match store.execution(arn) {
            Ok(Some(r)) if r.status != ExecutionStatus::Running => {
                return Ok(Some(r.stop_date_ms));
            }
            // No lease, or a lapsed one: no runner will act (a paused one that wakes up finds
            // the execution ended and writes nothing), so there is nothing to wait for.
            Ok(Some(r))
                if r.owner.is_none() || r.lease_expires_at_ms.is_none_or(|t| t < system_now()) =>
            {
                return Ok(None)
            }
            Ok(_) => {}
            Err(e) => return Err(refuse(OP, "ServiceFailure", &e.to_string(), exit::STORE)),
        }
        if Instant::now() >= until {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Ends an execution no runner acts on, here.
fn abort_here(store: &Store, arn: &str, args: StopArgs) -> ExitCode {
    let mut details = Details::new();
    if let Some(e) = &args.error {
        details = details.str("error", e);
    }
    if let Some(c) = &args.cause {
        details = details.str("cause", c);
    }
    let now = system_now();
    match store.abort_unattended(arn, Some(details.build()), args.error, args.cause, now) {
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
