//! `DescribeActivity`.

use crate::serve::operation::Request;
use crate::serve::protocol::{epoch_seconds, ApiError};
use crate::serve::Server;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let a = super::activity(server, request.required("activityArn")?)?;
    let settings: Map<String, Value> = serde_json::from_str(&a.settings).unwrap_or_default();
    Ok(json!({
        "activityArn": a.arn,
        "name": a.name,
        "creationDate": epoch_seconds(a.creation_date_ms),
        "encryptionConfiguration": settings
            .get("encryptionConfiguration")
            .cloned()
            .unwrap_or_else(|| json!({"type": "AWS_OWNED_KEY"})),
    }))
}
