//! AWS's TestState: one state run once, alone or picked out of a machine, with what each
//! data-flow step made of its input (the inspection data), mocked results, and the decision
//! Retry and Catch would take on an error.
//!
//! [`test_state`] takes AWS's request shape and returns AWS's response, or an error carrying
//! AWS's code and message; `sfn-local test-state` and `serve`'s `TestState` operation are two
//! faces over it. The state's semantics are the engine's own: the data-flow steps, Choice,
//! Fail, Assign, Catch and the retry backoff are the functions `run` uses, called one step at
//! a time so every intermediate value can be reported. Nothing runs after the state: a Map or
//! Parallel is answered by its mock, a Wait does not wait, a Retry is reported (`RETRIABLE`),
//! not slept through.

use crate::asl::error::StatesError;
use crate::asl::model::*;
use crate::clock::{iso8601, Clock, Millis};
use crate::engine::context::ExecutionInfo;
use crate::engine::execution::{Engine, Failed, StateCx, StatesData};
use crate::engine::history::{History, MemorySink};
use crate::engine::states::Tolerance;
use crate::engine::variables::Frame;
use crate::tasks::{TaskRequest, TaskRunner};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map as JsonMap, Value};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

pub mod validation;

/// AWS's `TestStateInput`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TestStateRequest {
    /// The state (or, with `stateName`, the whole machine) as JSON text.
    pub definition: String,
    /// The role AWS would run the state as; required for a Task without a mock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role_arn: Option<String>,
    /// The state's input, as JSON text (default `{}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// `INFO` (default), `DEBUG` or `TRACE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inspection_level: Option<InspectionLevel>,
    /// Whether HTTP Task request and response data may show secrets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reveal_secrets: Option<bool>,
    /// The variables in scope, as a JSON object text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variables: Option<String>,
    /// The state to test when `definition` is a whole machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_name: Option<String>,
    /// The Task's (or Map's, or Parallel's) answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mock: Option<MockInput>,
    /// The context object, as a JSON object text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// Where in its retries, Map run or nested failure the state is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_configuration: Option<TestStateConfiguration>,
}

/// AWS's `InspectionLevel`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum InspectionLevel {
    /// Only the outcome.
    #[default]
    Info,
    /// The outcome and the data-flow steps.
    Debug,
    /// As DEBUG, with HTTP request and response data and the variables.
    Trace,
}

/// AWS's `MockInput`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MockInput {
    /// The result, as JSON text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// The error instead of a result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_output: Option<MockErrorOutput>,
    /// How the result is checked against the integration's API (default `STRICT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_validation_mode: Option<FieldValidationMode>,
}

/// AWS's `MockErrorOutput`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MockErrorOutput {
    /// The error name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The cause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
}

/// AWS's `MockResponseValidationMode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum FieldValidationMode {
    /// Every field checked against the output shape, required fields too.
    #[default]
    Strict,
    /// Only the fields present are checked.
    Present,
    /// No check.
    None,
}

/// AWS's `TestStateConfiguration`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TestStateConfiguration {
    /// How many retries the state has had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrier_retry_count: Option<u64>,
    /// The state inside a Map or Parallel that raised the mocked error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_caused_by_state: Option<String>,
    /// How many Map iterations failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map_iteration_failure_count: Option<u64>,
    /// What a distributed Map's ItemReader read, as JSON text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map_item_reader_data: Option<String>,
}

/// AWS's `TestStateOutput`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TestStateResponse {
    /// The state's output, as JSON text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// The error, when it failed (or was caught, or will be retried).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The error's cause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// What each step made of the input (DEBUG and TRACE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inspection_data: Option<InspectionData>,
    /// Where the machine would go next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_state: Option<String>,
    /// `SUCCEEDED`, `FAILED`, `RETRIABLE` or `CAUGHT_ERROR`.
    pub status: TestStatus,
}

/// AWS's `TestExecutionStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TestStatus {
    /// The state completed.
    #[default]
    Succeeded,
    /// The state failed and nothing handles the error.
    Failed,
    /// A retrier would run the state again.
    Retriable,
    /// A catcher handles the error.
    CaughtError,
}

/// AWS's `InspectionData`: JSON texts, in the order AWS processes them.
#[allow(missing_docs)]
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InspectionData {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_arguments: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_input_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_parameters: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_result_selector: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_result_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<InspectionDataRequest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<InspectionDataResponse>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variables: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_details: Option<InspectionErrorDetails>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_items_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_item_selector: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_item_batcher: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_items_pointer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerated_failure_count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerated_failure_percentage: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<u64>,
}

/// AWS's `InspectionDataRequest`: the HTTP request an HTTP Task sent (`TRACE`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct InspectionDataRequest {
    /// `http` or `https`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// The method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The URL, with the query.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The headers, `[Name: value, ...]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<String>,
    /// The body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

/// AWS's `InspectionDataResponse`: the HTTP response an HTTP Task got (`TRACE`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InspectionDataResponse {
    /// `http` or `https`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// The status code, as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_code: Option<String>,
    /// The status's reason phrase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// The headers, `[Name: value, ...]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<String>,
    /// The body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

impl InspectionDataRequest {
    fn of(sent: &crate::tasks::http::SentRequest, reveal: bool) -> Self {
        InspectionDataRequest {
            protocol: Some(sent.protocol.clone()),
            method: Some(sent.method.clone()),
            url: Some(sent.url.clone()),
            headers: Some(crate::tasks::http::shown_headers(&sent.headers, reveal)),
            body: Some(sent.body.clone()),
        }
    }
}

impl InspectionDataResponse {
    fn of(got: &crate::tasks::http::ReceivedResponse, reveal: bool) -> Self {
        InspectionDataResponse {
            protocol: Some(got.protocol.clone()),
            status_code: Some(got.status_code.to_string()),
            status_message: Some(got.status_message.clone()),
            headers: Some(crate::tasks::http::shown_headers(&got.headers, reveal)),
            body: Some(got.body.clone()),
        }
    }
}

/// AWS's `InspectionErrorDetails`: which retrier or catcher took the error.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InspectionErrorDetails {
    /// The catcher's index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catch_index: Option<u64>,
    /// The retrier's index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_index: Option<u64>,
    /// How long AWS would wait before the retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_backoff_interval_seconds: Option<u64>,
}

