//! TestState against AWS's recordings: every case in `tests/corpora/conformance/cases/test_state`
//! is sent through the library ([`sfn_local::engine::test_state::test_state`]) and through the
//! binary (`sfn-local test-state`), and the response (or AWS's error code and message) is
//! compared with the recorded one after the corpus's normalisation (JSON texts holding objects
//! parsed, `arn:aws:` masked, dates masked, `<placeholders>` bound consistently per case).
//! JSON texts of other values are compared as values: the recording re-spelled them.
//!
//! Failing cases are listed with the reason in `tests/known_failures/test_state.txt`; the test
//! fails when an unlisted case fails and when a listed one passes, so the list only shrinks.

mod common;

use common::conformance::{match_str, match_value, normalise, Bindings};
use serde_json::{json, Value};
use sfn_local::clock::SystemClock;
use sfn_local::engine::test_state::{test_state_blocking, TestStateRequest};
use sfn_local::tasks::LocalTasks;
use std::collections::BTreeMap;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

/// AWS's request from a case: the JSON-valued parameters as the JSON text the API takes.
fn request_of(case: &Value) -> TestStateRequest {
    let r = &case["request"];
    let text = |k: &str| r.get(k).map(|v| v.to_string());
    TestStateRequest {
        definition: r["definition"].to_string(),
        role_arn: r["roleArn"].as_str().map(str::to_owned),
        input: text("input"),
        inspection_level: r
            .get("inspectionLevel")
            .and_then(|v| serde_json::from_value(v.clone()).ok()),
        reveal_secrets: r["revealSecrets"].as_bool(),
        variables: text("variables"),
        state_name: r["stateName"].as_str().map(str::to_owned),
        mock: r
            .get("mock")
            .and_then(|v| serde_json::from_value(v.clone()).ok()),
        context: text("context"),
        state_configuration: r
            .get("stateConfiguration")
            .and_then(|v| serde_json::from_value(v.clone()).ok()),
    }
}

/// The corpus's normalisation of a response: JSON texts of objects become the objects.
fn normalised_response(mut v: Value) -> Value {
    fn parse_objects(v: &mut Value) {
        match v {
            Value::String(s) if s.starts_with('{') => {
                if let Ok(parsed @ Value::Object(_)) = serde_json::from_str::<Value>(s) {
                    *v = parsed;
                }
            }
            Value::Object(o) => o.values_mut().for_each(parse_objects),
            _ => {}
        }
    }
    if let Some(o) = v.as_object_mut() {
        for k in ["output", "inspectionData"] {
            if let Some(x) = o.get_mut(k) {
                if k == "inspectionData" {
                    if let Some(d) = x.as_object_mut() {
                        d.values_mut().for_each(parse_objects);
                    }
                } else {
                    parse_objects(x);
                }
            }
        }
    }
    normalise(v)
}

