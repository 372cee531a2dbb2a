//! `--endpoint SERVICE=URL`: Task states that call AWS services at local endpoints (moto,
//! LocalStack, `sam local start-lambda`), signed with SigV4 from the usual credential
//! variables, as AWS Step Functions Local does with its `*_ENDPOINT` settings.
//!
//! Optimized integrations send the request AWS's integration sends and shape the result as it
//! does (`lambda:invoke`, the legacy Lambda ARN, `sqs:sendMessage`, `sns:publish`,
//! `dynamodb:getItem|putItem|updateItem|deleteItem`, `events:putEvents`); `aws-sdk:SERVICE:ACTION`
//! calls any service whose protocol is JSON, the services whose models `model` embeds
//! (Lambda over rest-json, Route 53 over rest-xml, EC2 over ec2, IAM, CloudWatch, SNS and STS
//! over query), and S3's object and bucket operations (REST-XML,
//! in `s3`, which also serves a distributed Map's `ItemReader`/`ResultWriter`); `.sync` jobs of
//! other services than Step Functions are polled to their end in `jobs`. Service errors are named as AWS names them:
//! `DynamoDB.ResourceNotFoundException` for optimized integrations (the Java SDK v1's exception
//! classes), `DynamoDb.ResourceNotFoundException` for `aws-sdk` ones (SDK v2's).

mod jobs;
mod model;
mod query;
mod s3;

pub use s3::S3Endpoint;

use crate::asl::error::StatesError;
use crate::asl::resource::{IntegrationPattern, ResourceKind};
use crate::tasks::nested::sdk_http_metadata;
use crate::tasks::TaskRequest;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// How a service is spoken to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    /// `X-Amz-Target: PREFIX.Action`, JSON body (version 1.0 or 1.1).
    Json(&'static str, &'static str),
    /// Form-encoded `Action=…`, XML answers (SNS).
    Query,
    /// Lambda's REST API.
    Lambda,
    /// S3's REST API with XML answers (path-style: `URL/BUCKET/KEY`).
    RestXml,
    /// Only through `aws-sdk:*`, built from the service's model (`model`): rest-json, rest-xml,
    /// ec2 or query.
    Model,
    /// AWS Batch's REST-JSON API: every action is `POST /v1/ACTION` (lower case) with a JSON
    /// body.
    RestJsonV1,
}

/// What sfn-local knows of a service.
#[derive(Debug, Clone, Copy)]
struct Service {
    /// The endpoint name (`--endpoint NAME=URL`, `NAME_ENDPOINT`).
    key: &'static str,
    /// The SigV4 signing name.
    signing: &'static str,
    protocol: Protocol,
    /// The Java SDK v1 client name in causes (`AmazonDynamoDBv2`).
    v1_name: &'static str,
    /// The error prefix of optimized integrations (`DynamoDB`).
    v1_prefix: &'static str,
    /// The error prefix and cause name of `aws-sdk` integrations (`DynamoDb`).
    v2_name: &'static str,
}

