//! `fieldValidationMode`: a mocked result checked against the output shape of the API the
//! Task's integration calls, as AWS's TestState does. The shapes are AWS's published service
//! models (botocore's JSON models, copied by `scripts/service_models.py` into `models/`, with
//! their documentation dropped); nothing here is written by hand but the messages.
//!
//! `STRICT` checks every field present and the required ones; `PRESENT` only the fields
//! present; fields the API does not define are allowed either way (Step Functions adds its own,
//! such as `SdkHttpMetadata`). A service without an embedded model is not checked.

use super::FieldValidationMode;
use crate::asl::resource::{IntegrationPattern, Resource, ResourceKind};
use serde_json::{Map, Value};

/// The embedded models, by botocore's service name.
const MODELS: &[(&str, &str)] = &[
    ("athena", include_str!("models/athena.json")),
    ("batch", include_str!("models/batch.json")),
    ("bedrock", include_str!("models/bedrock.json")),
    (
        "bedrock-runtime",
        include_str!("models/bedrock-runtime.json"),
    ),
    ("cloudwatch", include_str!("models/cloudwatch.json")),
    ("codebuild", include_str!("models/codebuild.json")),
    ("comprehend", include_str!("models/comprehend.json")),
    ("databrew", include_str!("models/databrew.json")),
    ("dynamodb", include_str!("models/dynamodb.json")),
    ("ecs", include_str!("models/ecs.json")),
    ("eks", include_str!("models/eks.json")),
    ("emr", include_str!("models/emr.json")),
    ("emr-containers", include_str!("models/emr-containers.json")),
    ("emr-serverless", include_str!("models/emr-serverless.json")),
    ("events", include_str!("models/events.json")),
    ("firehose", include_str!("models/firehose.json")),
    ("glue", include_str!("models/glue.json")),
    ("iam", include_str!("models/iam.json")),
    ("kinesis", include_str!("models/kinesis.json")),
    ("kms", include_str!("models/kms.json")),
    ("lambda", include_str!("models/lambda.json")),
    ("logs", include_str!("models/logs.json")),
    ("mediaconvert", include_str!("models/mediaconvert.json")),
    ("rekognition", include_str!("models/rekognition.json")),
    ("s3", include_str!("models/s3.json")),
    ("sagemaker", include_str!("models/sagemaker.json")),
    ("scheduler", include_str!("models/scheduler.json")),
    ("secretsmanager", include_str!("models/secretsmanager.json")),
    ("sesv2", include_str!("models/sesv2.json")),
    ("sns", include_str!("models/sns.json")),
    ("sqs", include_str!("models/sqs.json")),
    ("ssm", include_str!("models/ssm.json")),
    ("stepfunctions", include_str!("models/stepfunctions.json")),
    ("sts", include_str!("models/sts.json")),
    ("textract", include_str!("models/textract.json")),
    ("translate", include_str!("models/translate.json")),
];

/// Checks a mocked result; the error is AWS's message.
pub fn check_mock(
    resource: &Resource,
    result: &Value,
    mode: FieldValidationMode,
) -> Result<(), String> {
    if mode == FieldValidationMode::None {
        return Ok(());
    }
    let ResourceKind::Integration {
        service,
        action,
        pattern,
    } = &resource.kind
    else {
        return Ok(());
    };
    // A callback's result is the worker's, and `.sync` answers with another API's shape.
    if *pattern != IntegrationPattern::RequestResponse {
        return Ok(());
    }
    let action = action.split('.').next().unwrap_or(action);
    let Some(model) = model_of(service, action) else {
        return Ok(());
    };
    let Some(operations) = model["operations"].as_object() else {
        return Ok(());
    };
    let op = operations
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(action))
        .map(|(_, op)| op);
    let Some(output) = op.and_then(|op| op["output"]["shape"].as_str()) else {
        return Ok(());
    };
    let checker = Checker {
        shapes: model["shapes"].as_object().cloned().unwrap_or_default(),
        strict: mode == FieldValidationMode::Strict,
        lambda_invoke: service == "lambda" && action == "invoke",
    };
    checker
        .check(result, output, "")
        .map_err(|m| format!("Mock result schema validation error: {m}"))
}

/// The model of the service an integration calls.
fn model_of(service: &str, action: &str) -> Option<Value> {
    let name = match service.strip_prefix("aws-sdk:") {
        Some(sdk) => match sdk {
            "sfn" => "stepfunctions",
            "eventbridge" => "events",
            "cloudwatchlogs" => "logs",
            other => other,
        },
        None => match service {
            "states" => "stepfunctions",
            "elasticmapreduce" => "emr",
            "bedrock" if action.eq_ignore_ascii_case("invokeModel") => "bedrock-runtime",
            other => other,
        },
    };
    let text = MODELS.iter().find(|(n, _)| *n == name)?.1;
    serde_json::from_str(text).ok()
}

