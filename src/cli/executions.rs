//! `describe-execution`, `get-execution-history` and `list-executions`: AWS-spelled reads of
//! the database, printing AWS's response shapes.

use crate::api;
use crate::cli::{db, EXIT_USAGE};
use crate::store::ExecutionStatus;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `describe-execution`.
#[derive(Debug, Args)]
pub struct DescribeArgs {
    /// The execution's ARN (or its name).
    #[arg(long)]
    pub execution_arn: String,
    /// The database.
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

/// Arguments of `get-execution-history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The execution's ARN (or its name).
    #[arg(long)]
    pub execution_arn: String,
    /// Newest event first.
    #[arg(long)]
    pub reverse_order: bool,
    /// The database.
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

/// Arguments of `list-executions`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only executions with this status (RUNNING, SUCCEEDED, FAILED, TIMED_OUT, ABORTED).
    #[arg(long)]
    pub status_filter: Option<String>,
    /// The database.
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

fn fail(message: impl std::fmt::Display) -> ExitCode {
    errln!("error: {message}");
    ExitCode::from(EXIT_USAGE)
}

fn print(v: &serde_json::Value) {
    outln!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
}

/// Runs `describe-execution`.
pub fn describe(args: DescribeArgs) -> ExitCode {
    let store = match db::open_for_reading(args.db) {
        Ok(s) => s,
        Err(e) => return fail(e.trim_start_matches("error: ")),
    };
    match store.execution(&args.execution_arn) {
        Ok(Some(e)) => {
            print(&api::describe_execution(&e));
            ExitCode::SUCCESS
        }
        Ok(None) => fail(format!("ExecutionDoesNotExist: {}", args.execution_arn)),
        Err(e) => fail(e),
    }
}

/// Runs `get-execution-history`.
pub fn history(args: HistoryArgs) -> ExitCode {
    let store = match db::open_for_reading(args.db) {
        Ok(s) => s,
        Err(e) => return fail(e.trim_start_matches("error: ")),
    };
    match store.execution(&args.execution_arn) {
        Ok(Some(e)) => match store.history(&e.execution_arn, args.reverse_order) {
            Ok(events) => {
                print(&api::execution_history(&events));
                ExitCode::SUCCESS
            }
            Err(e) => fail(e),
        },
        Ok(None) => fail(format!("ExecutionDoesNotExist: {}", args.execution_arn)),
        Err(e) => fail(e),
    }
}

/// Runs `list-executions`.
pub fn list(args: ListArgs) -> ExitCode {
    let status = match args
        .status_filter
        .as_deref()
        .map(str::parse::<ExecutionStatus>)
    {
        None => None,
        Some(Ok(s)) => Some(s),
        Some(Err(e)) => return fail(e),
    };
    let store = match db::open_for_reading(args.db) {
        Ok(s) => s,
        Err(e) => return fail(e.trim_start_matches("error: ")),
    };
    match store.list_executions(status) {
        Ok(list) => {
            print(&api::list_executions(&list));
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}
