//! `StopExecution`: the execution's runner (here, or a `sfn-local run` elsewhere) writes the
//! aborted events; if no runner is alive, the execution is aborted here.

use crate::engine::history::Details;
use crate::serve::operation::Request;
use crate::serve::protocol::{epoch_seconds, ApiError};
use crate::serve::Server;
use crate::store::{ExecutionStatus, StopOutcome};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a runner gets to act on the request before it is presumed gone.
const RUNNER_GRACE: Duration = Duration::from_secs(5);

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let arn = request.required("executionArn")?;
    super::execution(server, arn)?;
    let error = request.str("error");
    let cause = request.str("cause");
    let requested = server.config.time.now();
    let store = &server.store;
    if let StopOutcome::AlreadyEnded(_) = store.request_stop(arn, error, cause, requested)? {
        let record = super::execution(server, arn)?;
        return Ok(json!({ "stopDate": epoch_seconds(record.stop_date_ms.unwrap_or(requested)) }));
    }
    let until = Instant::now() + RUNNER_GRACE;
    loop {
        let record = super::execution(server, arn)?;
        if record.status != ExecutionStatus::Running {
            return Ok(
                json!({ "stopDate": epoch_seconds(record.stop_date_ms.unwrap_or(requested)) }),
            );
        }
        let no_runner = record.owner.is_none()
            || record
                .lease_expires_at_ms
                .is_none_or(|t| t < crate::clock::system_now());
        if no_runner || Instant::now() >= until {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut details = Details::new();
    if let Some(e) = error {
        details = details.str("error", e);
    }
    if let Some(c) = cause {
        details = details.str("cause", c);
    }
    let now = server.config.time.now();
    store.abort_unattended(
        arn,
        Some(details.build()),
        error.map(str::to_owned),
        cause.map(str::to_owned),
        now,
    )?;
    Ok(json!({ "stopDate": epoch_seconds(now) }))
}