/// A member name as Step Functions hands results over: with a capital first letter, whatever
/// the service's own protocol spells (`executionArn` is `ExecutionArn`).
fn pascal(name: &str) -> String {
    let mut chars = name.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

struct Checker {
    shapes: Map<String, Value>,
    strict: bool,
    /// Step Functions' `lambda:invoke` hands the function's JSON answer as `Payload`.
    lambda_invoke: bool,
}

impl Checker {
    fn check(&self, value: &Value, shape_name: &str, field: &str) -> Result<(), String> {
        let Some(shape) = self.shapes.get(shape_name) else {
            return Ok(());
        };
        let num = |k: &str| shape.get(k).and_then(Value::as_f64);
        match shape["type"].as_str().unwrap_or_default() {
            "structure" => {
                let Value::Object(fields) = value else {
                    return Err(format!("Field '{field}' must be an object"));
                };
                let members = shape["members"].as_object();
                if self.strict {
                    for required in shape["required"].as_array().into_iter().flatten() {
                        let name = pascal(required.as_str().unwrap_or_default());
                        if !fields.contains_key(&name) {
                            return Err(format!("Required field '{name}' is missing"));
                        }
                    }
                }
                for (name, v) in fields {
                    if self.lambda_invoke && field.is_empty() && name == "Payload" {
                        continue;
                    }
                    let member = members.and_then(|m| {
                        m.iter()
                            .find(|(k, _)| pascal(k) == *name)
                            .map(|(_, member)| member)
                    });
                    if let Some(member) = member {
                        self.check(v, member["shape"].as_str().unwrap_or_default(), name)?;
                    }
                }
                Ok(())
            }
            "list" => {
                let Value::Array(items) = value else {
                    return Err(format!("Field '{field}' must be an array"));
                };
                let member = shape["member"]["shape"].as_str().unwrap_or_default();
                items.iter().try_for_each(|v| self.check(v, member, field))
            }
            "map" => {
                let Value::Object(entries) = value else {
                    return Err(format!("Field '{field}' must be an object"));
                };
                let member = shape["value"]["shape"].as_str().unwrap_or_default();
                entries
                    .values()
                    .try_for_each(|v| self.check(v, member, field))
            }
            "string" | "blob" => {
                let Value::String(s) = value else {
                    return Err(format!("Field '{field}' must be a string"));
                };
                if let Some(allowed) = shape["enum"].as_array() {
                    if !allowed.iter().any(|a| a == value) {
                        return Err(format!("Field '{field}' is not an expected value"));
                    }
                }
                let len = s.chars().count() as f64;
                if num("min").is_some_and(|min| len < min) {
                    return Err(format!(
                        "Field '{field}' is smaller than the minimum length"
                    ));
                }
                if num("max").is_some_and(|max| len > max) {
                    return Err(format!("Field '{field}' exceeds the maximum length"));
                }
                Ok(())
            }
            "integer" | "long" | "float" | "double" => {
                let Some(n) = value.as_f64() else {
                    return Err(format!("Field '{field}' must be a number"));
                };
                if num("min").is_some_and(|min| n < min) {
                    return Err(format!("Field '{field}' is less than the minimum value"));
                }
                if num("max").is_some_and(|max| n > max) {
                    return Err(format!("Field '{field}' exceeds the maximum value"));
                }
                Ok(())
            }
            "boolean" if !value.is_boolean() => Err(format!("Field '{field}' must be a boolean")),
            "timestamp" if !value.is_string() => Err(format!("Field '{field}' must be a string")),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_model_parses_and_has_operations() {
        for (name, text) in MODELS {
            let model: Value = serde_json::from_str(text).expect(name);
            assert!(
                model["operations"]
                    .as_object()
                    .is_some_and(|o| !o.is_empty()),
                "{name}"
            );
        }
    }

    #[test]
    fn a_required_field_missing_is_reported_in_strict_mode_only() {
        let r = Resource::parse("arn:aws:states:::states:startExecution").unwrap();
        let empty = serde_json::json!({});
        assert_eq!(
            check_mock(&r, &empty, FieldValidationMode::Strict).unwrap_err(),
            "Mock result schema validation error: Required field 'ExecutionArn' is missing"
        );
        assert!(check_mock(&r, &empty, FieldValidationMode::Present).is_ok());
    }
}
