//! The worker's side of task tokens, spelled like the AWS CLI: `send-task-success`,
//! `send-task-failure`, `send-task-heartbeat`, `get-activity-task`, and `list-tasks`.
//!
//! Each is a short transaction on the same database `run` uses (`--db`/`SFN_LOCAL_DB`), so they
//! work from any other process, a shell script in particular. Answers are silent on success;
//! refusals are AWS's error names on stderr, each with its own exit status ([`exit`]).

use crate::asl::resource::{Resource, ResourceKind};
use crate::cli::db;
use crate::cli::flags::{Database, DbArgs};
use crate::clock::{iso8601, system_now};
use crate::store::{Store, TokenKind, TokenRecord};
use crate::tasks::callback::{answer_task, check_answer, AnswerRefusal, SentAnswer};
use clap::{Args, ValueEnum};
use serde_json::{json, Map, Value};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Exit statuses of the token commands and `stop-execution`, one per AWS error name.
pub mod exit {
    /// The database could not be opened or failed.
    pub const STORE: u8 = 1;
    /// `TaskDoesNotExist`: a well-formed token this database never issued.
    pub const TASK_DOES_NOT_EXIST: u8 = 10;
    /// `InvalidToken`: not a token sfn-local could have issued (`T` and 43 URL-safe base64
    /// characters).
    pub const INVALID_TOKEN: u8 = 11;
    /// `TaskTimedOut`: the task is closed (timed out, answered, its execution ended or stopped).
    pub const TASK_TIMED_OUT: u8 = 12;
    /// `InvalidOutput`: `--task-output` is not JSON or is over 256 KiB.
    pub const INVALID_OUTPUT: u8 = 13;
    /// `ValidationException`: `--error` over 256 or `--cause` over 32,768 characters, a bad
    /// `--worker-name`.
    pub const VALIDATION: u8 = 14;
    /// `ExecutionDoesNotExist` (stop-execution).
    pub const EXECUTION_DOES_NOT_EXIST: u8 = 15;
    /// `InvalidArn`: `--activity-arn` is not an activity ARN.
    pub const INVALID_ARN: u8 = 16;
    /// `StateMachineDoesNotExist`: `--state-machine-arn` names no machine the database knows.
    pub const STATE_MACHINE_DOES_NOT_EXIST: u8 = 17;
    /// `ResourceNotFound`: `--map-run-arn` names no Map run the database knows.
    pub const RESOURCE_NOT_FOUND: u8 = 19;
}

/// AWS's longest `error`.
pub const MAX_ERROR_CHARS: usize = 256;
/// AWS's longest `cause`.
pub const MAX_CAUSE_CHARS: usize = 32_768;

/// Arguments of `send-task-success`.
#[derive(Debug, Args)]
pub struct SuccessArgs {
    /// The token the worker received.
    #[arg(long, allow_hyphen_values = true)]
    pub task_token: String,
    /// The task's result, as JSON text, or `file://PATH`.
    #[arg(long, value_parser = crate::cli::param::text_or_file)]
    pub task_output: String,
    /// `--db`.
    #[command(flatten)]
    pub database: DbArgs,
}

/// Arguments of `send-task-failure`.
#[derive(Debug, Args)]
pub struct FailureArgs {
    /// The token the worker received.
    #[arg(long, allow_hyphen_values = true)]
    pub task_token: String,
    /// The error name (at most 256 characters), or `file://PATH`.
    #[arg(long, value_parser = crate::cli::param::text_or_file)]
    pub error: Option<String>,
    /// The cause (at most 32,768 characters), or `file://PATH`.
    #[arg(long, value_parser = crate::cli::param::text_or_file)]
    pub cause: Option<String>,
    /// `--db`.
    #[command(flatten)]
    pub database: DbArgs,
}

/// Arguments of `send-task-heartbeat`.
#[derive(Debug, Args)]
pub struct HeartbeatArgs {
    /// The token the worker received.
    #[arg(long, allow_hyphen_values = true)]
    pub task_token: String,
    /// `--db`.
    #[command(flatten)]
    pub database: DbArgs,
}