/// A request AWS rejects: its error code and message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct TestStateError {
    /// AWS's error code (`ValidationException`, `InvalidDefinition`, ...).
    pub code: &'static str,
    /// AWS's message.
    pub message: String,
}

impl TestStateError {
    fn validation(message: impl Into<String>) -> Self {
        TestStateError {
            code: "ValidationException",
            message: message.into(),
        }
    }

    fn definition(message: impl Into<String>) -> Self {
        TestStateError {
            code: "InvalidDefinition",
            message: message.into(),
        }
    }
}

/// The name a definition of a single state gets (AWS shows it in `$$.State.Name`).
const SINGLE_STATE_NAME: &str = "StateName";

/// Runs one TestState call. `tasks` answers a Task without a mock, as in `run`.
pub async fn test_state(
    request: &TestStateRequest,
    tasks: Rc<dyn TaskRunner>,
    clock: Arc<dyn Clock>,
) -> Result<TestStateResponse, TestStateError> {
    let definition: Value = serde_json::from_str(&request.definition).map_err(|e| {
        TestStateError::definition(format!(
            "Invalid State Machine Definition: 'INVALID_JSON_DESCRIPTION: {e}'"
        ))
    })?;
    let (machine, state_name) = compile(&definition, request.state_name.as_deref())?;
    let machine = Arc::new(machine);
    let (scope, state) = find_state(&machine.root, &state_name)
        .ok_or_else(|| TestStateError::validation("State not found in definition"))?;
    let mock = check_request(request, state)?;
    let input = match &request.input {
        None => json!({}),
        Some(text) => serde_json::from_str(text).map_err(|_| TestStateError {
            code: "InvalidExecutionInput",
            message: "Invalid input: the input must be valid JSON".into(),
        })?,
    };
    let level = request.inspection_level.unwrap_or_default();
    let config = request.state_configuration.clone().unwrap_or_default();
    let given_context = request
        .context
        .as_deref()
        .map(|text| check_context(text, state))
        .transpose()?;
    if let (Some(Mocked::Result(result)), Some(mode)) = (&mock, request.mock.as_ref()) {
        if let StateKind::Task(t) = &state.kind {
            validation::check_mock(
                &t.resource,
                result,
                mode.field_validation_mode.unwrap_or_default(),
            )
            .map_err(TestStateError::validation)?;
        }
    }
    let now = clock.now();
    // The caller's account is the role's; the region is the caller's, as AWS CLIs pick it.
    let account = request
        .role_arn
        .as_deref()
        .and_then(|arn| arn.split(':').nth(4))
        .filter(|a| a.len() == 12 && a.bytes().all(|b| b.is_ascii_digit()))
        .unwrap_or("123456789012");
    let region = ["AWS_REGION", "AWS_DEFAULT_REGION"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| "us-east-1".to_owned());
    let info = ExecutionInfo::new(
        &region,
        account,
        "TestStateMachine",
        &crate::random::uuid().to_string(),
        request.role_arn.as_deref(),
        now,
    );
    let context = match given_context {
        Some(context) => context,
        None => default_context(
            &info,
            request.role_arn.as_deref(),
            &input,
            state,
            &config,
            now,
        ),
    };
    let frame = Frame::root();
    if let Some(text) = &request.variables {
        let vars = match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(vars)) => vars,
            _ => {
                return Err(TestStateError::validation(
                    "Invalid variables: the variables must be a JSON object",
                ))
            }
        };
        frame
            .commit(vars)
            .map_err(|e| TestStateError::validation(e.cause.unwrap_or_default()))?;
    }
    let history = History::new(1, Box::new(MemorySink::default()), 0);
    let engine = Engine::new(machine.clone(), info, input.clone(), history, clock, tasks);
    engine.fix_context(context);
    let assigned = RefCell::new(None);
    let cx = StateCx {
        state,
        entered_id: 1,
        entered_prev: 1,
        attempt_prev: 1,
        entered_at: now,
        retry_count: config.retrier_retry_count.or(Some(0)),
        frame: &frame,
        assigned: &assigned,
    };
    let mut run = TestRun {
        engine: &engine,
        cx: &cx,
        scope,
        level,
        reveal_secrets: request.reveal_secrets.unwrap_or(false),
        config: &config,
        mock,
        data: InspectionData {
            input: Some(input.to_string()),
            ..Default::default()
        },
    };
    let outcome = run.state(input).await;
    let mut response = run.respond(outcome).await?;
    if level == InspectionLevel::Trace {
        // The variables after the state: those given, with what the state assigned.
        let mut vars = match request
            .variables
            .as_deref()
            .map(serde_json::from_str::<Value>)
        {
            Some(Ok(Value::Object(given))) => given,
            _ => JsonMap::new(),
        };
        if matches!(
            response.status,
            TestStatus::Succeeded | TestStatus::CaughtError
        ) {
            if let Some(assigned) = assigned.borrow().as_ref() {
                vars.extend(assigned.clone());
            }
        }
        if let (Some(data), false) = (response.inspection_data.as_mut(), vars.is_empty()) {
            data.variables = text(&Value::Object(vars));
        }
    }
    Ok(response)
}

/// Runs [`test_state`] on a current-thread runtime of its own (for the command line). From
/// inside a runtime (an HTTP handler), call it through `tokio::task::spawn_blocking`: the
/// engine's futures are not `Send`.
pub fn test_state_blocking(
    request: &TestStateRequest,
    tasks: Rc<dyn TaskRunner>,
    clock: Arc<dyn Clock>,
) -> Result<TestStateResponse, TestStateError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| TestStateError {
            code: "InternalError",
            message: format!("cannot start a runtime: {e}"),
        })?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, test_state(request, tasks, clock))
}

/// The mock's answer, parsed.
enum Mocked {
    Result(Value),
    Error(StatesError),
}

