//! `ListStateMachineAliases`, by name, paged.

use crate::serve::operation::Request;
use crate::serve::protocol::{epoch_seconds, ApiError};
use crate::serve::Server;
use serde_json::{json, Value};
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let arn = request.required("stateMachineArn")?;
    super::state_machine(server, arn)?;
    let all = server.store.aliases(arn)?;
    super::paged_list(
        &request,
        &all,
        "stateMachineAliases",
        |a| json!({ "stateMachineAliasArn": a.arn, "creationDate": epoch_seconds(a.creation_date_ms) }),
    )
}
