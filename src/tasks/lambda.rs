//! Lambda's `invoke` as the optimized integration returns it.
//!
//! dayone (issue #18) writes this module too, for `--task` on Lambda states; the lead keeps
//! one of the two at merge (the shared decision in team.md: one function builds the shape).

use serde_json::{json, Value};

/// The result of `arn:aws:states:::lambda:invoke`: `ExecutedVersion`, `Payload`,
/// `SdkHttpMetadata`, `SdkResponseMetadata`, `StatusCode`, in AWS's key order.
pub fn invoke_response(
    payload: Value,
    executed_version: &str,
    status_code: u16,
    sdk_http_metadata: Value,
    request_id: &str,
) -> Value {
    json!({
        "ExecutedVersion": executed_version,
        "Payload": payload,
        "SdkHttpMetadata": sdk_http_metadata,
        "SdkResponseMetadata": { "RequestId": request_id },
        "StatusCode": status_code,
    })
}