/// Compiles the definition: a whole machine when `stateName` is given, else one state, named
/// as AWS names it, with every state it may go to stood in for by a Succeed state.
fn compile(
    definition: &Value,
    state_name: Option<&str>,
) -> Result<(StateMachine, String), TestStateError> {
    let (machine_value, name) = match state_name {
        Some(name) => (definition.clone(), name.to_owned()),
        None => {
            let mut states = JsonMap::new();
            states.insert(SINGLE_STATE_NAME.into(), definition.clone());
            for target in targets(definition) {
                if target != SINGLE_STATE_NAME {
                    states.insert(target, json!({"Type": "Succeed"}));
                }
            }
            (
                json!({"StartAt": SINGLE_STATE_NAME, "States": states}),
                SINGLE_STATE_NAME.to_owned(),
            )
        }
    };
    schema_check(&machine_value, "")?;
    let mut diags = crate::asl::Diagnostics::default();
    let machine =
        crate::asl::parse::parse_machine(&machine_value, MachineType::Standard, &mut diags);
    let errors: Vec<String> = diags
        .iter()
        .filter(|d| d.severity == crate::asl::Severity::Error)
        .map(|d| {
            let at = d
                .pointer()
                .map(|p| {
                    format!(
                        " at {}",
                        if p.as_str().is_empty() {
                            "/"
                        } else {
                            p.as_str()
                        }
                    )
                })
                .unwrap_or_default();
            format!("{}: {}{at}", d.code.as_str(), d.message)
        })
        .collect();
    match machine {
        Some(m) if errors.is_empty() => Ok((m, name)),
        _ => Err(TestStateError::definition(format!(
            "Invalid State Machine Definition: '{}'",
            errors.join(", ")
        ))),
    }
}

/// AWS's schema messages for the state fields TestState checks before anything else, which
/// `validate` words its own way.
fn schema_check(scope: &Value, at: &str) -> Result<(), TestStateError> {
    let Some(Value::Object(states)) = scope.get("States") else {
        return Ok(());
    };
    for (name, state) in states {
        let here = format!("{at}/States/{name}");
        let fail = |m: String| {
            Err(TestStateError::definition(format!(
                "Invalid State Machine Definition: 'SCHEMA_VALIDATION_FAILED: {m}'"
            )))
        };
        if let Some(t) = state.get("Type").and_then(Value::as_str) {
            if !matches!(
                t,
                "Task" | "Wait" | "Pass" | "Succeed" | "Fail" | "Choice" | "Parallel" | "Map"
            ) {
                return fail(format!("The field 'Type' should have one of these values: [Task, Wait, Pass, Succeed, Fail, Choice, Parallel, Map] at {here}/Type"));
            }
        }
        if let Some(Value::Array(branches)) = state.get("Branches") {
            if branches.is_empty() {
                return fail(format!("Value cannot be empty at {here}/Branches"));
            }
            for (i, b) in branches.iter().enumerate() {
                schema_check(b, &format!("{here}/Branches[{i}]"))?;
            }
        }
        for key in ["ItemProcessor", "Iterator"] {
            if let Some(p) = state.get(key) {
                schema_check(p, &format!("{here}/{key}"))?;
            }
        }
    }
    Ok(())
}

/// The names a single state's transitions name (`Next`, `Default`, Choice rules, catchers).
fn targets(state: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut add = |v: Option<&Value>| {
        if let Some(Value::String(s)) = v {
            if !out.contains(s) {
                out.push(s.clone());
            }
        }
    };
    add(state.get("Next"));
    add(state.get("Default"));
    for list in ["Choices", "Catch"] {
        if let Some(Value::Array(items)) = state.get(list) {
            for item in items {
                add(item.get("Next"));
            }
        }
    }
    out
}

/// The state named `name` anywhere in the machine, with the scope it belongs to.
fn find_state<'a>(scope: &'a Scope, name: &str) -> Option<(&'a Scope, &'a State)> {
    if let Some(id) = scope.find(name) {
        return Some((scope, scope.state(id)));
    }
    scope
        .states
        .iter()
        .flat_map(|s| s.inner_scopes())
        .find_map(|inner| find_state(inner, name))
}

/// The checks AWS makes before running anything; returns the parsed mock.
fn check_request(
    request: &TestStateRequest,
    state: &State,
) -> Result<Option<Mocked>, TestStateError> {
    let config = request.state_configuration.as_ref();
    let mock = match &request.mock {
        None => None,
        Some(m) => {
            if m.result.is_some() && m.error_output.is_some() {
                return Err(TestStateError::validation(
                    "A test mock should have only one of the following fields: [result, errorOutput].",
                ));
            }
            if request.reveal_secrets == Some(true) {
                return Err(TestStateError::validation(
                    "TestState does not support RevealSecrets when a mock is specified.",
                ));
            }
            if !matches!(
                state.kind,
                StateKind::Task(_) | StateKind::Map(_) | StateKind::Parallel(_)
            ) {
                return Err(TestStateError::validation(format!(
                    "State type '{}' is not supported when a mock is specified",
                    state.type_name()
                )));
            }
            match (&m.result, &m.error_output) {
                (Some(text), _) => Some(Mocked::Result(serde_json::from_str(text).map_err(
                    |_| TestStateError::validation("Mocked result must be valid JSON"),
                )?)),
                (None, Some(e)) => Some(Mocked::Error(StatesError {
                    error: e.error.clone(),
                    cause: e.cause.clone(),
                    heartbeat: false,
                })),
                (None, None) => None,
            }
        }
    };
    match (&state.kind, &mock) {
        (StateKind::Map(_) | StateKind::Parallel(_), None) => {
            if config.is_some_and(|c| c.map_iteration_failure_count.is_some()) {
                return Err(TestStateError::validation(
                    "TestState does not support MapIterationFailureCount when a mock is not specified.",
                ));
            }
            return Err(TestStateError::definition(
                "TestState API does not support Map or Parallel states. Supported state types include: [Task, Wait, Pass, Succeed, Fail, Choice]",
            ));
        }
        (StateKind::Task(_), None) if request.role_arn.is_none() => {
            return Err(TestStateError::validation(
                "RoleArn must be specified when testing a Task state",
            ))
        }
        (StateKind::Parallel(p), Some(Mocked::Result(r))) => match r {
            Value::Array(items) if items.len() == p.branches.len() => {}
            Value::Array(_) => {
                return Err(TestStateError::validation(
                    "Mocked result must contain the same number of items as number of Parallel branches.",
                ))
            }
            _ => return Err(TestStateError::validation("Mocked result must be an array.")),
        },
        (StateKind::Map(m), Some(Mocked::Result(r))) => {
            if m.result_writer.is_some() {
                if !r.is_object() {
                    return Err(TestStateError::validation(
                        "Mocked result must be a JSON object.",
                    ));
                }
            } else {
                let Value::Array(items) = r else {
                    return Err(TestStateError::validation("Mocked result must be an array."));
                };
                let failures = config.and_then(|c| c.map_iteration_failure_count);
                if failures.is_some_and(|n| n as usize > items.len()) {
                    return Err(TestStateError::validation(
                        "Map iteration failure count must be less than or equal to the number of Map iterations",
                    ));
                }
            }
        }
        _ => {}
    }
    // After AWS's own checks, so a request AWS rejects gets AWS's message first.
    if let Some(origin) = config.and_then(|c| c.error_caused_by_state.as_deref()) {
        check_error_origin(origin, state, mock.as_ref())?;
    }
    Ok(mock)
}

