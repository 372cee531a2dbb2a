//! Payload templates (Parameters, ItemSelector, ResultSelector, JSONPath Assign, Credentials),
//! compiled once.
//!
//! A key ending in `.$` takes a path (`$…`, `$$…`, `$var…`) or an intrinsic call; the output key
//! drops the `.$`. Compiling turns the JSON into a tree of `Node`s where every subtree without
//! a dynamic part is one literal, so evaluation clones literals and walks compiled paths: it
//! never parses a string.
//!
//! A path that selects nothing fails the state with `States.Runtime` and AWS's cause
//! (`The JSONPath '$.x' specified for the field 'a.$' could not be found in the input '…'`).
//! The ASL spec names `States.ParameterPathFailure` for this, but AWS records `States.Runtime`
//! (corpus: `scenarios…test_invalid_jsonpath_INVALID_JSONPATH_IN_STRING_EXPR_CONTEXTPATH`), and
//! so do we.

use crate::asl::diagnostic::{Code, Diagnostic, Diagnostics, JsonPointer};
use crate::asl::error::StatesError;
use crate::asl::eval::Env;
use crate::asl::intrinsics::Call;
use crate::asl::java_hashmap::hashmap_order;
use crate::asl::path::{compact, Path};
use serde_json::{Map, Value};

/// One compiled piece of a template.
#[derive(Debug, Clone)]
enum Node {
    /// A subtree with nothing dynamic in it.
    Literal(Value),
    /// An object with at least one dynamic member: (output key, value).
    Object(Vec<(String, Node)>),
    /// An array with at least one dynamic element.
    Array(Vec<Node>),
    /// A `.$` path; `field` is the key as written, for causes.
    Path { field: String, path: Path },
    /// A `.$` intrinsic call.
    Call(Call),
}

/// A compiled payload template.
#[derive(Debug, Clone)]
pub struct Template {
    raw: Value,
    root: Node,
}

impl Template {
    /// Compiles a template, reporting bad `.$` values and duplicate keys at their pointers.
    ///
    /// An invalid `.$` value is reported at the object that holds it, as AWS does
    /// (`… must be a valid JSONPath or a valid intrinsic function call at /States/A/Parameters`).
    pub fn compile(value: &Value, at: &JsonPointer, diags: &mut Diagnostics) -> Template {
        Template {
            raw: value.clone(),
            root: compile_node(value, at, diags),
        }
    }

    /// The template as written.
    pub fn raw(&self) -> &Value {
        &self.raw
    }

    /// Whether it has no `.$` anywhere (evaluation is a clone).
    pub fn is_static(&self) -> bool {
        matches!(self.root, Node::Literal(_))
    }

    /// Whether any `.$` in it reads `$$.Task.Token`.
    pub fn references_task_token(&self) -> bool {
        fn walk(n: &Node) -> bool {
            match n {
                Node::Literal(_) => false,
                Node::Object(members) => members.iter().any(|(_, n)| walk(n)),
                Node::Array(items) => items.iter().any(walk),
                Node::Path { path, .. } => path.is_task_token(),
                Node::Call(call) => call.paths().iter().any(|p| p.is_task_token()),
            }
        }
        walk(&self.root)
    }

    /// The template as Step Functions Local builds it (`--compat stepfunctions-local`, issue
    /// #50 rule 3): in every object, the plain members first in the template's order, then the
    /// `.$` members, ordered among themselves as a Java `HashMap` iterates their names (without
    /// `.$`). The emulator's histories show `{"Payload.$": "$", "FunctionName": "f"}` as
    /// `{"FunctionName": "f", "Payload": …}`.
    pub fn in_step_functions_local_order(mut self) -> Template {
        plain_members_first(&mut self.root);
        self
    }

    /// Builds the payload. `field` names the template's field (`Parameters`, ...); AWS's causes
    /// name the `.$` key instead, so it only labels failures that have no key.
    pub fn evaluate(&self, env: &Env<'_>, field: &str) -> Result<Value, StatesError> {
        evaluate_node(&self.root, env).map_err(|mut e| {
            if e.cause.is_none() {
                e.cause = Some(format!("The field '{field}' could not be evaluated"));
            }
            e
        })
    }
}

