//! `DescribeExecution`, of executions started here or by `sfn-local run`.

use crate::serve::operation::Request;
use crate::serve::protocol::ApiError;
use crate::serve::Server;
use serde_json::Value;
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let record = super::execution(server, request.required("executionArn")?)?;
    Ok(crate::api::describe_execution(&record))
}