/// `errorCausedByState` names the state inside a Map or Parallel that raised the mocked
/// error. AWS documents no message for a misuse; these say what is wrong. The error then
/// fails (or is retried, or caught by) the Map or Parallel as it would on AWS: no iteration
/// runs, so the inner state's own Retry and Catch do not apply.
fn check_error_origin(
    origin: &str,
    state: &State,
    mock: Option<&Mocked>,
) -> Result<(), TestStateError> {
    if !matches!(state.kind, StateKind::Map(_) | StateKind::Parallel(_)) {
        return Err(TestStateError::validation(format!(
            "errorCausedByState is only supported for Map and Parallel states, not for a {} state",
            state.type_name()
        )));
    }
    if !matches!(mock, Some(Mocked::Error(_))) {
        return Err(TestStateError::validation(
            "errorCausedByState requires a mocked error: give mock.errorOutput",
        ));
    }
    let inside = state
        .inner_scopes()
        .into_iter()
        .any(|scope| find_state(scope, origin).is_some());
    if !inside {
        let (field, kind) = match state.kind {
            StateKind::Map(_) => ("ItemProcessor", "Map"),
            _ => ("Branches", "Parallel"),
        };
        return Err(TestStateError::validation(format!(
            "errorCausedByState '{origin}' is not a state in the {field} of {kind} state '{}'",
            state.name
        )));
    }
    Ok(())
}

/// Checks a given context object as AWS does, and returns it.
fn check_context(text: &str, state: &State) -> Result<Value, TestStateError> {
    let invalid =
        |m: String| TestStateError::validation(format!("Invalid Context object provided: {m}"));
    let context: Value = serde_json::from_str(text)
        .map_err(|_| invalid("the context object must be valid JSON".into()))?;
    let Value::Object(fields) = &context else {
        return Err(invalid("the context object must be a JSON object".into()));
    };
    let allowed: &[(&str, &[&str])] = &[
        (
            "Execution",
            &[
                "Id",
                "Input",
                "Name",
                "RoleArn",
                "StartTime",
                "RedriveCount",
                "RedriveTime",
            ],
        ),
        ("State", &["EnteredTime", "Name", "RetryCount"]),
        ("StateMachine", &["Id", "Name"]),
        ("Task", &["Token"]),
    ];
    for (key, value) in fields {
        if key == "Map" {
            return Err(invalid(
                "'Map' field is not supported when mocking a Context object".into(),
            ));
        }
        let Some((_, members)) = allowed.iter().find(|(k, _)| k == key) else {
            return Err(invalid(format!("Field '{key}' is not allowed")));
        };
        if key == "Task" {
            let takes_token = matches!(&state.kind, StateKind::Task(t) if t.resource.pattern().is_some_and(|p| p != crate::asl::resource::IntegrationPattern::RequestResponse));
            if !takes_token {
                return Err(invalid("Context object contains 'Task' when state is not a Task state with a '.sync' or '.waitForTaskToken' service integration pattern".into()));
            }
        }
        let Value::Object(inner) = value else {
            return Err(invalid(format!("{key} must be an object")));
        };
        for (field, v) in inner {
            if !members.contains(&field.as_str()) {
                return Err(invalid(format!("Field '{field}' is not allowed")));
            }
            let string_field = !matches!(field.as_str(), "Input" | "RetryCount" | "RedriveCount");
            if string_field && !v.is_string() {
                return Err(invalid(format!("{key}.{field} must be a string")));
            }
            if matches!(field.as_str(), "RetryCount" | "RedriveCount") && !v.is_u64() {
                return Err(invalid(format!("{key}.{field} must be an integer")));
            }
        }
    }
    Ok(context)
}

/// The context object AWS builds for a TestState call: an Express execution of a machine of
/// its own, with `$$.State.RetryCount` for the states that retry.
fn default_context(
    info: &ExecutionInfo,
    role_arn: Option<&str>,
    input: &Value,
    state: &State,
    config: &TestStateConfiguration,
    now: crate::clock::Millis,
) -> Value {
    let mut state_object = JsonMap::new();
    state_object.insert("Name".into(), SINGLE_STATE_NAME.into());
    state_object.insert("EnteredTime".into(), iso8601(now).into());
    if matches!(
        state.kind,
        StateKind::Task(_) | StateKind::Map(_) | StateKind::Parallel(_)
    ) {
        state_object.insert(
            "RetryCount".into(),
            config.retrier_retry_count.unwrap_or(0).into(),
        );
    }
    let mut context = json!({
        "Execution": {
            "Id": format!("arn:aws:states:{}:{}:express:{}:{}", info.region, info.account, info.state_machine_name, info.name),
            "Input": input,
            "Name": info.name,
            "RoleArn": role_arn,
            "StartTime": iso8601(info.start_time),
        },
        "StateMachine": {
            "Id": info.state_machine_arn,
            "Name": info.state_machine_name,
        },
        "State": state_object,
    });
    if let StateKind::Task(t) = &state.kind {
        if t.resource.waits_for_token() {
            context["Task"] = json!({"Token": crate::random::uuid().to_string()});
        }
    }
    context
}

/// How the state ended before the response is built.
enum Outcome {
    /// It completed: its output and where it goes.
    Done(Value, Transition),
    /// It raised an error, with the raw input Catch would place the error output in; `handled`
    /// says whether Retry and Catch apply (not to errors of the data flow itself).
    Error {
        failed: Failed,
        input: Value,
        handled: bool,
    },
}

/// One TestState run: the engine with the state's context, and the inspection data so far.
struct TestRun<'a> {
    engine: &'a Engine,
    cx: &'a StateCx<'a>,
    scope: &'a Scope,
    level: InspectionLevel,
    /// Whether HTTP data shows credentials (`revealSecrets`).
    reveal_secrets: bool,
    config: &'a TestStateConfiguration,
    mock: Option<Mocked>,
    data: InspectionData,
}

