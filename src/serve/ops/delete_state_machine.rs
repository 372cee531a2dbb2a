//! `DeleteStateMachine`: gone at once (AWS marks it DELETING until its executions end); its
//! executions keep running and stay readable. Deleting an absent machine succeeds, as on AWS.

use super::parse_arn;
use crate::serve::operation::Request;
use crate::serve::protocol::ApiError;
use crate::serve::Server;
use serde_json::{json, Value};
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let arn = request.required("stateMachineArn")?;
    parse_arn(arn, "stateMachine")?;
    server.store.delete_state_machine(arn)?;
    Ok(json!({}))
}
