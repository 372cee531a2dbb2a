//! The operations this build does not serve yet answer a clear `ValidationException` naming
//! the operation, never a wrong success: the Map run operations (DescribeMapRun, ListMapRuns,
//! UpdateMapRun).

use crate::serve::operation::Request;
use crate::serve::protocol::ApiError;
use crate::serve::Server;
use serde_json::Value;
use std::sync::Arc;

/// Handles the call.
pub async fn handle(_server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    Err(ApiError::new(
        "ValidationException",
        format!(
            "sfn-local serve does not implement {} yet; see the README's serve section for what it serves",
            request.operation
        ),
    ))
}