/// JSON text of a value, as inspection data holds it.
fn text(v: &Value) -> Option<String> {
    Some(v.to_string())
}

impl TestRun<'_> {
    async fn state(&mut self, input: Value) -> Outcome {
        let engine = self.engine;
        let cx = self.cx;
        let jsonata = cx.state.query_language == QueryLanguage::Jsonata;
        let unhandled = |failed: Failed, input: &Value| Outcome::Error {
            failed,
            input: input.clone(),
            handled: false,
        };
        match &cx.state.kind {
            StateKind::Pass(p) if !jsonata => {
                let result = match &p.result {
                    Some(r) => {
                        self.data.result = text(r);
                        r.clone()
                    }
                    None => {
                        let effective = match engine.input_path(cx, &p.io, input.clone()) {
                            Ok(v) => v,
                            Err(f) => return unhandled(f, &input),
                        };
                        self.data.after_input_path = text(&effective);
                        let after = match &p.io.parameters {
                            Some(t) => {
                                match engine.template(cx, t, &effective, "Parameters", |_| {}) {
                                    Ok(v) => v,
                                    Err(f) => return unhandled(f, &input),
                                }
                            }
                            None => effective,
                        };
                        self.data.after_parameters = text(&after);
                        after
                    }
                };
                self.data.after_result_selector = text(&result);
                if let Err(f) = engine
                    .assign(
                        cx,
                        cx.state.assign.as_ref(),
                        &result,
                        StatesData::input(&input),
                    )
                    .await
                {
                    return unhandled(f, &input);
                }
                let output = match engine.result_path(cx, &p.io, input.clone(), result) {
                    Ok(v) => v,
                    Err(f) => return unhandled(f, &input),
                };
                self.data.after_result_path = text(&output);
                match engine.output_path(cx, &p.io, output) {
                    Ok(v) => Outcome::Done(v, p.transition),
                    Err(f) => unhandled(f, &input),
                }
            }
            StateKind::Pass(p) => match engine.pass(cx, p, input.clone()).await {
                Ok(step) => Outcome::Done(step.output, step.next),
                Err(f) => unhandled(f, &input),
            },
            StateKind::Succeed(s) => {
                if !jsonata {
                    match engine.input_path(cx, &s.io, input.clone()) {
                        Ok(v) => self.data.after_input_path = text(&v),
                        Err(f) => return unhandled(f, &input),
                    }
                }
                match engine.succeed(cx, s, input.clone()).await {
                    Ok(step) => Outcome::Done(step.output, Transition::End),
                    Err(f) => unhandled(f, &input),
                }
            }
            StateKind::Fail(f) => {
                if !jsonata {
                    self.data.after_input_path = text(&input);
                }
                match engine.fail(cx, f, input.clone()).await {
                    Ok(step) => Outcome::Done(step.output, Transition::End),
                    Err(failed) => unhandled(failed, &input),
                }
            }
            StateKind::Choice(c) => {
                if !jsonata {
                    match engine.input_path(cx, &c.io, input.clone()) {
                        Ok(v) => self.data.after_input_path = text(&v),
                        Err(f) => return unhandled(f, &input),
                    }
                }
                match engine.choice(cx, c, input.clone()).await {
                    Ok(step) => Outcome::Done(step.output, step.next),
                    Err(f) => unhandled(f, &input),
                }
            }
            StateKind::Wait(w) => {
                // TestState does not wait: the state's data flow only.
                if jsonata {
                    let data = StatesData::input(&input);
                    let out = async {
                        let output = engine
                            .jsonata_output(cx, w.io.output.as_ref(), data, input.clone())
                            .await?;
                        engine
                            .assign(cx, cx.state.assign.as_ref(), &input, data)
                            .await?;
                        Ok(output)
                    };
                    return match out.await {
                        Ok(v) => Outcome::Done(v, w.transition),
                        Err(f) => unhandled(f, &input),
                    };
                }
                let effective = match engine.input_path(cx, &w.io, input.clone()) {
                    Ok(v) => v,
                    Err(f) => return unhandled(f, &input),
                };
                self.data.after_input_path = text(&effective);
                if let Err(f) = engine
                    .assign(
                        cx,
                        cx.state.assign.as_ref(),
                        &effective,
                        StatesData::input(&input),
                    )
                    .await
                {
                    return unhandled(f, &input);
                }
                match engine.output_path(cx, &w.io, effective) {
                    Ok(v) => Outcome::Done(v, w.transition),
                    Err(f) => unhandled(f, &input),
                }
            }
            StateKind::Task(t) => self.task(t, input).await,
            StateKind::Parallel(p) => self.parallel(p, input).await,
            StateKind::Map(m) => self.map(m, input).await,
        }
    }

    async fn task(&mut self, t: &Task, input: Value) -> Outcome {
        let engine = self.engine;
        let cx = self.cx;
        let jsonata = cx.state.query_language == QueryLanguage::Jsonata;
        let effective = match engine.input_path(cx, &t.io, input.clone()) {
            Ok(v) => v,
            Err(failed) => {
                return Outcome::Error {
                    failed,
                    input,
                    handled: false,
                }
            }
        };
        if !jsonata {
            self.data.after_input_path = text(&effective);
        }
        let parameters = match engine.arguments(cx, &t.io, &effective).await {
            Ok(v) => v,
            Err(failed) => {
                return Outcome::Error {
                    failed,
                    input,
                    handled: true,
                }
            }
        };
        if jsonata {
            self.data.after_arguments = text(&parameters);
        } else {
            self.data.after_parameters = text(&parameters);
        }
        let result = match self.mock.take() {
            Some(Mocked::Result(r)) => Ok(r),
            Some(Mocked::Error(e)) => Err(e),
            None => {
                // A local command is bounded by the state's TimeoutSeconds, as in `run`.
                let timeout = match engine.task_clocks(cx, t, &effective).await {
                    Ok((timeout, _)) => timeout,
                    Err(failed) => {
                        return Outcome::Error {
                            failed,
                            input,
                            handled: false,
                        }
                    }
                };
                let http = crate::tasks::http::is_http_invoke(&t.resource)
                    && !engine.tasks.binds(&cx.state.name);
                let region = engine.info.region.clone();
                let access = engine.tasks.http_access();
                let request = TaskRequest {
                    state_name: cx.state.name.clone(),
                    resource: t.resource.clone(),
                    input: parameters,
                    execution_arn: engine.info.execution_arn.clone(),
                    retry_count: cx.retry_count.unwrap_or(0),
                    virtual_time: engine.clock.virtual_clock().map(|clock| clock.now()),
                };
                // An HTTP Task is called here rather than through the runner, so that TRACE
                // can show the request and response as they went over the wire.
                let exchange = Rc::new(RefCell::new(None));
                let run: crate::tasks::TaskFuture = if http {
                    let slot = exchange.clone();
                    Box::pin(async move {
                        let (result, sent) =
                            crate::tasks::http::invoke(&request.input, &region, &access).await;
                        *slot.borrow_mut() = sent;
                        result
                    })
                } else {
                    engine.tasks.run(request)
                };
                let result = match timeout {
                    Some(secs) => {
                        let deadline = engine.clock.now()
                            + engine.clock.scale(Duration::from_secs(secs)).as_millis() as Millis;
                        tokio::select! {
                            r = run => r,
                            _ = engine.clock.sleep_until(deadline) => Err(StatesError::timeout()),
                        }
                    }
                    None => run.await,
                };
                if let (InspectionLevel::Trace, Some(sent)) = (self.level, exchange.take()) {
                    let reveal = self.reveal_secrets;
                    self.data.request = Some(InspectionDataRequest::of(&sent.request, reveal));
                    self.data.response = sent
                        .response
                        .as_ref()
                        .map(|r| InspectionDataResponse::of(r, reveal));
                }
                result
            }
        };
        match result {
            Ok(result) => {
                self.data.result = text(&result);
                self.finish(&t.io, input, result, t.transition).await
            }
            Err(e) => Outcome::Error {
                failed: Failed::new(e, cx.entered_id),
                input,
                handled: true,
            },
        }
    }

    /// ResultSelector, ResultPath and OutputPath (or Output), with Assign, over a result.
    async fn finish(
        &mut self,
        io: &DataFlow,
        input: Value,
        result: Value,
        next: Transition,
    ) -> Outcome {
        let engine = self.engine;
        let cx = self.cx;
        let handled = |failed: Failed, input: Value| Outcome::Error {
            failed,
            input,
            handled: true,
        };
        if cx.state.query_language == QueryLanguage::Jsonata {
            return match engine.finish_result(cx, io, input.clone(), result).await {
                Ok(v) => Outcome::Done(v, next),
                Err(f) => handled(f, input),
            };
        }
        let selected = match &io.result_selector {
            Some(t) => match engine.template(cx, t, &result, "ResultSelector", |_| {}) {
                Ok(v) => v,
                Err(f) => return handled(f, input),
            },
            None => result,
        };
        self.data.after_result_selector = text(&selected);
        if let Err(f) = engine
            .assign(
                cx,
                cx.state.assign.as_ref(),
                &selected,
                StatesData::input(&input),
            )
            .await
        {
            return handled(f, input);
        }
        let output = match engine.result_path(cx, io, input.clone(), selected) {
            Ok(v) => v,
            Err(f) => return handled(f, input),
        };
        self.data.after_result_path = text(&output);
        match engine.output_path(cx, io, output) {
            Ok(v) => Outcome::Done(v, next),
            Err(f) => handled(f, input),
        }
    }

    async fn parallel(&mut self, p: &Parallel, input: Value) -> Outcome {
        let engine = self.engine;
        let cx = self.cx;
        let effective = match engine.input_path(cx, &p.io, input.clone()) {
            Ok(v) => v,
            Err(failed) => {
                return Outcome::Error {
                    failed,
                    input,
                    handled: false,
                }
            }
        };
        if let Err(failed) = engine.arguments(cx, &p.io, &effective).await {
            return Outcome::Error {
                failed,
                input,
                handled: true,
            };
        }
        match self.mock.take() {
            Some(Mocked::Result(r)) => self.finish(&p.io, input, r, p.transition).await,
            Some(Mocked::Error(e)) => Outcome::Error {
                failed: Failed::new(e, cx.entered_id),
                input,
                handled: true,
            },
            None => Outcome::Error {
                failed: Failed::new(StatesError::runtime("no mock"), cx.entered_id),
                input,
                handled: false,
            },
        }
    }

    async fn map(&mut self, m: &Map, input: Value) -> Outcome {
        let engine = self.engine;
        let cx = self.cx;
        let jsonata = cx.state.query_language == QueryLanguage::Jsonata;
        let unhandled = |failed: Failed, input: Value| Outcome::Error {
            failed,
            input,
            handled: false,
        };
        let effective = match engine.input_path(cx, &m.io, input.clone()) {
            Ok(v) => v,
            Err(f) => return unhandled(f, input),
        };
        // What a distributed Map's ItemReader read is given (`mapItemReaderData`, as found in
        // its source: JSON items are shown, other formats are not parsed); the items path does
        // not apply to it.
        let mut reader_items = match (&m.item_reader, &self.config.map_item_reader_data) {
            (Some(_), Some(text)) => serde_json::from_str::<Value>(text).ok(),
            _ => None,
        };
        // `ReaderConfig.ItemsPointer` (a JSON Pointer) picks the array out of a JSON object
        // the reader read, as `run` does with the object's body.
        let pointer = m
            .item_reader
            .as_ref()
            .and_then(|r| r.pointer("/ReaderConfig/ItemsPointer"))
            .and_then(Value::as_str);
        if let (Some(pointer), Some(read)) = (pointer, reader_items.take()) {
            match crate::tasks::s3::items_at_pointer(read, pointer) {
                Ok(items) => {
                    let items = Value::Array(items);
                    self.data.after_items_pointer = text(&items);
                    reader_items = Some(items);
                }
                Err(e) => {
                    return Outcome::Error {
                        failed: Failed::new(e, cx.entered_id),
                        input,
                        handled: true,
                    }
                }
            }
        }
        let mut items = reader_items.clone();
        if jsonata {
            if let (Some(t), None) = (&m.items, &reader_items) {
                let data = StatesData::input(&input);
                let items_field =
                    engine.evaluate_jsonata(cx, data, |_| {}, t, "Items", Some("array"));
                match items_field.await {
                    Ok(v) => items = Some(v),
                    Err(failed) => return unhandled(failed, input),
                }
            }
        } else {
            self.data.after_input_path = text(&effective);
            if reader_items.is_none() {
                let selected = match &m.items_path {
                    None => effective.clone(),
                    Some(p) => match engine.required_path(cx, p, &effective) {
                        Ok(v) => v,
                        Err(f) => return unhandled(f, input),
                    },
                };
                if !selected.is_array() {
                    let path = m.items_path.as_ref().map_or("$", |p| p.text());
                    // AWS names a context path (`$$.x`) as `$.x` here.
                    let shown = path
                        .strip_prefix('$')
                        .filter(|p| p.starts_with('$'))
                        .unwrap_or(path);
                    return unhandled(
                        Failed::new(
                            StatesError::runtime(format!(
                                "Reference path \"{shown}\" must point to array."
                            )),
                            cx.entered_id,
                        ),
                        input,
                    );
                }
                self.data.after_items_path = text(&selected);
                items = Some(selected);
            }
        }
        if let (Some(_), Some(Value::Array(raw))) = (&m.item_selector, &items) {
            let mut selected = Vec::with_capacity(raw.len());
            for (index, item) in raw.iter().enumerate() {
                match engine
                    .item_input(cx, m, index, item.clone(), &effective)
                    .await
                {
                    Ok(v) => selected.push(v),
                    Err(f) => return unhandled(f, input),
                }
            }
            self.data.after_item_selector = text(&Value::Array(selected.clone()));
            items = Some(Value::Array(selected));
        }
        // Then the batches, as `run` makes them from the selected items.
        if let (Some(_), Some(Value::Array(items))) = (&m.item_batcher, &items) {
            match engine.batcher(cx, m, &effective).await {
                Ok(Some(batcher)) => {
                    self.data.after_item_batcher =
                        text(&Value::Array(batcher.batch(items.clone())));
                }
                Ok(None) => {}
                Err(f) => return unhandled(f, input),
            }
        }
        let max_concurrency = match engine
            .resolve_count(
                cx,
                m.max_concurrency.as_ref(),
                &effective,
                "MaxConcurrencyPath",
                0,
            )
            .await
        {
            Ok(n) => n.unwrap_or(0),
            Err(f) => return unhandled(f, input),
        };
        self.data.max_concurrency = Some(max_concurrency);
        let tolerated_count = match engine.tolerated_count(cx, m, &effective).await {
            Ok(n) => n,
            Err(f) => return unhandled(f, input),
        };
        let tolerated_percentage = match engine.tolerated_percentage(cx, m, &effective).await {
            Ok(p) => p,
            Err(f) => return unhandled(f, input),
        };
        self.data.tolerated_failure_count = tolerated_count;
        self.data.tolerated_failure_percentage = tolerated_percentage;
        let result = match self.mock.take() {
            Some(Mocked::Result(r)) => r,
            Some(Mocked::Error(e)) => {
                return Outcome::Error {
                    failed: Failed::new(e, cx.entered_id),
                    input,
                    handled: true,
                }
            }
            None => {
                return unhandled(
                    Failed::new(StatesError::runtime("no mock"), cx.entered_id),
                    input,
                )
            }
        };
        let total = result.as_array().map_or(0, Vec::len);
        let tolerance = Tolerance {
            count: tolerated_count.map(|n| n as usize),
            percentage: tolerated_percentage,
            total,
        };
        let failures = self.config.map_iteration_failure_count.unwrap_or(0) as usize;
        // Without a tolerance set, AWS reports the mocked result as it is.
        if failures > 0 && tolerance.tolerant() && tolerance.exceeded(failures) {
            return Outcome::Error {
                failed: Failed::new(tolerance.error(), cx.entered_id),
                input,
                handled: true,
            };
        }
        self.finish(&m.io, input, result, m.transition).await
    }

    /// The response: the outcome, Retry and Catch decided, and the inspection data the level
    /// shows.
    async fn respond(&mut self, outcome: Outcome) -> Result<TestStateResponse, TestStateError> {
        let mut response = TestStateResponse::default();
        match outcome {
            Outcome::Done(output, next) => {
                response.status = TestStatus::Succeeded;
                response.output = text(&output);
                response.next_state = self.next_name(next);
            }
            Outcome::Error {
                failed,
                input,
                handled,
            } => {
                response.error = failed.error.error.clone();
                response.cause = failed.error.cause.clone();
                response.status = TestStatus::Failed;
                if handled {
                    self.handle(&mut response, failed, &input).await;
                }
            }
        }
        if self.level > InspectionLevel::Info {
            response.inspection_data = Some(std::mem::take(&mut self.data));
        }
        Ok(response)
    }

    /// Retry, then Catch: RETRIABLE with the interval AWS would wait while the retrier has
    /// attempts left, CAUGHT_ERROR with the catcher's output and next state, else FAILED.
    async fn handle(&mut self, response: &mut TestStateResponse, failed: Failed, input: &Value) {
        let errors = match &self.cx.state.kind {
            StateKind::Task(t) => &t.errors,
            StateKind::Map(m) => &m.errors,
            StateKind::Parallel(p) => &p.errors,
            _ => return,
        };
        if failed.terminal {
            return;
        }
        let mut details = InspectionErrorDetails::default();
        if let Some(i) = errors
            .retry
            .iter()
            .position(|r| r.error_equals.iter().any(|p| failed.error.matches(p)))
        {
            let r = &errors.retry[i];
            let count = self.config.retrier_retry_count.unwrap_or(0);
            details.retry_index = Some(i as u64);
            if count < r.max_attempts {
                let delay = crate::engine::retry::delay(r, count + 1);
                details.retry_backoff_interval_seconds = Some(delay.as_secs_f64().round() as u64);
                response.status = TestStatus::Retriable;
                self.data.error_details = Some(details);
                return;
            }
        }
        let catch_index = errors
            .catch
            .iter()
            .position(|c| c.error_equals.iter().any(|p| failed.error.matches(p)));
        if let Some(j) = catch_index {
            match self.engine.catch(self.cx, errors, input, failed).await {
                Ok(step) => {
                    details.catch_index = Some(j as u64);
                    response.status = TestStatus::CaughtError;
                    response.output = text(&step.output);
                    response.next_state = self.next_name(step.next);
                }
                Err(f) => {
                    response.error = f.error.error.clone();
                    response.cause = f.error.cause.clone();
                }
            }
        }
        if details != InspectionErrorDetails::default() {
            self.data.error_details = Some(details);
        }
    }

    fn next_name(&self, next: Transition) -> Option<String> {
        match next {
            Transition::Next(id) => Some(self.scope.state(id).name.clone()),
            Transition::End => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::tasks::LocalTasks;

    fn call(request: TestStateRequest) -> Result<TestStateResponse, TestStateError> {
        test_state_blocking(
            &request,
            Rc::new(LocalTasks::default()),
            Arc::new(ManualClock::new(0)),
        )
    }

    fn request(definition: &str, input: &str) -> TestStateRequest {
        TestStateRequest {
            definition: definition.into(),
            input: Some(input.into()),
            inspection_level: Some(InspectionLevel::Debug),
            ..Default::default()
        }
    }

    #[test]
    fn a_wait_does_not_wait_and_a_choice_names_its_next_state() {
        let r = call(request(
            r#"{"Type":"Wait","Seconds":99999,"InputPath":"$.a","Next":"After"}"#,
            r#"{"a":{"b":1}}"#,
        ))
        .unwrap();
        assert_eq!(r.status, TestStatus::Succeeded);
        assert_eq!(r.output.as_deref(), Some(r#"{"b":1}"#));
        assert_eq!(r.next_state.as_deref(), Some("After"));
        let r = call(request(
            r#"{"Type":"Choice","Choices":[{"Variable":"$.n","NumericGreaterThan":1,"Next":"Big"}],"Default":"Small"}"#,
            r#"{"n":0}"#,
        ))
        .unwrap();
        assert_eq!(r.next_state.as_deref(), Some("Small"));
    }

    #[test]
    fn a_runtime_error_of_the_data_flow_is_neither_retried_nor_caught() {
        let mut req = request(
            r#"{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","InputPath":"$.missing",
                "Retry":[{"ErrorEquals":["States.ALL"]}],"Catch":[{"ErrorEquals":["States.ALL"],"Next":"C"}],"End":true}"#,
            "{}",
        );
        req.mock = Some(MockInput {
            result: Some("{}".into()),
            field_validation_mode: Some(FieldValidationMode::None),
            ..Default::default()
        });
        let r = call(req).unwrap();
        assert_eq!(r.status, TestStatus::Failed);
        assert_eq!(r.error.as_deref(), Some("States.Runtime"));
        assert!(r.inspection_data.unwrap().error_details.is_none());
    }

    #[test]
    fn items_pointer_picks_the_items_out_of_what_the_item_reader_read() {
        let mut req = request(
            r#"{"Type":"Map","ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"JSON","ItemsPointer":"/data/items"},"Parameters":{"Bucket":"b","Key":"k"}},
                "ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},
                "ItemSelector":{"v.$":"$$.Map.Item.Value"},"End":true}"#,
            "{}",
        );
        req.mock = Some(MockInput {
            result: Some("[1,2]".into()),
            ..Default::default()
        });
        req.state_configuration = Some(TestStateConfiguration {
            map_item_reader_data: Some(r#"{"data":{"items":["a","b"]}}"#.into()),
            ..Default::default()
        });
        let r = call(req.clone()).unwrap();
        assert_eq!(r.status, TestStatus::Succeeded);
        let data = r.inspection_data.unwrap();
        assert_eq!(data.after_items_pointer.as_deref(), Some(r#"["a","b"]"#));
        assert_eq!(
            data.after_item_selector.as_deref(),
            Some(r#"[{"v":"a"},{"v":"b"}]"#)
        );
        // A pointer to no array fails as the reader would, with AWS's reader error.
        req.state_configuration = Some(TestStateConfiguration {
            map_item_reader_data: Some(r#"{"data":{"items":7}}"#.into()),
            ..Default::default()
        });
        let r = call(req).unwrap();
        assert_eq!(r.status, TestStatus::Failed);
        assert_eq!(r.error.as_deref(), Some("States.ItemReaderFailed"));
    }

    #[test]
    fn error_caused_by_state_names_a_state_inside_the_map_or_parallel() {
        let map = r#"{"Type":"Map","ItemProcessor":{"StartAt":"Ship","States":{"Ship":{"Type":"Pass","End":true}}},
            "Catch":[{"ErrorEquals":["Boom"],"Next":"Alert"}],"End":true}"#;
        let with = |definition: &str, origin: &str, error: bool| {
            let mut req = request(definition, "[1]");
            req.mock = Some(if error {
                MockInput {
                    error_output: Some(MockErrorOutput {
                        error: Some("Boom".into()),
                        cause: Some("it broke".into()),
                    }),
                    ..Default::default()
                }
            } else {
                MockInput {
                    result: Some("[1]".into()),
                    ..Default::default()
                }
            });
            req.state_configuration = Some(TestStateConfiguration {
                error_caused_by_state: Some(origin.into()),
                ..Default::default()
            });
            call(req)
        };
        let r = with(map, "Ship", true).unwrap();
        assert_eq!(r.status, TestStatus::CaughtError);
        assert_eq!(r.next_state.as_deref(), Some("Alert"));
        let e = with(map, "Nowhere", true).unwrap_err();
        assert_eq!(e.code, "ValidationException");
        assert!(
            e.message
                .contains("'Nowhere' is not a state in the ItemProcessor"),
            "{e}"
        );
        let e = with(map, "Ship", false).unwrap_err();
        assert!(e.message.contains("requires a mocked error"), "{e}");
        let task = r#"{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","End":true}"#;
        let e = with(task, "Ship", true).unwrap_err();
        assert!(
            e.message.contains("only supported for Map and Parallel"),
            "{e}"
        );
    }

    #[test]
    fn bad_requests_get_awss_codes() {
        let e = call(request("not json", "{}")).unwrap_err();
        assert_eq!(e.code, "InvalidDefinition");
        let e = call(request(r#"{"Type":"Pass","End":true}"#, "nope")).unwrap_err();
        assert_eq!(e.code, "InvalidExecutionInput");
        let mut req = request(r#"{"Type":"Pass","End":true}"#, "{}");
        req.variables = Some("[1]".into());
        assert_eq!(call(req).unwrap_err().code, "ValidationException");
    }
}
