//! What a template's intrinsics may name, and what some of them are worth locally.
//!
//! CloudFormation rejects a template whose `Ref`, `Fn::GetAtt` or `Fn::Sub` names a resource or
//! parameter it does not declare ("Unresolved resource dependencies"), so [`TemplateNames`]
//! lets `validate` say so before deploy. And a `Ref` or `Fn::GetAtt ... Arn` of a Lambda
//! function the template declares has a value sfn-local can give itself: the function's name
//! or ARN, which the local Lambda runtime ([`crate::tasks::local_lambda`]) answers to, so a
//! state machine calling its template's functions runs with no `--sub`.

use super::functions::{function_name, LAMBDA_FUNCTION_TYPES};
use crate::asl::diagnostic::JsonPointer;
use serde_json::{Map, Value};

/// The region and account of the ARNs sfn-local gives a template's functions (the stand-ins'
/// own, so every local ARN reads alike).
pub const LOCAL_FUNCTION_ARN_PREFIX: &str = "arn:aws:lambda:us-east-1:123456789012:function:";

/// The names a template declares, for checking and resolving its intrinsics.
#[derive(Debug, Clone, Copy)]
pub struct TemplateNames<'a> {
    resources: &'a Map<String, Value>,
    parameters: Option<&'a Map<String, Value>>,
    /// A SAM template: its transform adds resources named after the ones written
    /// (`ChargeFunctionRole`, `ServerlessRestApi`), which intrinsics may name too.
    sam: bool,
}

/// An intrinsic naming what the template does not declare: where, and CloudFormation's words.
#[derive(Debug, Clone, PartialEq)]
pub struct UnresolvedReference {
    /// The intrinsic's place in the template.
    pub pointer: JsonPointer,
    /// What CloudFormation says, with a "did you mean" when a declared name is near.
    pub message: String,
}

impl<'a> TemplateNames<'a> {
    /// The names `template` declares (`None` when it has no `Resources`).
    pub fn of(template: &'a Value) -> Option<Self> {
        let resources = template.get("Resources")?.as_object()?;
        let sam = match template.get("Transform") {
            Some(Value::String(t)) => t.starts_with("AWS::Serverless"),
            Some(Value::Array(ts)) => ts
                .iter()
                .any(|t| t.as_str().is_some_and(|t| t.starts_with("AWS::Serverless"))),
            _ => false,
        };
        Some(TemplateNames {
            resources,
            parameters: template.get("Parameters").and_then(Value::as_object),
            sam,
        })
    }

    /// Whether `target` (a `Ref`'s, or the resource of a `Fn::GetAtt`) is declared: a
    /// resource, a parameter, a pseudo parameter, or a resource SAM's transform derives.
    fn knows(&self, target: &str) -> bool {
        target.starts_with("AWS::")
            || self.resources.contains_key(target)
            || self.parameters.is_some_and(|p| p.contains_key(target))
            || (self.sam
                && (target.starts_with("Serverless")
                    || self
                        .resources
                        .keys()
                        .any(|id| target.starts_with(id.as_str()))))
    }

    /// The local value of what `Fn::Sub` calls `name` (`X` for `Ref X`, `X.Arn` for its ARN),
    /// when `X` is a Lambda function of the template: its name, or its local ARN.
    pub fn local_value(&self, name: &str) -> Option<String> {
        let (id, attribute) = match name.split_once('.') {
            Some((id, attribute)) => (id, Some(attribute)),
            None => (name, None),
        };
        let resource = self.resources.get(id)?;
        let kind = resource.get("Type").and_then(Value::as_str)?;
        if !LAMBDA_FUNCTION_TYPES.contains(&kind) {
            return None;
        }
        let function = function_name(id, resource);
        match attribute {
            None => Some(function),
            Some("Arn") => Some(format!("{LOCAL_FUNCTION_ARN_PREFIX}{function}")),
            Some(_) => None,
        }
    }

    /// The local value of an intrinsic: a `Ref`/`Fn::GetAtt` of a template function, or an
    /// `Fn::Sub` string all of whose names have one (pseudo parameters the same in every
    /// commercial region included).
    pub fn resolve(&self, v: &Value) -> Option<String> {
        if let Some(name) = super::sub_name(v) {
            return self.local_value(&name);
        }
        let text = v.as_object()?.get("Fn::Sub")?.as_str()?;
        let mut out = text.to_owned();
        for name in crate::asl::substitution::placeholder_names(text) {
            let value = match name.as_str() {
                "AWS::Partition" => "aws".to_owned(),
                "AWS::URLSuffix" => "amazonaws.com".to_owned(),
                other => self.local_value(other)?,
            };
            out = out.replace(&format!("${{{name}}}"), &value);
        }
        Some(out)
    }

