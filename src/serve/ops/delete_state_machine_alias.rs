//! `DeleteStateMachineAlias`.

use crate::serve::operation::Request;
use crate::serve::protocol::ApiError;
use crate::serve::Server;
use serde_json::{json, Value};
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let arn = request.required("stateMachineAliasArn")?;
    super::alias(server, arn)?;
    server.store.delete_alias(arn)?;
    Ok(json!({}))
}
