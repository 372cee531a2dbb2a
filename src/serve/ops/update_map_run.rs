//! `UpdateMapRun`: changes a Map run's `maxConcurrency`, `toleratedFailurePercentage` and
//! `toleratedFailureCount`. The running Map reads them back within a fraction of a second: a
//! higher concurrency starts more children at once, a lower one lets the running ones finish
//! first, and a failure threshold the run is already past fails it.

use crate::serve::operation::Request;
use crate::serve::protocol::ApiError;
use crate::serve::Server;
use crate::store::MapRunUpdate;
use serde_json::{json, Value};
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let arn = request.required("mapRunArn")?;
    super::map_run(server, arn)?;
    let update = MapRunUpdate {
        max_concurrency: request.input.get("maxConcurrency").and_then(Value::as_i64),
        tolerated_failure_percentage: request
            .input
            .get("toleratedFailurePercentage")
            .and_then(Value::as_f64),
        tolerated_failure_count: request
            .input
            .get("toleratedFailureCount")
            .and_then(Value::as_i64),
    };
    if !server.store.update_map_run(arn, &update)? {
        return Err(super::map_run_not_found(arn));
    }
    Ok(json!({}))
}
