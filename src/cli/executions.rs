//! `describe-execution`, `get-execution-history` and `list-executions`: AWS-spelled reads of
//! the database, printing AWS's response shapes.

use crate::api;
use crate::cli::db;
use crate::cli::flags::{Database, DbArgs, PageArgs};
use crate::cli::output::{Format, OutputArgs};
use crate::cli::tasks::{exit, refuse};
use crate::store::ExecutionStatus;
use clap::Args;
use std::process::ExitCode;

/// Arguments of `describe-execution`.
#[derive(Debug, Args)]
pub struct DescribeArgs {
    /// The execution's ARN (or its name).
    #[arg(long)]
    pub execution_arn: String,
    /// `--format json|text|table`, `--output`, `--query`.
    #[command(flatten)]
    pub out: OutputArgs,
    /// `--db`.
    #[command(flatten)]
    pub database: DbArgs,
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
    /// `--format json|text|table`, `--output`, `--query`.
    #[command(flatten)]
    pub out: OutputArgs,
    /// `--db`.
    #[command(flatten)]
    pub database: DbArgs,
}

/// Arguments of `list-executions`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only executions of this state machine (its ARN, or its name).
    #[arg(long, value_name = "ARN")]
    pub state_machine_arn: Option<String>,
    /// The child executions of this distributed Map run (its ARN), as AWS lists them.
    #[arg(long, value_name = "ARN", conflicts_with = "state_machine_arn")]
    pub map_run_arn: Option<String>,
    /// Only executions with this status (RUNNING, SUCCEEDED, FAILED, TIMED_OUT, ABORTED).
    #[arg(long)]
    pub status_filter: Option<String>,
    /// `--max-items`, `--starting-token`.
    #[command(flatten)]
    pub page: PageArgs,
    /// `--format json|text|table`, `--output`, `--query`.
    #[command(flatten)]
    pub out: OutputArgs,
    /// `--db`.
    #[command(flatten)]
    pub database: DbArgs,
}

fn fail(operation: &str, message: impl std::fmt::Display) -> ExitCode {
    refuse(
        operation,
        "ServiceFailure",
        &message.to_string(),
        exit::STORE,
    )
}

/// `ExecutionDoesNotExist`, naming the database looked in.
pub(crate) fn no_execution(operation: &str, execution: &str, db: &std::path::Path) -> ExitCode {
    refuse(
        operation,
        "ExecutionDoesNotExist",
        &format!(
            "Execution Does Not Exist: '{execution}' (in the database {})",
            db.display()
        ),
        exit::EXECUTION_DOES_NOT_EXIST,
    )
}

/// Opens the database for a read about one execution: a missing database holds no execution.
pub(crate) fn open_for(
    operation: &str,
    execution: &str,
    database: &Database,
) -> Result<std::sync::Arc<crate::store::Store>, ExitCode> {
    database.open_for_reading().map_err(|e| match e {
        db::OpenExistingError::Missing(path) => no_execution(operation, execution, &path),
        db::OpenExistingError::Failed(e) => fail(operation, e),
    })
}

/// A `--starting-token` that no page printed.
fn invalid_token(operation: &str, message: impl std::fmt::Display) -> ExitCode {
    refuse(
        operation,
        "InvalidToken",
        &message.to_string(),
        exit::INVALID_TOKEN,
    )
}

/// Prints a response as `--query`/`--output` say; a bad `--query` is a usage error.
fn respond(operation: &str, out: &OutputArgs, response: &serde_json::Value) -> ExitCode {
    match out.print_response(response) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => refuse(operation, "ValidationException", &e, exit::VALIDATION),
    }
}

