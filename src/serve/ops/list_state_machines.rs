//! `ListStateMachines`, paged.

use crate::serve::operation::Request;
use crate::serve::protocol::{epoch_seconds, page, ApiError};
use crate::serve::Server;
use serde_json::{json, Value};
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let machines = server.store.state_machines()?;
    let (items, next) = page(
        &machines,
        request.u64("maxResults"),
        request.str("nextToken"),
        100,
    )?;
    let items: Vec<Value> = items
        .iter()
        .map(|m| {
            json!({
                "stateMachineArn": m.arn,
                "name": m.name,
                "type": m.machine_type,
                "creationDate": epoch_seconds(m.creation_date_ms),
            })
        })
        .collect();
    let mut answer = json!({ "stateMachines": items });
    if let Some(token) = next {
        answer["nextToken"] = token.into();
    }
    Ok(answer)
}