/// Arguments of `get-activity-task`.
#[derive(Debug, Args)]
pub struct GetActivityArgs {
    /// The activity's ARN, as the Task state's `Resource` names it.
    #[arg(long)]
    pub activity_arn: String,
    /// The worker's name, recorded in `ActivityStarted` (1 to 80 characters).
    #[arg(long)]
    pub worker_name: Option<String>,
    /// How long to wait for a task (AWS: 60 seconds).
    #[arg(long, value_name = "N", default_value_t = 60.0)]
    pub poll_seconds: f64,
    /// `--db`.
    #[command(flatten)]
    pub database: DbArgs,
}

/// Arguments of `list-tasks`.
#[derive(Debug, Args)]
pub struct ListTasksArgs {
    /// Only this execution's tasks (ARN or name).
    #[arg(long)]
    pub execution_arn: Option<String>,
    /// A table for people, or JSON for scripts.
    #[arg(long, value_enum, default_value_t = ListFormat::Text)]
    pub format: ListFormat,
    /// `--db`.
    #[command(flatten)]
    pub database: DbArgs,
}

/// Output formats of `list-tasks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    /// One line per task.
    Text,
    /// A JSON object `{"tasks": [...]}`.
    Json,
}

/// Prints an AWS-style refusal and returns its exit status.
pub(crate) fn refuse(operation: &str, error: &str, message: &str, status: u8) -> ExitCode {
    errln!("An error occurred ({error}) when calling the {operation} operation: {message}");
    ExitCode::from(status)
}

fn open(operation: &str, database: &Database) -> Result<Arc<Store>, ExitCode> {
    database
        .open()
        .map_err(|e| refuse(operation, "ServiceFailure", &e.to_string(), exit::STORE))
}

/// Sends an answer (through the token answer code serve uses too) and maps the refusal to
/// our exit status; an unknown token names the database it looked in.
fn answer(operation: &str, database: &Database, token: &str, answer: SentAnswer) -> ExitCode {
    let no_task = |path: &std::path::Path, why: &str| {
        refuse(
            operation,
            "TaskDoesNotExist",
            &format!(
                "No task with this token exists in the database {}{why}; a worker answers the database its execution runs in (--db or SFN_LOCAL_DB; sfn-local gives the workers it starts SFN_LOCAL_DB)",
                path.display()
            ),
            exit::TASK_DOES_NOT_EXIST,
        )
    };
    let refused = |r: AnswerRefusal| {
        let status = match r {
            AnswerRefusal::InvalidToken => exit::INVALID_TOKEN,
            AnswerRefusal::InvalidOutput(_) => exit::INVALID_OUTPUT,
            AnswerRefusal::TaskDoesNotExist => exit::TASK_DOES_NOT_EXIST,
            AnswerRefusal::TaskTimedOut => exit::TASK_TIMED_OUT,
            AnswerRefusal::Store(_) => exit::STORE,
        };
        refuse(operation, r.code(), &r.to_string(), status)
    };
    let store = match database.open_existing() {
        Ok(s) => s,
        Err(db::OpenExistingError::Missing(path)) => {
            // The token and the output are checked before the task, as AWS does.
            return match check_answer(token, answer) {
                Err(r) => refused(r),
                Ok(_) => no_task(&path, ", which does not exist"),
            };
        }
        Err(db::OpenExistingError::Failed(e)) => {
            return refuse(operation, "ServiceFailure", &e, exit::STORE)
        }
    };
    match answer_task(&store, token, answer, system_now()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(AnswerRefusal::TaskDoesNotExist) => no_task(store.path(), ""),
        Err(r) => refused(r),
    }
}

/// Checks `--error`/`--cause` lengths as AWS does.
pub(crate) fn check_error_cause(
    operation: &str,
    error: Option<&str>,
    cause: Option<&str>,
) -> Result<(), ExitCode> {
    if error.is_some_and(|e| e.chars().count() > MAX_ERROR_CHARS) {
        return Err(refuse(
            operation,
            "ValidationException",
            &format!("--error must be at most {MAX_ERROR_CHARS} characters"),
            exit::VALIDATION,
        ));
    }
    if cause.is_some_and(|c| c.chars().count() > MAX_CAUSE_CHARS) {
        return Err(refuse(
            operation,
            "ValidationException",
            &format!("--cause must be at most {MAX_CAUSE_CHARS} characters"),
            exit::VALIDATION,
        ));
    }
    Ok(())
}