/// Prints text that already ends with a newline.
fn print_text(text: &str) {
    use std::io::Write as _;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// Runs `describe-execution`.
pub fn describe(args: DescribeArgs) -> ExitCode {
    const OP: &str = "DescribeExecution";
    let store = match open_for(OP, &args.execution_arn, &args.database.lower()) {
        Ok(s) => s,
        Err(code) => return code,
    };
    match store.execution(&args.execution_arn) {
        Ok(Some(e)) => {
            if args.out.wants_response() {
                return respond(OP, &args.out, &api::describe_execution(&e));
            }
            match store.history(&e.execution_arn, false) {
                Ok(events) => {
                    if args.out.format == Some(Format::Table) {
                        outln!(
                            "{}",
                            crate::cli::output::table(&api::describe_execution(&e))
                        );
                    } else {
                        let scale =
                            crate::engine::diagnosis::recorded_time_scale(&store, &e.execution_arn);
                        print_text(&crate::cli::summary::describe_text(&e, &events, scale));
                    }
                    ExitCode::SUCCESS
                }
                Err(err) => fail(OP, err),
            }
        }
        Ok(None) => describe_map_run_child(&store, &args),
        Err(e) => fail(OP, e),
    }
}

/// `describe-execution` of a distributed Map's child execution (with its `mapRunArn`).
fn describe_map_run_child(store: &crate::store::Store, args: &DescribeArgs) -> ExitCode {
    const OP: &str = "DescribeExecution";
    match store.map_run_execution(&args.execution_arn) {
        Ok(Some(child)) => {
            let response = api::describe_map_run_execution(&child);
            if args.out.wants_response() {
                return respond(OP, &args.out, &response);
            }
            outln!("{}", crate::cli::output::table(&response));
            ExitCode::SUCCESS
        }
        Ok(None) => no_execution(OP, &args.execution_arn, store.path()),
        Err(e) => fail(OP, e),
    }
}

/// Runs `get-execution-history`.
pub fn history(args: HistoryArgs) -> ExitCode {
    const OP: &str = "GetExecutionHistory";
    let store = match open_for(OP, &args.execution_arn, &args.database.lower()) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let streamable = args.out.query.is_none()
        && matches!(
            args.out.output,
            None | Some(crate::cli::output::AwsOutput::Json)
        )
        && args.out.wants_response()
        && args.page.max_items.is_none()
        && args.page.starting_token.is_none();
    let arn = match store.execution(&args.execution_arn) {
        Ok(Some(e)) => e.execution_arn,
        // A distributed Map's child execution has a history of its own, kept with its run.
        Ok(None) => {
            return match store.map_run_history(&args.execution_arn, args.reverse_order) {
                Ok(Some(events)) => print_history(&args, &events),
                Ok(None) => no_execution(OP, &args.execution_arn, store.path()),
                Err(e) => fail(OP, e),
            }
        }
        Err(e) => return fail(OP, e),
    };
    if streamable {
        return match stream_history(&store, &arn, args.reverse_order) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(OP, e),
        };
    }
    match store.history(&arn, args.reverse_order) {
        Ok(events) => print_history(&args, &events),
        Err(e) => fail(OP, e),
    }
}

