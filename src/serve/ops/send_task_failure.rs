//! `SendTaskFailure`.

use crate::serve::operation::Request;
use crate::serve::protocol::ApiError;
use crate::serve::Server;
use crate::tasks::callback::SentAnswer;
use serde_json::Value;
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let token = request.required("taskToken")?;
    let answer = SentAnswer::Failure {
        error: request.str("error").map(str::to_owned),
        cause: request.str("cause").map(str::to_owned),
    };
    super::answer_token(server, token, answer)
}
