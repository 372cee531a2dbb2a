//! `ListStateMachines`, paged.

use crate::serve::operation::Request;
use crate::serve::protocol::{epoch_seconds, ApiError};
use crate::serve::Server;
use serde_json::{json, Value};
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let machines = server.store.state_machines()?;
    super::paged_list(&request, &machines, "stateMachines", |m| {
        json!({
            "stateMachineArn": m.arn,
            "name": m.name,
            "type": m.machine_type,
            "creationDate": epoch_seconds(m.creation_date_ms),
        })
    })
}
