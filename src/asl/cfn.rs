//! State machines inside SAM and CloudFormation templates.
//!
//! A template (JSON or YAML, short-form tags read by [`crate::asl::yaml`]) declares state
//! machines as resources:
//!
//! - `AWS::Serverless::StateMachine` (SAM): `Definition` (the definition inline, as YAML or
//!   JSON), or `DefinitionUri` (a local file beside the template; an S3 location cannot be read
//!   locally), with `DefinitionSubstitutions`.
//! - `AWS::StepFunctions::StateMachine`: `Definition` (inline), `DefinitionString` (JSON text,
//!   possibly built with `Fn::Sub` or `Fn::Join`), with `DefinitionSubstitutions`.
//!
//! What CloudFormation only knows at deploy time (`!Ref`, `!GetAtt`, `!Sub` of other resources,
//! `${AWS::Region}`) becomes a *deferred* substitution: a stand-in shaped for its field, with no
//! warning, since the template does give it a value. The exception is a Lambda function the
//! template declares: its `!Ref` and `!GetAtt Fn.Arn` get the local name and ARN the local
//! Lambda runtime answers to ([`names`], [`functions`]). An intrinsic naming a resource or
//! parameter the template does not declare is an error, as CloudFormation makes it.

pub mod functions;
pub mod names;

use crate::asl::diagnostic::JsonPointer;
use crate::asl::substitution::Substitutions;
use names::{TemplateNames, UnresolvedReference};
use serde_json::{Map, Value};

/// The resource types that are state machines.
pub const STATE_MACHINE_TYPES: [&str; 2] = [
    "AWS::Serverless::StateMachine",
    "AWS::StepFunctions::StateMachine",
];

/// Where a template's state machine keeps its definition.
#[derive(Debug, Clone, PartialEq)]
pub enum DefinitionSource {
    /// `Definition`: the definition inline, at `pointer` in the template.
    Inline {
        /// The definition (intrinsics inside it already replaced by stand-ins).
        value: Value,
        /// Where it is in the template.
        pointer: JsonPointer,
    },
    /// `DefinitionString`: JSON text, at `pointer` in the template.
    Text {
        /// The text, with `Fn::Join` parts joined (intrinsic parts as `${...}` placeholders).
        text: String,
        /// Where it is in the template.
        pointer: JsonPointer,
    },
    /// `DefinitionUri` naming a local file (relative to the template's folder).
    File {
        /// The file, as the template names it.
        uri: String,
        /// Where `DefinitionUri` is in the template.
        pointer: JsonPointer,
    },
    /// A definition kept in S3 (`DefinitionUri` as `s3://...` or `Bucket`/`Key`,
    /// `DefinitionS3Location`): valid, but not here to check or run.
    InS3 {
        /// Where, for a person.
        what: String,
        /// The object's key, when the template gives it as a string (CDK's assets are found
        /// by it in the stack's `*.assets.json`).
        key: Option<String>,
        /// The template's field that names it.
        pointer: JsonPointer,
    },
    /// A definition that cannot be read locally, with why.
    Unreadable {
        /// Why, for a person.
        why: String,
        /// The template's field that says where the definition is (or the resource's
        /// `Properties` when none does).
        pointer: JsonPointer,
    },
}

/// One state machine of a template.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateMachine {
    /// Its logical ID (the key under `Resources`).
    pub logical_id: String,
    /// Its resource type.
    pub resource_type: String,
    /// Where its definition is.
    pub source: DefinitionSource,
    /// Values for its placeholders; deploy-time values are deferred.
    pub substitutions: Substitutions,
    /// `Type` (`STANDARD` or `EXPRESS`), when the template says.
    pub machine_type: Option<String>,
    /// The name it is deployed under, when the template gives one as a plain string (`Name`
    /// for SAM, `StateMachineName` for CloudFormation).
    pub name: Option<String>,
    /// Intrinsics of its properties that name what the template does not declare.
    pub unresolved: Vec<UnresolvedReference>,
    /// The CDK construct that made it (`Metadata` `aws:cdk:path`), in a synthesized template.
    pub cdk_path: Option<String>,
}