const SERVICES: &[Service] = &[
    Service {
        key: "lambda",
        signing: "lambda",
        protocol: Protocol::Lambda,
        v1_name: "AWSLambda",
        v1_prefix: "Lambda",
        v2_name: "Lambda",
    },
    Service {
        key: "sqs",
        signing: "sqs",
        protocol: Protocol::Json("AmazonSQS", "1.0"),
        v1_name: "AmazonSQS",
        v1_prefix: "SQS",
        v2_name: "Sqs",
    },
    Service {
        key: "sns",
        signing: "sns",
        protocol: Protocol::Query,
        v1_name: "AmazonSNS",
        v1_prefix: "SNS",
        v2_name: "Sns",
    },
    Service {
        key: "dynamodb",
        signing: "dynamodb",
        protocol: Protocol::Json("DynamoDB_20120810", "1.0"),
        v1_name: "AmazonDynamoDBv2",
        v1_prefix: "DynamoDB",
        v2_name: "DynamoDb",
    },
    Service {
        key: "events",
        signing: "events",
        protocol: Protocol::Json("AWSEvents", "1.1"),
        v1_name: "AmazonCloudWatchEvents",
        v1_prefix: "EventBridge",
        v2_name: "EventBridge",
    },
    Service {
        key: "s3",
        signing: "s3",
        protocol: Protocol::RestXml,
        v1_name: "Amazon S3",
        v1_prefix: "S3",
        v2_name: "S3",
    },
    Service {
        key: "glue",
        signing: "glue",
        protocol: Protocol::Json("AWSGlue", "1.1"),
        v1_name: "AWSGlue",
        v1_prefix: "Glue",
        v2_name: "Glue",
    },
    Service {
        key: "codebuild",
        signing: "codebuild",
        protocol: Protocol::Json("CodeBuild_20161006", "1.1"),
        v1_name: "AWSCodeBuild",
        v1_prefix: "CodeBuild",
        v2_name: "CodeBuild",
    },
    Service {
        key: "secretsmanager",
        signing: "secretsmanager",
        protocol: Protocol::Json("secretsmanager", "1.1"),
        v1_name: "AWSSecretsManager",
        v1_prefix: "SecretsManager",
        v2_name: "SecretsManager",
    },
    Service {
        key: "ssm",
        signing: "ssm",
        protocol: Protocol::Json("AmazonSSM", "1.1"),
        v1_name: "AWSSimpleSystemsManagement",
        v1_prefix: "SSM",
        v2_name: "Ssm",
    },
    Service {
        key: "kms",
        signing: "kms",
        protocol: Protocol::Json("TrentService", "1.1"),
        v1_name: "AWSKMS",
        v1_prefix: "KMS",
        v2_name: "Kms",
    },
    Service {
        key: "kinesis",
        signing: "kinesis",
        protocol: Protocol::Json("Kinesis_20131202", "1.1"),
        v1_name: "AmazonKinesis",
        v1_prefix: "Kinesis",
        v2_name: "Kinesis",
    },
    Service {
        key: "logs",
        signing: "logs",
        protocol: Protocol::Json("Logs_20140328", "1.1"),
        v1_name: "AWSLogs",
        v1_prefix: "CloudWatchLogs",
        v2_name: "CloudWatchLogs",
    },
    Service {
        key: "ecs",
        signing: "ecs",
        protocol: Protocol::Json("AmazonEC2ContainerServiceV20141113", "1.1"),
        v1_name: "AmazonECS",
        v1_prefix: "ECS",
        v2_name: "Ecs",
    },
    Service {
        key: "sagemaker",
        signing: "sagemaker",
        protocol: Protocol::Json("SageMaker", "1.1"),
        v1_name: "AmazonSageMaker",
        v1_prefix: "SageMaker",
        v2_name: "SageMaker",
    },
    Service {
        key: "batch",
        signing: "batch",
        protocol: Protocol::RestJsonV1,
        v1_name: "AWSBatch",
        v1_prefix: "Batch",
        v2_name: "Batch",
    },
    Service {
        key: "sfn",
        signing: "states",
        protocol: Protocol::Json("AWSStepFunctions", "1.0"),
        v1_name: "AWSStepFunctions",
        v1_prefix: "StepFunctions",
        v2_name: "Sfn",
    },
    Service {
        key: "route53",
        signing: "route53",
        protocol: Protocol::Model,
        v1_name: "AmazonRoute53",
        v1_prefix: "Route53",
        v2_name: "Route53",
    },
    Service {
        key: "ec2",
        signing: "ec2",
        protocol: Protocol::Model,
        v1_name: "AmazonEC2",
        v1_prefix: "EC2",
        v2_name: "Ec2",
    },
    Service {
        key: "iam",
        signing: "iam",
        protocol: Protocol::Model,
        v1_name: "AmazonIdentityManagement",
        v1_prefix: "IAM",
        v2_name: "Iam",
    },
    Service {
        key: "cloudwatch",
        signing: "monitoring",
        protocol: Protocol::Model,
        v1_name: "AmazonCloudWatch",
        v1_prefix: "CloudWatch",
        v2_name: "CloudWatch",
    },
    Service {
        key: "sts",
        signing: "sts",
        protocol: Protocol::Model,
        v1_name: "AWSSecurityTokenService",
        v1_prefix: "STS",
        v2_name: "Sts",
    },
];

/// The endpoint names `--endpoint` and the environment accept, with Step Functions Local's
/// variable for each.
pub const ENDPOINT_VARIABLES: &[(&str, &str)] = &[
    ("lambda", "LAMBDA_ENDPOINT"),
    ("sqs", "SQS_ENDPOINT"),
    ("sns", "SNS_ENDPOINT"),
    ("dynamodb", "DYNAMODB_ENDPOINT"),
    ("events", "EVENTBRIDGE_ENDPOINT"),
    ("s3", "S3_ENDPOINT"),
    ("glue", "GLUE_ENDPOINT"),
    ("codebuild", "CODEBUILD_ENDPOINT"),
    ("secretsmanager", "SECRETSMANAGER_ENDPOINT"),
    ("ssm", "SSM_ENDPOINT"),
    ("kms", "KMS_ENDPOINT"),
    ("kinesis", "KINESIS_ENDPOINT"),
    ("logs", "LOGS_ENDPOINT"),
    ("ecs", "ECS_ENDPOINT"),
    ("sagemaker", "SAGE_MAKER_ENDPOINT"),
    ("batch", "BATCH_ENDPOINT"),
    ("sfn", "STEP_FUNCTIONS_ENDPOINT"),
    ("route53", "ROUTE53_ENDPOINT"),
    ("ec2", "EC2_ENDPOINT"),
    ("iam", "IAM_ENDPOINT"),
    ("cloudwatch", "CLOUDWATCH_ENDPOINT"),
    ("sts", "STS_ENDPOINT"),
    ("all", "AWS_ENDPOINT_URL"),
];

