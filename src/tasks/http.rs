//! The HTTP Task (`arn:aws:states:::http:invoke`): a Task that calls an HTTP API. Its
//! `Parameters`/`Arguments` are AWS's: `ApiEndpoint` and `Method` (required), `Headers`,
//! `QueryParameters`, `RequestBody`, `Transform` (`RequestBodyEncoding` `NONE` or
//! `URL_ENCODED`, with `RequestEncodingOptions.ArrayFormat` `INDICES` (the default),
//! `REPEAT`, `COMMAS` or `BRACKETS`) and `Authentication.ConnectionArn`.
//!
//! The result has AWS's shape: `Headers` (each a list of values), `ResponseBody` (parsed when
//! it is JSON), `StatusCode` and `StatusText`. A status outside 2xx fails the task with
//! `States.Http.StatusCode.NNN` (the cause is that result as JSON); a call that gets no
//! answer (refused, timed out after 60 seconds as on AWS) fails with `States.Http.Socket`.
//!
//! Which hosts may be called is [`HttpAccess`]: any from the command line (the user runs their
//! own definitions), none from `serve` unless `--allow-http-invoke` says (a server that calls any
//! URL a request names is a proxy into the machine for whoever can reach it).
//!
//! An EventBridge connection's credentials do not exist on this machine: no authorization is
//! added to the request. [`invoke`] also returns the exchange as it went over the wire, which
//! TestState shows at `TRACE` (`inspectionData.request`/`response`).

use crate::asl::error::StatesError;
use crate::asl::resource::{Resource, ResourceKind};
use serde_json::{json, Map, Value};
use std::time::Duration;

/// How long a call may take before it fails with `States.Http.Socket` (AWS's limit).
const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// Most bytes of a response body read (AWS's HTTP Task reads up to 256 KiB).
const MAX_RESPONSE_BYTES: usize = 256 * 1024;
/// Headers that carry credentials: shown as `(redacted)` unless secrets are revealed.
const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
];

/// Which hosts an HTTP Task may call.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum HttpAccess {
    /// Any host (the command line's `run`, `test`, `test-state`; `serve --allow-http-invoke`).
    #[default]
    Any,
    /// None (`serve` by default).
    Refused,
    /// Only these: `HOST` (any port) or `HOST:PORT`, lowercase (`serve --allow-http-invoke
    /// HOST,...`).
    Hosts(Vec<String>),
}

impl HttpAccess {
    /// `--allow-http-invoke`'s value: absent refuses, empty or `*` allows any host, else a
    /// list of `HOST` or `HOST:PORT`.
    pub fn from_flag(flag: Option<&[String]>) -> HttpAccess {
        match flag {
            None => HttpAccess::Refused,
            Some(hosts) => {
                let hosts: Vec<String> = hosts
                    .iter()
                    .flat_map(|h| h.split(','))
                    .map(|h| h.trim().trim_matches(['[', ']']).to_ascii_lowercase())
                    .filter(|h| !h.is_empty())
                    .collect();
                if hosts.is_empty() || hosts.iter().any(|h| h == "*") {
                    HttpAccess::Any
                } else {
                    HttpAccess::Hosts(hosts)
                }
            }
        }
    }

    /// Whether this is [`HttpAccess::Any`].
    pub fn is_any(&self) -> bool {
        *self == HttpAccess::Any
    }

    /// Whether `url` may be called.
    fn allows(&self, url: &reqwest::Url) -> bool {
        let hosts = match self {
            HttpAccess::Any => return true,
            HttpAccess::Refused => return false,
            HttpAccess::Hosts(hosts) => hosts,
        };
        let host = url
            .host_str()
            .unwrap_or_default()
            .trim_matches(['[', ']'])
            .to_ascii_lowercase();
        let with_port = format!("{host}:{}", url.port_or_known_default().unwrap_or(0));
        hosts.iter().any(|h| *h == host || *h == with_port)
    }

    /// The error of a call to `url` that is not allowed.
    fn refusal(&self, url: &str) -> StatesError {
        let why = match self {
            HttpAccess::Hosts(hosts) => format!(
                "its host is not one --allow-http-invoke names ({})",
                hosts.join(", ")
            ),
            _ => "sfn-local serve calls no HTTP API unless started with --allow-http-invoke (any host) or --allow-http-invoke HOST[,HOST...]".to_owned(),
        };
        runtime(format!(
            "The HTTP Task may not call {url}: {why}. A server that calls whatever URL a request names would let anyone who reaches it (a web page, through DNS rebinding) call services on this machine."
        ))
    }
}

