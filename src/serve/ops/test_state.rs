//! `TestState`: one state run by the engine's TestState function, the same code path as
//! `sfn-local test-state`. Its futures are not `Send`, so it runs on a blocking thread with a
//! runtime of its own.

use crate::clock::SystemClock;
use crate::engine::test_state::{test_state_blocking, TestStateRequest};
use crate::serve::operation::Request;
use crate::serve::protocol::ApiError;
use crate::serve::Server;
use crate::tasks::LocalTasks;
use serde_json::Value;
use std::rc::Rc;
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let test: TestStateRequest = serde_json::from_value(request.input)
        .map_err(|e| ApiError::new("ValidationException", e.to_string()))?;
    let http_access = server.config.http_invoke.clone();
    let answer = tokio::task::spawn_blocking(move || {
        test_state_blocking(
            &test,
            Rc::new(LocalTasks {
                http_access,
                ..LocalTasks::default()
            }),
            Arc::new(SystemClock::new(1.0)),
        )
    })
    .await
    .map_err(ApiError::internal)?;
    match answer {
        Ok(response) => serde_json::to_value(response).map_err(ApiError::internal),
        Err(e) => Err(ApiError::new(e.code, e.message)),
    }
}