/// Step Functions Local's variable for the endpoint of `service` (a resource's service name,
/// `lambda`, `dynamodb`, ...), if it has one.
pub fn endpoint_variable(service: &str) -> Option<&'static str> {
    let key = service_key(service)?;
    ENDPOINT_VARIABLES
        .iter()
        .find(|(name, _)| *name == key)
        .map(|(_, var)| *var)
}

fn service_key(name: &str) -> Option<&'static str> {
    service(name).map(|s| s.key)
}

/// The service of a name as `--endpoint` or an `aws-sdk:NAME` resource spells it.
fn service(name: &str) -> Option<&'static Service> {
    let key = match name {
        "eventbridge" => "events",
        "states" | "stepfunctions" => "sfn",
        "cloudwatchlogs" => "logs",
        other => other,
    };
    SERVICES.iter().find(|s| s.key == key)
}

/// Why an `--endpoint` is malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{binding}: {why}")]
pub struct EndpointError {
    binding: String,
    why: String,
}

/// The endpoints Tasks call, by service, and the credentials they sign with.
#[derive(Debug, Clone, Default)]
pub struct Endpoints {
    urls: BTreeMap<&'static str, String>,
    all: Option<String>,
    client: Option<Arc<reqwest::Client>>,
}

impl Endpoints {
    /// Reads `SERVICE=URL` bindings, after Step Functions Local's environment variables
    /// (`LAMBDA_ENDPOINT`, ...; a binding wins over a variable).
    pub fn parse(
        bindings: &[String],
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Endpoints, EndpointError> {
        let mut e = Endpoints::default();
        for (name, var) in ENDPOINT_VARIABLES {
            if let Some(url) = env(var).filter(|u| !u.is_empty()) {
                // Said as it was set: the variable, not a flag the user never gave.
                e.set(name, &url, &format!("{var}={url}"))?;
            }
        }
        for binding in bindings {
            let (name, url) = binding.split_once('=').ok_or_else(|| EndpointError {
                binding: format!("--endpoint '{binding}'"),
                why: "expected SERVICE=URL".into(),
            })?;
            e.set(
                &name.to_ascii_lowercase(),
                url,
                &format!("--endpoint '{binding}'"),
            )?;
        }
        Ok(e)
    }

    fn set(&mut self, name: &str, url: &str, binding: &str) -> Result<(), EndpointError> {
        let bad = |why: String| EndpointError {
            binding: binding.to_owned(),
            why,
        };
        let parsed = reqwest::Url::parse(url).map_err(|e| bad(format!("not a URL ({e})")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(bad("the URL must start with http:// or https://".into()));
        }
        let url = url.trim_end_matches('/').to_owned();
        if name == "all" {
            self.all = Some(url);
        } else {
            let s = service(name).ok_or_else(|| {
                let known: Vec<&str> = SERVICES.iter().map(|s| s.key).collect();
                bad(format!(
                    "unknown service '{name}' (known: {}, or all)",
                    known.join(", ")
                ))
            })?;
            self.urls.insert(s.key, url);
        }
        if self.client.is_none() {
            let client = reqwest::Client::builder()
                .build()
                .map_err(|e| bad(format!("cannot build the HTTP client: {e}")))?;
            self.client = Some(Arc::new(client));
        }
        Ok(())
    }

    /// The endpoints as `SERVICE=URL` bindings (stored with an execution for `resume`).
    pub fn bindings(&self) -> Vec<String> {
        let mut out: Vec<String> = self.urls.iter().map(|(k, u)| format!("{k}={u}")).collect();
        if let Some(all) = &self.all {
            out.push(format!("all={all}"));
        }
        out
    }

    /// Whether any endpoint is set.
    pub fn is_empty(&self) -> bool {
        self.urls.is_empty() && self.all.is_none()
    }

    fn url_of(&self, s: &Service) -> Option<&str> {
        self.urls
            .get(s.key)
            .or(self.all.as_ref())
            .map(String::as_str)
    }

    /// The call a resource makes, when its service has an endpoint.
    fn call_for(&self, kind: &ResourceKind) -> Option<(Call, &'static Service, &str)> {
        let (call, name) = match kind {
            ResourceKind::LambdaFunction => (Call::LegacyLambda, "lambda"),
            ResourceKind::Integration {
                service, action, ..
            } => {
                // The pattern suffix says how to wait, not what to call.
                let action = action.split('.').next().unwrap_or(action).to_owned();
                match service.strip_prefix("aws-sdk:") {
                    Some(sdk) => (Call::Sdk(action), sdk),
                    None => (Call::Optimized(action), service.as_str()),
                }
            }
            ResourceKind::Activity { .. } => return None,
        };
        let s = service(name)?;
        let url = self.url_of(s)?;
        Some((call, s, url))
    }

    /// S3 at its endpoint (`--endpoint s3=URL`, or `all=URL`), for a distributed Map's
    /// `ItemReader` and `ResultWriter`; requests are signed for `region`.
    pub fn s3(&self, region: &str) -> Option<S3Endpoint> {
        let svc = service("s3")?;
        Some(S3Endpoint {
            http: Http {
                client: self.client.clone()?,
                base: self.url_of(svc)?.to_owned(),
                region: region.to_owned(),
                svc,
            },
        })
    }

    /// Whether Tasks with this resource call an endpoint.
    pub fn serves(&self, kind: &ResourceKind) -> bool {
        self.call_for(kind).is_some()
    }

    /// Makes the call of one attempt; a `.sync` job's start response goes to `submitted`, and
    /// a job started before a crash (`submission`, its recorded start response) is found again.
    pub async fn call(
        &self,
        request: &TaskRequest,
        submitted: Option<tokio::sync::oneshot::Sender<Value>>,
        submission: Option<Value>,
    ) -> Result<Value, StatesError> {
        let Some((call, svc, url)) = self.call_for(&request.resource.kind) else {
            return Err(StatesError::runtime("no endpoint for this resource"));
        };
        let client = self
            .client
            .clone()
            .ok_or_else(|| StatesError::runtime("no HTTP client"))?;
        // arn:aws:states:REGION:…: the execution's region signs the request.
        let region = request
            .execution_arn
            .split(':')
            .nth(3)
            .filter(|r| !r.is_empty())
            .unwrap_or("us-east-1")
            .to_owned();
        let http = Http {
            client,
            base: url.to_owned(),
            region,
            svc,
        };
        let params = &request.input;
        match call {
            Call::LegacyLambda => {
                let f = http
                    .lambda_invoke(&request.resource.arn, params, None)
                    .await?;
                match f {
                    LambdaResult::Ok { payload, .. } => Ok(payload),
                    LambdaResult::FunctionError(e) => Err(e),
                }
            }
            Call::Optimized(action)
                if request.resource.pattern() == Some(IntegrationPattern::Sync) =>
            {
                http.sync_job(&action, params, submitted, submission).await
            }
            Call::Optimized(action) => http.optimized(&action, params).await,
            Call::Sdk(action) => http.sdk(&action, params).await,
        }
    }
}

/// A Step Functions API answer, for the crate's own API clients (`sfn-local worker
/// --endpoint-url`): the HTTP status, the JSON body, and the error's code and message when the
/// status says it failed.
#[derive(Debug, Clone)]
pub struct ApiAnswer {
    /// The HTTP status.
    pub status: u16,
    /// The body (`{}` when empty).
    pub body: Value,
    /// `(code, message)` of a failed call (`TaskTimedOut`, `ActivityDoesNotExist`, …).
    pub error: Option<(String, String)>,
}

/// Calls the Step Functions API (`action`, e.g. `GetActivityTask`) at `base`, signed with SigV4
/// for `region` as Task calls are; `Err` when no answer arrived (not reachable, not signable).
pub async fn call_step_functions(
    client: Arc<reqwest::Client>,
    base: &str,
    region: &str,
    action: &str,
    body: &Value,
) -> Result<ApiAnswer, String> {
    let svc = service("sfn").ok_or("Step Functions is not a known service")?;
    let http = Http {
        client,
        base: base.trim_end_matches('/').to_owned(),
        region: region.to_owned(),
        svc,
    };
    let r = http.json_call(action, body).await.map_err(|e| {
        e.cause
            .or(e.error)
            .unwrap_or_else(|| "no answer".to_owned())
    })?;
    let error = (r.status >= 300).then(|| http.error_parts(&r));
    Ok(ApiAnswer {
        status: r.status,
        body: r.json(),
        error,
    })
}

enum Call {
    LegacyLambda,
    Optimized(String),
    Sdk(String),
}

enum LambdaResult {
    Ok { payload: Value, full: Value },
    FunctionError(StatesError),
}

/// One response, as the endpoint sent it.
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn request_id(&self) -> String {
        self.header("x-amzn-RequestId")
            .or_else(|| self.header("x-amz-request-id"))
            .map(str::to_owned)
            .unwrap_or_else(|| crate::random::uuid().to_string())
    }

    /// `SdkHttpMetadata` from the real response's headers.
    fn metadata(&self) -> Value {
        if self.headers.is_empty() {
            // A service that sent no headers at all: dated now (what a real service sends is
            // its own, and repeats only as far as the service does).
            return sdk_http_metadata(
                "application/json",
                self.body.len(),
                &self.request_id(),
                crate::clock::system_now(),
            );
        }
        let mut all = Map::new();
        let mut one = Map::new();
        for (k, v) in &self.headers {
            all.insert(k.clone(), json!([v]));
            one.insert(k.clone(), json!(v));
        }
        json!({ "AllHttpHeaders": all, "HttpHeaders": one, "HttpStatusCode": self.status })
    }

    /// The JSON answer with `SdkHttpMetadata` and `SdkResponseMetadata`, as AWS's optimized
    /// integrations hand it over.
    fn with_metadata(&self) -> Value {
        self.with_metadata_on(self.json())
    }

    /// `body` (the answer, reshaped) with the metadata of [`Response::with_metadata`].
    fn with_metadata_on(&self, body: Value) -> Value {
        let mut out = match body {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        out.insert("SdkHttpMetadata".into(), self.metadata());
        out.insert(
            "SdkResponseMetadata".into(),
            json!({ "RequestId": self.request_id() }),
        );
        Value::Object(out)
    }

    fn json(&self) -> Value {
        if self.body.is_empty() {
            return json!({});
        }
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&self.body).into_owned()))
    }
}

