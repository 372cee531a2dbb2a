//! The Lambda functions a template declares, as far as running them on this machine needs:
//! where the code is, its handler and runtime, its environment and timeout.
//!
//! - `AWS::Serverless::Function` (SAM): `CodeUri` (a folder beside the template), `Handler`,
//!   `Runtime`, `Environment.Variables`, `Timeout`, `MemorySize`, each defaulting to SAM's
//!   `Globals.Function` (environment variables merge, the function's winning).
//! - `AWS::Lambda::Function` (CloudFormation, as CDK synthesizes it): the code is the asset
//!   folder CDK names in the resource's `Metadata` (`aws:asset:path`, for the `Code` property),
//!   beside the template in `cdk.out`.
//!
//! Values only CloudFormation knows (an environment variable given by `!Ref`) are left out.

use serde_json::{Map, Value};

/// The resource types that are Lambda functions.
pub const LAMBDA_FUNCTION_TYPES: [&str; 2] = ["AWS::Serverless::Function", "AWS::Lambda::Function"];

/// Lambda's default timeout, in seconds, when neither the function nor `Globals` sets one.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 3;

/// Lambda's default memory, in MB.
pub const DEFAULT_MEMORY_MB: u64 = 128;

/// One Lambda function of a template.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateFunction {
    /// Its logical ID.
    pub logical_id: String,
    /// The name it answers to: `FunctionName` when the template gives it, else the logical ID.
    pub name: String,
    /// Its code folder, relative to the template's folder; `None` when the code is elsewhere
    /// (S3, an image, inline).
    pub code_dir: Option<String>,
    /// `Handler` (`app.lambda_handler`, `index.handler`).
    pub handler: Option<String>,
    /// `Runtime` (`python3.12`, `nodejs20.x`).
    pub runtime: Option<String>,
    /// `Environment.Variables` given as plain values, in the template's order.
    pub environment: Vec<(String, String)>,
    /// `Timeout`, in seconds.
    pub timeout_seconds: u64,
    /// `MemorySize`, in MB.
    pub memory_mb: u64,
}

/// The name a function answers to: its `FunctionName` when it is a plain string, else its
/// logical ID (CloudFormation generates one from the stack's name; locally the ID is the name).
pub fn function_name(logical_id: &str, resource: &Value) -> String {
    resource
        .pointer("/Properties/FunctionName")
        .and_then(Value::as_str)
        .unwrap_or(logical_id)
        .to_owned()
}

/// Every Lambda function of the template, in its order.
pub fn functions(template: &Value) -> Vec<TemplateFunction> {
    let Some(resources) = template.get("Resources").and_then(Value::as_object) else {
        return Vec::new();
    };
    let empty = Map::new();
    let globals = template
        .pointer("/Globals/Function")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    resources
        .iter()
        .filter_map(|(id, resource)| match resource.get("Type")?.as_str()? {
            "AWS::Serverless::Function" => Some(sam_function(id, resource, globals)),
            "AWS::Lambda::Function" => Some(cfn_function(id, resource)),
            _ => None,
        })
        .collect()
}

fn properties(resource: &Value) -> &Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    resource
        .get("Properties")
        .and_then(Value::as_object)
        .unwrap_or_else(|| EMPTY.get_or_init(Map::new))
}

fn sam_function(id: &str, resource: &Value, globals: &Map<String, Value>) -> TemplateFunction {
    let props = properties(resource);
    let field = |name: &str| props.get(name).or_else(|| globals.get(name));
    let text = |name: &str| field(name).and_then(Value::as_str).map(str::to_owned);
    let image = text("PackageType").as_deref() == Some("Image");
    let code_dir = match field("CodeUri") {
        Some(Value::String(uri)) if !uri.starts_with("s3://") && !image => Some(uri.clone()),
        _ => None,
    };
    let mut environment = variables(globals);
    for (k, v) in variables(props) {
        environment.retain(|(name, _)| *name != k);
        environment.push((k, v));
    }
    TemplateFunction {
        logical_id: id.to_owned(),
        name: function_name(id, resource),
        code_dir,
        handler: text("Handler"),
        runtime: text("Runtime"),
        environment,
        timeout_seconds: number(field("Timeout")).unwrap_or(DEFAULT_TIMEOUT_SECONDS),
        memory_mb: number(field("MemorySize")).unwrap_or(DEFAULT_MEMORY_MB),
    }
}