/// Whether a Task's resource is the HTTP Task.
pub fn is_http_invoke(resource: &Resource) -> bool {
    matches!(&resource.kind, ResourceKind::Integration { service, action, .. }
        if service == "http" && action == "invoke")
}

/// The request as sent (TestState's `InspectionDataRequest`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SentRequest {
    /// `http` or `https`.
    pub protocol: String,
    /// The method.
    pub method: String,
    /// The URL with its query.
    pub url: String,
    /// Name and value of each header, in the order sent.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: String,
}

/// The response as received (TestState's `InspectionDataResponse`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReceivedResponse {
    /// `http` or `https`.
    pub protocol: String,
    /// The status code.
    pub status_code: u16,
    /// The status's reason phrase.
    pub status_message: String,
    /// Name and value of each header, in the order received.
    pub headers: Vec<(String, String)>,
    /// The body (at most 256 KiB of it).
    pub body: String,
}

/// What went over the wire: the request, and the response when one came.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Exchange {
    /// The request.
    pub request: SentRequest,
    /// The response, if any.
    pub response: Option<ReceivedResponse>,
}

/// Headers as TestState shows them: `[Name: value, Name: value]`, credentials redacted
/// unless `reveal`.
pub fn shown_headers(headers: &[(String, String)], reveal: bool) -> String {
    let shown: Vec<String> = headers
        .iter()
        .map(|(name, value)| {
            let secret = SECRET_HEADERS.contains(&name.to_ascii_lowercase().as_str());
            if secret && !reveal {
                format!("{name}: (redacted)")
            } else {
                format!("{name}: {value}")
            }
        })
        .collect();
    format!("[{}]", shown.join(", "))
}

fn runtime(cause: impl Into<String>) -> StatesError {
    StatesError::runtime(cause.into())
}

/// A scalar as it goes into a URL or a header.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `RequestBody` as `application/x-www-form-urlencoded`, arrays spelled per `ArrayFormat`.
fn url_encoded(body: &Value, array_format: &str) -> Result<String, StatesError> {
    let Value::Object(fields) = body else {
        return Err(runtime(
            "The HTTP Task's RequestBody must be a JSON object to be URL_ENCODED",
        ));
    };
    let mut out = reqwest::Url::parse("http://x/").map_err(|e| runtime(e.to_string()))?;
    {
        let mut pairs = out.query_pairs_mut();
        for (key, value) in fields {
            match value {
                Value::Array(items) => match array_format {
                    "REPEAT" => items.iter().for_each(|i| {
                        pairs.append_pair(key, &plain(i));
                    }),
                    "COMMAS" => {
                        let joined: Vec<String> = items.iter().map(plain).collect();
                        pairs.append_pair(key, &joined.join(","));
                    }
                    "BRACKETS" => items.iter().for_each(|i| {
                        pairs.append_pair(&format!("{key}[]"), &plain(i));
                    }),
                    "INDICES" => items.iter().enumerate().for_each(|(n, i)| {
                        pairs.append_pair(&format!("{key}[{n}]"), &plain(i));
                    }),
                    other => {
                        return Err(runtime(format!(
                            "The HTTP Task's ArrayFormat '{other}' is not one of INDICES, REPEAT, COMMAS, BRACKETS"
                        )))
                    }
                },
                other => {
                    pairs.append_pair(key, &plain(other));
                }
            }
        }
    }
    Ok(out.query().unwrap_or_default().to_owned())
}

