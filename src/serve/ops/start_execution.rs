//! `StartExecution`, with AWS's idempotency: the same name and input as a running execution
//! answers that execution; anything else under a taken name is `ExecutionAlreadyExists`.
//! `stateMachineArn#TestCase` runs a test case of the mock config, as Step Functions Local.

use super::{check_name, execution_already_exists, machine_type, parse_arn, state_machine};
use crate::engine::context::ExecutionInfo;
use crate::serve::executions::{start, StartSpec};
use crate::serve::operation::Request;
use crate::serve::protocol::{epoch_seconds, ApiError};
use crate::serve::Server;
use crate::store::{ExecutionRecord, ExecutionStatus};
use serde_json::{json, Value};
use std::sync::Arc;

/// What a start request asks for, or the running execution it repeats.
pub enum Prepared {
    /// A new execution.
    New(StartSpec),
    /// The same name and input as this running execution.
    Repeat(ExecutionRecord),
}

/// Decodes and checks a start request (shared with StartSyncExecution).
pub fn prepare(server: &Server, request: &Request, sync: bool) -> Result<Prepared, ApiError> {
    let text = request.required("stateMachineArn")?;
    let (arn, test_case) = match text.rsplit_once('#') {
        Some((arn, case)) if !case.is_empty() => (arn, Some(case)),
        _ => (text, None),
    };
    let parts = parse_arn(arn, "stateMachine")?;
    // The version (and alias) it starts through, recorded on the execution as AWS does.
    let (machine, through) = match parts.qualifier.as_deref() {
        None => (state_machine(server, arn)?, None),
        Some(q) if super::is_version_number(q) => (
            super::version(server, arn)?.machine,
            Some((arn.to_owned(), None)),
        ),
        Some(_) => {
            let alias = super::alias(server, arn)?;
            let version = route(&alias.routing);
            let machine = super::version(server, &version)?.machine;
            (machine, Some((version, Some(arn.to_owned()))))
        }
    };
    if sync && machine.machine_type != "EXPRESS" {
        return Err(ApiError::new(
            "StateMachineTypeNotSupported",
            "This operation is not supported by this type of state machine",
        ));
    }
    let name = match request.str("name") {
        Some(n) => n.to_owned(),
        None => crate::random::uuid().to_string(),
    };
    check_name(&name)?;
    let input_text = request.str("input").unwrap_or("{}");
    let input: Value = serde_json::from_str(input_text).map_err(|e| {
        ApiError::new(
            "InvalidExecutionInput",
            format!("Invalid State Machine Execution Input: '{e}'"),
        )
    })?;
    let mut info = ExecutionInfo::new(
        &parts.region,
        &parts.account,
        &machine.name,
        &name,
        Some(&machine.role_arn),
        server.config.time.now(),
    );
    if let Some((version, alias)) = through {
        info = info.started_through(version, alias);
    }
    info.synchronous = sync;
    if let Some(existing) = server.store.execution(&info.execution_arn)? {
        if !sync
            && existing.status == ExecutionStatus::Running
            && serde_json::from_str::<Value>(&existing.input).ok().as_ref() == Some(&input)
        {
            return Ok(Prepared::Repeat(existing));
        }
        return Err(execution_already_exists(&info.execution_arn));
    }
    Ok(Prepared::New(StartSpec {
        definition: machine.definition,
        machine_type: machine_type(&machine.machine_type),
        info,
        input,
        test_case: test_case.map(str::to_owned),
    }))
}

/// The version an alias starts now: one of its routes, chosen at random by weight.
fn route(routing: &str) -> String {
    let routes: Vec<Value> = serde_json::from_str(routing).unwrap_or_default();
    let mut pick = (crate::random::uuid().as_u128() % 100) as i64;
    for r in &routes {
        pick -= r["weight"].as_i64().unwrap_or(0);
        if pick < 0 {
            return r["stateMachineVersionArn"]
                .as_str()
                .unwrap_or("")
                .to_owned();
        }
    }
    routes
        .first()
        .and_then(|r| r["stateMachineVersionArn"].as_str())
        .unwrap_or("")
        .to_owned()
}

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let spec = match prepare(server, &request, false)? {
        Prepared::Repeat(e) => {
            return Ok(
                json!({ "executionArn": e.execution_arn, "startDate": epoch_seconds(e.start_date_ms) }),
            )
        }
        Prepared::New(spec) => spec,
    };
    let arn = spec.info.execution_arn.clone();
    let started = spec.info.start_time;
    start(server, spec).await?;
    Ok(json!({ "executionArn": arn, "startDate": epoch_seconds(started) }))
}
