//! `ListMapRuns`: the Map runs an execution's distributed Map states started, newest first.

use crate::serve::operation::Request;
use crate::serve::protocol::ApiError;
use crate::serve::Server;
use serde_json::Value;
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let arn = request.required("executionArn")?;
    super::parse_arn(arn, "execution")?;
    // A Map run's child execution (a Map nested in a distributed Map) has runs of its own.
    if server.store.execution(arn)?.is_none() && server.store.map_run_execution(arn)?.is_none() {
        return Err(super::execution_does_not_exist(arn));
    }
    let runs = server.store.map_runs_of(arn)?;
    super::paged_list(&request, &runs, "mapRuns", crate::api::map_run_list_item)
}