/// Runs `send-task-success`.
pub fn success(args: SuccessArgs) -> ExitCode {
    answer(
        "SendTaskSuccess",
        &args.database.lower(),
        &args.task_token,
        SentAnswer::Success(args.task_output),
    )
}

/// Runs `send-task-failure`.
pub fn failure(args: FailureArgs) -> ExitCode {
    const OP: &str = "SendTaskFailure";
    if let Err(code) = check_error_cause(OP, args.error.as_deref(), args.cause.as_deref()) {
        return code;
    }
    answer(
        OP,
        &args.database.lower(),
        &args.task_token,
        SentAnswer::Failure {
            error: args.error,
            cause: args.cause,
        },
    )
}

/// Runs `send-task-heartbeat`.
pub fn heartbeat(args: HeartbeatArgs) -> ExitCode {
    answer(
        "SendTaskHeartbeat",
        &args.database.lower(),
        &args.task_token,
        SentAnswer::Heartbeat,
    )
}

/// How often a waiting `get-activity-task` looks for commits by runners.
const ACTIVITY_POLL: Duration = Duration::from_millis(10);

/// Runs `get-activity-task`: takes the oldest waiting task of the activity, waiting for one up
/// to `--poll-seconds`; prints `{"taskToken":..,"input":..}`, or `{}` when none came.
pub fn get_activity_task(args: GetActivityArgs) -> ExitCode {
    const OP: &str = "GetActivityTask";
    match Resource::parse(&args.activity_arn) {
        Ok(Resource {
            kind: ResourceKind::Activity { .. },
            ..
        }) => {}
        _ => {
            return refuse(
                OP,
                "InvalidArn",
                &format!("Invalid Arn: '{}'", args.activity_arn),
                exit::INVALID_ARN,
            )
        }
    }
    if let Some(w) = &args.worker_name {
        let n = w.chars().count();
        if n == 0 || n > 80 {
            return refuse(
                OP,
                "ValidationException",
                "--worker-name must be 1 to 80 characters",
                exit::VALIDATION,
            );
        }
    }
    if !(args.poll_seconds.is_finite() && args.poll_seconds >= 0.0) {
        return refuse(
            OP,
            "ValidationException",
            "--poll-seconds must be a non-negative number",
            exit::VALIDATION,
        );
    }
    let store = match open(OP, &args.database.lower()) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let until = Instant::now() + Duration::from_secs_f64(args.poll_seconds.min(86_400.0));
    let mut seen = None;
    loop {
        // Try to take a task only when a commit happened since the last try.
        let version = store.data_version().ok();
        if version.is_none() || version != seen {
            seen = version;
            match store.claim_activity_task(
                &args.activity_arn,
                args.worker_name.as_deref(),
                system_now(),
            ) {
                Ok(Some(task)) => {
                    outln!(
                        "{}",
                        json!({ "taskToken": task.token, "input": task.input })
                    );
                    return ExitCode::SUCCESS;
                }
                Ok(None) => {}
                Err(e) => return refuse(OP, "ServiceFailure", &e.to_string(), exit::STORE),
            }
        }
        if Instant::now() >= until {
            outln!("{{}}");
            return ExitCode::SUCCESS;
        }
        std::thread::sleep(ACTIVITY_POLL);
    }
}

