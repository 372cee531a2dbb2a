//! Drives the AWS-recorded conformance corpus (`tests/corpora/conformance/cases/pure`) through the
//! Choice rules and payload templates, where a case needs nothing but them. Cases that need the
//! full engine are skipped and counted.

use crate::asl::choice::Rule;
use crate::asl::diagnostic::{Diagnostics, JsonPointer};
use crate::asl::eval::{Env, NoVariables};
use crate::asl::template::Template;
use serde_json::{json, Value};
use std::path::PathBuf;

fn cases(prefix: &str) -> Vec<(String, Value)> {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpora/conformance/cases/pure");
    let entries = std::fs::read_dir(&dir).expect("the corpus is in the repository");
    let mut out: Vec<(String, Value)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with(prefix) {
                return None;
            }
            let text = std::fs::read_to_string(e.path()).ok()?;
            Some((name, serde_json::from_str(&text).ok()?))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The recorded placeholders for masked timestamps make a Timestamp case unverifiable.
fn masked(v: &Value) -> bool {
    match v {
        Value::String(s) => s == "date" || s == "datetime" || s == "timestamp",
        Value::Array(a) => a.iter().any(masked),
        Value::Object(m) => m.values().any(masked),
        _ => false,
    }
}

#[test]
fn choice_operators_corpus() {
    let (mut pass, mut skip, mut fail) = (0, 0, Vec::new());
    for (name, case) in cases("choice_operators.") {
        let state = &case["definition"]["States"]["CheckValues"];
        let rules = state["Choices"].as_array().cloned().unwrap_or_default();
        let expected = case["expected"]["output"]["TestResult.$"]
            .as_str()
            .map(str::to_owned);
        let input = case["input"].clone();
        if rules.len() != 1
            || expected.is_none()
            || state.get("InputPath").is_some()
            || masked(&input)
            || masked(&rules[0])
        {
            skip += 1;
            continue;
        }
        let mut d = Diagnostics::default();
        let rule = Rule::compile(&rules[0], &JsonPointer::root(), &mut d);
        let ctx = json!({"Execution": {"Input": input.clone()}});
        let env = Env {
            input: &input,
            context: &ctx,
            variables: &NoVariables,
        };
        let got = match rule.evaluate(&env) {
            Ok(true) => "ConditionTrue".to_owned(),
            Ok(false) => "ConditionFalse".to_owned(),
            Err(e) => format!("error {e}"),
        };
        if d.has_errors() || Some(&got) != expected.as_ref() {
            fail.push(format!(
                "{name}: got {got}, want {expected:?}, diags {:?}",
                d.0
            ));
        } else {
            pass += 1;
        }
    }
    eprintln!(
        "choice_operators corpus: {pass} passed, {} failed, {skip} skipped",
        fail.len()
    );
    assert!(fail.is_empty(), "{}", fail.join("\n"));
}

#[test]
fn intrinsic_functions_corpus() {
    let (mut pass, mut skip, mut fail) = (0, 0, Vec::new());
    let mut all = cases("intrinsic_functions.");
    all.extend(cases("scenarios."));
    for (name, case) in all {
        let def = &case["definition"];
        let states = def["States"].as_object().cloned().unwrap_or_default();
        let single = states.len() == 1 && def.get("QueryLanguage").is_none();
        let state = states.values().next().cloned().unwrap_or(Value::Null);
        let params = state.get("Parameters");
        let plain = state["Type"] == "Pass"
            && state.as_object().is_some_and(|m| {
                m.keys()
                    .all(|k| matches!(k.as_str(), "Type" | "Parameters" | "End" | "Comment"))
            });
        let Some(params) = params.filter(|_| single && plain) else {
            skip += 1;
            continue;
        };
        let input = case["input"].clone();
        let ctx = json!({
            "Execution": {"Input": input.clone(), "Name": "<ExecArnPart_0idx>"},
            "StateMachine": {
                "Id": "arn:<partition>:states:<region>:111111111111:stateMachine:<ArnPart_0idx>",
                "Name": "<ArnPart_0idx>"
            }
        });
        let env = Env {
            input: &input,
            context: &ctx,
            variables: &NoVariables,
        };
        let mut d = Diagnostics::default();
        let tpl = Template::compile(params, &JsonPointer::root(), &mut d);
        let expected = &case["expected"];
        let got = tpl.evaluate(&env, "Parameters");
        let ok = match (expected["status"].as_str(), &got) {
            (Some("SUCCEEDED"), Ok(out)) => {
                let want = &expected["output"];
                match want.get("FunctionResult").and_then(Value::as_str) {
                    Some("RandomNumberGenerated") => out["FunctionResult"].is_i64(),
                    Some("generated-uuid") => out["FunctionResult"]
                        .as_str()
                        .is_some_and(|s| s.len() == 36),
                    _ => out == want,
                }
            }
            (Some("FAILED"), Err(e)) => {
                let cause = expected["cause"].as_str().unwrap_or("");
                e.name() == expected["error"].as_str().unwrap_or("")
                    && e.cause.as_deref().is_some_and(|c| {
                        // The engine prefixes "An error occurred while executing the state …";
                        // the recording masks the input text.
                        let masked = c
                            .rsplit_once(" in the input '")
                            .map(|(head, _)| head)
                            .unwrap_or(c);
                        cause.contains(masked)
                    })
            }
            _ => false,
        };
        if ok && !d.has_errors() {
            pass += 1;
        } else {
            fail.push(format!(
                "{name}: got {got:?}, want {expected}, diags {:?}",
                d.0
            ));
        }
    }
    eprintln!(
        "intrinsic/template corpus: {pass} passed, {} failed, {skip} skipped",
        fail.len()
    );
    assert!(fail.is_empty(), "{}", fail.join("\n"));
}

#[test]
fn odd_inputs_never_panic() {
    use crate::asl::intrinsics::Call;
    use crate::asl::path::Path;
    let texts = [
        "",
        "$",
        "$$",
        "$é",
        "$[é]",
        "$['é",
        "$..",
        "$.[",
        "$[?(",
        "$[-]",
        "$[99999999999999999999]",
        "$.a[-1]",
        "States.",
        "States.Array('é\\",
        "States.Array(é)",
        "States.Format('{",
        "States.Array(-)",
        "States.Array($[)",
        "States.Array($.a[?(@.x == ')')])",
        "States.Array(1e999)",
        "States.Array('\\u')",
    ];
    for t in texts {
        let _ = Path::parse(t);
        let _ = Path::parse_reference(t);
        let _ = Call::parse(t);
    }
    let input = json!({"a": [1, "é", {"x": null}]});
    let ctx = json!({});
    let env = Env {
        input: &input,
        context: &ctx,
        variables: &NoVariables,
    };
    for t in ["$.a[-5]", "$.a[2].x.y", "$..x", "$.a[?(@.x)]"] {
        if let Ok(p) = Path::parse(t) {
            let _ = p.select(&env);
            let _ = p.invalid_path_cause(&env);
            let mut target = input.clone();
            let _ = p.set(&mut target, json!(1));
        }
    }
}
