//! `ValidateStateMachineDefinition`: the same verdicts as `sfn-local validate`.

use super::machine_type;
use crate::serve::operation::Request;
use crate::serve::protocol::ApiError;
use crate::serve::Server;
use serde_json::{json, Value};
use std::sync::Arc;

/// Handles the call.
pub async fn handle(server: &Arc<Server>, request: Request) -> Result<Value, ApiError> {
    let definition = request.required("definition")?;
    let kind = machine_type(request.str("type").unwrap_or("STANDARD"));
    // `severity` is the least severe kind to report: ERROR (the default) leaves out warnings.
    let with_warnings = request.str("severity") == Some("WARNING");
    let max = match request.u64("maxResults") {
        Some(0) | None => 100,
        Some(n) => n as usize,
    };
    let diagnostics = crate::asl::validate_text_as(definition, kind, server.config.compat);
    let result = crate::api::validation::result(&diagnostics);
    let shown: Vec<Value> = diagnostics
        .iter()
        .filter(|d| with_warnings || d.severity == crate::asl::Severity::Error)
        .map(crate::api::validation::diagnostic_json)
        .collect();
    let truncated = shown.len() > max;
    let shown: Vec<Value> = shown.into_iter().take(max).collect();
    Ok(json!({ "result": result, "diagnostics": shown, "truncated": truncated }))
}