#[derive(Debug, Clone)]
struct Http {
    client: Arc<reqwest::Client>,
    base: String,
    region: String,
    svc: &'static Service,
}

/// `sendMessage` → `SendMessage`.
fn pascal(action: &str) -> String {
    let mut c = action.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// An `aws-sdk` request for a service whose members start small: every key's initial made
/// small, and a JSON `Input`/`Output` sent as its text (as AWS serializes StartExecution's
/// `Input` and SendTaskSuccess's `Output`).
fn camel_request(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let v = match (k.as_str(), v) {
                        ("Input" | "Output", Value::String(_)) => v.clone(),
                        ("Input" | "Output", other) => Value::String(other.to_string()),
                        _ => camel_request(v),
                    };
                    let mut c = k.chars();
                    let key = match c.next() {
                        Some(f) => f.to_lowercase().chain(c).collect(),
                        None => String::new(),
                    };
                    (key, v)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(camel_request).collect()),
        other => other.clone(),
    }
}

/// An `aws-sdk` result of such a service: every key's initial made capital, and the epoch
/// seconds of a `…Date` member as the SDK's ISO 8601 timestamp.
fn pascal_result(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| {
                    let v = match (&v, k.ends_with("Date")) {
                        (Value::Number(n), true) => n
                            .as_f64()
                            .and_then(|secs| {
                                chrono::DateTime::from_timestamp_millis((secs * 1000.0) as i64)
                            })
                            .map(|d| json!(d.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()))
                            .unwrap_or(v),
                        _ => pascal_result(v),
                    };
                    (pascal(&k), v)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(pascal_result).collect()),
        other => other,
    }
}

