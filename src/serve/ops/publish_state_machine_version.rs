//! `PublishStateMachineVersion`: the machine's current revision as its next version (or the
//! latest version again when nothing changed since, as AWS does).

use crate::serve::operation::Request;
use crate::serve::protocol::{epoch_seconds, ApiError};
use crate::serve::Server;
use serde_json::{json, Value};
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let machine = super::state_machine(server, request.required("stateMachineArn")?)?;
    if let Some(revision) = request.str("revisionId") {
        if revision != machine.revision_id {
            return Err(ApiError::new(
                "ConflictException",
                format!("The revisionId '{revision}' is not the state machine's current revision"),
            ));
        }
    }
    publish(server, &machine.arn, request.str("description"))
}

/// Publishes and answers `{creationDate, stateMachineVersionArn}`.
pub fn publish(
    server: &Server,
    machine_arn: &str,
    description: Option<&str>,
) -> Result<Value, ApiError> {
    let v = server
        .store
        .publish_version(machine_arn, description, crate::clock::system_now())?
        .ok_or_else(|| {
            ApiError::new(
                "StateMachineDoesNotExist",
                format!("State Machine Does Not Exist: '{machine_arn}'"),
            )
        })?;
    Ok(
        json!({ "creationDate": epoch_seconds(v.creation_date_ms), "stateMachineVersionArn": v.arn }),
    )
}
