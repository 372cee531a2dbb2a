//! AWS's JSON 1.0 protocol as Step Functions speaks it: errors as `{"__type", "message"}` with
//! `x-amzn-ErrorType`, timestamps as epoch seconds, the region of a signed request, and paging
//! tokens.

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

/// The content type of every request and answer.
pub const CONTENT_TYPE: &str = "application/x-amz-json-1.0";

/// An error as AWS answers it: one of the model's error names and a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ApiError {
    /// The error's name in the service model (`ExecutionDoesNotExist`, ...).
    pub code: &'static str,
    /// What went wrong, naming the member or resource.
    pub message: String,
    /// 400 for a client's mistake, 500 for ours.
    pub status: StatusCode,
}

impl ApiError {
    /// A client error (HTTP 400).
    pub fn new(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
            status: StatusCode::BAD_REQUEST,
        }
    }

    /// A failure on our side (HTTP 500): the database, a thread gone.
    pub fn internal(message: impl std::fmt::Display) -> ApiError {
        ApiError {
            code: "InternalFailure",
            message: message.to_string(),
            status: StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// `ValidationException` in AWS's words for one member.
    pub fn validation(member: &str, value: &str, constraint: &str) -> ApiError {
        ApiError::new(
            "ValidationException",
            format!("1 validation error detected: Value {value} at '{member}' failed to satisfy constraint: {constraint}"),
        )
    }

    /// `InvalidArn` for a malformed ARN.
    pub fn invalid_arn(arn: &str) -> ApiError {
        ApiError::new("InvalidArn", format!("Invalid Arn: '{arn}'"))
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(e: crate::store::StoreError) -> ApiError {
        ApiError::internal(e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({ "__type": self.code, "message": self.message }).to_string();
        let mut response = (self.status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
        headers.insert("x-amzn-ErrorType", HeaderValue::from_static(self.code));
        response
    }
}

/// A successful answer.
pub fn ok(body: Value) -> Response {
    let mut response = (StatusCode::OK, body.to_string()).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    response
}

/// The region of a SigV4-signed request (`Credential=AKID/DATE/REGION/states/aws4_request`).
pub fn signed_region(headers: &HeaderMap) -> Option<String> {
    let auth = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let scope = auth.split("Credential=").nth(1)?;
    let region = scope.split('/').nth(2)?;
    let valid = !region.is_empty()
        && region
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-');
    valid.then(|| region.to_owned())
}

/// The members holding timestamps, which the library's shapes give as ISO 8601 text (what the
/// AWS CLI prints) and the wire carries as epoch seconds (what the SDKs parse).
const TIMESTAMP_MEMBERS: &[&str] = &[
    "startDate",
    "stopDate",
    "timestamp",
    "creationDate",
    "updateDate",
    "redriveDate",
];

/// Turns the timestamps of a response built by [`crate::api`] into epoch seconds, in place.
pub fn wire_timestamps(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if let (true, Value::String(text)) = (TIMESTAMP_MEMBERS.contains(&key.as_str()), &v)
                {
                    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(text) {
                        *v = epoch_seconds(t.timestamp_millis());
                    }
                } else {
                    wire_timestamps(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(wire_timestamps),
        _ => {}
    }
}

/// Milliseconds since the epoch as the wire's epoch seconds.
pub fn epoch_seconds(ms: i64) -> Value {
    if ms % 1000 == 0 {
        json!(ms / 1000)
    } else {
        json!(ms as f64 / 1000.0)
    }
}

/// One page of a listing: `maxResults` (0 or absent: `default`) and `nextToken` as AWS takes them.
pub fn page<'a, T>(
    items: &'a [T],
    max_results: Option<u64>,
    next_token: Option<&str>,
    default: usize,
) -> Result<(&'a [T], Option<String>), ApiError> {
    let max = match max_results {
        Some(0) | None => default,
        Some(n) => n as usize,
    };
    let page = crate::api::Page {
        max_items: Some(max),
        starting_token: next_token.map(str::to_owned),
    };
    page.slice(items)
        .map_err(|e| ApiError::new("InvalidToken", format!("Invalid Token: '{}'", e.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_comes_from_the_credential_scope() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("AWS4-HMAC-SHA256 Credential=AKID/20250101/eu-west-3/states/aws4_request, SignedHeaders=host, Signature=abc"),
        );
        assert_eq!(signed_region(&headers).as_deref(), Some("eu-west-3"));
        assert_eq!(signed_region(&HeaderMap::new()), None);
    }

    #[test]
    fn timestamps_become_epoch_seconds() {
        let mut v = json!({"startDate": "2024-01-02T03:04:05.678Z", "events": [{"timestamp": "2024-01-02T03:04:05Z"}], "name": "startDate"});
        wire_timestamps(&mut v);
        assert_eq!(v["startDate"], json!(1704164645.678));
        assert_eq!(v["events"][0]["timestamp"], json!(1704164645));
        assert_eq!(v["name"], json!("startDate"));
    }
}