/// The rest of the corpus's masks: our region and account as the recording's, and the
/// case's own `JsonpathTransformer`s (`$..output..Key`: that key's value, anywhere).
fn masked(case: &Value, v: Value) -> Value {
    fn replace_key(v: &mut Value, key: &str, replacement: &str) {
        match v {
            Value::Object(o) => {
                for (k, child) in o.iter_mut() {
                    if k == key {
                        *child = Value::String(replacement.into());
                    } else {
                        replace_key(child, key, replacement);
                    }
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|c| replace_key(c, key, replacement)),
            _ => {}
        }
    }
    let text = v
        .to_string()
        .replace("123456789012", "111111111111")
        .replace("us-east-1", "<region>");
    let mut v: Value = serde_json::from_str(&text).unwrap_or(v);
    for t in case["snapshot_transformers"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if t["type"] != "JsonpathTransformer" {
            continue;
        }
        let (Some(path), Some(replacement)) = (t["jsonpath"].as_str(), t["replacement"].as_str())
        else {
            continue;
        };
        if let Some(key) = path.rsplit("..").next().filter(|k| !k.contains('.')) {
            replace_key(&mut v, key, replacement);
        }
    }
    v
}

/// Expected and actual agree, JSON texts of non-objects compared as the values they spell.
fn agrees(expected: &Value, actual: &Value, b: &mut Bindings) -> bool {
    match (expected, actual) {
        (Value::String(e), Value::String(a)) => {
            if match_str(e, a, b) {
                return true;
            }
            match (
                serde_json::from_str::<Value>(e),
                serde_json::from_str::<Value>(a),
            ) {
                (Ok(ev), Ok(av)) if !ev.is_string() || e.starts_with('"') => {
                    match_value(&ev, &normalise(av), b)
                }
                _ => false,
            }
        }
        (Value::Object(e), Value::Object(a)) => {
            e.len() == a.len()
                && e.iter()
                    .all(|(k, x)| a.get(k).is_some_and(|y| agrees(x, y, b)))
        }
        (Value::Array(e), Value::Array(a)) => {
            e.len() == a.len() && e.iter().zip(a).all(|(x, y)| agrees(x, y, b))
        }
        _ => match_value(expected, actual, b),
    }
}

/// Compares an answer (a response, or `{"error": CODE, "message": MESSAGE}`) with the case's.
fn compare(case: &Value, actual: &Value) -> Option<String> {
    let expected = &case["expected"];
    let actual = &masked(case, actual.clone());
    let mut b = Bindings::new();
    if agrees(expected, actual, &mut b) {
        None
    } else {
        Some(format!("want {expected}\n    got  {actual}"))
    }
}

/// The local command that is the Lambda function a case invoked without a mock (the corpus
/// names its handler file in LocalStack's repository), as `--task` binds a function: the
/// replay runs the same function on this machine.
fn recorded_function(case: &Value) -> Option<&'static str> {
    let handler = case["lambda_functions_created_by_test"][0]["handler_file"].as_str()?;
    match handler.rsplit('/').next()? {
        // Returns the event it is given.
        "id_function.py" => Some("cat"),
        // Returns the bytes of the JSON text "HelloWorld!", whatever the event.
        "return_bytes_str.py" => Some(r#"printf %s '"HelloWorld!"'"#),
        _ => None,
    }
}

/// The state name a case's request tests (a single state is `StateName`, as on AWS).
fn tested_state(request: &TestStateRequest) -> String {
    request
        .state_name
        .clone()
        .unwrap_or_else(|| "StateName".to_owned())
}

/// The corpus's masks of Lambda's HTTP metadata (CORPUS_README, normalisation 3): HTTP `Date`
/// headers, request ids and trace ids.
fn mask_http_metadata(v: &mut Value) {
    match v {
        Value::Object(o) => {
            for (k, child) in o.iter_mut() {
                match k.as_str() {
                    "Date" => *child = json!("date"),
                    "x-amzn-RequestId" => *child = json!("x-amzn-RequestId"),
                    "X-Amzn-Trace-Id" => *child = json!("X-Amzn-Trace-Id"),
                    "RequestId" => *child = json!("RequestId"),
                    _ => mask_http_metadata(child),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(mask_http_metadata),
        _ => {}
    }
}

/// Applies [`mask_http_metadata`] to the `SdkHttpMetadata` and `SdkResponseMetadata` of a
/// response, wherever they are.
fn masked_metadata(mut v: Value) -> Value {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(o) => {
                for (k, child) in o.iter_mut() {
                    if k == "SdkHttpMetadata" || k == "SdkResponseMetadata" {
                        mask_http_metadata(child);
                    } else {
                        walk(child);
                    }
                }
            }
            Value::Array(a) => a.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut v);
    v
}

fn library_answer(case: &Value) -> Value {
    let request = request_of(case);
    let mut tasks = LocalTasks::default();
    if let Some(function) = recorded_function(case) {
        let (state, command) = sfn_local::tasks::command::parse_binding(&format!(
            "{}={function}",
            tested_state(&request)
        ))
        .expect("a binding");
        tasks.commands.insert(state, command);
    }
    match test_state_blocking(&request, Rc::new(tasks), Arc::new(SystemClock::new(1.0))) {
        Ok(r) => masked_metadata(normalised_response(
            serde_json::to_value(r).unwrap_or_default(),
        )),
        Err(e) => json!({"error": e.code, "message": e.message}),
    }
}

fn binary_answer(case: &Value) -> Value {
    let request = request_of(case);
    let mut cmd = std::process::Command::new(common::bin());
    cmd.arg("test-state")
        .arg("--definition")
        .arg(&request.definition);
    let mut opt = |name: &str, v: Option<String>| {
        if let Some(v) = v {
            cmd.arg(format!("--{name}")).arg(v);
        }
    };
    opt("input", request.input.clone());
    opt("state-name", request.state_name.clone());
    opt("role-arn", request.role_arn.clone());
    opt("context", request.context.clone());
    opt("variables", request.variables.clone());
    opt(
        "inspection-level",
        case["request"]["inspectionLevel"]
            .as_str()
            .map(str::to_owned),
    );
    opt("mock", case["request"].get("mock").map(Value::to_string));
    opt(
        "state-configuration",
        case["request"]
            .get("stateConfiguration")
            .map(Value::to_string),
    );
    if request.reveal_secrets == Some(true) {
        cmd.arg("--reveal-secrets");
    }
    if let Some(function) = recorded_function(case) {
        cmd.arg("--task").arg(function);
    }
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) => return json!({"spawn": e.to_string()}),
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(0) {
        return serde_json::from_slice(&out.stdout)
            .map(|v| masked_metadata(normalised_response(v)))
            .unwrap_or_else(|e| json!({"unparsable": e.to_string()}));
    }
    let prefix = "An error occurred (";
    let line = stderr.lines().find(|l| l.starts_with(prefix));
    match line.and_then(|l| {
        let rest = &l[prefix.len()..];
        let (code, rest) = rest.split_once(") when calling the TestState operation: ")?;
        Some(json!({"error": code, "message": rest}))
    }) {
        Some(v) if out.status.code() == Some(254) => v,
        _ => json!({"exit": out.status.code(), "stderr": stderr}),
    }
}

fn known_failures() -> BTreeMap<String, String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/known_failures/test_state.txt");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| match l.split_once('\t') {
            Some((id, reason)) => (id.trim().to_owned(), reason.trim().to_owned()),
            None => (l.trim().to_owned(), String::new()),
        })
        .collect()
}