fn evaluate_node(node: &Node, env: &Env<'_>) -> Result<Value, StatesError> {
    Ok(match node {
        Node::Literal(v) => v.clone(),
        Node::Object(members) => {
            let mut map = Map::with_capacity(members.len());
            for (k, n) in members {
                map.insert(k.clone(), evaluate_node(n, env)?);
            }
            Value::Object(map)
        }
        Node::Array(items) => Value::Array(
            items
                .iter()
                .map(|n| evaluate_node(n, env))
                .collect::<Result<_, _>>()?,
        ),
        Node::Path { field, path } => path.select(env).ok_or_else(|| {
            StatesError::runtime(format!(
                "The JSONPath '{}' specified for the field '{field}' could not be found in the input '{}'",
                path.text(),
                compact(env.input)
            ))
        })?,
        Node::Call(call) => call.evaluate(env)?,
    })
}

/// [`Template::in_step_functions_local_order`] on a compiled node and every node under it. A
/// `.$` member is the only one compiled to a path or a call.
fn plain_members_first(node: &mut Node) {
    match node {
        Node::Object(members) => {
            members.iter_mut().for_each(|(_, n)| plain_members_first(n));
            let (plain, dynamic): (Vec<_>, Vec<_>) = std::mem::take(members)
                .into_iter()
                .partition(|(_, n)| !matches!(n, Node::Path { .. } | Node::Call(_)));
            let order = hashmap_order(&dynamic.iter().map(|(k, _)| k).collect::<Vec<_>>());
            let mut dynamic: Vec<Option<(String, Node)>> = dynamic.into_iter().map(Some).collect();
            *members = plain;
            members.extend(order.into_iter().filter_map(|i| dynamic[i].take()));
        }
        Node::Array(items) => items.iter_mut().for_each(plain_members_first),
        _ => {}
    }
}

/// Whether a plain string value would be dynamic if its key ended in `.$`.
fn looks_dynamic(s: &str) -> bool {
    (s.starts_with('$') && Path::parse(s).is_ok())
        || (Call::looks_like(s) && Call::parse(s).is_ok())
}

fn compile_node(value: &Value, at: &JsonPointer, diags: &mut Diagnostics) -> Node {
    match value {
        Value::Object(map) => {
            let mut members = Vec::with_capacity(map.len());
            let mut dynamic = false;
            let mut seen: Vec<(&str, &str)> = Vec::with_capacity(map.len()); // (output, written)
            for (key, v) in map {
                let here = at.key(key);
                let out_key = key.strip_suffix(".$");
                let name = out_key.unwrap_or(key);
                if let Some((_, first)) = seen.iter().find(|(o, _)| *o == name) {
                    diags.schema(
                        &here,
                        format!(
                            "The field '{key}' duplicates the field '{first}' once '.$' is removed"
                        ),
                    );
                }
                seen.push((name, key));
                let node = match out_key {
                    Some(_) => compile_dynamic(key, v, at, diags),
                    None => {
                        if let Value::String(s) = v {
                            if looks_dynamic(s) {
                                diags.warning(
                                    Code::NoDollar,
                                    &here,
                                    format!("The value of the field '{key}' looks like a JSONPath or an intrinsic function call, but the field name does not end with '.$', so it is used as a literal string"),
                                );
                            }
                        }
                        compile_node(v, &here, diags)
                    }
                };
                dynamic |= !matches!(node, Node::Literal(_));
                members.push((name.to_owned(), node));
            }
            if dynamic {
                Node::Object(members)
            } else {
                Node::Literal(value.clone())
            }
        }
        Value::Array(items) => {
            let nodes: Vec<Node> = items
                .iter()
                .enumerate()
                .map(|(i, v)| compile_node(v, &at.index(i), diags))
                .collect();
            if nodes.iter().all(|n| matches!(n, Node::Literal(_))) {
                Node::Literal(value.clone())
            } else {
                Node::Array(nodes)
            }
        }
        v => Node::Literal(v.clone()),
    }
}