    /// Every intrinsic under `v` (at `at`) that names something the template does not declare.
    pub fn unresolved(&self, v: &Value, at: &JsonPointer, out: &mut Vec<UnresolvedReference>) {
        match v {
            Value::Object(map) if super::is_intrinsic(v) => {
                let (name, arg) = map.iter().next().expect("an intrinsic has one key");
                for target in self.targets(name, arg) {
                    if !self.knows(&target) {
                        out.push(self.unresolved_reference(name, &target, at));
                    }
                }
                self.unresolved(arg, &at.key(name), out);
            }
            Value::Object(map) => {
                for (k, child) in map {
                    self.unresolved(child, &at.key(k), out);
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    self.unresolved(child, &at.index(i), out);
                }
            }
            _ => {}
        }
    }

    /// The resources and parameters one intrinsic names (for `Fn::Sub`, less its own
    /// variables).
    fn targets(&self, name: &str, arg: &Value) -> Vec<String> {
        let resource = |dotted: &str| dotted.split('.').next().unwrap_or(dotted).to_owned();
        match (name, arg) {
            ("Ref", Value::String(target)) => vec![target.clone()],
            ("Fn::GetAtt", Value::String(dotted)) => vec![resource(dotted)],
            ("Fn::GetAtt", Value::Array(parts)) => parts
                .first()
                .and_then(Value::as_str)
                .map(|r| vec![r.to_owned()])
                .unwrap_or_default(),
            ("Fn::Sub", Value::String(text)) => sub_targets(text, None),
            ("Fn::Sub", Value::Array(items)) => match items.first() {
                Some(Value::String(text)) => {
                    sub_targets(text, items.get(1).and_then(Value::as_object))
                }
                _ => Vec::new(),
            },
            _ => Vec::new(),
        }
    }

    fn unresolved_reference(
        &self,
        name: &str,
        target: &str,
        at: &JsonPointer,
    ) -> UnresolvedReference {
        let declared = self
            .resources
            .keys()
            .chain(self.parameters.into_iter().flat_map(|p| p.keys()))
            .map(String::as_str);
        let hint = crate::suggest::did_you_mean(target, declared);
        let short = name.trim_start_matches("Fn::");
        UnresolvedReference {
            pointer: at.clone(),
            message: format!(
                "Template format error: Unresolved resource dependencies [{target}] in the Resources block of the template: this {short} names {target}, which the template declares as no resource or parameter{hint}; CloudFormation rejects the template"
            ),
        }
    }
}

/// The resources and parameters the `${X}`/`${X.Attr}` of an `Fn::Sub` string name, less the
/// names its variable map gives.
fn sub_targets(text: &str, variables: Option<&Map<String, Value>>) -> Vec<String> {
    crate::asl::substitution::placeholder_names(text)
        .into_iter()
        .filter(|n| variables.is_none_or(|vars| !vars.contains_key(n)))
        .map(|n| n.split('.').next().unwrap_or(&n).to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn functions_resolve_and_misspelt_names_are_found() {
        let t = json!({"Transform": "AWS::Serverless-2016-10-31",
            "Parameters": {"Stage": {"Type": "String"}},
            "Resources": {"ChargeFunction": {"Type": "AWS::Serverless::Function"},
                          "Named": {"Type": "AWS::Lambda::Function", "Properties": {"FunctionName": "named-fn"}}}});
        let names = TemplateNames::of(&t).unwrap();
        assert_eq!(
            names.local_value("ChargeFunction.Arn").as_deref(),
            Some("arn:aws:lambda:us-east-1:123456789012:function:ChargeFunction")
        );
        assert_eq!(names.local_value("Named").as_deref(), Some("named-fn"));
        assert_eq!(
            names
                .resolve(&json!({"Fn::Sub": "${Named.Arn}:live"}))
                .as_deref(),
            Some("arn:aws:lambda:us-east-1:123456789012:function:named-fn:live")
        );
        let mut out = Vec::new();
        let def = json!({"A": {"Fn::Sub": "${ChargeFunctoin.Arn} ${Stage} ${AWS::Region} ${ChargeFunctionRole.Arn} ${!Lit}"},
                         "B": {"Fn::GetAtt": ["Nope", "Arn"]}, "C": {"Ref": "Stage"}});
        names.unresolved(&def, &JsonPointer::root(), &mut out);
        assert_eq!(out.len(), 2, "{out:?}");
        assert_eq!(out[0].pointer.to_string(), "/A");
        assert!(
            out[0].message.contains("[ChargeFunctoin]"),
            "{}",
            out[0].message
        );
        assert!(
            out[0].message.contains("did you mean \"ChargeFunction\""),
            "{}",
            out[0].message
        );
        assert_eq!(out[1].pointer.to_string(), "/B");
    }
}
