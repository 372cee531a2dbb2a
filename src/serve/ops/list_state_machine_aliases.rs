//! `ListStateMachineAliases`, by name, paged.

use crate::serve::operation::Request;
use crate::serve::protocol::{epoch_seconds, page, ApiError};
use crate::serve::Server;
use serde_json::{json, Value};
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let arn = request.required("stateMachineArn")?;
    super::state_machine(server, arn)?;
    let all = server.store.aliases(arn)?;
    let (items, next) = page(
        &all,
        request.u64("maxResults"),
        request.str("nextToken"),
        100,
    )?;
    let items: Vec<Value> = items
        .iter()
        .map(|a| json!({ "stateMachineAliasArn": a.arn, "creationDate": epoch_seconds(a.creation_date_ms) }))
        .collect();
    let mut answer = json!({ "stateMachineAliases": items });
    if let Some(token) = next {
        answer["nextToken"] = token.into();
    }
    Ok(answer)
}
