//! `CreateStateMachine`: stores a machine whose definition passes AWS's checks. Creating the
//! same machine again (same definition, role and type) answers the first one, as AWS does.

use super::{check_definition, check_name, machine_type, settings, tags};
use crate::serve::operation::Request;
use crate::serve::protocol::{epoch_seconds, ApiError};
use crate::serve::Server;
use crate::store::StateMachineRecord;
use serde_json::{json, Value};
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let name = request.required("name")?;
    check_name(name)?;
    let definition = request.required("definition")?;
    let role_arn = request.required("roleArn")?;
    if !role_arn.starts_with("arn:") {
        return Err(ApiError::invalid_arn(role_arn));
    }
    let kind = request.str("type").unwrap_or("STANDARD");
    check_definition(server, definition, machine_type(kind))?;
    let arn = format!(
        "arn:aws:states:{}:{}:stateMachine:{name}",
        request.region, server.config.account_id
    );
    let record = StateMachineRecord {
        arn: arn.clone(),
        name: name.to_owned(),
        machine_type: kind.to_owned(),
        definition: definition.to_owned(),
        role_arn: role_arn.to_owned(),
        settings: settings(&request, "{}"),
        revision_id: crate::random::uuid().to_string(),
        creation_date_ms: crate::clock::system_now(),
        update_date_ms: None,
    };
    if !server
        .store
        .insert_state_machine(&record, &tags(&request))?
    {
        let existing = server.store.state_machine(&arn)?;
        return match existing {
            Some(e)
                if e.definition == record.definition
                    && e.role_arn == record.role_arn
                    && e.machine_type == record.machine_type =>
            {
                Ok(
                    json!({ "stateMachineArn": arn, "creationDate": epoch_seconds(e.creation_date_ms) }),
                )
            }
            _ => Err(ApiError::new(
                "StateMachineAlreadyExists",
                format!("State Machine Already Exists: '{arn}'"),
            )),
        };
    }
    server.check_bindings(&record, true);
    let mut answer =
        json!({ "stateMachineArn": arn, "creationDate": epoch_seconds(record.creation_date_ms) });
    if request.bool("publish") == Some(true) {
        let published = super::publish_state_machine_version::publish(
            server,
            &arn,
            request.str("versionDescription"),
        )?;
        answer["stateMachineVersionArn"] = published["stateMachineVersionArn"].clone();
    }
    Ok(answer)
}