/// The request an HTTP Task's parameters describe.
fn build(parameters: &Value, region: &str) -> Result<SentRequest, StatesError> {
    let text = |name: &str| parameters.get(name).and_then(Value::as_str);
    let endpoint = text("ApiEndpoint")
        .ok_or_else(|| runtime("The HTTP Task needs a string field 'ApiEndpoint'"))?;
    let method = text("Method")
        .ok_or_else(|| runtime("The HTTP Task needs a string field 'Method'"))?
        .to_ascii_uppercase();
    if !matches!(
        method.as_str(),
        "GET" | "POST" | "PUT" | "DELETE" | "PATCH" | "OPTIONS" | "HEAD"
    ) {
        return Err(runtime(format!(
            "The HTTP Task's Method '{method}' is not one of GET, POST, PUT, DELETE, PATCH, OPTIONS, HEAD"
        )));
    }
    let mut url = reqwest::Url::parse(endpoint).map_err(|e| {
        runtime(format!(
            "The HTTP Task's ApiEndpoint '{endpoint}' is not a URL: {e}"
        ))
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(runtime(format!(
            "The HTTP Task's ApiEndpoint '{endpoint}' must be an http:// or https:// URL"
        )));
    }
    if let Some(Value::Object(query)) = parameters.get("QueryParameters") {
        let mut pairs = url.query_pairs_mut();
        for (key, value) in query {
            match value {
                Value::Array(items) => items.iter().for_each(|i| {
                    pairs.append_pair(key, &plain(i));
                }),
                other => {
                    pairs.append_pair(key, &plain(other));
                }
            }
        }
    }
    let mut headers: Vec<(String, String)> = match parameters.get("Headers") {
        Some(Value::Object(h)) => h.iter().map(|(k, v)| (k.clone(), plain(v))).collect(),
        Some(other) if !other.is_null() => {
            return Err(runtime("The HTTP Task's Headers must be a JSON object"))
        }
        _ => Vec::new(),
    };
    let has = |headers: &[(String, String)], name: &str| {
        headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name))
    };
    let transform = parameters.get("Transform");
    let encoding = transform
        .and_then(|t| t.get("RequestBodyEncoding"))
        .and_then(Value::as_str)
        .unwrap_or("NONE");
    let body = match (parameters.get("RequestBody"), encoding) {
        (None, _) => String::new(),
        (Some(body), "URL_ENCODED") => {
            let format = transform
                .and_then(|t| t.pointer("/RequestEncodingOptions/ArrayFormat"))
                .and_then(Value::as_str)
                .unwrap_or("INDICES");
            if !has(&headers, "Content-Type") {
                headers.push((
                    "Content-Type".into(),
                    "application/x-www-form-urlencoded".into(),
                ));
            }
            url_encoded(body, format)?
        }
        (Some(body), "NONE") => {
            if !has(&headers, "Content-Type") {
                headers.push(("Content-Type".into(), "application/json".into()));
            }
            body.to_string()
        }
        (Some(_), other) => {
            return Err(runtime(format!(
                "The HTTP Task's RequestBodyEncoding '{other}' is not one of NONE, URL_ENCODED"
            )))
        }
    };
    headers.push((
        "User-Agent".into(),
        format!("Amazon|StepFunctions|HttpInvoke|{region}"),
    ));
    Ok(SentRequest {
        protocol: url.scheme().to_owned(),
        method,
        url: url.to_string(),
        headers,
        body,
    })
}

/// AWS's result for a response.
fn result_of(response: &ReceivedResponse) -> Value {
    let mut headers = Map::new();
    for (name, value) in &response.headers {
        let entry = headers
            .entry(name.to_ascii_lowercase())
            .or_insert_with(|| json!([]));
        if let Value::Array(values) = entry {
            values.push(Value::String(value.clone()));
        }
    }
    let body = serde_json::from_str::<Value>(&response.body)
        .unwrap_or_else(|_| Value::String(response.body.clone()));
    json!({
        "Headers": headers,
        "ResponseBody": body,
        "StatusCode": response.status_code,
        "StatusText": response.status_message,
    })
}

/// Makes the call one attempt of an HTTP Task makes, with `parameters` its effective
/// parameters, if `access` allows its host (and the host of every redirect). Returns the
/// task's result or error, and the exchange (none when no request was sent).
pub async fn invoke(
    parameters: &Value,
    region: &str,
    access: &HttpAccess,
) -> (Result<Value, StatesError>, Option<Exchange>) {
    // The call is outside work: a virtual clock holds until it answers.
    crate::clock::outside(call(parameters, region, access)).await
}

