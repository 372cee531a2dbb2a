//! A local command standing in for the service of an optimized integration: what the command
//! receives, and the response AWS hands the state, built around what the command printed.
//!
//! A `--task` command bound to a request/response Task is the *service* (or, for
//! `lambda:invoke`, the function; see [`crate::tasks::lambda`]). It reads the request on stdin
//! and prints the service's answer; sfn-local adds what AWS adds, so paths and
//! `ResultSelector`s written for AWS work unchanged:
//!
//! | resource | the command gets | it prints | the task's result |
//! |---|---|---|---|
//! | `lambda:invoke` | the `Payload` | the function's result | Lambda's `Invoke` response |
//! | `sns:publish` | the `Publish` parameters | nothing, or fields of the response | `MessageId` (generated), SDK metadata |
//! | `sqs:sendMessage` | the `SendMessage` parameters | nothing, or fields of the response | `MD5OfMessageBody`, `MessageId`, SDK metadata |
//! | `dynamodb:getItem`, `putItem`, `updateItem`, `deleteItem`, `query`, `scan` | the parameters | the API's response (`{"Item": ...}`) or nothing | the response with SDK metadata |
//! | `events:putEvents` | the `PutEvents` parameters | nothing, or the response | `Entries` (an `EventId` each), `FailedEntryCount` |
//! | `aws-sdk:SERVICE:ACTION` | the parameters | the API's response | as printed (`{}` for nothing) |
//! | anything else (`.sync` jobs, the legacy function ARN, ...) | the effective input | the result | as printed |
//!
//! Fields the command prints win over the generated ones (a command may choose its
//! `MessageId`). A failing command names its error as any `--task` command does.

use crate::asl::resource::{IntegrationPattern, Resource, ResourceKind};
use crate::clock::Millis;
use crate::tasks::TaskRequest;
use serde_json::{json, Map, Value};

/// The service a request/response Task's command stands in for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StandIn {
    /// Input and result unchanged.
    Plain,
    /// `lambda:invoke`: the command is the function.
    Function,
    /// `sns:publish`.
    SnsPublish,
    /// `sqs:sendMessage`.
    SqsSendMessage,
    /// A DynamoDB item or query action.
    DynamoDb,
    /// `events:putEvents`.
    PutEvents,
    /// An `aws-sdk:*` integration: the response is what the command printed.
    AwsSdk,
}

impl StandIn {
    /// What `resource`'s command stands in for.
    pub fn of(resource: &Resource) -> StandIn {
        let ResourceKind::Integration {
            service,
            action,
            pattern: IntegrationPattern::RequestResponse,
        } = &resource.kind
        else {
            return StandIn::Plain;
        };
        match (service.as_str(), action.as_str()) {
            ("lambda", "invoke") => StandIn::Function,
            ("sns", "publish") => StandIn::SnsPublish,
            ("sqs", "sendMessage") => StandIn::SqsSendMessage,
            (
                "dynamodb",
                "getItem" | "putItem" | "updateItem" | "deleteItem" | "query" | "scan",
            ) => StandIn::DynamoDb,
            ("events", "putEvents") => StandIn::PutEvents,
            (s, _) if s.starts_with("aws-sdk:") => StandIn::AwsSdk,
            _ => StandIn::Plain,
        }
    }

    /// What the command reads on stdin.
    pub fn request(self, input: &Value) -> Value {
        match self {
            StandIn::Function => crate::tasks::lambda::event(input),
            _ => input.clone(),
        }
    }

    /// The task's result from what the command printed (`Null` for nothing) and the request
    /// (its input, and the time the response is dated).
    pub fn response(self, request: &TaskRequest, printed: Value) -> Value {
        let (input, at) = (&request.input, request.response_time());
        let printed = match (self, printed) {
            (StandIn::Plain, printed) => return printed,
            (StandIn::Function, printed) => {
                return crate::tasks::lambda::invoke_response(printed, at)
            }
            (_, Value::Object(m)) => m,
            (_, Value::Null) => Map::new(),
            // Not an object: the service's answer is not ours to reshape.
            (_, other) => return other,
        };
        match self {
            StandIn::Plain | StandIn::Function | StandIn::AwsSdk => Value::Object(printed),
            StandIn::SnsPublish => {
                let mut out = Map::new();
                out.insert("MessageId".into(), json!(new_id()));
                merge(&mut out, printed);
                with_metadata(out, "text/xml", at)
            }
            StandIn::SqsSendMessage => {
                let body = match input.get("MessageBody") {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => String::new(),
                };
                let mut out = Map::new();
                out.insert("MD5OfMessageBody".into(), json!(md5_hex(&body)));
                out.insert("MessageId".into(), json!(new_id()));
                merge(&mut out, printed);
                with_metadata(out, "application/x-amz-json-1.0", at)
            }
            StandIn::DynamoDb => with_metadata(printed, "application/x-amz-json-1.0", at),
            StandIn::PutEvents => {
                let entries = input
                    .get("Entries")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
                let mut out = Map::new();
                out.insert(
                    "Entries".into(),
                    Value::Array(
                        (0..entries)
                            .map(|_| json!({ "EventId": new_id() }))
                            .collect(),
                    ),
                );
                out.insert("FailedEntryCount".into(), json!(0));
                merge(&mut out, printed);
                Value::Object(out)
            }
        }
    }
}

