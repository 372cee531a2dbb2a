//! `DeleteActivity` (an absent activity is no error, as on AWS).

use super::parse_arn;
use crate::serve::operation::Request;
use crate::serve::protocol::ApiError;
use crate::serve::Server;
use serde_json::{json, Value};
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let arn = request.required("activityArn")?;
    parse_arn(arn, "activity")?;
    server.store.delete_activity(arn)?;
    Ok(json!({}))
}
