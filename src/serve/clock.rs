//! `POST /sfn-local/clock`: an sfn-local extension of the API (AWS has no such operation) that
//! moves a virtual clock (`serve --clock virtual`), which never moves on its own here: a test
//! reads a token, heartbeats and answers at leisure, then moves time when it chooses. The
//! request and answer are [`crate::api::clock`]'s.
//!
//! A body that is not `application/json` is refused, so a web page cannot move the clock with
//! a simple cross-origin form (a JSON one needs a preflight this server never grants).

use super::protocol::{self, ApiError};
use super::Server;
use crate::api::clock::{act, ClockAction};
use crate::clock::iso8601;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::sync::Arc;

pub use crate::api::clock::PATH;

/// The handler.
pub async fn handle(
    State(server): State<Arc<Server>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let json_body = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.starts_with("application/json") || v.starts_with("application/x-amz-json")
        });
    if !json_body {
        return ApiError::new(
            "ValidationException",
            "POST /sfn-local/clock takes a JSON body with Content-Type: application/json",
        )
        .into_response();
    }
    let request: Value = match body.iter().all(u8::is_ascii_whitespace) {
        true => json!({}),
        false => match serde_json::from_slice(&body) {
            Ok(v) => v,
            Err(e) => {
                return ApiError::new("SerializationException", format!("not JSON: {e}"))
                    .into_response()
            }
        },
    };
    let action = match ClockAction::parse(&request) {
        Ok(a) => a,
        Err(e) => return ApiError::new("ValidationException", e).into_response(),
    };
    let Some(clock) = server.config.time.virtual_clock().cloned() else {
        return match action {
            ClockAction::Now => protocol::ok(json!({
                "clock": "real",
                "now": iso8601(server.config.time.now()),
                "nowMillis": server.config.time.now(),
            })),
            _ => ApiError::new(
                "ValidationException",
                "this server's clock is real: start it with --clock virtual to move time",
            )
            .into_response(),
        };
    };
    // Moving the clock waits for executions to settle between deadlines: off the runtime.
    match tokio::task::spawn_blocking(move || act(&clock, &action)).await {
        Ok(Ok(answer)) => protocol::ok(answer),
        Ok(Err(refused)) => {
            ApiError::new("ValidationException", refused.to_string()).into_response()
        }
        Err(e) => ApiError::internal(e).into_response(),
    }
}
