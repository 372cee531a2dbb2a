//! `SendTaskSuccess`.

use crate::serve::operation::Request;
use crate::serve::protocol::ApiError;
use crate::serve::Server;
use crate::store::TaskAnswer;
use serde_json::Value;
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let token = request.required("taskToken")?;
    let output: Value = serde_json::from_str(request.required("output")?)
        .map_err(|e| ApiError::new("InvalidOutput", format!("Invalid Output: '{e}'")))?;
    // Stored compact, as the engine writes every payload.
    super::answer_token(server, token, TaskAnswer::Success(output.to_string()))
}
