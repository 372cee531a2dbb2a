//! `${Name}` placeholders: SAM's and CloudFormation's `DefinitionSubstitutions`.
//!
//! AWS never sees them: CloudFormation replaces each `${Name}` in the definition's text with the
//! value the template gives before the state machine is created. sfn-local does the same with
//! the values the user gives (`--sub NAME=VALUE`, `--definition-substitutions FILE`, a template's
//! `DefinitionSubstitutions`). A placeholder left without a value is, for `validate`, a WARNING
//! (`UNRESOLVED_SUBSTITUTION`) and a stand-in of the shape the field wants (an ARN for a
//! `Resource`, a number for `TimeoutSeconds`, ...) so the rest is still checked; for `run`, an
//! ERROR: nothing runs with a hole in it.
//!
//! Replacement works on the parsed value (strings and object keys), not on the text, so every
//! diagnostic keeps the JSON pointer of the field the placeholder is in.

use crate::asl::diagnostic::{Code, Diagnostics, JsonPointer};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Values for `${Name}` placeholders.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Substitutions {
    values: BTreeMap<String, String>,
    /// Names with a value only CloudFormation knows (`!GetAtt`, `!Ref`, `${AWS::Region}`):
    /// stand-ins without a warning when validating.
    deferred: BTreeSet<String>,
}

/// What to do with a placeholder that has no value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unresolved {
    /// WARNING, and check the rest with a stand-in (`validate`).
    StandIn,
    /// ERROR: the definition cannot run (`run`, `test`).
    Refuse,
}

impl Substitutions {
    /// No values.
    pub fn new() -> Self {
        Substitutions::default()
    }

    /// Sets one value (a later value for the same name wins).
    pub fn insert(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.values.insert(name.into(), value.into());
    }

    /// Marks `name` as having a value only known at deploy time.
    pub fn defer(&mut self, name: impl Into<String>) {
        self.deferred.insert(name.into());
    }

    /// Whether `name` has a deploy-time value and no local one.
    pub fn is_deferred(&self, name: &str) -> bool {
        !self.values.contains_key(name) && self.deferred.contains(name)
    }

    /// Adds `other`'s values and deferred names; `other` wins.
    pub fn extend(&mut self, other: &Substitutions) {
        self.deferred.extend(other.deferred.iter().cloned());
        self.values
            .extend(other.values.iter().map(|(k, v)| (k.clone(), v.clone())));
    }

    /// The value of `name`, if given.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// The names given a value.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.values.keys().map(String::as_str)
    }

    /// Every name it knows: with a value, or with a deploy-time one.
    pub fn known_names(&self) -> impl Iterator<Item = &str> {
        self.values
            .keys()
            .chain(self.deferred.iter())
            .map(String::as_str)
    }

    /// Whether no value is given.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Parses `NAME=VALUE` (`--sub`).
    pub fn parse_assignment(text: &str) -> Result<(String, String), String> {
        match text.split_once('=') {
            Some((name, value)) if valid_name(name) => Ok((name.to_owned(), value.to_owned())),
            _ => Err(format!(
                "--sub wants NAME=VALUE (NAME of letters, digits, '_', '.', ':' or '-'), not '{text}'"
            )),
        }
    }

    /// Reads a map of names to values (JSON or YAML, as `--definition-substitutions` takes it).
    /// Strings are taken as they are; numbers and booleans as their JSON text; anything else
    /// (a CloudFormation intrinsic such as `{"Ref": "X"}` or `{"Fn::GetAtt": ...}`) has a value
    /// only at deploy time: validate uses a stand-in without a warning, run refuses it.
    pub fn from_map(map: &Map<String, Value>) -> Self {
        let mut subs = Substitutions::new();
        for (name, value) in map {
            match value {
                Value::String(s) => subs.insert(name, s),
                Value::Number(n) => subs.insert(name, n.to_string()),
                Value::Bool(b) => subs.insert(name, b.to_string()),
                _ => subs.defer(name),
            }
        }
        subs
    }

    /// Parses the text of a `--definition-substitutions` file: a JSON or YAML object.
    pub fn from_text(text: &str) -> Result<Self, String> {
        let value = if crate::asl::yaml::looks_like_yaml(text) {
            crate::asl::yaml::parse(text)
                .map(|d| d.value)
                .map_err(|e| e.to_string())?
        } else {
            serde_json::from_str(text).map_err(|e| e.to_string())?
        };
        match value {
            Value::Object(map) => Ok(Substitutions::from_map(&map)),
            _ => Err("expected an object of NAME: VALUE".to_owned()),
        }
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'))
}

/// Fields whose value is a number: an unresolved placeholder standing alone there becomes 1.
const NUMBER_FIELDS: &[&str] = &[
    "TimeoutSeconds",
    "HeartbeatSeconds",
    "Seconds",
    "MaxAttempts",
    "IntervalSeconds",
    "BackoffRate",
    "MaxDelaySeconds",
    "MaxConcurrency",
    "ToleratedFailureCount",
    "ToleratedFailurePercentage",
    "MaxItems",
    "MaxItemsPerBatch",
    "MaxInputBytesPerBatch",
    "Version",
];