/// A value sent as text: strings as they are, anything else as its JSON text (as AWS's
/// integrations serialize `MessageBody`, `Message`, `Detail`).
fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn xml_tag<'a>(xml: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let start = xml.find(&open)? + open.len();
    let end = xml[start..].find(&format!("</{tag}>"))? + start;
    Some(&xml[start..end])
}

impl Http {
    /// Whether the service's API spells its members with a small initial (`stateMachineArn`,
    /// `projectName`) while Step Functions takes and hands them over with a capital one ("Parameters
    /// in Step Functions are expressed in PascalCase, even when the native service API is
    /// camelCase", AWS's CodeBuild integration page).
    fn camel_members(&self) -> bool {
        matches!(self.svc.key, "sfn" | "logs" | "codebuild" | "batch")
    }

    /// SigV4's settings: S3 signs its payload's hash in `x-amz-content-sha256` and its paths
    /// as they are (no normalization, encoded once), as AWS's SDKs do for it.
    fn signing_settings(&self) -> aws_sigv4::http_request::SigningSettings {
        use aws_sigv4::http_request as h;
        let mut settings = h::SigningSettings::default();
        if self.svc.protocol == Protocol::RestXml {
            settings.payload_checksum_kind = h::PayloadChecksumKind::XAmzSha256;
            settings.percent_encoding_mode = h::PercentEncodingMode::Single;
            settings.uri_path_normalization_mode = h::UriPathNormalizationMode::Disabled;
        }
        settings
    }

    async fn send(
        &self,
        method: &str,
        path_and_query: &str,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    ) -> Result<Response, StatesError> {
        // The call is outside work: a virtual clock holds until it answers.
        crate::clock::outside(self.call(method, path_and_query, headers, body)).await
    }

    /// The call of [`Http::send`].
    async fn call(
        &self,
        method: &str,
        path_and_query: &str,
        mut headers: Vec<(String, String)>,
        body: Vec<u8>,
    ) -> Result<Response, StatesError> {
        let url = format!("{}{}", self.base, path_and_query);
        let unreachable = |e: String| {
            StatesError::new(
                format!("{}.SdkClientException", self.svc.v1_prefix),
                format!("Unable to execute HTTP request: {e}"),
            )
        };
        let access = std::env::var("AWS_ACCESS_KEY_ID").unwrap_or_else(|_| "test".into());
        let secret = std::env::var("AWS_SECRET_ACCESS_KEY").unwrap_or_else(|_| "test".into());
        let token = std::env::var("AWS_SESSION_TOKEN").ok();
        let identity: aws_smithy_runtime_api::client::identity::Identity =
            aws_credential_types::Credentials::new(access, secret, token, None, "environment")
                .into();
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(self.svc.signing)
            .time(std::time::SystemTime::now())
            .settings(self.signing_settings())
            .build()
            .map_err(|e| unreachable(format!("cannot sign: {e}")))?
            .into();
        let signable = aws_sigv4::http_request::SignableRequest::new(
            method,
            url.clone(),
            headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            aws_sigv4::http_request::SignableBody::Bytes(&body),
        )
        .map_err(|e| unreachable(format!("cannot sign: {e}")))?;
        let (instructions, _) = aws_sigv4::http_request::sign(signable, &params)
            .map_err(|e| unreachable(format!("cannot sign: {e}")))?
            .into_parts();
        for (k, v) in instructions.headers() {
            headers.push((k.to_owned(), v.to_owned()));
        }
        let method = reqwest::Method::from_bytes(method.as_bytes())
            .map_err(|e| unreachable(e.to_string()))?;
        let mut req = self.client.request(method, &url).body(body);
        for (k, v) in &headers {
            req = req.header(k, v);
        }
        let resp = req.send().await.map_err(|e| unreachable(e.to_string()))?;
        let status = resp.status().as_u16();
        let headers = resp
            .headers()
            .iter()
            .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
            .collect();
        let body = resp
            .bytes()
            .await
            .map_err(|e| unreachable(e.to_string()))?
            .to_vec();
        Ok(Response {
            status,
            headers,
            body,
        })
    }