fn check(face: &str, answer: fn(&Value) -> Value) {
    let cases = common::conformance_cases();
    let known = known_failures();
    let mut files: Vec<_> = std::fs::read_dir(cases.join("test_state"))
        .expect("the test_state cases")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let (mut passed, mut total) = (0, 0);
    let mut unexpected = Vec::new();
    for file in files {
        let case: Value =
            serde_json::from_str(&std::fs::read_to_string(&file).expect("a case")).expect("JSON");
        let id = case["id"].as_str().unwrap_or_default().to_owned();
        total += 1;
        let diff = compare(&case, &answer(&case));
        match (diff, known.contains_key(&id)) {
            (None, false) => passed += 1,
            (None, true) => {
                passed += 1;
                unexpected.push(format!(
                    "{id}: passes now; remove it from the known failures"
                ));
            }
            (Some(_), true) => {}
            (Some(d), false) => unexpected.push(format!("{id}:\n    {d}")),
        }
    }
    eprintln!("conformance (test_state, {face}): pass rate {passed}/{total}");
    assert!(
        unexpected.is_empty(),
        "{} unexpected results:\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
}

#[test]
fn test_state_cases_through_the_library_match_aws() {
    check("library", library_answer);
}

#[test]
fn test_state_cases_through_the_binary_match_aws() {
    check("binary", binary_answer);
}

/// No request makes TestState panic: every case, with each field of its request and of its
/// state's definition swapped for other JSON values, goes through the library (a cheap,
/// deterministic stand-in for a fuzzer).
#[test]
fn mutated_test_state_requests_never_panic() {
    let cases = common::conformance_cases();
    let replacements = [
        json!(null),
        json!(-1),
        json!(1e300),
        json!("$.nope"),
        json!("{% $undefined() %}"),
        json!([]),
        json!({}),
        json!(true),
    ];
    let mut calls = 0;
    for entry in std::fs::read_dir(cases.join("test_state")).expect("the test_state cases") {
        let path = entry.expect("an entry").path();
        let case: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("a case")).expect("JSON");
        let mut variants = Vec::new();
        for key in [
            "input",
            "context",
            "variables",
            "mock",
            "stateConfiguration",
        ] {
            for r in &replacements {
                let mut c = case.clone();
                c["request"][key] = r.clone();
                variants.push(c);
            }
        }
        let state_keys: Vec<String> = case["request"]["definition"]
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        for key in state_keys {
            for r in &replacements {
                let mut c = case.clone();
                c["request"]["definition"][&key] = r.clone();
                variants.push(c);
            }
        }
        for v in variants {
            calls += 1;
            let result = std::panic::catch_unwind(|| library_answer(&v));
            assert!(
                result.is_ok(),
                "panicked on {}",
                serde_json::to_string(&v["request"]).unwrap_or_default()
            );
        }
    }
    eprintln!("{calls} mutated TestState requests, no panic");
}