/// The call of [`invoke`].
async fn call(
    parameters: &Value,
    region: &str,
    access: &HttpAccess,
) -> (Result<Value, StatesError>, Option<Exchange>) {
    let sent = match build(parameters, region) {
        Ok(r) => r,
        Err(e) => return (Err(e), None),
    };
    if !reqwest::Url::parse(&sent.url).is_ok_and(|u| access.allows(&u)) {
        return (Err(access.refusal(&sent.url)), None);
    }
    let mut exchange = Exchange {
        request: sent.clone(),
        response: None,
    };
    let socket = |e: String| StatesError::new("States.Http.Socket", e);
    let redirects = {
        let access = access.clone();
        reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= 10 {
                attempt.error("too many redirects")
            } else if access.allows(attempt.url()) {
                attempt.follow()
            } else {
                let refused = access.refusal(attempt.url().as_str());
                attempt.error(refused.cause.unwrap_or_default())
            }
        })
    };
    let client = match reqwest::Client::builder()
        .timeout(CALL_TIMEOUT)
        .redirect(redirects)
        .build()
    {
        Ok(c) => c,
        Err(e) => return (Err(socket(e.to_string())), Some(exchange)),
    };
    let method =
        reqwest::Method::from_bytes(sent.method.as_bytes()).unwrap_or(reqwest::Method::GET);
    let mut call = client.request(method, &sent.url);
    for (name, value) in &sent.headers {
        call = call.header(name, value);
    }
    if !sent.body.is_empty() {
        call = call.body(sent.body.clone());
    }
    let mut answer = match call.send().await {
        Ok(a) => a,
        Err(e) => {
            return (
                Err(socket(format!(
                    "The HTTP Task could not call {}: {e}",
                    sent.url
                ))),
                Some(exchange),
            )
        }
    };
    let status = answer.status();
    let headers = answer
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let mut body = Vec::new();
    loop {
        match answer.chunk().await {
            Ok(Some(chunk)) => {
                let room = MAX_RESPONSE_BYTES.saturating_sub(body.len());
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if body.len() >= MAX_RESPONSE_BYTES {
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => {
                return (
                    Err(socket(format!(
                        "The HTTP Task's response from {} broke off: {e}",
                        sent.url
                    ))),
                    Some(exchange),
                )
            }
        }
    }
    let response = ReceivedResponse {
        protocol: sent.protocol.clone(),
        status_code: status.as_u16(),
        status_message: status.canonical_reason().unwrap_or_default().to_owned(),
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    let result = result_of(&response);
    exchange.response = Some(response);
    if status.is_success() {
        (Ok(result), Some(exchange))
    } else {
        let error = StatesError::new(
            format!("States.Http.StatusCode.{}", status.as_u16()),
            result.to_string(),
        );
        (Err(error), Some(exchange))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_make_the_request_aws_describes() {
        let r = build(
            &json!({"ApiEndpoint": "http://127.0.0.1:9/orders", "Method": "post",
                    "QueryParameters": {"page": 2, "tag": ["a", "b"]},
                    "Headers": {"Authorization": "Bearer x"},
                    "RequestBody": {"ids": [1, 2], "q": "a b"},
                    "Transform": {"RequestBodyEncoding": "URL_ENCODED"}}),
            "eu-west-1",
        )
        .unwrap();
        assert_eq!(r.method, "POST");
        assert_eq!(r.url, "http://127.0.0.1:9/orders?page=2&tag=a&tag=b");
        assert_eq!(r.body, "ids%5B0%5D=1&ids%5B1%5D=2&q=a+b");
        let shown = shown_headers(&r.headers, false);
        assert_eq!(
            shown,
            "[Authorization: (redacted), Content-Type: application/x-www-form-urlencoded, User-Agent: Amazon|StepFunctions|HttpInvoke|eu-west-1]"
        );
        assert!(shown_headers(&r.headers, true).contains("Bearer x"));
        let e = build(&json!({"ApiEndpoint": "ftp://x", "Method": "GET"}), "r").unwrap_err();
        assert!(e.cause.unwrap_or_default().contains("http:// or https://"));
        let e = build(&json!({"ApiEndpoint": "http://x", "Method": "BREW"}), "r").unwrap_err();
        assert!(e.cause.unwrap_or_default().contains("not one of GET"));
    }

    #[test]
    fn access_names_hosts_with_or_without_ports() {
        let url = |u: &str| reqwest::Url::parse(u).unwrap();
        let list = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(HttpAccess::from_flag(None), HttpAccess::Refused);
        assert!(HttpAccess::from_flag(Some(&[])).is_any());
        assert!(HttpAccess::from_flag(Some(&list(&["*"]))).is_any());
        let some = HttpAccess::from_flag(Some(&list(&["API.example.com", "127.0.0.1:9000,[::1]"])));
        assert!(some.allows(&url("https://api.example.com/x")));
        assert!(some.allows(&url("http://127.0.0.1:9000/")));
        assert!(!some.allows(&url("http://127.0.0.1:9001/")));
        assert!(some.allows(&url("http://[::1]:5/")));
        assert!(!some.allows(&url("http://evil.example/")));
        assert!(!HttpAccess::Refused.allows(&url("http://127.0.0.1/")));
        let refused = HttpAccess::Refused.refusal("http://127.0.0.1:22/");
        assert!(refused.cause.unwrap().contains("--allow-http-invoke"));
    }
}
