//! One handler per operation (one file each), plus what several of them share: ARNs, lookups
//! with AWS's "does not exist" errors, tags and echoed settings.

pub mod create_activity;
pub mod create_state_machine;
pub mod create_state_machine_alias;
pub mod delete_activity;
pub mod delete_state_machine;
pub mod delete_state_machine_alias;
pub mod delete_state_machine_version;
pub mod describe_activity;
pub mod describe_execution;
pub mod describe_map_run;
pub mod describe_state_machine;
pub mod describe_state_machine_alias;
pub mod describe_state_machine_for_execution;
pub mod get_activity_task;
pub mod get_execution_history;
pub mod list_activities;
pub mod list_executions;
pub mod list_map_runs;
pub mod list_state_machine_aliases;
pub mod list_state_machine_versions;
pub mod list_state_machines;
pub mod list_tags_for_resource;
pub mod publish_state_machine_version;
pub mod redrive_execution;
pub mod send_task_failure;
pub mod send_task_heartbeat;
pub mod send_task_success;
pub mod start_execution;
pub mod start_sync_execution;
pub mod stop_execution;
pub mod tag_resource;
pub mod test_state;
pub mod untag_resource;
pub mod update_map_run;
pub mod update_state_machine;
pub mod update_state_machine_alias;
pub mod validate_state_machine_definition;

use crate::asl::MachineType;
use crate::serve::operation::Request;
use crate::serve::protocol::ApiError;
use crate::serve::Server;
use crate::store::{ExecutionRecord, MapRunRecord, StateMachineRecord};
use crate::tasks::callback::SentAnswer;
use serde_json::{json, Map, Value};

/// The parts of `arn:aws:states:REGION:ACCOUNT:KIND:NAME[:QUALIFIER]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatesArn {
    /// The region.
    pub region: String,
    /// The account.
    pub account: String,
    /// The resource's name.
    pub name: String,
    /// What follows the name (an execution's name, a version number or an alias).
    pub qualifier: Option<String>,
}

/// Parses a Step Functions ARN of one resource kind (`stateMachine`, `execution`, `activity`).
pub fn parse_arn(arn: &str, kind: &str) -> Result<StatesArn, ApiError> {
    let parts: Vec<&str> = arn.splitn(8, ':').collect();
    match parts.as_slice() {
        ["arn", partition, "states", region, account, k, name, rest @ ..]
            if partition.starts_with("aws")
                && *k == kind
                && !region.is_empty()
                && !account.is_empty()
                && !name.is_empty() =>
        {
            Ok(StatesArn {
                region: (*region).to_owned(),
                account: (*account).to_owned(),
                name: (*name).to_owned(),
                qualifier: rest.first().map(|q| (*q).to_owned()),
            })
        }
        _ => Err(ApiError::invalid_arn(arn)),
    }
}

/// The stored execution of an ARN, or AWS's `ExecutionDoesNotExist`.
pub fn execution(server: &Server, arn: &str) -> Result<ExecutionRecord, ApiError> {
    parse_arn(arn, "execution")?;
    server
        .store
        .execution(arn)?
        .ok_or_else(|| execution_does_not_exist(arn))
}

/// AWS's `ExecutionDoesNotExist`.
pub fn execution_does_not_exist(arn: &str) -> ApiError {
    ApiError::new(
        "ExecutionDoesNotExist",
        format!("Execution Does Not Exist: '{arn}'"),
    )
}

/// The Map run of an ARN (`arn:aws:states:REGION:ACCOUNT:mapRun:MACHINE/LABEL:ID`), or AWS's
/// `ResourceNotFound`.
pub fn map_run(server: &Server, arn: &str) -> Result<MapRunRecord, ApiError> {
    let parts = parse_arn(arn, "mapRun")?;
    if parts.qualifier.as_deref().is_none_or(str::is_empty) {
        return Err(ApiError::invalid_arn(arn));
    }
    server
        .store
        .map_run(arn)?
        .ok_or_else(|| map_run_not_found(arn))
}

/// AWS's `ResourceNotFound` for a Map run.
pub fn map_run_not_found(arn: &str) -> ApiError {
    ApiError::new("ResourceNotFound", format!("Resource not found: '{arn}'"))
}

/// The stored state machine of an ARN, or AWS's `StateMachineDoesNotExist`.
pub fn state_machine(server: &Server, arn: &str) -> Result<StateMachineRecord, ApiError> {
    parse_arn(arn, "stateMachine")?;
    server.store.state_machine(arn)?.ok_or_else(|| {
        ApiError::new(
            "StateMachineDoesNotExist",
            format!("State Machine Does Not Exist: '{arn}'"),
        )
    })
}

