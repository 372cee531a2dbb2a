//! `CreateStateMachineAlias`: a name routing executions to one or two versions by weight.

use crate::serve::operation::Request;
use crate::serve::protocol::{epoch_seconds, ApiError};
use crate::serve::Server;
use crate::store::AliasRecord;
use serde_json::{json, Value};
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let name = request.required("name")?;
    super::check_name(name)?;
    if super::is_version_number(name) {
        return Err(ApiError::new(
            "InvalidName",
            format!("Invalid Name: '{name}' (an alias name cannot be a number)"),
        ));
    }
    let routes = request.input.get("routingConfiguration");
    let first = routes
        .and_then(|r| r.get(0))
        .and_then(|r| r["stateMachineVersionArn"].as_str())
        .unwrap_or("");
    let machine_arn = super::unqualified(first).to_owned();
    super::state_machine(server, &machine_arn)?;
    let routing = super::routing(server, &machine_arn, routes)?;
    let arn = format!("{machine_arn}:{name}");
    let now = crate::clock::system_now();
    let record = AliasRecord {
        arn: arn.clone(),
        state_machine_arn: machine_arn,
        name: name.to_owned(),
        description: request.str("description").map(str::to_owned),
        routing,
        creation_date_ms: now,
        update_date_ms: None,
    };
    if !server.store.insert_alias(&record)? {
        let existing = super::alias(server, &arn)?;
        if existing.routing != record.routing || existing.description != record.description {
            return Err(ApiError::new(
                "ConflictException",
                format!("Alias '{arn}' already exists with another configuration"),
            ));
        }
        return Ok(
            json!({ "stateMachineAliasArn": arn, "creationDate": epoch_seconds(existing.creation_date_ms) }),
        );
    }
    Ok(json!({ "stateMachineAliasArn": arn, "creationDate": epoch_seconds(now) }))
}
