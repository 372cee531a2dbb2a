//! `arn:aws:states:::states:startExecution` (request-response, `.sync`, `.sync:2` and
//! `.waitForTaskToken`): a Task that starts another state machine's execution.
//!
//! This module speaks StartExecution and DescribeExecution as AWS's integration does: it reads
//! the request (`StateMachineArn`, `Input`, `Name`), names unnamed children deterministically
//! (so a resumed parent finds the child its first run started), and shapes the responses and
//! errors the parent's history records. *Where* the child runs is behind [`ChildExecutions`]:
//! the engine runs known machines as real executions in the same database (`run`, `resume`),
//! in memory (`test`), and `serve` can later supply machines from its own store.

use crate::asl::error::{names, StatesError};
use crate::asl::resource::{IntegrationPattern, ResourceKind};
use crate::clock::Millis;
use crate::tasks::TaskRequest;
use futures_util::future::LocalBoxFuture;
use serde_json::{json, Map, Value};

/// What StartExecution asks for, resolved.
#[derive(Debug, Clone)]
pub struct StartChild {
    /// `StateMachineArn` as given.
    pub state_machine_arn: String,
    /// The execution's name (given, or derived from the parent's task).
    pub name: String,
    /// The child's input.
    pub input: Value,
    /// The parent execution.
    pub parent_execution_arn: String,
    /// Whether the parent's attempt was started before a crash: a child with this name is then
    /// the one it started, whatever its state.
    pub resumed: bool,
}

/// A started (or found again) child execution.
#[derive(Debug, Clone)]
pub struct ChildStarted {
    /// Its ARN.
    pub execution_arn: String,
    /// When it started, ms since the Unix epoch.
    pub start_date: Millis,
}

/// A child execution that has ended, as DescribeExecution shows it.
#[derive(Debug, Clone)]
pub struct ChildEnded {
    /// Its ARN.
    pub execution_arn: String,
    /// The state machine's ARN.
    pub state_machine_arn: String,
    /// Its name.
    pub name: String,
    /// `SUCCEEDED`, `FAILED`, `TIMED_OUT` or `ABORTED`.
    pub status: String,
    /// The input, JSON text.
    pub input: String,
    /// The output, JSON text, when it succeeded.
    pub output: Option<String>,
    /// The error, when it did not.
    pub error: Option<String>,
    /// The cause, when it did not.
    pub cause: Option<String>,
    /// When it started.
    pub start_date: Millis,
    /// When it ended.
    pub stop_date: Millis,
}

/// Where child executions run: the state machines known to this runner, and the executions
/// of them it starts.
pub trait ChildExecutions {
    /// Starts `request` (or finds the child a resumed attempt started). Fails with AWS's
    /// `StepFunctions.StateMachineDoesNotExistException` for a machine it does not know.
    fn start(
        &self,
        request: StartChild,
    ) -> LocalBoxFuture<'static, Result<ChildStarted, StatesError>>;

    /// Resolves when the child ends.
    fn wait(&self, execution_arn: &str)
        -> LocalBoxFuture<'static, Result<ChildEnded, StatesError>>;

    /// Stops a running child (its `.sync` parent task was stopped or aborted).
    fn stop(&self, execution_arn: &str);
}

/// AWS's error for an unknown state machine, as the integration reports it.
pub fn machine_does_not_exist(arn: &str) -> StatesError {
    StatesError::new(
        "StepFunctions.StateMachineDoesNotExistException",
        format!(
            "State Machine Does Not Exist: '{arn}' (Service: AWSStepFunctions; Status Code: 400; Error Code: StateMachineDoesNotExist; Request ID: {}; Proxy: null)",
            crate::random::uuid()
        ),
    )
}

/// AWS's error for a name taken by another execution of the machine.
pub fn execution_already_exists(arn: &str) -> StatesError {
    StatesError::new(
        "StepFunctions.ExecutionAlreadyExistsException",
        format!(
            "Execution Already Exists: '{arn}' (Service: AWSStepFunctions; Status Code: 400; Error Code: ExecutionAlreadyExists; Request ID: {}; Proxy: null)",
            crate::random::uuid()
        ),
    )
}

/// AWS's error for a bad StartExecution request.
fn invalid(what: &str) -> StatesError {
    StatesError::new(
        "StepFunctions.InvalidExecutionInputException",
        format!(
            "{what} (Service: AWSStepFunctions; Status Code: 400; Error Code: InvalidExecutionInput; Request ID: {}; Proxy: null)",
            crate::random::uuid()
        ),
    )
}