/// AWS's `ExecutionAlreadyExists`.
pub fn execution_already_exists(arn: &str) -> ApiError {
    ApiError::new(
        "ExecutionAlreadyExists",
        format!("Execution Already Exists: '{arn}'"),
    )
}

/// The stored activity of an ARN, or AWS's `ActivityDoesNotExist`.
pub fn activity(server: &Server, arn: &str) -> Result<crate::store::ActivityRecord, ApiError> {
    parse_arn(arn, "activity")?;
    server.store.activity(arn)?.ok_or_else(|| {
        ApiError::new(
            "ActivityDoesNotExist",
            format!("Activity Does Not Exist: '{arn}'"),
        )
    })
}

/// Checks that a taggable resource (a state machine or an activity) exists.
pub fn taggable(server: &Server, arn: &str) -> Result<(), ApiError> {
    let found = if parse_arn(arn, "stateMachine").is_ok() {
        server.store.state_machine(arn)?.is_some()
    } else if parse_arn(arn, "activity").is_ok() {
        server.store.activity(arn)?.is_some()
    } else {
        return Err(ApiError::invalid_arn(arn));
    };
    if found {
        Ok(())
    } else {
        Err(ApiError::new(
            "ResourceNotFound",
            format!("Resource not found: '{arn}'"),
        ))
    }
}

/// A version of a state machine, or AWS's `ResourceNotFound`.
pub fn version(server: &Server, arn: &str) -> Result<crate::store::VersionRecord, ApiError> {
    let parts = parse_arn(arn, "stateMachine")?;
    if !parts.qualifier.as_deref().is_some_and(is_version_number) {
        return Err(ApiError::invalid_arn(arn));
    }
    server
        .store
        .version(arn)?
        .ok_or_else(|| ApiError::new("ResourceNotFound", format!("Resource not found: '{arn}'")))
}

/// An alias of a state machine, or AWS's `ResourceNotFound`.
pub fn alias(server: &Server, arn: &str) -> Result<crate::store::AliasRecord, ApiError> {
    let parts = parse_arn(arn, "stateMachine")?;
    if parts.qualifier.as_deref().is_none_or(is_version_number) {
        return Err(ApiError::invalid_arn(arn));
    }
    server
        .store
        .alias(arn)?
        .ok_or_else(|| ApiError::new("ResourceNotFound", format!("Resource not found: '{arn}'")))
}

/// A qualifier naming a version (digits) rather than an alias.
pub fn is_version_number(qualifier: &str) -> bool {
    !qualifier.is_empty() && qualifier.bytes().all(|b| b.is_ascii_digit())
}

/// The machine ARN of a version or alias ARN (`...:stateMachine:NAME:QUALIFIER`).
pub fn unqualified(arn: &str) -> &str {
    match arn.match_indices(':').nth(6) {
        Some((i, _)) => &arn[..i],
        None => arn,
    }
}

/// Checks a `routingConfiguration` as AWS does (one or two versions of this machine, weights
/// adding up to 100) and returns it as stored JSON.
pub fn routing(
    server: &Server,
    machine_arn: &str,
    value: Option<&Value>,
) -> Result<String, ApiError> {
    let invalid = |why: &str| {
        ApiError::new(
            "ValidationException",
            format!("Invalid routingConfiguration: {why}"),
        )
    };
    let routes = value
        .and_then(Value::as_array)
        .ok_or_else(|| invalid("it is required"))?;
    let mut total = 0;
    let mut seen = Vec::new();
    for route in routes {
        let arn = route["stateMachineVersionArn"].as_str().unwrap_or("");
        if unqualified(arn) != machine_arn {
            return Err(invalid(&format!(
                "'{arn}' is not a version of {machine_arn}"
            )));
        }
        version(server, arn)?;
        if seen.contains(&arn) {
            return Err(invalid("a version may appear only once"));
        }
        seen.push(arn);
        total += route["weight"].as_i64().unwrap_or(0);
    }
    if total != 100 {
        return Err(invalid("the weights must add up to 100"));
    }
    Ok(Value::Array(routes.clone()).to_string())
}

/// `type` (STANDARD unless EXPRESS).
pub fn machine_type(text: &str) -> MachineType {
    if text == "EXPRESS" {
        MachineType::Express
    } else {
        MachineType::Standard
    }
}