    /// The error code and message of a failed response (JSON `__type`/`message`, Lambda's
    /// `x-amzn-ErrorType`, or XML `<Code>`/`<Message>`).
    fn error_parts(&self, r: &Response) -> (String, String) {
        let body = r.json();
        let text = String::from_utf8_lossy(&r.body).into_owned();
        let code = r
            .header("x-amzn-ErrorType")
            .map(str::to_owned)
            .or_else(|| body["__type"].as_str().map(str::to_owned))
            .or_else(|| body["Type"].as_str().map(str::to_owned))
            .or_else(|| body["code"].as_str().map(str::to_owned))
            .or_else(|| xml_tag(&text, "Code").map(str::to_owned))
            .unwrap_or_else(|| format!("Http{}", r.status));
        // "com.amazonaws.dynamodb.v20120810#ResourceNotFoundException", "X:http://…".
        let code = code.rsplit('#').next().unwrap_or(&code);
        let code = code.split(':').next().unwrap_or(code).to_owned();
        let message = body["message"]
            .as_str()
            .or_else(|| body["Message"].as_str())
            .or_else(|| body["errorMessage"].as_str())
            .map(str::to_owned)
            .or_else(|| xml_tag(&text, "Message").map(str::to_owned))
            .unwrap_or_default();
        (code, message)
    }

    /// A service error as an optimized integration (the Java SDK v1) reports it.
    fn v1_error(&self, r: &Response) -> StatesError {
        let (code, message) = self.error_parts(r);
        let class = if code.ends_with("Exception") && code != "ValidationException" {
            code.clone()
        } else if self.svc.protocol == Protocol::Query {
            format!("{code}Exception")
        } else {
            format!("{}Exception", self.svc.v1_name.trim_end_matches("v2"))
        };
        StatesError::new(
            format!("{}.{class}", self.svc.v1_prefix),
            format!(
                "{message} (Service: {}; Status Code: {}; Error Code: {code}; Request ID: {}; Proxy: null)",
                self.svc.v1_name,
                r.status,
                r.request_id()
            ),
        )
    }

    /// A service error as an `aws-sdk` integration (the SDK v2) reports it.
    fn v2_error(&self, r: &Response) -> StatesError {
        let (code, message) = self.error_parts(r);
        // The SDK v2's class of a service's error: its code with `Exception` (Step Functions'
        // `InvalidToken` is `InvalidTokenException`), the service's base class otherwise.
        let named = code.starts_with(|c: char| c.is_ascii_uppercase()) && !code.starts_with("Http");
        let modeled = model::model(self.svc.key).map(|m| m.error_class(&code));
        let class = if let Some(found) = modeled {
            // The model lists the service's errors; others are the service's base class.
            found.unwrap_or_else(|| format!("{}Exception", self.svc.v2_name))
        } else if code.ends_with("Exception") && code != "ValidationException" {
            code
        } else if named && !code.ends_with("Exception") {
            format!("{code}Exception")
        } else {
            format!("{}Exception", self.svc.v2_name)
        };
        // AWS's recordings since late 2025 end the cause with the SDK's attempt count.
        StatesError::new(
            format!("{}.{class}", self.svc.v2_name),
            format!(
                "{message} (Service: {}, Status Code: {}, Request ID: {}) (SDK Attempt Count: 1)",
                self.svc.v2_name,
                r.status,
                r.request_id()
            ),
        )
    }

    async fn json_call(&self, action: &str, body: &Value) -> Result<Response, StatesError> {
        if self.svc.protocol == Protocol::RestJsonV1 {
            let headers = vec![("content-type".to_owned(), "application/json".to_owned())];
            let path = format!("/v1/{}", action.to_ascii_lowercase());
            return self
                .send("POST", &path, headers, body.to_string().into_bytes())
                .await;
        }
        let Protocol::Json(prefix, version) = self.svc.protocol else {
            return Err(StatesError::runtime(format!(
                "sfn-local calls {} only through its optimized integrations",
                self.svc.key
            )));
        };
        let headers = vec![
            (
                "content-type".to_owned(),
                format!("application/x-amz-json-{version}"),
            ),
            (
                "x-amz-target".to_owned(),
                format!("{prefix}.{}", pascal(action)),
            ),
        ];
        self.send("POST", "/", headers, body.to_string().into_bytes())
            .await
    }

