//! `ListTagsForResource`.

use crate::serve::operation::Request;
use crate::serve::protocol::ApiError;
use crate::serve::Server;
use serde_json::{json, Value};
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let arn = request.required("resourceArn")?;
    super::taggable(server, arn)?;
    let tags: Vec<Value> = server
        .store
        .tags(arn)?
        .into_iter()
        .map(|(key, value)| json!({ "key": key, "value": value }))
        .collect();
    Ok(json!({ "tags": tags }))
}
