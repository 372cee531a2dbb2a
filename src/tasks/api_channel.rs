//! The Step Functions API as a managed worker's channel: `sfn-local worker --endpoint-url URL`
//! takes activity tasks with `GetActivityTask` and answers with `SendTaskSuccess`,
//! `SendTaskFailure` and `SendTaskHeartbeat`, signed with SigV4 from the usual credential
//! variables, so the same worker runs against `sfn-local serve` or AWS itself.
//!
//! The API has no call that looks at a task without touching it, so [`ApiChannel::look`] is
//! [`TaskLook::Unknown`]: the supervisor then learns that a task is over from a refused
//! heartbeat (`TaskTimedOut`), and beats often enough for that news to arrive within a second.

use crate::asl::resource::{Resource, ResourceKind};
use crate::store::TaskAnswer;
use crate::tasks::aws::{call_step_functions, ApiAnswer};
use crate::tasks::managed::{
    ActivityChannel, Assignment, ChannelError, ChannelFuture, TaskChannel, TaskLook,
};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// How long a `GetActivityTask` may take: AWS holds a poll up to 60 s, and asks clients to
/// wait at least 65 s for it.
const POLL_TIMEOUT: Duration = Duration::from_secs(70);

/// How long any other call may take before it counts as failed (and is tried at the next beat).
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// The channel of a worker that speaks the Step Functions API at an endpoint.
pub struct ApiChannel {
    client: Arc<reqwest::Client>,
    endpoint: String,
    region: String,
    account: String,
}

/// Why `--endpoint-url` or the activity ARN cannot make a channel.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiChannelError {
    /// The URL is not an http(s) URL.
    #[error("--endpoint-url '{url}': {why}")]
    BadUrl {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        why: String,
    },
    /// The activity ARN names no region or account.
    #[error("'{0}' is not an activity ARN (arn:aws:states:REGION:ACCOUNT:activity:NAME)")]
    NotAnActivity(String),
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

impl ApiChannel {
    /// A channel to `endpoint` for `activity_arn`'s tasks, signing for the activity's region.
    pub fn new(endpoint: &str, activity_arn: &str) -> Result<ApiChannel, ApiChannelError> {
        let bad = |why: String| ApiChannelError::BadUrl {
            url: endpoint.to_owned(),
            why,
        };
        let url = reqwest::Url::parse(endpoint).map_err(|e| bad(format!("not a URL ({e})")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(bad("the URL must start with http:// or https://".into()));
        }
        let (region, account) = match Resource::parse(activity_arn) {
            Ok(Resource {
                kind: ResourceKind::Activity { .. },
                ..
            }) => {
                let parts: Vec<&str> = activity_arn.splitn(6, ':').collect();
                match parts.as_slice() {
                    [_, _, _, region, account, _] if !region.is_empty() => {
                        ((*region).to_owned(), (*account).to_owned())
                    }
                    _ => return Err(ApiChannelError::NotAnActivity(activity_arn.to_owned())),
                }
            }
            _ => return Err(ApiChannelError::NotAnActivity(activity_arn.to_owned())),
        };
        let client = reqwest::Client::builder()
            .connect_timeout(CALL_TIMEOUT)
            .build()
            .map_err(|e| ApiChannelError::Client(e.to_string()))?;
        Ok(ApiChannel {
            client: Arc::new(client),
            endpoint: endpoint.trim_end_matches('/').to_owned(),
            region,
            account,
        })
    }

    /// One call, bounded by `timeout`; failures sorted by what the caller can do about them.
    async fn call(
        &self,
        action: &str,
        body: Value,
        timeout: Duration,
    ) -> Result<Value, ChannelError> {
        let call = call_step_functions(
            self.client.clone(),
            &self.endpoint,
            &self.region,
            action,
            &body,
        );
        let answer = tokio::time::timeout(timeout, call)
            .await
            .map_err(|_| {
                ChannelError::Unavailable(format!(
                    "{action} at {} got no answer within {} s",
                    self.endpoint,
                    timeout.as_secs()
                ))
            })?
            .map_err(|why| {
                ChannelError::Unavailable(format!("{action} at {}: {why}", self.endpoint))
            })?;
        classify(action, answer)
    }
}

/// The body of a successful answer, or the error it carries: the task is over
/// (`TaskTimedOut`, `TaskDoesNotExist`, `InvalidToken`), the request is refused for good
/// (retrying will not help), or anything else (the call may succeed later).
fn classify(action: &str, answer: ApiAnswer) -> Result<Value, ChannelError> {
    let Some((code, message)) = answer.error else {
        return Ok(answer.body);
    };
    let text = if message.is_empty() {
        code.clone()
    } else {
        format!("{code}: {message}")
    };
    let over = matches!(
        code.as_str(),
        "TaskTimedOut" | "TaskDoesNotExist" | "InvalidToken"
    );
    let for_good = matches!(
        code.as_str(),
        "ActivityDoesNotExist"
            | "InvalidArn"
            | "AccessDeniedException"
            | "UnrecognizedClientException"
            | "InvalidSignatureException"
            | "UnknownOperationException"
            | "ValidationException"
    );
    Err(if over {
        ChannelError::TaskOver(text)
    } else if for_good {
        ChannelError::Refused { code, message }
    } else {
        ChannelError::Unavailable(format!("{text} (HTTP {}, calling {action})", answer.status))
    })
}

impl TaskChannel for ApiChannel {
    fn heartbeat<'a>(&'a self, token: &'a str) -> ChannelFuture<'a, ()> {
        Box::pin(async move {
            self.call(
                "SendTaskHeartbeat",
                json!({ "taskToken": token }),
                CALL_TIMEOUT,
            )
            .await
            .map(drop)
        })
    }