    async fn sdk(&self, action: &str, params: &Value) -> Result<Value, StatesError> {
        if self.svc.protocol == Protocol::RestXml {
            return self.s3_sdk(action, params).await;
        }
        if model::speaks(self.svc.protocol) {
            if let Some(result) = self.model_sdk(action, params).await {
                return result;
            }
        }
        if self.svc.protocol == Protocol::Query {
            return self.query_sdk(action, params).await;
        }
        if !matches!(self.svc.protocol, Protocol::Json(..) | Protocol::RestJsonV1) {
            return Err(StatesError::runtime(format!(
                "aws-sdk:{}:{action}: sfn-local calls aws-sdk integrations of JSON-protocol services, Batch, SNS and S3 only; {} has an optimized integration",
                self.svc.key, self.svc.key
            )));
        }
        // Step Functions hands the SDK's members over with capital initials whatever the
        // service's own JSON spells; Step Functions' and CloudWatch Logs' APIs spell theirs
        // with small ones (`stateMachineArn`, `logGroupName`).
        let camel = self.camel_members();
        let body = if camel {
            camel_request(params)
        } else {
            params.clone()
        };
        let r = self.json_call(action, &body).await?;
        if r.status >= 300 {
            return Err(self.v2_error(&r));
        }
        Ok(if camel {
            pascal_result(r.json())
        } else {
            r.json()
        })
    }