/// Puts the printed fields over the generated ones, keeping the generated order first.
fn merge(out: &mut Map<String, Value>, printed: Map<String, Value>) {
    for (k, v) in printed {
        out.insert(k, v);
    }
}

fn new_id() -> String {
    crate::random::uuid().to_string()
}

fn md5_hex(text: &str) -> String {
    use md5::{Digest, Md5};
    Md5::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The SDK metadata optimized integrations add (`SdkHttpMetadata`, `SdkResponseMetadata`), in
/// the shape recorded on AWS.
fn with_metadata(mut out: Map<String, Value>, content_type: &str, at: Millis) -> Value {
    let request_id = new_id();
    let length = Value::Object(out.clone()).to_string().len().to_string();
    let date = crate::tasks::http_date(at);
    out.insert(
        "SdkHttpMetadata".into(),
        json!({
            "AllHttpHeaders": {
                "x-amzn-RequestId": [request_id],
                "connection": ["keep-alive"],
                "Content-Length": [length],
                "Date": [date],
                "Content-Type": [content_type]
            },
            "HttpHeaders": {
                "connection": "keep-alive",
                "Content-Length": length,
                "Content-Type": content_type,
                "Date": date,
                "x-amzn-RequestId": request_id
            },
            "HttpStatusCode": 200
        }),
    );
    out.insert(
        "SdkResponseMetadata".into(),
        json!({ "RequestId": request_id }),
    );
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(arn: &str) -> StandIn {
        StandIn::of(&Resource::parse(arn).unwrap())
    }

    #[test]
    fn resources_choose_their_stand_in() {
        assert_eq!(of("arn:aws:states:::lambda:invoke"), StandIn::Function);
        assert_eq!(of("arn:aws:states:::sns:publish"), StandIn::SnsPublish);
        assert_eq!(
            of("arn:aws:states:::sqs:sendMessage.waitForTaskToken"),
            StandIn::Plain
        );
        assert_eq!(of("arn:aws:states:::dynamodb:getItem"), StandIn::DynamoDb);
        assert_eq!(of("arn:aws:states:::events:putEvents"), StandIn::PutEvents);
        assert_eq!(
            of("arn:aws:states:::aws-sdk:s3:listBuckets"),
            StandIn::AwsSdk
        );
        assert_eq!(of("arn:aws:states:::ecs:runTask.sync"), StandIn::Plain);
        assert_eq!(
            of("arn:aws:lambda:us-east-1:123456789012:function:f"),
            StandIn::Plain
        );
    }

    #[test]
    fn sqs_gets_the_body_digest_and_an_id() {
        let request = |input: Value| TaskRequest {
            state_name: "S".into(),
            resource: Resource::parse("arn:aws:states:::sqs:sendMessage").unwrap(),
            input,
            execution_arn: "arn".into(),
            retry_count: 0,
            virtual_time: Some(0),
        };
        let r = StandIn::SqsSendMessage
            .response(&request(json!({"MessageBody": "hello"})), Value::Null);
        assert_eq!(r["MD5OfMessageBody"], "5d41402abc4b2a76b9719d911017c592");
        assert!(r["MessageId"].is_string());
        assert_eq!(r["SdkHttpMetadata"]["HttpStatusCode"], 200);
        assert_eq!(
            r["SdkHttpMetadata"]["HttpHeaders"]["Date"], "Thu, 01 Jan 1970 00:00:00 GMT",
            "dated by the virtual clock"
        );
        let r = StandIn::SnsPublish.response(&request(json!({})), json!({"MessageId": "mine"}));
        assert_eq!(r["MessageId"], "mine");
        let r = StandIn::PutEvents.response(&request(json!({"Entries": [{}, {}]})), Value::Null);
        assert_eq!(r["Entries"].as_array().unwrap().len(), 2);
        assert_eq!(r["FailedEntryCount"], 0);
        assert!(r.get("SdkHttpMetadata").is_none());
    }
}
