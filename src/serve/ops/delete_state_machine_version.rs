//! `DeleteStateMachineVersion`: refused (`ConflictException`) while an alias routes to it.

use crate::serve::operation::Request;
use crate::serve::protocol::ApiError;
use crate::serve::Server;
use serde_json::{json, Value};
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let arn = request.required("stateMachineVersionArn")?;
    let parts = super::parse_arn(arn, "stateMachine")?;
    if !parts
        .qualifier
        .as_deref()
        .is_some_and(super::is_version_number)
    {
        return Err(ApiError::invalid_arn(arn));
    }
    for alias in server.store.aliases(super::unqualified(arn))? {
        if alias.routing.contains(&format!("\"{arn}\"")) {
            return Err(ApiError::new(
                "ConflictException",
                format!(
                    "Version '{arn}' is referenced by alias '{}'; update the alias first",
                    alias.arn
                ),
            ));
        }
    }
    server.store.delete_version(arn)?;
    Ok(json!({}))
}
