//! `GetActivityTask`: a long poll (up to 60 s, as AWS) for the oldest waiting task of an
//! activity; `{}` (no token) when none came. The server stopping ends the poll at once.

use crate::serve::operation::Request;
use crate::serve::protocol::ApiError;
use crate::serve::Server;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a poll waits for a task.
const LONG_POLL: Duration = Duration::from_secs(60);
/// How often a waiting poll looks for commits.
const POLL_EVERY: Duration = Duration::from_millis(10);

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let arn = request.required("activityArn")?;
    super::activity(server, arn)?;
    let worker = request.str("workerName");
    let until = Instant::now() + LONG_POLL;
    let mut stopping = server.stopping.clone();
    let mut seen = None;
    loop {
        // Try to take a task only when something was committed since the last try.
        let version = server.store.data_version().ok();
        if version.is_none() || version != seen {
            seen = version;
            if let Some(task) =
                server
                    .store
                    .claim_activity_task(arn, worker, server.config.time.now())?
            {
                return Ok(json!({ "taskToken": task.token, "input": task.input }));
            }
        }
        if Instant::now() >= until || *stopping.borrow() {
            return Ok(json!({}));
        }
        tokio::select! {
            _ = tokio::time::sleep(POLL_EVERY) => {}
            _ = stopping.changed() => {}
        }
    }
}
