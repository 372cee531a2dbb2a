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
    /// `--max-items`, `--starting-token`.
    #[command(flatten)]
    pub page: PageArgs,
    /// The database.
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

/// Arguments of `list-executions`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only executions of this state machine (its ARN, or its name).
    #[arg(long, value_name = "ARN")]
    pub state_machine_arn: Option<String>,
    /// Only executions with this status (RUNNING, SUCCEEDED, FAILED, TIMED_OUT, ABORTED).
    #[arg(long)]
    pub status_filter: Option<String>,
    /// `--max-items`, `--starting-token`.
    #[command(flatten)]
    pub page: PageArgs,
    /// The database.
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

/// The AWS CLI's pagination flags.
#[derive(Debug, Args)]
pub struct PageArgs {
    /// Print at most N items, and a `NextToken` when more follow.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_items: Option<u32>,
    /// Continue after a previous page: its `NextToken`.
    #[arg(long, value_name = "TOKEN")]
    pub starting_token: Option<String>,
}

impl PageArgs {
    fn page(&self) -> api::Page {
        api::Page {
            max_items: self.max_items.map(|n| n as usize),
            starting_token: self.starting_token.clone(),
        }
    }
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
            Ok(events) => match args.page.page().slice(&events) {
                Ok((events, next)) => {
                    print(&api::with_next_token(api::execution_history(events), next));
                    ExitCode::SUCCESS
                }
                Err(e) => fail(e),
            },
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
    let list = match store.list_executions(status) {
        Ok(list) => list,
        Err(e) => return fail(e),
    };
    let list: Vec<_> = match &args.state_machine_arn {
        Some(machine) => list
            .into_iter()
            .filter(|e| &e.state_machine_arn == machine || &e.state_machine_name == machine)
            .collect(),
        None => list,
    };
    match args.page.page().slice(&list) {
        Ok((list, next)) => {
            print(&api::with_next_token(api::list_executions(list), next));
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}