/// Whether a resource is the Step Functions StartExecution integration.
pub fn is_start_execution(kind: &ResourceKind) -> bool {
    matches!(kind, ResourceKind::Integration { service, action, .. }
        if service == "states" && action.starts_with("startExecution"))
}

/// The name of a child the request does not name: the same for the same parent task in every
/// run (a UUID made from the parent's execution and the task's place in its history).
pub fn derived_name(parent_execution_arn: &str, task_key: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("{parent_execution_arn}\n{task_key}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_random_bytes(bytes)
        .into_uuid()
        .to_string()
}

/// Reads StartExecution's parameters.
pub fn start_request(
    request: &TaskRequest,
    task_key: &str,
    resumed: bool,
) -> Result<StartChild, StatesError> {
    let params = request.input.as_object().cloned().unwrap_or_default();
    let arn = match params.get("StateMachineArn") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => {
            return Err(invalid(
                "1 validation error detected: Value null at 'stateMachineArn' failed to satisfy constraint: Member must not be null",
            ))
        }
    };
    // Input: an object as is, JSON text parsed, absent or null an empty object (as AWS).
    let input = match params.get("Input") {
        None | Some(Value::Null) => json!({}),
        Some(Value::String(text)) => serde_json::from_str(text)
            .map_err(|e| invalid(&format!("Invalid State Machine Execution Input: '{e}'")))?,
        Some(v) => v.clone(),
    };
    let name = match params.get("Name") {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => derived_name(&request.execution_arn, task_key),
        Some(other) => {
            return Err(invalid(&format!(
                "Invalid Name: '{other}' (the name must be a string)"
            )))
        }
    };
    // AWS's naming rules (as `run --name` checks them).
    let bad_char =
        |c: char| c.is_whitespace() || c.is_control() || "<>{}[]?*\"#%\\^|~`$&,;:/".contains(c);
    if name.is_empty() || name.chars().count() > 80 || name.chars().any(bad_char) {
        return Err(invalid(&format!("Invalid Name: '{name}'")));
    }
    Ok(StartChild {
        state_machine_arn: arn,
        name,
        input,
        parent_execution_arn: request.execution_arn.clone(),
        resumed,
    })
}

/// AWS's HTTP response metadata, as the Java SDK under its integrations reports it.
/// `at` dates it.
pub fn sdk_http_metadata(
    content_type: &str,
    content_length: usize,
    request_id: &str,
    at: Millis,
) -> Value {
    let date = crate::tasks::http_date(at);
    json!({
        "AllHttpHeaders": {
            "x-amzn-RequestId": [request_id],
            "connection": ["keep-alive"],
            "Content-Length": [content_length.to_string()],
            "Date": [date],
            "Content-Type": [content_type]
        },
        "HttpHeaders": {
            "connection": "keep-alive",
            "Content-Length": content_length.to_string(),
            "Content-Type": content_type,
            "Date": date,
            "x-amzn-RequestId": request_id
        },
        "HttpStatusCode": 200
    })
}

/// StartExecution's response as the integration returns it (request-response) and records it
/// in `TaskSubmitted` (`.sync`).
pub fn start_response(started: &ChildStarted) -> Value {
    let request_id = crate::random::uuid().to_string();
    // The body AWS's service sent: {"executionArn":…,"startDate":…}.
    let body_len = started.execution_arn.len() + 47;
    json!({
        "ExecutionArn": started.execution_arn,
        "SdkHttpMetadata": sdk_http_metadata(
            "application/x-amz-json-1.0",
            body_len,
            &request_id,
            started.start_date,
        ),
        "SdkResponseMetadata": { "RequestId": request_id },
        "StartDate": started.start_date,
    })
}