/// One open task as `list-tasks --format json` prints it.
fn task_json(t: &TokenRecord) -> Value {
    let mut m = Map::new();
    m.insert("taskToken".into(), t.token.clone().into());
    m.insert("executionArn".into(), t.execution_arn.clone().into());
    m.insert("stateName".into(), t.state_name.clone().into());
    // Numbered as the text listing (and the console) number it: 1 is the first attempt;
    // `retryCount` is `$$.State.RetryCount` (and the worker's SFN_RETRY_COUNT).
    m.insert("attempt".into(), (t.attempt + 1).into());
    m.insert("retryCount".into(), t.attempt.into());
    let kind = match t.kind {
        TokenKind::Callback => "CALLBACK",
        TokenKind::Activity => "ACTIVITY",
    };
    m.insert("kind".into(), kind.into());
    if let Some(a) = &t.activity_arn {
        m.insert("activityArn".into(), a.clone().into());
    }
    m.insert("status".into(), t.status.as_str().into());
    if let Some(w) = &t.worker_name {
        m.insert("workerName".into(), w.clone().into());
    }
    m.insert("input".into(), t.input.clone().into());
    m.insert("createdDate".into(), iso8601(t.created_at).into());
    if let Some(s) = t.timeout_seconds {
        m.insert("timeoutInSeconds".into(), s.into());
    }
    if let Some(s) = t.heartbeat_seconds {
        m.insert("heartbeatInSeconds".into(), s.into());
    }
    if let Some(d) = t.timeout_at {
        m.insert("timeoutDate".into(), iso8601(d).into());
    }
    if let Some(d) = t.heartbeat_at {
        m.insert("heartbeatDate".into(), iso8601(d).into());
    }
    Value::Object(m)
}

/// Runs `list-tasks`: the tasks waiting for an answer.
pub fn list(args: ListTasksArgs) -> ExitCode {
    const OP: &str = "ListTasks";
    let store = match args.database.lower().open_for_reading() {
        Ok(s) => s,
        Err(db::OpenExistingError::Missing(path)) if args.execution_arn.is_some() => {
            return refuse(
                OP,
                "ExecutionDoesNotExist",
                &format!(
                    "Execution Does Not Exist: '{}' ({} does not exist)",
                    args.execution_arn.as_deref().unwrap_or_default(),
                    path.display()
                ),
                exit::EXECUTION_DOES_NOT_EXIST,
            )
        }
        Err(e) => return refuse(OP, "ServiceFailure", &e.to_string(), exit::STORE),
    };
    let arn = match &args.execution_arn {
        None => None,
        Some(a) => match store.execution(a) {
            Ok(Some(record)) => Some(record.execution_arn),
            Ok(None) => {
                return refuse(
                    OP,
                    "ExecutionDoesNotExist",
                    &format!(
                        "Execution Does Not Exist: '{a}' (in the database {})",
                        store.path().display()
                    ),
                    exit::EXECUTION_DOES_NOT_EXIST,
                )
            }
            Err(e) => return refuse(OP, "ServiceFailure", &e.to_string(), exit::STORE),
        },
    };
    let tasks = match store.open_tokens(arn.as_deref()) {
        Ok(t) => t,
        Err(e) => return refuse(OP, "ServiceFailure", &e.to_string(), exit::STORE),
    };
    match args.format {
        ListFormat::Json => {
            let items: Vec<Value> = tasks.iter().map(task_json).collect();
            outln!(
                "{}",
                serde_json::to_string_pretty(&json!({ "tasks": items })).unwrap_or_default()
            );
        }
        ListFormat::Text => {
            if tasks.is_empty() {
                errln!("no task is waiting for an answer");
            } else if !crate::cli::ui::quiet() {
                // A header for people; `-q` leaves the rows alone for `cut -f1`.
                outln!(
                    "TASK TOKEN\tSTATUS\tSTATE (ATTEMPT, 1 = FIRST)\tKIND AND DEADLINES\tEXECUTION"
                );
            }
            for t in &tasks {
                let deadline = |label: &str, d: Option<i64>| {
                    d.map(|d| format!(" {label} {}", iso8601(d)))
                        .unwrap_or_default()
                };
                outln!(
                    "{}\t{}\t{} (attempt {})\t{}{}{}\t{}",
                    t.token,
                    t.status.as_str(),
                    t.state_name,
                    t.attempt + 1,
                    t.activity_arn.as_deref().unwrap_or("callback"),
                    deadline("timeout", t.timeout_at),
                    deadline("heartbeat", t.heartbeat_at),
                    t.execution_arn
                );
            }
        }
    }
    ExitCode::SUCCESS
}