/// Replaces every `${Name}` in the strings and keys of `value`. Unresolved placeholders are
/// reported at their field and replaced as `unresolved` says. Returns how many were replaced
/// (with values or stand-ins).
pub fn apply(
    value: &mut Value,
    subs: &Substitutions,
    unresolved: Unresolved,
    diags: &mut Diagnostics,
) -> usize {
    let mut count = 0;
    walk(
        value,
        &JsonPointer::root(),
        None,
        subs,
        unresolved,
        diags,
        &mut count,
    );
    count
}

fn walk(
    value: &mut Value,
    at: &JsonPointer,
    key: Option<&str>,
    subs: &Substitutions,
    unresolved: Unresolved,
    diags: &mut Diagnostics,
    count: &mut usize,
) {
    match value {
        Value::String(s) if s.contains("${") => {
            if let Some(new) = replace(s, at, key, subs, unresolved, diags, count) {
                *value = new;
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                walk(item, &at.index(i), None, subs, unresolved, diags, count);
            }
        }
        Value::Object(map) => {
            if map.keys().any(|k| k.contains("${")) {
                let old = std::mem::take(map);
                for (k, v) in old {
                    let k = if k.contains("${") {
                        match replace(&k, &at.key(&k), None, subs, unresolved, diags, count) {
                            Some(Value::String(new)) => new,
                            _ => k,
                        }
                    } else {
                        k
                    };
                    map.insert(k, v);
                }
            }
            for (k, v) in map.iter_mut() {
                walk(v, &at.key(k), Some(k), subs, unresolved, diags, count);
            }
        }
        _ => {}
    }
}

/// The names of the `${Name}` placeholders of a string, in order.
pub fn placeholder_names(s: &str) -> Vec<String> {
    placeholders(s)
        .into_iter()
        .map(|(_, n)| n.to_owned())
        .collect()
}

/// The placeholders of a string: (byte range of `${...}`, name). `${!x}` is CloudFormation's
/// escape for a literal `${x}` and is not a placeholder.
fn placeholders(s: &str) -> Vec<(std::ops::Range<usize>, &str)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = s[from..].find("${") {
        let start = from + i;
        let Some(len) = s[start + 2..].find('}') else {
            break;
        };
        let name = &s[start + 2..start + 2 + len];
        let end = start + 2 + len + 1;
        if valid_name(name) {
            out.push((start..end, name));
        }
        from = end;
    }
    out
}

/// The new value of string `s` at `at`, or `None` when it has no placeholder.
fn replace(
    s: &str,
    at: &JsonPointer,
    key: Option<&str>,
    subs: &Substitutions,
    unresolved: Unresolved,
    diags: &mut Diagnostics,
    count: &mut usize,
) -> Option<Value> {
    let found = placeholders(s);
    if found.is_empty() {
        return None;
    }
    let whole = found.len() == 1 && found[0].0 == (0..s.len());
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    for (range, name) in &found {
        out.push_str(&s[last..range.start]);
        last = range.end;
        *count += 1;
        if let Some(v) = subs.get(name) {
            out.push_str(v);
            continue;
        }
        let stand_in = if whole {
            whole_stand_in(name, key)
        } else {
            Value::String(plain_name(name))
        };
        report_unresolved(name, &stand_in, at, subs, unresolved, diags);
        if whole {
            return Some(stand_in);
        }
        if let Value::String(t) = stand_in {
            out.push_str(&t);
        }
    }
    out.push_str(&s[last..]);
    Some(Value::String(out))
}

/// Says what a placeholder without a value means for `unresolved`: a misspelt name (near one
/// with a value) is an ERROR with "did you mean", whatever the command, since a stand-in or a
/// `--sub` of the typo would be the wrong fix; a deploy-time value is silent for `validate`.
fn report_unresolved(
    name: &str,
    stand_in: &Value,
    at: &JsonPointer,
    subs: &Substitutions,
    unresolved: Unresolved,
    diags: &mut Diagnostics,
) {
    let shown = match stand_in {
        Value::String(t) => format!("'{t}'"),
        other => other.to_string(),
    };
    let deferred = subs.is_deferred(name);
    let near = (!deferred)
        .then(|| crate::suggest::closest(name, subs.known_names()))
        .flatten();
    let code = Code::UnresolvedSubstitution;
    match (unresolved, near) {
        (_, Some(near)) => diags.error(
            code,
            at,
            format!("${{{name}}} has no value (did you mean ${{{near}}}, which has one?)"),
        ),
        (Unresolved::StandIn, None) if deferred => {}
        (Unresolved::Refuse, None) if deferred => diags.error(
            code,
            at,
            format!("${{{name}}} has a value only CloudFormation knows at deploy time: give it with --sub {name}=VALUE"),
        ),
        (Unresolved::StandIn, None) => diags.warning(
            code,
            at,
            format!("${{{name}}} has no value (give one with --sub {name}=VALUE or --definition-substitutions FILE); checked with the stand-in {shown}"),
        ),
        (Unresolved::Refuse, None) => diags.error(
            code,
            at,
            format!("${{{name}}} has no value: give one with --sub {name}=VALUE or --definition-substitutions FILE"),
        ),
    }
}

