//! `RedriveExecution`: the engine's redrive reopens the execution (AWS's conditions and
//! errors), then this server drives it as it resumes any execution whose runner is gone.

use crate::engine::redrive::redrive_request;
use crate::serve::operation::Request;
use crate::serve::protocol::ApiError;
use crate::serve::Server;
use serde_json::Value;
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let arn = request.required("executionArn")?;
    let record = super::execution(server, arn)?;
    // The store does not know a machine's type; the API's machines do. AWS redrives Standard
    // executions only.
    if let Some(machine) = server.store.state_machine(&record.state_machine_arn)? {
        if machine.machine_type == "EXPRESS" {
            return Err(ApiError::new(
                "ExecutionNotRedrivable",
                format!("Execution cannot be redriven as it is an Express execution: '{arn}'"),
            ));
        }
    }
    let answer = redrive_request(&server.store, &request.input, server.config.time.now())
        .map_err(|e| ApiError::new(e.code(), e.message()))?;
    if let Some(record) = server.store.execution(arn)? {
        server.resume(record);
    }
    Ok(answer)
}
