//! Lambda as AWS's optimized integration (`arn:aws:states:::lambda:invoke`) presents it: a
//! local command stands in for the *function*, and sfn-local builds the `Invoke` response AWS
//! hands the state around the function's result.
//!
//! - The command receives the event: the `Payload` of the effective input (`{}` when the state
//!   passes none, as Lambda gives a function invoked without a payload), and
//!   `AWS_LAMBDA_FUNCTION_NAME` names the function, as in Lambda's runtime.
//! - What it prints is the function's result: the task's result is [`invoke_response`] around it
//!   (`ExecutedVersion`, `Payload`, `SdkHttpMetadata`, `SdkResponseMetadata`, `StatusCode`), so
//!   `$.Payload.x` and `ResultSelector`s written for AWS work unchanged.
//! - A non-zero exit whose last stderr line is Lambda's own error shape,
//!   `{"errorType": "...", "errorMessage": "..."}`, fails as AWS reports a function error: the
//!   error is the `errorType`, the cause that object as JSON text (with a `requestId`).

use crate::asl::error::StatesError;
use crate::asl::resource::{IntegrationPattern, Resource, ResourceKind};
use serde_json::{json, Map, Value};

/// Whether `resource` is the request/response `lambda:invoke` integration, whose command is a
/// function (the callback pattern's command is a worker, the legacy function ARN passes input
/// and result unchanged).
pub fn is_invoke(resource: &Resource) -> bool {
    matches!(
        &resource.kind,
        ResourceKind::Integration { service, action, pattern: IntegrationPattern::RequestResponse }
            if service == "lambda" && action == "invoke"
    )
}

/// The event a function receives from the effective input of a `lambda:invoke` state: its
/// `Payload`, `{}` when there is none or it is `null` (AWS invokes with no payload then, and
/// the function gets `{}`: a recorded TestState call, `Payload: null` to an identity function,
/// answered `{}`).
pub fn event(input: &Value) -> Value {
    match input.get("Payload") {
        None | Some(Value::Null) => json!({}),
        Some(payload) => payload.clone(),
    }
}

/// The function's name from the state's `FunctionName` (a name, or an ARN whose name part is
/// taken), for `AWS_LAMBDA_FUNCTION_NAME`.
pub fn function_name(input: &Value) -> Option<String> {
    let name = input.get("FunctionName")?.as_str()?;
    Some(name_and_qualifier(name).0.to_owned())
}

/// A function's name and qualifier (version or alias) from what Lambda's Invoke takes as
/// `FunctionName`: a name (`charge`, `charge:live`), a partial ARN
/// (`123456789012:function:charge`) or a full one (`arn:aws:lambda:...:function:charge:live`).
pub fn name_and_qualifier(function: &str) -> (&str, Option<&str>) {
    let rest = match function.split_once(":function:") {
        Some((_, rest)) => rest,
        None => function,
    };
    match rest.split_once(':') {
        Some((name, qualifier)) => (name, Some(qualifier)),
        None => (rest, None),
    }
}

/// Whether `resource` invokes a Lambda function: the legacy function ARN, or `lambda:invoke`
/// in any pattern. Such a function's failure is named by its `errorType`, as AWS names it.
pub fn is_lambda(resource: &Resource) -> bool {
    match &resource.kind {
        ResourceKind::LambdaFunction => true,
        ResourceKind::Integration {
            service, action, ..
        } => service == "lambda" && action.split('.').next() == Some("invoke"),
        ResourceKind::Activity { .. } => false,
    }
}

/// The name of the function a Lambda Task invokes: the legacy resource ARN's, else the
/// effective input's `FunctionName`.
pub fn invoked_function(resource: &Resource, input: &Value) -> Option<String> {
    match &resource.kind {
        ResourceKind::LambdaFunction => Some(name_and_qualifier(&resource.arn).0.to_owned()),
        _ if is_lambda(resource) => function_name(input),
        _ => None,
    }
}

fn request_id() -> String {
    crate::random::uuid().to_string()
}

/// Lambda's `Invoke` response as Step Functions hands it to a `lambda:invoke` state, around the
/// function's result `payload` (AWS's key order and headers, as recorded on AWS).
/// `at` dates it (the `Date` header, the trace id's time).
pub fn invoke_response(payload: Value, at: crate::clock::Millis) -> Value {
    let request_id = request_id();
    let length = payload.to_string().len().to_string();
    let date = crate::tasks::http_date(at);
    let random: String = crate::random::uuid().simple().to_string();
    let trace = format!(
        "root=1-{:08x}-{};sampled=0",
        at.div_euclid(1000),
        &random[..24]
    );
    let metadata = json!({
        "AllHttpHeaders": {
            "X-Amz-Executed-Version": ["$LATEST"],
            "x-amzn-Remapped-Content-Length": ["0"],
            "Connection": ["keep-alive"],
            "x-amzn-RequestId": [request_id],
            "Content-Length": [length],
            "Date": [date],
            "X-Amzn-Trace-Id": [trace],
            "Content-Type": ["application/json"]
        },
        "HttpHeaders": {
            "Connection": "keep-alive",
            "Content-Length": length,
            "Content-Type": "application/json",
            "Date": date,
            "X-Amz-Executed-Version": "$LATEST",
            "x-amzn-Remapped-Content-Length": "0",
            "x-amzn-RequestId": request_id,
            "X-Amzn-Trace-Id": trace
        },
        "HttpStatusCode": 200
    });
    invoke_response_with(payload, "$LATEST", 200, metadata, &request_id)
}