/// DescribeExecution's response for a `.sync` task: `Input`/`Output` as JSON text, or (for
/// `.sync:2`) as JSON. A failed child also gives `Error` and `Cause`.
pub fn describe_response(ended: &ChildEnded, as_json: bool) -> Value {
    let text_or_json = |text: &str| -> Value {
        if as_json {
            serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
        } else {
            Value::String(text.to_owned())
        }
    };
    let mut m = Map::new();
    if let Some(c) = &ended.cause {
        m.insert("Cause".into(), Value::String(c.clone()));
    }
    if let Some(e) = &ended.error {
        m.insert("Error".into(), Value::String(e.clone()));
    }
    m.insert("ExecutionArn".into(), json!(ended.execution_arn));
    m.insert("Input".into(), text_or_json(&ended.input));
    m.insert("InputDetails".into(), json!({ "Included": true }));
    m.insert("Name".into(), json!(ended.name));
    if let Some(o) = &ended.output {
        m.insert("Output".into(), text_or_json(o));
        m.insert("OutputDetails".into(), json!({ "Included": true }));
    }
    // DescribeExecution's redrive fields, in `.sync` and `.sync:2` alike (AWS's recordings
    // since redrive came, Nov 2023, have them in both): a child that did not succeed is
    // redrivable.
    m.insert("RedriveCount".into(), json!(0));
    if ended.status == "SUCCEEDED" {
        m.insert("RedriveStatus".into(), json!("NOT_REDRIVABLE"));
        m.insert(
            "RedriveStatusReason".into(),
            json!("Execution is SUCCEEDED and cannot be redriven"),
        );
    } else {
        m.insert("RedriveStatus".into(), json!("REDRIVABLE"));
    }
    m.insert("StartDate".into(), json!(ended.start_date));
    m.insert("StateMachineArn".into(), json!(ended.state_machine_arn));
    m.insert("Status".into(), json!(ended.status));
    m.insert("StopDate".into(), json!(ended.stop_date));
    Value::Object(m)
}

/// Stops the child when dropped before [`StopOnDrop::disarm`]: a `.sync` task that is stopped,
/// timed out or aborted stops its child, as AWS does.
struct StopOnDrop<'a> {
    children: &'a dyn ChildExecutions,
    execution_arn: String,
    armed: bool,
}

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.children.stop(&self.execution_arn);
        }
    }
}

/// Runs one attempt of a `states:startExecution*` Task (not `.waitForTaskToken`, whose answer
/// comes through its token): starts the child, and for `.sync` sends StartExecution's response
/// to `submitted` and waits for the child's end.
pub async fn run(
    children: std::rc::Rc<dyn ChildExecutions>,
    request: TaskRequest,
    task_key: String,
    resumed: bool,
    submitted: Option<tokio::sync::oneshot::Sender<Value>>,
) -> Result<Value, StatesError> {
    let start = start_request(&request, &task_key, resumed)?;
    let started = children.start(start).await?;
    let response = start_response(&started);
    let (pattern, action) = match &request.resource.kind {
        ResourceKind::Integration {
            pattern, action, ..
        } => (*pattern, action.clone()),
        _ => (IntegrationPattern::RequestResponse, String::new()),
    };
    if pattern != IntegrationPattern::Sync {
        return Ok(response);
    }
    if let Some(tx) = submitted {
        let _ = tx.send(response);
    }
    let mut guard = StopOnDrop {
        children: children.as_ref(),
        execution_arn: started.execution_arn.clone(),
        armed: true,
    };
    let ended = children.wait(&started.execution_arn).await;
    guard.armed = false;
    drop(guard);
    let ended = ended?;
    let as_json = action.ends_with(":2");
    let described = describe_response(&ended, as_json);
    if ended.status == "SUCCEEDED" {
        Ok(described)
    } else {
        Err(StatesError::new(names::TASK_FAILED, described.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_names_are_stable_uuids() {
        let a = derived_name("arn:x", "r:3");
        assert_eq!(a, derived_name("arn:x", "r:3"));
        assert_ne!(a, derived_name("arn:x", "r:7"));
        assert_eq!(a.len(), 36);
    }

    #[test]
    fn sync_failure_is_described_with_error_first() {
        let ended = ChildEnded {
            execution_arn: "e".into(),
            state_machine_arn: "m".into(),
            name: "n".into(),
            status: "FAILED".into(),
            input: "{}".into(),
            output: None,
            error: Some("SomeFailure".into()),
            cause: Some("why".into()),
            start_date: 1,
            stop_date: 2,
        };
        let d = describe_response(&ended, false);
        let keys: Vec<&String> = d.as_object().unwrap().keys().collect();
        assert_eq!(keys[0], "Cause");
        assert_eq!(keys[1], "Error");
        assert_eq!(d["Input"], "{}");
        assert!(d.get("Output").is_none());
        assert_eq!(d["RedriveCount"], 0);
        assert_eq!(d["RedriveStatus"], "REDRIVABLE");
        assert!(d.get("RedriveStatusReason").is_none());
    }
}
