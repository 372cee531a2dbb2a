//! `ListStateMachineVersions`, newest first, paged.

use crate::serve::operation::Request;
use crate::serve::protocol::{epoch_seconds, ApiError};
use crate::serve::Server;
use serde_json::{json, Value};
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let arn = request.required("stateMachineArn")?;
    super::parse_arn(arn, "stateMachine")?;
    let all = server.store.versions(arn)?;
    super::paged_list(
        &request,
        &all,
        "stateMachineVersions",
        |v| json!({ "stateMachineVersionArn": v.arn, "creationDate": epoch_seconds(v.creation_date_ms) }),
    )
}