/// The value of a `.$` key: a path or an intrinsic call. `at` is the holding object.
fn compile_dynamic(key: &str, v: &Value, at: &JsonPointer, diags: &mut Diagnostics) -> Node {
    let field = key.to_owned();
    // AWS's message first (tests compare it), then why, for a person.
    let compiled: Result<Node, String> = match v {
        Value::String(s) if s.starts_with('$') => Path::parse(s)
            .map(|path| {
                for note in path.dialect_notes() {
                    diags.warning(
                        crate::asl::diagnostic::Code::JsonPathDialect,
                        &at.key(key),
                        note,
                    );
                }
                Node::Path {
                    field: field.clone(),
                    path,
                }
            })
            .map_err(|e| e.to_string()),
        Value::String(s) if Call::looks_like(s) => {
            Call::parse(s).map(Node::Call).map_err(|e| e.to_string())
        }
        Value::String(s) => Err(format!("'{s}' starts with neither '$' nor 'States.'")),
        other => Err(format!("the value must be a string, not {other}")),
    };
    compiled.unwrap_or_else(|why| {
        // AWS's location is the holding object; a person is shown the key itself.
        diags.push(
            Diagnostic::error(
                Code::SchemaValidationFailed,
                at,
                format!("The value for the field '{key}' must be a valid JSONPath or a valid intrinsic function call ({why})"),
            )
            .on_field(key),
        );
        Node::Literal(Value::Null)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asl::diagnostic::Severity;
    use serde_json::json;

    fn compile(t: Value) -> (Template, Diagnostics) {
        let mut d = Diagnostics::default();
        let at = JsonPointer::root().key("States").key("A").key("Parameters");
        (Template::compile(&t, &at, &mut d), d)
    }

    #[test]
    fn evaluates_templates() {
        let input = json!({"a": 1, "b": {"c": [1, 2]}, "s": "x"});
        let ctx = json!({"Task": {"Token": "tok"}, "Execution": {"Id": "e"}});
        let mut vars = Map::new();
        vars.insert("v".into(), json!(42));
        let env = Env {
            input: &input,
            context: &ctx,
            variables: &vars,
        };
        let table: &[(Value, Value)] = &[
            (json!({"k": "v"}), json!({"k": "v"})),
            (json!({"k.$": "$.a"}), json!({"k": 1})),
            (json!({"k.$": "$"}), json!({"k": input.clone()})),
            (json!({"k.$": "$.b.c[*]"}), json!({"k": [1, 2]})),
            (
                json!({"k.$": "$$.Execution.Id", "v.$": "$v"}),
                json!({"k": "e", "v": 42}),
            ),
            (
                json!({"n": {"deep.$": "$.s", "lit": [1, {"x.$": "$.a"}]}}),
                json!({"n": {"deep": "x", "lit": [1, {"x": 1}]}}),
            ),
            (
                json!({"f.$": "States.Format('{}-{}', $.s, $v)"}),
                json!({"f": "x-42"}),
            ),
            (json!({"p": "$.a"}), json!({"p": "$.a"})),
            (json!("plain"), json!("plain")),
        ];
        for (t, want) in table {
            let (tpl, d) = compile(t.clone());
            assert!(!d.has_errors(), "{t}: {d:?}");
            let got = tpl.evaluate(&env, "Parameters");
            assert_eq!(got.as_ref().ok(), Some(want), "{t}: {got:?}");
        }
    }

    #[test]
    fn missing_path_fails_with_aws_cause() {
        let input = json!({"int-literal": 0});
        let ctx = json!({"Execution": {"Input": {}}});
        let env = Env {
            input: &input,
            context: &ctx,
            variables: &crate::asl::eval::NoVariables,
        };
        let (tpl, _) = compile(json!({"value.$": "$$.Execution.Input.no_such_jsonpath"}));
        let e = tpl.evaluate(&env, "Parameters").unwrap_err();
        assert_eq!(e.name(), "States.Runtime");
        assert_eq!(
            e.cause.as_deref(),
            Some("The JSONPath '$$.Execution.Input.no_such_jsonpath' specified for the field 'value.$' could not be found in the input '{\"int-literal\":0}'")
        );
        let (tpl, _) = compile(json!({"m.$": "States.MathAdd($.int-literal, 'x')"}));
        let e = tpl.evaluate(&env, "Parameters").unwrap_err();
        assert_eq!(e.name(), "States.IntrinsicFailure");
    }

    #[test]
    fn reports_bad_templates() {
        let (_, d) = compile(json!({
            "parsed.$": "States.StringToJson('{\"text\":\"An \\\"escaped double quote\\\" here\"}')"
        }));
        assert_eq!(d.len(), 1);
        let first = &d.0[0];
        assert_eq!(first.code, Code::SchemaValidationFailed);
        assert!(
            first.message.starts_with(
                "The value for the field 'parsed.$' must be a valid JSONPath or a valid intrinsic function call ("
            ),
            "{}",
            first.message
        );
        assert_eq!(
            first.location_text().as_deref(),
            Some("/States/A/Parameters")
        );

        for bad in [
            json!({"x.$": 1}),
            json!({"x.$": "nope"}),
            json!({"x.$": "$.a["}),
            json!({"x.$": "States.Nope()"}),
            json!({"o": {"x.$": null}}),
        ] {
            let (_, d) = compile(bad.clone());
            assert!(d.has_errors(), "{bad}");
        }

        let (_, d) = compile(json!({"a": 1, "a.$": "$.x"}));
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(
            d.0[0].location_text().as_deref(),
            Some("/States/A/Parameters/a.$")
        );

        let (_, d) = compile(
            json!({"p": "$.x", "q": "States.UUID()", "r": "$$.Task.Token", "ok": "$5.00", "t": "price $"}),
        );
        let warnings: Vec<_> = d
            .iter()
            .filter(|d| d.severity == Severity::Warning)
            .collect();
        assert_eq!(warnings.len(), 3, "{d:?}");
        assert!(warnings.iter().all(|w| w.code == Code::NoDollar));
        assert!(!d.has_errors());
    }

    #[test]
    fn step_functions_local_puts_dollar_members_last_in_hashmap_order() {
        let input = json!({"a": 1, "b": 2});
        let (ctx, vars) = (json!({}), Map::new());
        let env = Env {
            input: &input,
            context: &ctx,
            variables: &vars,
        };
        let t = json!({"identityResult.$": "$.a", "Fn": "f", "addressResult.$": "$.b",
                       "Nested": {"x.$": "$.a", "y": [{"z.$": "$.b", "w": 0}]}});
        let (tpl, _) = compile(t);
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        let aws = tpl.evaluate(&env, "Parameters").unwrap();
        assert_eq!(
            keys(&aws),
            ["identityResult", "Fn", "addressResult", "Nested"]
        );
        let sfl = tpl
            .in_step_functions_local_order()
            .evaluate(&env, "Parameters")
            .unwrap();
        // Java's HashMap iterates "addressResult" before "identityResult".
        assert_eq!(
            keys(&sfl),
            ["Fn", "Nested", "addressResult", "identityResult"]
        );
        assert_eq!(keys(&sfl["Nested"]), ["y", "x"]);
        assert_eq!(keys(&sfl["Nested"]["y"][0]), ["w", "z"]);
    }

    #[test]
    fn finds_task_token_and_static_templates() {
        let (t, _) = compile(json!({"TaskToken.$": "$$.Task.Token"}));
        assert!(t.references_task_token());
        let (t, _) = compile(json!({"x": [{"t.$": "States.Format('{}', $$.Task.Token)"}]}));
        assert!(t.references_task_token());
        let (t, _) = compile(json!({"t.$": "$.Task.Token"}));
        assert!(!t.references_task_token());
        let (t, _) = compile(json!({"a": {"b": [1, 2]}}));
        assert!(t.is_static());
        assert!(!t.references_task_token());
    }
}
