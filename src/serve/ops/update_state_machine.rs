//! `UpdateStateMachine`: a new definition, role or settings; running executions keep the
//! definition they started with (it is stored with each execution).

use super::{check_definition, machine_type, settings, state_machine, SETTINGS};
use crate::serve::operation::Request;
use crate::serve::protocol::{epoch_seconds, ApiError};
use crate::serve::Server;
use serde_json::{json, Value};
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let mut machine = state_machine(server, request.required("stateMachineArn")?)?;
    let changes_something = ["definition", "roleArn"]
        .iter()
        .chain(SETTINGS)
        .any(|m| request.input.get(*m).is_some_and(|v| !v.is_null()));
    if !changes_something {
        return Err(ApiError::new(
            "MissingRequiredParameter",
            "Either the definition, the roleArn, the loggingConfiguration, the tracingConfiguration or the encryptionConfiguration must be specified",
        ));
    }
    if let Some(definition) = request.str("definition") {
        check_definition(server, definition, machine_type(&machine.machine_type))?;
        machine.definition = definition.to_owned();
    }
    if let Some(role) = request.str("roleArn") {
        if !role.starts_with("arn:") {
            return Err(ApiError::invalid_arn(role));
        }
        machine.role_arn = role.to_owned();
    }
    machine.settings = settings(&request, &machine.settings);
    machine.revision_id = crate::random::uuid().to_string();
    let now = crate::clock::system_now();
    machine.update_date_ms = Some(now);
    if !server.store.update_state_machine(&machine)? {
        return Err(ApiError::new(
            "StateMachineDoesNotExist",
            format!("State Machine Does Not Exist: '{}'", machine.arn),
        ));
    }
    let mut answer = json!({ "updateDate": epoch_seconds(now), "revisionId": machine.revision_id });
    if request.bool("publish") == Some(true) {
        let published = super::publish_state_machine_version::publish(
            server,
            &machine.arn,
            request.str("versionDescription"),
        )?;
        answer["stateMachineVersionArn"] = published["stateMachineVersionArn"].clone();
    }
    Ok(answer)
}
