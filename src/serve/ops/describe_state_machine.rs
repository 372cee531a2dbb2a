//! `DescribeStateMachine`.

use super::{settings_or_defaults, state_machine};
use crate::serve::operation::Request;
use crate::serve::protocol::{epoch_seconds, ApiError};
use crate::serve::Server;
use crate::store::StateMachineRecord;
use serde_json::{Map, Value};
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let machine = state_machine(server, request.required("stateMachineArn")?)?;
    Ok(describe(&machine))
}

/// DescribeStateMachine's shape of a stored machine.
pub fn describe(machine: &StateMachineRecord) -> Value {
    let mut m = Map::new();
    m.insert("stateMachineArn".into(), machine.arn.clone().into());
    m.insert("name".into(), machine.name.clone().into());
    m.insert("status".into(), "ACTIVE".into());
    m.insert("definition".into(), machine.definition.clone().into());
    m.insert("roleArn".into(), machine.role_arn.clone().into());
    m.insert("type".into(), machine.machine_type.clone().into());
    m.insert(
        "creationDate".into(),
        epoch_seconds(machine.creation_date_ms),
    );
    m.extend(settings_or_defaults(&machine.settings));
    m.insert("revisionId".into(), machine.revision_id.clone().into());
    Value::Object(m)
}
