//! `UntagResource`.

use crate::serve::operation::Request;
use crate::serve::protocol::ApiError;
use crate::serve::Server;
use serde_json::{json, Value};
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let arn = request.required("resourceArn")?;
    super::taggable(server, arn)?;
    let keys: Vec<String> = request
        .input
        .get("tagKeys")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|k| k.as_str().map(str::to_owned))
        .collect();
    server.store.untag_resource(arn, &keys)?;
    Ok(json!({}))
}
