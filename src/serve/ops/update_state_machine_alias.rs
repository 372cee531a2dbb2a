//! `UpdateStateMachineAlias`: a new description or routing.

use crate::serve::operation::Request;
use crate::serve::protocol::{epoch_seconds, ApiError};
use crate::serve::Server;
use serde_json::{json, Value};
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let mut a = super::alias(server, request.required("stateMachineAliasArn")?)?;
    let routes = request
        .input
        .get("routingConfiguration")
        .filter(|r| !r.is_null());
    if routes.is_none() && request.str("description").is_none() {
        return Err(ApiError::new(
            "ValidationException",
            "Either the description or the routingConfiguration must be specified",
        ));
    }
    if routes.is_some() {
        a.routing = super::routing(server, &a.state_machine_arn, routes)?;
    }
    if let Some(d) = request.str("description") {
        a.description = Some(d.to_owned());
    }
    let now = crate::clock::system_now();
    a.update_date_ms = Some(now);
    server.store.update_alias(&a)?;
    Ok(json!({ "updateDate": epoch_seconds(now) }))
}