/// Prints a page of a history as `--format`, `--output` and `--query` say.
fn print_history(args: &HistoryArgs, events: &[crate::store::EventRecord]) -> ExitCode {
    const OP: &str = "GetExecutionHistory";
    match args.page.lower().slice(events) {
        Ok((events, next)) => {
            if args.out.wants_response() {
                return respond(
                    OP,
                    &args.out,
                    &api::with_next_token(api::execution_history(events), next),
                );
            }
            print_text(&crate::cli::summary::history_table(events));
            if let Some(token) = next {
                outln!("NextToken: {token}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => invalid_token(OP, e),
    }
}

/// Prints GetExecutionHistory's response as the AWS CLI does (`{"events": [...]}`,
/// pretty-printed), an event at a time as the store reads them: a 25,000-event history of
/// 256 KiB payloads is never held whole. A closed stdout (`| head`) ends it quietly.
fn stream_history(
    store: &crate::store::Store,
    execution_arn: &str,
    reverse: bool,
) -> Result<(), crate::store::StoreError> {
    use std::io::Write as _;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut first = true;
    let mut ok = out.write_all(b"{\n  \"events\": [").is_ok();
    store.for_each_event(execution_arn, reverse, &mut |event| {
        let text = serde_json::to_string_pretty(&api::history_event(event)).unwrap_or_default();
        ok = out
            .write_all(if first { b"\n" } else { b",\n" })
            .and_then(|()| {
                for (i, line) in text.lines().enumerate() {
                    if i > 0 {
                        out.write_all(b"\n")?;
                    }
                    out.write_all(b"    ")?;
                    out.write_all(line.as_bytes())?;
                }
                Ok(())
            })
            .is_ok();
        first = false;
        ok
    })?;
    if ok {
        let end: &[u8] = if first { b"]\n}\n" } else { b"\n  ]\n}\n" };
        let _ = out.write_all(end).and_then(|()| out.flush());
    }
    Ok(())
}

/// Runs `list-executions`.
pub fn list(args: ListArgs) -> ExitCode {
    const OP: &str = "ListExecutions";
    let status = match args
        .status_filter
        .as_deref()
        .map(str::parse::<ExecutionStatus>)
    {
        None => None,
        Some(Ok(s)) => Some(s),
        Some(Err(e)) => return refuse(OP, "ValidationException", &e.to_string(), exit::VALIDATION),
    };
    let store = match args.database.lower().open_for_reading() {
        Ok(s) => s,
        Err(db::OpenExistingError::Missing(path)) => {
            // No database, no executions; created by nothing but a run.
            errln!(
                "sfn-local: there is no database at {}; no executions",
                path.display()
            );
            return respond(OP, &args.out, &api::list_executions(&[]));
        }
        Err(e) => return fail(OP, e),
    };
    if let Some(run) = &args.map_run_arn {
        return list_map_run_children(&store, run, status, &args);
    }
    let list = match store.list_executions(status) {
        Ok(list) => list,
        Err(e) => return fail(OP, e),
    };
    let list: Vec<_> = match &args.state_machine_arn {
        Some(machine) => list
            .into_iter()
            .filter(|e| &e.state_machine_arn == machine || &e.state_machine_name == machine)
            .collect(),
        None => list,
    };
    match args.page.lower().slice(&list) {
        Ok((list, next)) => {
            let response = api::with_next_token(api::list_executions(list), next);
            if args.out.wants_response() {
                return respond(OP, &args.out, &response);
            }
            outln!("{}", crate::cli::output::table(&response));
            ExitCode::SUCCESS
        }
        Err(e) => invalid_token(OP, e),
    }
}

/// `list-executions --map-run-arn`: a distributed Map run's child executions, newest first.
fn list_map_run_children(
    store: &crate::store::Store,
    run: &str,
    status: Option<ExecutionStatus>,
    args: &ListArgs,
) -> ExitCode {
    const OP: &str = "ListExecutions";
    match store.map_run(run) {
        Ok(Some(_)) => {}
        Ok(None) => {
            return refuse(
                OP,
                "ResourceNotFound",
                &format!("Resource not found: '{run}'"),
                exit::RESOURCE_NOT_FOUND,
            )
        }
        Err(e) => return fail(OP, e),
    }
    let children = match store.map_run_executions(run, status.map(|s| s.as_str())) {
        Ok(children) => children,
        Err(e) => return fail(OP, e),
    };
    match args.page.lower().slice(&children) {
        Ok((children, next)) => {
            let items = children
                .iter()
                .map(api::map_run_execution_list_item)
                .collect();
            let response = api::with_next_token(
                serde_json::json!({ "executions": serde_json::Value::Array(items) }),
                next,
            );
            if args.out.wants_response() {
                return respond(OP, &args.out, &response);
            }
            outln!("{}", crate::cli::output::table(&response));
            ExitCode::SUCCESS
        }
        Err(e) => invalid_token(OP, e),
    }
}
