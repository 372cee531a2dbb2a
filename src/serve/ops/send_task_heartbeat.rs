//! `SendTaskHeartbeat`.

use crate::serve::operation::Request;
use crate::serve::protocol::ApiError;
use crate::serve::Server;
use crate::tasks::callback::SentAnswer;
use serde_json::Value;
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    super::answer_token(
        server,
        request.required("taskToken")?,
        SentAnswer::Heartbeat,
    )
}