/// The same shape from a real `Invoke` answer (an `--endpoint` call): its executed version,
/// status code, HTTP metadata and request id, in AWS's key order.
pub fn invoke_response_with(
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

/// A function error from the last non-empty stderr line, when it is Lambda's error shape
/// (`errorType`, and usually `errorMessage`, `stackTrace`): AWS names the error by the
/// `errorType` and gives the object, as JSON text, as the cause.
pub fn function_error(stderr: &str) -> Option<StatesError> {
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty())?;
    let Value::Object(obj) = serde_json::from_str::<Value>(last.trim()).ok()? else {
        return None;
    };
    obj.get("errorType")?.as_str()?;
    Some(error_from_payload(&obj))
}

/// The error of a function that failed with Lambda's error payload: named by its
/// `errorType` (`Lambda.Unknown` without one, as for an unhandled failure), the payload as
/// JSON text for the cause, in AWS's key order, with a `requestId`.
pub fn error_from_payload(obj: &Map<String, Value>) -> StatesError {
    let error_type = obj
        .get("errorType")
        .and_then(Value::as_str)
        .unwrap_or("Lambda.Unknown")
        .to_owned();
    // AWS's order: errorMessage, errorType, requestId, stackTrace, then anything else.
    let mut cause = Map::new();
    cause.insert(
        "errorMessage".into(),
        obj.get("errorMessage").cloned().unwrap_or(json!("")),
    );
    cause.insert("errorType".into(), json!(error_type));
    cause.insert(
        "requestId".into(),
        obj.get("requestId")
            .cloned()
            .unwrap_or_else(|| json!(request_id())),
    );
    if let Some(trace) = obj.get("stackTrace") {
        cause.insert("stackTrace".into(), trace.clone());
    }
    for (k, v) in obj {
        if !cause.contains_key(k) {
            cause.insert(k.clone(), v.clone());
        }
    }
    StatesError {
        error: Some(error_type),
        cause: Some(Value::Object(cause).to_string()),
        heartbeat: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_null_or_missing_payload_is_an_empty_event() {
        assert_eq!(event(&json!({"FunctionName": "f"})), json!({}));
        assert_eq!(
            event(&json!({"FunctionName": "f", "Payload": null})),
            json!({})
        );
        assert_eq!(event(&json!({"Payload": [1]})), json!([1]));
    }

    #[test]
    fn the_response_wraps_the_payload_as_aws_does() {
        let r = invoke_response(json!({"ok": true}), 0);
        let keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "ExecutedVersion",
                "Payload",
                "SdkHttpMetadata",
                "SdkResponseMetadata",
                "StatusCode"
            ]
        );
        assert_eq!(r["Payload"], json!({"ok": true}));
        assert_eq!(r["StatusCode"], 200);
        assert_eq!(r["SdkHttpMetadata"]["HttpHeaders"]["Content-Length"], "11");
        assert_eq!(
            r["SdkResponseMetadata"]["RequestId"],
            r["SdkHttpMetadata"]["HttpHeaders"]["x-amzn-RequestId"]
        );
    }

    #[test]
    fn lambda_errors_are_named_by_their_type() {
        let e =
            function_error("log\n{\"errorType\":\"CardDeclined\",\"errorMessage\":\"no funds\"}\n")
                .unwrap();
        assert_eq!(e.error.as_deref(), Some("CardDeclined"));
        let cause: Value = serde_json::from_str(e.cause.as_deref().unwrap()).unwrap();
        assert_eq!(cause["errorMessage"], "no funds");
        assert!(cause["requestId"].is_string());
        assert!(function_error("{\"Error\":\"E\"}").is_none());
        assert_eq!(
            function_name(&json!({"FunctionName": "arn:aws:lambda:us-east-1:1:function:f:PROD"}))
                .as_deref(),
            Some("f")
        );
        assert_eq!(name_and_qualifier("f"), ("f", None));
        assert_eq!(name_and_qualifier("f:live"), ("f", Some("live")));
        assert_eq!(name_and_qualifier("1:function:f"), ("f", None));
    }
}
