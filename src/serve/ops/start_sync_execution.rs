//! `StartSyncExecution`: runs an EXPRESS machine's execution and answers with its end.

use super::start_execution::{prepare, Prepared};
use crate::serve::executions::start;
use crate::serve::operation::Request;
use crate::serve::protocol::ApiError;
use crate::serve::Server;
use serde_json::{json, Value};
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let Prepared::New(spec) = prepare(server, &request, true)? else {
        return Err(ApiError::internal(
            "a synchronous execution cannot repeat another",
        ));
    };
    let arn = spec.info.execution_arn.clone();
    let done = start(server, spec).await?;
    let _ = done.await;
    let record = super::execution(server, &arn)?;
    let mut answer = crate::api::describe_execution(&record);
    if let Value::Object(map) = &mut answer {
        map.remove("redriveCount");
        let billed = record.stop_date_ms.unwrap_or(record.start_date_ms) - record.start_date_ms;
        map.insert(
            "billingDetails".into(),
            json!({ "billedMemoryUsedInMB": 64, "billedDurationInMilliseconds": billed.max(100) }),
        );
    }
    Ok(answer)
}
