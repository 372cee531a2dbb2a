//! `GetExecutionHistory`: paged (`maxResults`, `nextToken`), `reverseOrder`, and
//! `includeExecutionData: false` leaving out inputs and outputs; of executions and of the child
//! executions of distributed Map runs.

use crate::serve::operation::Request;
use crate::serve::protocol::{page, ApiError};
use crate::serve::Server;
use serde_json::{json, Value};
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let arn = request.required("executionArn")?;
    super::parse_arn(arn, "execution")?;
    let reverse = request.bool("reverseOrder").unwrap_or(false);
    let events = match server.store.execution(arn)? {
        Some(_) => server.store.history(arn, reverse)?,
        // A distributed Map's child execution has a history of its own, kept with its run.
        None => server
            .store
            .map_run_history(arn, reverse)?
            .ok_or_else(|| super::execution_does_not_exist(arn))?,
    };
    let (items, next) = page(
        &events,
        request.u64("maxResults"),
        request.str("nextToken"),
        100,
    )?;
    let with_data = request.bool("includeExecutionData").unwrap_or(true);
    let events: Vec<Value> = items
        .iter()
        .map(|e| {
            let mut v = crate::api::history_event(e);
            if !with_data {
                if let Value::Object(map) = &mut v {
                    for details in map.values_mut().filter_map(Value::as_object_mut) {
                        for key in ["input", "output", "inputDetails", "outputDetails"] {
                            details.remove(key);
                        }
                    }
                }
            }
            v
        })
        .collect();
    let mut answer = json!({ "events": events });
    if let Some(token) = next {
        answer["nextToken"] = token.into();
    }
    Ok(answer)
}