    fn answer<'a>(&'a self, token: &'a str, answer: TaskAnswer) -> ChannelFuture<'a, ()> {
        Box::pin(async move {
            let (action, body) = match answer {
                TaskAnswer::Success(output) => (
                    "SendTaskSuccess",
                    json!({ "taskToken": token, "output": output }),
                ),
                TaskAnswer::Failure { error, cause } => {
                    let mut body = json!({ "taskToken": token });
                    if let Some(error) = error {
                        body["error"] = json!(error);
                    }
                    if let Some(cause) = cause {
                        body["cause"] = json!(cause);
                    }
                    ("SendTaskFailure", body)
                }
                TaskAnswer::Heartbeat => ("SendTaskHeartbeat", json!({ "taskToken": token })),
            };
            self.call(action, body, CALL_TIMEOUT).await.map(drop)
        })
    }

    fn look<'a>(&'a self, _token: &'a str) -> ChannelFuture<'a, TaskLook> {
        Box::pin(async { Ok(TaskLook::Unknown) })
    }

    /// The endpoint for the AWS CLI and SDKs (`AWS_ENDPOINT_URL_SFN`), so a handler that
    /// answers or beats by itself reaches the same API; the activity's region and account.
    fn handler_env(&self) -> Vec<(String, String)> {
        vec![
            ("AWS_ENDPOINT_URL_SFN".into(), self.endpoint.clone()),
            ("AWS_REGION".into(), self.region.clone()),
            ("AWS_DEFAULT_REGION".into(), self.region.clone()),
            ("SFN_LOCAL_ACCOUNT_ID".into(), self.account.clone()),
        ]
    }
}

impl ActivityChannel for ApiChannel {
    fn next_task<'a>(
        &'a self,
        activity_arn: &'a str,
        worker_name: Option<&'a str>,
    ) -> ChannelFuture<'a, Option<Assignment>> {
        Box::pin(async move {
            let mut body = json!({ "activityArn": activity_arn });
            if let Some(name) = worker_name {
                body["workerName"] = json!(name);
            }
            let got = self.call("GetActivityTask", body, POLL_TIMEOUT).await?;
            // `{}` (or an empty token) when no task came within the poll.
            let Some(token) = got["taskToken"].as_str().filter(|t| !t.is_empty()) else {
                return Ok(None);
            };
            Ok(Some(Assignment {
                token: token.to_owned(),
                input: got["input"].as_str().unwrap_or("{}").to_owned(),
                env: Vec::new(),
                label: format!("a task of {activity_arn}"),
            }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, code: &str) -> ApiAnswer {
        ApiAnswer {
            status,
            body: json!({}),
            error: Some((code.into(), "m".into())),
        }
    }

    #[test]
    fn refusals_are_sorted_by_what_the_worker_can_do() {
        assert!(matches!(
            classify("SendTaskHeartbeat", answer(400, "TaskTimedOut")),
            Err(ChannelError::TaskOver(w)) if w == "TaskTimedOut: m"
        ));
        assert!(matches!(
            classify("GetActivityTask", answer(400, "ActivityDoesNotExist")),
            Err(ChannelError::Refused { code, .. }) if code == "ActivityDoesNotExist"
        ));
        assert!(matches!(
            classify("GetActivityTask", answer(400, "ThrottlingException")),
            Err(ChannelError::Unavailable(_))
        ));
        let ok = ApiAnswer {
            status: 200,
            body: json!({"taskToken": "t"}),
            error: None,
        };
        assert_eq!(classify("GetActivityTask", ok).unwrap()["taskToken"], "t");
    }

    #[test]
    fn the_activity_arn_gives_the_region_and_the_url_must_be_http() {
        let arn = "arn:aws:states:eu-west-1:111122223333:activity:a";
        let c = ApiChannel::new("http://127.0.0.1:8083/", arn).expect("channel");
        assert_eq!(c.region, "eu-west-1");
        assert_eq!(c.endpoint, "http://127.0.0.1:8083");
        assert!(c.handler_env().contains(&(
            "AWS_ENDPOINT_URL_SFN".into(),
            "http://127.0.0.1:8083".into()
        )));
        assert!(c
            .handler_env()
            .contains(&("SFN_LOCAL_ACCOUNT_ID".into(), "111122223333".into())));
        assert!(matches!(
            ApiChannel::new("ftp://x", arn),
            Err(ApiChannelError::BadUrl { .. })
        ));
        assert!(matches!(
            ApiChannel::new("localhost:8083", arn),
            Err(ApiChannelError::BadUrl { .. })
        ));
    }
}
