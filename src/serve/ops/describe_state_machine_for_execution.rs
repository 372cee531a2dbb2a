//! `DescribeStateMachineForExecution`: the definition the execution runs (stored with it).

use super::execution;
use crate::serve::operation::Request;
use crate::serve::protocol::{epoch_seconds, ApiError};
use crate::serve::Server;
use serde_json::{json, Value};
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let e = execution(server, request.required("executionArn")?)?;
    let machine = server.store.state_machine(&e.state_machine_arn)?;
    let updated = machine
        .as_ref()
        .map(|m| m.update_date_ms.unwrap_or(m.creation_date_ms))
        .unwrap_or(e.start_date_ms);
    let mut answer = json!({
        "stateMachineArn": e.state_machine_arn,
        "name": e.state_machine_name,
        "definition": e.definition,
        "roleArn": e.role_arn.clone().unwrap_or_default(),
        "updateDate": epoch_seconds(updated),
    });
    if let Some(m) = machine {
        if let Value::Object(map) = &mut answer {
            map.extend(super::settings_or_defaults(&m.settings));
            map.insert("revisionId".into(), m.revision_id.into());
        }
    }
    Ok(answer)
}
