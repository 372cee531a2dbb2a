//! `DescribeMapRun`: a distributed Map's run, its settings and its item and execution counts.

use crate::serve::operation::Request;
use crate::serve::protocol::ApiError;
use crate::serve::Server;
use serde_json::Value;
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let run = super::map_run(server, request.required("mapRunArn")?)?;
    Ok(crate::api::describe_map_run(&run))
}