    async fn optimized(&self, action: &str, params: &Value) -> Result<Value, StatesError> {
        let unsupported = || {
            StatesError::runtime(format!(
                "sfn-local does not call {}:{action} yet; use aws-sdk:{}:{action}, --task or a mock",
                self.svc.key, self.svc.key
            ))
        };
        match (self.svc.key, action) {
            ("lambda", "invoke") => {
                let name = params["FunctionName"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                match self
                    .lambda_invoke(&name, &params["Payload"], Some(params))
                    .await?
                {
                    LambdaResult::Ok { full, .. } => Ok(full),
                    LambdaResult::FunctionError(e) => Err(e),
                }
            }
            ("sqs", "sendMessage") => {
                let mut body = params.as_object().cloned().unwrap_or_default();
                if let Some(m) = body.get("MessageBody").cloned() {
                    body.insert("MessageBody".into(), Value::String(as_text(&m)));
                }
                let r = self.json_call("SendMessage", &Value::Object(body)).await?;
                if r.status >= 300 {
                    return Err(self.v1_error(&r));
                }
                Ok(r.with_metadata())
            }
            ("dynamodb", "getItem" | "putItem" | "updateItem" | "deleteItem") => {
                let r = self.json_call(action, params).await?;
                if r.status >= 300 {
                    return Err(self.v1_error(&r));
                }
                Ok(r.with_metadata())
            }
            ("events", "putEvents") => {
                let mut body = params.clone();
                if let Some(entries) = body.get_mut("Entries").and_then(Value::as_array_mut) {
                    for e in entries {
                        if let Some(d) = e.get("Detail").cloned() {
                            e["Detail"] = Value::String(as_text(&d));
                        }
                    }
                }
                let r = self.json_call("PutEvents", &body).await?;
                if r.status >= 300 {
                    return Err(self.v1_error(&r));
                }
                Ok(r.json())
            }
            ("sns", "publish") => {
                let mut form: Vec<(String, String)> = vec![
                    ("Action".into(), "Publish".into()),
                    ("Version".into(), "2010-03-31".into()),
                ];
                if let Some(m) = params.as_object() {
                    for (k, v) in m {
                        if k == "MessageAttributes" {
                            if let Some(attrs) = v.as_object() {
                                for (i, (name, attr)) in attrs.iter().enumerate() {
                                    let n = i + 1;
                                    let entry = format!("MessageAttributes.entry.{n}");
                                    form.push((format!("{entry}.Name"), name.clone()));
                                    for (field, value) in attr.as_object().into_iter().flatten() {
                                        form.push((
                                            format!("{entry}.Value.{field}"),
                                            as_text(value),
                                        ));
                                    }
                                }
                            }
                        } else {
                            form.push((k.clone(), as_text(v)));
                        }
                    }
                }
                let body = form
                    .iter()
                    .map(|(k, v)| format!("{}={}", urlencode(k), urlencode(v)))
                    .collect::<Vec<_>>()
                    .join("&");
                let headers = vec![(
                    "content-type".to_owned(),
                    "application/x-www-form-urlencoded; charset=utf-8".to_owned(),
                )];
                let r = self.send("POST", "/", headers, body.into_bytes()).await?;
                if r.status >= 300 {
                    return Err(self.v1_error(&r));
                }
                let text = String::from_utf8_lossy(&r.body).into_owned();
                let id = xml_tag(&text, "MessageId").unwrap_or_default().to_owned();
                let request_id = xml_tag(&text, "RequestId")
                    .map(str::to_owned)
                    .unwrap_or_else(|| r.request_id());
                Ok(json!({
                    "MessageId": id,
                    "SdkHttpMetadata": r.metadata(),
                    "SdkResponseMetadata": { "RequestId": request_id },
                }))
            }
            (_, _) if matches!(self.svc.protocol, Protocol::Json(..) | Protocol::RestJsonV1) => {
                if self.camel_members() {
                    let r = self.json_call(action, &camel_request(params)).await?;
                    if r.status >= 300 {
                        return Err(self.v1_error(&r));
                    }
                    return Ok(r.with_metadata_on(pascal_result(r.json())));
                }
                let r = self.json_call(action, params).await?;
                if r.status >= 300 {
                    return Err(self.v1_error(&r));
                }
                Ok(r.with_metadata())
            }
            _ => Err(unsupported()),
        }
    }

    /// Lambda's Invoke: `function` is a name, partial or full ARN (`:QUALIFIER` allowed).
    async fn lambda_invoke(
        &self,
        function: &str,
        payload: &Value,
        params: Option<&Value>,
    ) -> Result<LambdaResult, StatesError> {
        let p = params.cloned().unwrap_or(Value::Null);
        // Local Lambda emulators (and Step Functions Local) know functions by name: the path
        // names it, and an ARN's version or alias goes as the Qualifier.
        let (name, arn_qualifier) = crate::tasks::lambda::name_and_qualifier(function);
        let mut path = format!("/2015-03-31/functions/{}/invocations", urlencode(name));
        if let Some(q) = p["Qualifier"].as_str().or(arn_qualifier) {
            path.push_str(&format!("?Qualifier={}", urlencode(q)));
        }
        let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
        for (field, header) in [
            ("InvocationType", "x-amz-invocation-type"),
            ("LogType", "x-amz-log-type"),
            ("ClientContext", "x-amz-client-context"),
        ] {
            if let Some(v) = p[field].as_str() {
                headers.push((header.to_owned(), v.to_owned()));
            }
        }
        let body = match payload {
            Value::Null => b"{}".to_vec(),
            Value::String(s) => s.clone().into_bytes(),
            other => other.to_string().into_bytes(),
        };
        let r = self.send("POST", &path, headers, body).await?;
        if r.status >= 300 {
            return Err(self.v1_error(&r));
        }
        let payload = r.json();
        if r.header("x-amz-function-error").is_some() {
            let error = payload["errorType"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| "Lambda.Unknown".to_owned());
            let cause = String::from_utf8_lossy(&r.body).into_owned();
            return Ok(LambdaResult::FunctionError(StatesError::new(error, cause)));
        }
        let version = r
            .header("x-amz-executed-version")
            .unwrap_or("$LATEST")
            .to_owned();
        let full = crate::tasks::lambda::invoke_response_with(
            payload.clone(),
            &version,
            r.status,
            r.metadata(),
            &r.request_id(),
        );
        Ok(LambdaResult::Ok { payload, full })
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn urlencode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bindings_and_variables_name_endpoints() {
        let env = |k: &str| (k == "SQS_ENDPOINT").then(|| "http://localhost:1".to_owned());
        let e = Endpoints::parse(&["dynamodb=http://localhost:2/".into()], env).unwrap();
        assert_eq!(e.urls.get("sqs").unwrap(), "http://localhost:1");
        assert_eq!(e.urls.get("dynamodb").unwrap(), "http://localhost:2");
        assert!(Endpoints::parse(&["nope=http://x".into()], |_| None).is_err());
        assert!(Endpoints::parse(&["sqs=ftp://x".into()], |_| None).is_err());
        assert!(Endpoints::parse(&["sqs".into()], |_| None).is_err());
        let all = Endpoints::parse(&["all=http://localhost:3".into()], |_| None).unwrap();
        assert!(all.serves(
            &crate::asl::resource::Resource::parse("arn:aws:states:::aws-sdk:dynamodb:listTables")
                .unwrap()
                .kind
        ));
    }

    #[test]
    fn step_functions_members_are_spelled_as_its_api_and_as_aws_hands_them_over() {
        let sent = camel_request(&json!({"StateMachineArn": "arn", "Input": {"k": 1}}));
        assert_eq!(
            sent,
            json!({"stateMachineArn": "arn", "input": "{\"k\":1}"})
        );
        let got = pascal_result(json!({"executionArn": "e", "startDate": 1700000000.5}));
        assert_eq!(
            got,
            json!({"ExecutionArn": "e", "StartDate": "2023-11-14T22:13:20.500Z"})
        );
    }

    #[test]
    fn actions_become_targets() {
        assert_eq!(pascal("sendMessage"), "SendMessage");
        assert_eq!(urlencode("a b/c"), "a%20b%2Fc");
    }
}