fn cfn_function(id: &str, resource: &Value) -> TemplateFunction {
    let props = properties(resource);
    let text = |name: &str| props.get(name).and_then(Value::as_str).map(str::to_owned);
    let metadata = resource.get("Metadata");
    let asset_is_code = metadata
        .and_then(|m| m.get("aws:asset:property"))
        .and_then(Value::as_str)
        == Some("Code");
    let code_dir = metadata
        .and_then(|m| m.get("aws:asset:path"))
        .and_then(Value::as_str)
        .filter(|_| asset_is_code)
        .map(str::to_owned);
    TemplateFunction {
        logical_id: id.to_owned(),
        name: function_name(id, resource),
        code_dir,
        handler: text("Handler"),
        runtime: text("Runtime"),
        environment: variables(props),
        timeout_seconds: number(props.get("Timeout")).unwrap_or(DEFAULT_TIMEOUT_SECONDS),
        memory_mb: number(props.get("MemorySize")).unwrap_or(DEFAULT_MEMORY_MB),
    }
}

/// `Environment.Variables` with plain values (strings, numbers, booleans as their text).
fn variables(props: &Map<String, Value>) -> Vec<(String, String)> {
    let Some(vars) = props
        .get("Environment")
        .and_then(|e| e.get("Variables"))
        .and_then(Value::as_object)
    else {
        return Vec::new();
    };
    vars.iter()
        .filter_map(|(k, v)| {
            let value = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => return None,
            };
            Some((k.clone(), value))
        })
        .collect()
}

fn number(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sam_globals_and_cdk_assets_are_read() {
        let t = json!({
        "Globals": {"Function": {"Runtime": "python3.12", "Handler": "app.lambda_handler", "Timeout": 10,
            "Environment": {"Variables": {"STAGE": "dev", "TABLE": "t"}}}},
        "Resources": {
            "Charge": {"Type": "AWS::Serverless::Function", "Properties": {"CodeUri": "functions/charge/",
                "Environment": {"Variables": {"TABLE": "orders", "QUEUE": {"Ref": "Q"}}}}},
            "Ship": {"Type": "AWS::Serverless::Function", "Properties": {"CodeUri": "s3://b/k.zip", "Runtime": "nodejs20.x"}},
            "Cdk": {"Type": "AWS::Lambda::Function",
                "Metadata": {"aws:asset:path": "asset.abc", "aws:asset:property": "Code"},
                "Properties": {"Handler": "index.handler", "Runtime": "nodejs20.x", "FunctionName": "cdk-fn"}},
            "Q": {"Type": "AWS::SQS::Queue"}
        }});
        let found = functions(&t);
        assert_eq!(found.len(), 3);
        let charge = &found[0];
        assert_eq!(charge.code_dir.as_deref(), Some("functions/charge/"));
        assert_eq!(charge.handler.as_deref(), Some("app.lambda_handler"));
        assert_eq!(charge.timeout_seconds, 10);
        assert_eq!(
            charge.environment,
            vec![
                ("STAGE".into(), "dev".into()),
                ("TABLE".into(), "orders".into())
            ]
        );
        assert_eq!(found[1].code_dir, None);
        assert_eq!(found[1].runtime.as_deref(), Some("nodejs20.x"));
        assert_eq!(found[2].name, "cdk-fn");
        assert_eq!(found[2].code_dir.as_deref(), Some("asset.abc"));
        assert_eq!(found[2].timeout_seconds, DEFAULT_TIMEOUT_SECONDS);
    }
}
