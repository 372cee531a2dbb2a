//! `ListActivities`, paged.

use crate::serve::operation::Request;
use crate::serve::protocol::{epoch_seconds, ApiError};
use crate::serve::Server;
use serde_json::{json, Value};
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let all = server.store.activities()?;
    super::paged_list(
        &request,
        &all,
        "activities",
        |a| json!({ "activityArn": a.arn, "name": a.name, "creationDate": epoch_seconds(a.creation_date_ms) }),
    )
}