/// A name usable inside an ARN or a name field: what the placeholder is called, less `:` and `.`.
fn plain_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// The stand-in for a placeholder that is a field's whole value, shaped for the field.
fn whole_stand_in(name: &str, key: Option<&str>) -> Value {
    let plain = plain_name(name);
    let Some(key) = key else {
        return Value::String(plain);
    };
    if key == "Resource" {
        return Value::String(format!(
            "arn:aws:lambda:us-east-1:123456789012:function:{plain}"
        ));
    }
    if NUMBER_FIELDS.contains(&key) {
        return Value::Number(1.into());
    }
    if key == "Timestamp" {
        return Value::String("2000-01-01T00:00:00Z".to_owned());
    }
    if key.ends_with(".$") || key.ends_with("Path") {
        return Value::String("$".to_owned());
    }
    if key.ends_with("Arn") || key.ends_with("ARN") {
        return Value::String(format!(
            "arn:aws:states:us-east-1:123456789012:stateMachine:{plain}"
        ));
    }
    Value::String(plain)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asl::diagnostic::Severity;
    use serde_json::json;

    #[test]
    fn values_replace_and_stand_ins_fit_the_field() {
        let mut def = json!({
            "States": {"A": {"Type": "Task", "Resource": "${Fn}", "TimeoutSeconds": "${T}",
                "Parameters": {"${Table}.$": "$", "Name": "pre-${Env}-post", "Q": "${Given}", "Lit": "${!x}"}}}
        });
        let mut subs = Substitutions::new();
        subs.insert("Given", "value");
        let mut diags = Diagnostics::default();
        let n = apply(&mut def, &subs, Unresolved::StandIn, &mut diags);
        assert_eq!(n, 5);
        let a = &def["States"]["A"];
        assert_eq!(
            a["Resource"],
            "arn:aws:lambda:us-east-1:123456789012:function:Fn"
        );
        assert_eq!(a["TimeoutSeconds"], 1);
        assert_eq!(a["Parameters"]["Table.$"], "$");
        assert_eq!(a["Parameters"]["Name"], "pre-Env-post");
        assert_eq!(a["Parameters"]["Q"], "value");
        assert_eq!(a["Parameters"]["Lit"], "${!x}");
        assert_eq!(diags.len(), 4);
        assert!(diags
            .iter()
            .all(|d| d.severity == Severity::Warning && d.code == Code::UnresolvedSubstitution));
        assert_eq!(
            diags.iter().next().unwrap().location_text().as_deref(),
            Some("/States/A/Resource")
        );
    }

    #[test]
    fn refusing_is_an_error_naming_the_placeholder() {
        let mut def = json!({"Resource": "${Fn}"});
        let mut diags = Diagnostics::default();
        apply(
            &mut def,
            &Substitutions::new(),
            Unresolved::Refuse,
            &mut diags,
        );
        assert!(diags.has_errors());
        assert!(diags.iter().next().unwrap().message.contains("${Fn}"));
    }

    #[test]
    fn a_misspelt_placeholder_is_an_error_naming_the_near_one() {
        let mut def = json!({"QueueUrl": "${ShipingQueueUrl}", "Other": "${Unrelated}"});
        let mut subs = Substitutions::new();
        subs.insert("ShippingQueueUrl", "https://q");
        let mut diags = Diagnostics::default();
        apply(&mut def, &subs, Unresolved::StandIn, &mut diags);
        let found: Vec<_> = diags.iter().collect();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].severity, Severity::Error);
        assert!(
            found[0]
                .message
                .contains("did you mean ${ShippingQueueUrl}"),
            "{}",
            found[0].message
        );
        assert!(!found[0].message.contains("--sub"), "{}", found[0].message);
        assert_eq!(found[1].severity, Severity::Warning);
    }

    #[test]
    fn assignments_and_files_parse() {
        assert_eq!(
            Substitutions::parse_assignment("A=b=c"),
            Ok(("A".into(), "b=c".into()))
        );
        assert!(Substitutions::parse_assignment("novalue").is_err());
        let s = Substitutions::from_text("A: x\nB: 3\nC: !Ref D\n").unwrap();
        assert_eq!(s.get("A"), Some("x"));
        assert_eq!(s.get("B"), Some("3"));
        assert_eq!(s.get("C"), None);
        assert!(s.is_deferred("C"));
        assert_eq!(
            Substitutions::from_text("{\"A\": \"y\"}").unwrap().get("A"),
            Some("y")
        );
    }
}