/// Checks a definition as CreateStateMachine does: AWS's verdicts, refused as
/// `InvalidDefinition` in AWS's words.
pub fn check_definition(
    server: &Server,
    definition: &str,
    kind: MachineType,
) -> Result<(), ApiError> {
    let diagnostics = crate::asl::validate_text_as(definition, kind, server.config.compat);
    if !diagnostics.has_errors() {
        return Ok(());
    }
    let problems: Vec<String> = diagnostics
        .iter()
        .filter(|d| d.severity == crate::asl::Severity::Error)
        .map(|d| match d.location_text() {
            Some(at) => format!("{}: {} at {at}", d.code.as_str(), d.message),
            None => format!("{}: {}", d.code.as_str(), d.message),
        })
        .collect();
    Err(ApiError::new(
        "InvalidDefinition",
        format!(
            "Invalid State Machine Definition: '{}'",
            problems.join(", ")
        ),
    ))
}

/// A name as AWS allows it, or `InvalidName`.
pub fn check_name(name: &str) -> Result<(), ApiError> {
    crate::engine::runner::check_name("name", name)
        .map_err(|_| ApiError::new("InvalidName", format!("Invalid Name: '{name}'")))
}

/// The request's `tags` as key/value pairs.
pub fn tags(request: &Request) -> Vec<(String, String)> {
    request
        .input
        .get("tags")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| {
            Some((
                t.get("key")?.as_str()?.to_owned(),
                t.get("value")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            ))
        })
        .collect()
}

/// The settings only AWS acts on, kept to echo back.
pub const SETTINGS: &[&str] = &[
    "loggingConfiguration",
    "tracingConfiguration",
    "encryptionConfiguration",
];

/// The request's settings among [`SETTINGS`], over `previous` (a JSON object's text).
pub fn settings(request: &Request, previous: &str) -> String {
    let mut map: Map<String, Value> = serde_json::from_str(previous).unwrap_or_default();
    for key in SETTINGS {
        if let Some(v) = request.input.get(*key).filter(|v| !v.is_null()) {
            map.insert((*key).to_owned(), v.clone());
        }
    }
    Value::Object(map).to_string()
}

/// The settings of a stored machine with AWS's defaults for those never set.
pub fn settings_or_defaults(stored: &str) -> Map<String, Value> {
    let map: Map<String, Value> = serde_json::from_str(stored).unwrap_or_default();
    let mut out = Map::new();
    out.insert(
        "loggingConfiguration".into(),
        map.get("loggingConfiguration")
            .cloned()
            .unwrap_or_else(|| json!({"level": "OFF", "includeExecutionData": false})),
    );
    out.insert(
        "tracingConfiguration".into(),
        map.get("tracingConfiguration")
            .cloned()
            .unwrap_or_else(|| json!({"enabled": false})),
    );
    out.insert(
        "encryptionConfiguration".into(),
        map.get("encryptionConfiguration")
            .cloned()
            .unwrap_or_else(|| json!({"type": "AWS_OWNED_KEY"})),
    );
    out
}

/// Applies a worker's answer to a task token through the token answer code the CLI uses
/// too, with AWS's errors.
pub fn answer_token(server: &Server, token: &str, answer: SentAnswer) -> Result<Value, ApiError> {
    use crate::tasks::callback::{answer_task, AnswerRefusal};
    match answer_task(&server.store, token, answer, server.config.time.now()) {
        Ok(()) => Ok(json!({})),
        Err(AnswerRefusal::Store(e)) => Err(ApiError::internal(e)),
        Err(r) => Err(ApiError::new(r.code(), r.to_string())),
    }
}

/// A List operation's answer: one page of `all` (`maxResults`, `nextToken`, at most 100), each
/// item shaped by `shape`, under `member`, with the next page's token when there is one.
pub fn paged_list<T>(
    request: &Request,
    all: &[T],
    member: &str,
    shape: impl Fn(&T) -> Value,
) -> Result<Value, ApiError> {
    let (items, next) = crate::serve::protocol::page(
        all,
        request.u64("maxResults"),
        request.str("nextToken"),
        100,
    )?;
    let mut answer = serde_json::json!({ member: items.iter().map(shape).collect::<Vec<Value>>() });
    if let Some(token) = next {
        answer["nextToken"] = token.into();
    }
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arns_are_checked_by_kind() {
        let a = parse_arn(
            "arn:aws:states:us-east-1:123456789012:execution:M:run-1",
            "execution",
        )
        .unwrap();
        assert_eq!(
            (a.name.as_str(), a.qualifier.as_deref()),
            ("M", Some("run-1"))
        );
        assert!(parse_arn(
            "arn:aws:states:us-east-1:123456789012:stateMachine:M",
            "execution"
        )
        .is_err());
        assert!(parse_arn("not-an-arn", "stateMachine").is_err());
    }
}
