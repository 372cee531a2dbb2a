//! `DescribeExecution`, of executions started here or by `sfn-local run`, and of the child
//! executions of distributed Map runs (with their `mapRunArn`).

use crate::serve::operation::Request;
use crate::serve::protocol::ApiError;
use crate::serve::Server;
use serde_json::Value;
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let arn = request.required("executionArn")?;
    super::parse_arn(arn, "execution")?;
    if let Some(record) = server.store.execution(arn)? {
        return Ok(crate::api::describe_execution(&record));
    }
    match server.store.map_run_execution(arn)? {
        Some(child) => Ok(crate::api::describe_map_run_execution(&child)),
        None => Err(super::execution_does_not_exist(arn)),
    }
}
