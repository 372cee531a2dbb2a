//! `ListExecutions` of a state machine (filtered by `statusFilter` and `redriveFilter`), or of
//! a Map run (`mapRunArn`: its child executions), newest first, paged.

use super::parse_arn;
use crate::serve::operation::Request;
use crate::serve::protocol::{page, ApiError};
use crate::serve::Server;
use crate::store::{ExecutionRecord, ExecutionStatus};
use serde_json::{json, Value};
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let status = match request.str("statusFilter") {
        Some(s) => Some(s.parse::<ExecutionStatus>().map_err(|_| {
            ApiError::validation(
                "statusFilter",
                &format!("'{s}'"),
                "Member must be an execution status",
            )
        })?),
        None => None,
    };
    if let Some(run) = request.str("mapRunArn") {
        if request.str("stateMachineArn").is_some() {
            return Err(ApiError::new(
                "ValidationException",
                "Provide either a stateMachineArn or a mapRunArn, not both",
            ));
        }
        super::map_run(server, run)?;
        let children = server
            .store
            .map_run_executions(run, status.map(|s| s.as_str()))?;
        return super::paged_list(
            &request,
            &children,
            "executions",
            crate::api::map_run_execution_list_item,
        );
    }
    let Some(arn) = request.str("stateMachineArn") else {
        return Err(ApiError::new(
            "ValidationException",
            "Must provide a StateMachine ARN or MapRun ARN",
        ));
    };
    // A version or alias ARN lists the executions started through it, as on AWS.
    let qualifier = parse_arn(arn, "stateMachine")?.qualifier;
    let started_by = |e: &ExecutionRecord| match &qualifier {
        None => e.state_machine_arn == arn,
        Some(_) => {
            e.state_machine_version_arn.as_deref() == Some(arn)
                || e.state_machine_alias_arn.as_deref() == Some(arn)
        }
    };
    match qualifier.as_deref() {
        Some(q) if super::is_version_number(q) => {
            super::version(server, arn)?;
        }
        Some(_) => {
            super::alias(server, arn)?;
        }
        None => {}
    }
    let all: Vec<_> = server
        .store
        .list_executions(status)?
        .into_iter()
        .filter(|e| started_by(e))
        .filter(|e| match request.str("redriveFilter") {
            Some("REDRIVEN") => e.redrive_count > 0,
            Some("NOT_REDRIVEN") => e.redrive_count == 0,
            _ => true,
        })
        .collect();
    if all.is_empty() && qualifier.is_none() && server.store.state_machine(arn)?.is_none() {
        // Executions of `sfn-local run` name machines that were never created here; only a
        // machine with neither is unknown.
        let any = server
            .store
            .list_executions(None)?
            .iter()
            .any(|e| e.state_machine_arn == arn);
        if !any {
            return Err(ApiError::new(
                "StateMachineDoesNotExist",
                format!("State Machine Does Not Exist: '{arn}'"),
            ));
        }
    }
    let (items, next) = page(
        &all,
        request.u64("maxResults"),
        request.str("nextToken"),
        100,
    )?;
    let mut listed = crate::api::list_executions(items);
    // The CLI's listing shows who drives each execution; the API's shape has no such members.
    if let Some(Value::Array(executions)) = listed.get_mut("executions") {
        for e in executions.iter_mut().filter_map(Value::as_object_mut) {
            e.remove("owner");
            e.remove("leaseExpiresAt");
        }
    }
    let mut answer = json!({ "executions": listed["executions"].take() });
    if let Some(token) = next {
        answer["nextToken"] = token.into();
    }
    Ok(answer)
}