/// Whether a parsed file is a template holding at least one state machine.
pub fn is_template_with_machines(value: &Value) -> bool {
    value
        .get("Resources")
        .and_then(Value::as_object)
        .is_some_and(|r| r.values().any(is_state_machine))
}

fn is_state_machine(resource: &Value) -> bool {
    resource
        .get("Type")
        .and_then(Value::as_str)
        .is_some_and(|t| STATE_MACHINE_TYPES.contains(&t))
}

/// Every state machine the template declares, in the template's order.
pub fn state_machines(template: &Value) -> Vec<TemplateMachine> {
    let Some(names) = TemplateNames::of(template) else {
        return Vec::new();
    };
    let resources = template["Resources"]
        .as_object()
        .expect("TemplateNames has Resources");
    resources
        .iter()
        .filter(|(_, resource)| is_state_machine(resource))
        .map(|(id, resource)| state_machine(id, resource, &names))
        .collect()
}

fn state_machine(id: &str, resource: &Value, names: &TemplateNames<'_>) -> TemplateMachine {
    let resource_type = resource["Type"].as_str().unwrap_or_default().to_owned();
    let empty = Map::new();
    let props = resource
        .get("Properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let at = JsonPointer::root()
        .key("Resources")
        .key(id)
        .key("Properties");
    let mut unresolved = Vec::new();
    for field in ["Definition", "DefinitionString", "DefinitionSubstitutions"] {
        if let Some(v) = props.get(field) {
            names.unresolved(v, &at.key(field), &mut unresolved);
        }
    }
    let mut subs = Substitutions::new();
    if let Some(Value::Object(map)) = props.get("DefinitionSubstitutions") {
        for (name, v) in map {
            match v {
                Value::String(s) if !s.contains("${") => subs.insert(name, s),
                Value::Number(n) => subs.insert(name, n.to_string()),
                Value::Bool(b) => subs.insert(name, b.to_string()),
                // `!Ref`, `!GetAtt`, `!Sub`: known at deploy time, but for the template's
                // own functions.
                other => match names.resolve(other) {
                    Some(local) => subs.insert(name, local),
                    None => subs.defer(name),
                },
            }
        }
    }
    let source = definition_source(props, &at, &mut subs, names);
    let text = |keys: [&str; 2]| {
        keys.iter()
            .find_map(|k| props.get(*k))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    TemplateMachine {
        logical_id: id.to_owned(),
        resource_type,
        source,
        substitutions: subs,
        machine_type: text(["Type", "StateMachineType"]),
        name: text(["Name", "StateMachineName"]),
        unresolved,
        cdk_path: resource
            .pointer("/Metadata/aws:cdk:path")
            .and_then(Value::as_str)
            .map(str::to_owned),
    }
}

/// Where a state machine's properties (at `at`) keep its definition.
fn definition_source(
    props: &Map<String, Value>,
    at: &JsonPointer,
    subs: &mut Substitutions,
    names: &TemplateNames<'_>,
) -> DefinitionSource {
    let unreadable = |why: &str, field: Option<&str>| DefinitionSource::Unreadable {
        why: why.to_owned(),
        pointer: field.map_or_else(|| at.clone(), |f| at.key(f)),
    };
    let in_s3 = |location: &Value, field: &str| DefinitionSource::InS3 {
        what: s3_location(location),
        key: location
            .get("Key")
            .and_then(Value::as_str)
            .map(str::to_owned),
        pointer: at.key(field),
    };
    if let Some(def) = props.get("Definition") {
        let mut value = def.clone();
        stand_in_intrinsics(&mut value, None, names);
        DefinitionSource::Inline {
            value,
            pointer: at.key("Definition"),
        }
    } else if let Some(def) = props.get("DefinitionString") {
        match definition_string(def, subs, names) {
            Some(text) => DefinitionSource::Text {
                text,
                pointer: at.key("DefinitionString"),
            },
            None => unreadable(
                "DefinitionString is an intrinsic sfn-local cannot read (only a string, Fn::Sub and Fn::Join)",
                Some("DefinitionString"),
            ),
        }
    } else if let Some(uri) = props.get("DefinitionUri") {
        match uri {
            Value::String(s) if s.starts_with("s3://") => DefinitionSource::InS3 {
                what: s.clone(),
                key: None,
                pointer: at.key("DefinitionUri"),
            },
            Value::String(s) => DefinitionSource::File {
                uri: s.clone(),
                pointer: at.key("DefinitionUri"),
            },
            other => in_s3(other, "DefinitionUri"),
        }
    } else if let Some(location) = props.get("DefinitionS3Location") {
        in_s3(location, "DefinitionS3Location")
    } else {
        unreadable(
            "the state machine has no Definition, DefinitionString or DefinitionUri",
            None,
        )
    }
}

/// An S3 location (`Bucket`/`Key`, `Version`) as `s3://BUCKET/KEY`, an intrinsic as `...`.
fn s3_location(v: &Value) -> String {
    let part = |k: &str| match v.get(k) {
        Some(Value::String(s)) => s.clone(),
        _ => "...".to_owned(),
    };
    format!("s3://{}/{}", part("Bucket"), part("Key"))
}

/// The text of a `DefinitionString`: a string, `Fn::Sub` (string, or [string, map]) or
/// `Fn::Join` ([delimiter, [parts]]). Variables of `Fn::Sub` given as plain strings become
/// values; the rest (other resources, pseudo parameters) are deferred.
fn definition_string(
    def: &Value,
    subs: &mut Substitutions,
    names: &TemplateNames<'_>,
) -> Option<String> {
    match def {
        Value::String(s) => Some(s.clone()),
        Value::Object(map) if map.len() == 1 => {
            let (name, arg) = map.iter().next()?;
            match (name.as_str(), arg) {
                ("Fn::Sub", Value::String(s)) => {
                    defer_all(s, subs, names);
                    Some(s.clone())
                }
                ("Fn::Sub", Value::Array(items)) => {
                    let s = items.first()?.as_str()?;
                    if let Some(Value::Object(vars)) = items.get(1) {
                        for (k, v) in vars {
                            match v {
                                Value::String(t) if !t.contains("${") => subs.insert(k, t),
                                _ => subs.defer(k),
                            }
                        }
                    }
                    defer_all(s, subs, names);
                    Some(s.to_owned())
                }
                ("Fn::Join", Value::Array(items)) => {
                    let delimiter = items.first()?.as_str()?;
                    let parts = items.get(1)?.as_array()?;
                    let mut out = Vec::new();
                    for (i, part) in parts.iter().enumerate() {
                        match part {
                            Value::String(s) => out.push(s.clone()),
                            other => {
                                let name = join_part_name(other, i);
                                defer_all(&format!("${{{name}}}"), subs, names);
                                out.push(format!("${{{name}}}"));
                            }
                        }
                    }
                    let text = out.join(delimiter);
                    Some(text)
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// The placeholder an intrinsic part of an `Fn::Join` becomes: `Ref`/`Fn::GetAtt` as Fn::Sub
/// names them (`${X}`, `${X.Arn}`), so `--sub` reads the same for both forms; an
/// `Fn::ImportValue` by its export's name, which stays when the definition changes; anything
/// else by its kind and place (`${Select-X3}`).
pub(crate) fn join_part_name(part: &Value, index: usize) -> String {
    if let Some(name) = sub_name(part) {
        return name;
    }
    match part.get("Fn::ImportValue") {
        Some(Value::String(export)) => export.clone(),
        Some(Value::Object(m)) if m.get("Fn::Sub").is_some_and(Value::is_string) => {
            // An export named with `${Stack}`: its text, the placeholders' braces dropped.
            m["Fn::Sub"]
                .as_str()
                .unwrap_or_default()
                .chars()
                .filter(|c| !matches!(c, '$' | '{' | '}' | '!'))
                .collect()
        }
        _ => format!("{}{}", intrinsic_name(part), index),
    }
}

/// Defers every `${Name}` of `s` that has no value yet (Fn::Sub's references to parameters,
/// resources and pseudo parameters), but for the pseudo parameters whose value is the same in
/// every commercial region (`AWS::Partition`, `AWS::URLSuffix`) and the template's own
/// functions, which get their value.
fn defer_all(s: &str, subs: &mut Substitutions, names: &TemplateNames<'_>) {
    for name in crate::asl::substitution::placeholder_names(s) {
        if subs.get(&name).is_some() {
            continue;
        }
        match name.as_str() {
            "AWS::Partition" => subs.insert(name, "aws"),
            "AWS::URLSuffix" => subs.insert(name, "amazonaws.com"),
            _ => match names.local_value(&name) {
                Some(local) => subs.insert(name, local),
                None => subs.defer(&name),
            },
        }
    }
}

/// The name Fn::Sub gives a `Ref` or `Fn::GetAtt` (`X`, `X.Attribute`); `None` for other
/// intrinsics.
pub(crate) fn sub_name(v: &Value) -> Option<String> {
    let (name, arg) = v.as_object().filter(|m| m.len() == 1)?.iter().next()?;
    match (name.as_str(), arg) {
        ("Ref", Value::String(target)) => Some(target.clone()),
        ("Fn::GetAtt", Value::String(dotted)) => Some(dotted.clone()),
        ("Fn::GetAtt", Value::Array(parts)) => match parts.as_slice() {
            [Value::String(resource), Value::String(attribute)] => {
                Some(format!("{resource}.{attribute}"))
            }
            _ => None,
        },
        _ => None,
    }
}

/// A short name for an intrinsic, for stand-ins: `Ref-X`, `GetAtt-X`.
fn intrinsic_name(v: &Value) -> String {
    let Some((name, arg)) = v.as_object().and_then(|m| m.iter().next()) else {
        return "Value".to_owned();
    };
    let what = name.trim_start_matches("Fn::");
    let target = match arg {
        Value::String(s) => s
            .split(['.', ':', '$', '{', '}'])
            .find(|p| !p.is_empty())
            .unwrap_or(""),
        Value::Array(items) => items.first().and_then(Value::as_str).unwrap_or(""),
        _ => "",
    };
    let plain: String = format!("{what}-{target}")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    plain
}

/// Whether a value is a CloudFormation intrinsic: an object of one key, `Ref` or `Fn::...`.
pub(crate) fn is_intrinsic(v: &Value) -> bool {
    v.as_object().is_some_and(|m| {
        m.len() == 1
            && m.keys()
                .next()
                .is_some_and(|k| k == "Ref" || k.starts_with("Fn::"))
    })
}

/// Replaces intrinsics inside an inline definition with the local value of the template's own
/// functions, and the rest with stand-ins shaped for their field (an ARN for `Resource` and
/// `*Arn` fields, else a name).
fn stand_in_intrinsics(v: &mut Value, key: Option<&str>, names: &TemplateNames<'_>) {
    if is_intrinsic(v) {
        if let Some(local) = names.resolve(v) {
            *v = Value::String(local);
            return;
        }
        let name = intrinsic_name(v);
        *v = match key {
            Some("Resource") => Value::String(format!(
                "arn:aws:lambda:us-east-1:123456789012:function:{name}"
            )),
            Some(k) if k.ends_with("Arn") || k.ends_with("ARN") => Value::String(format!(
                "arn:aws:states:us-east-1:123456789012:stateMachine:{name}"
            )),
            _ => Value::String(name),
        };
        return;
    }
    match v {
        Value::Object(map) => {
            for (k, child) in map.iter_mut() {
                stand_in_intrinsics(child, Some(k), names);
            }
        }
        Value::Array(items) => {
            for child in items {
                stand_in_intrinsics(child, None, names);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_sam_and_cloudformation_machines() {
        let t = json!({"Resources": {
            "Fn": {"Type": "AWS::Serverless::Function"},
            "A": {"Type": "AWS::Serverless::StateMachine", "Properties": {
                "DefinitionUri": "statemachine/a.asl.json",
                "DefinitionSubstitutions": {"FnArn": {"Fn::GetAtt": ["Fn", "Arn"]}, "Table": "t"}}},
            "B": {"Type": "AWS::StepFunctions::StateMachine", "Properties": {
                "DefinitionString": {"Fn::Sub": "{\"StartAt\": \"${AWS::Region}\"}"}}},
            "X": {"Type": "AWS::SQS::Queue"},
            "C": {"Type": "AWS::StepFunctions::StateMachine", "Properties": {
                "DefinitionString": {"Fn::Join": ["", ["{\"R\": \"", {"Ref": "X"}, "\"}"]]}}},
            "D": {"Type": "AWS::Serverless::StateMachine", "Properties": {
                "Definition": {"StartAt": "S", "States": {"S": {"Type": "Task", "Resource": {"Fn::GetAtt": ["Fn", "Arn"]}, "End": true}}}}}
        }});
        let found = state_machines(&t);
        assert_eq!(found.len(), 4);
        assert!(found.iter().all(|m| m.unresolved.is_empty()), "{found:?}");
        assert_eq!(
            found[0].source,
            DefinitionSource::File {
                uri: "statemachine/a.asl.json".into(),
                pointer: JsonPointer::root()
                    .key("Resources")
                    .key("A")
                    .key("Properties")
                    .key("DefinitionUri")
            }
        );
        assert_eq!(found[0].substitutions.get("Table"), Some("t"));
        // The template's own function has a local ARN.
        assert_eq!(
            found[0].substitutions.get("FnArn"),
            Some("arn:aws:lambda:us-east-1:123456789012:function:Fn")
        );
        assert!(found[1].substitutions.is_deferred("AWS::Region"));
        match &found[2].source {
            DefinitionSource::Text { text, .. } => assert_eq!(text, "{\"R\": \"${X}\"}"),
            other => panic!("{other:?}"),
        }
        match &found[3].source {
            DefinitionSource::Inline { value, pointer } => {
                assert_eq!(pointer.to_string(), "/Resources/D/Properties/Definition");
                assert_eq!(
                    value["States"]["S"]["Resource"],
                    "arn:aws:lambda:us-east-1:123456789012:function:Fn"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn s3_definitions_are_in_s3_and_import_values_are_named_by_their_export() {
        let t = json!({"Resources": {
            "A": {"Type": "AWS::Serverless::StateMachine", "Properties": {
                "DefinitionUri": {"Bucket": "b", "Key": "k.json"}}},
            "B": {"Type": "AWS::StepFunctions::StateMachine", "Properties": {
                "DefinitionString": {"Fn::Join": ["", ["{\"R\": \"", {"Fn::ImportValue": "OrdersStack:ChargeArn"},
                    "\", \"S\": \"", {"Fn::ImportValue": {"Fn::Sub": "${Env}-QueueUrl"}}, "\"}"]]}}}
        }});
        let found = state_machines(&t);
        match &found[0].source {
            DefinitionSource::InS3 { what, key, pointer } => {
                assert_eq!(what, "s3://b/k.json");
                assert_eq!(key.as_deref(), Some("k.json"));
                assert!(pointer.to_string().ends_with("/DefinitionUri"));
            }
            other => panic!("{other:?}"),
        }
        match &found[1].source {
            DefinitionSource::Text { text, .. } => assert_eq!(
                text,
                "{\"R\": \"${OrdersStack:ChargeArn}\", \"S\": \"${Env-QueueUrl}\"}"
            ),
            other => panic!("{other:?}"),
        }
        assert!(found[1].substitutions.is_deferred("OrdersStack:ChargeArn"));
    }
}
