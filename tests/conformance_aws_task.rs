//! The engine against AWS's recordings of executions with Task states: every case in
//! `tests/corpora/conformance/cases/aws_task` is replayed with each Task's recorded answers as mocks
//! (`task_results`: a `*Succeeded` event returns its output, a `*Failed` one throws its error and
//! cause, a `*TimedOut` one never answers, so the state's own TimeoutSeconds/HeartbeatSeconds
//! decide), in the order AWS recorded them per state. The run is compared with the recording by
//! the same rules as the pure cases (`tests/common/conformance.rs`): status, output or
//! error/cause, event types and their `previousEventId` links.
//!
//! Failing cases are listed with the reason in `tests/known_failures/aws_task.txt`; the test fails
//! when an unlisted case fails and when a listed one passes, so the list only shrinks. The report
//! goes to stderr (`--nocapture`) and `target/conformance/aws_task.txt`.

mod common;

use common::conformance::{check_suite, Suite};
use serde_json::{json, Map, Value};
use sfn_local::tasks::mock::MockConfig;
use sfn_local::tasks::s3::LocalS3;
use sfn_local::tasks::{LocalTasks, TaskRunner};
use std::path::PathBuf;
use std::rc::Rc;

/// The recorded answers of every Task state, as inline mocks.
fn recorded_mocks(case: &Value) -> Result<Rc<dyn TaskRunner>, String> {
    let mut per_state: Map<String, Value> = Map::new();
    for r in case["task_results"].as_array().into_iter().flatten() {
        let (Some(state), Some(kind)) = (r["state"].as_str(), r["type"].as_str()) else {
            continue;
        };
        let d = &r["details"];
        let answer = if kind.ends_with("Succeeded") {
            let output = match &d["output"] {
                Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| json!(s)),
                other => other.clone(),
            };
            json!({ "Return": output })
        } else if kind.ends_with("Failed") {
            let text = |v: &Value| match v {
                Value::Null => Value::Null,
                Value::String(s) => json!(s),
                other => json!(original_text(case, other)),
            };
            json!({ "Throw": { "Error": text(&d["error"]), "Cause": text(&d["cause"]) } })
        } else if kind.ends_with("TimedOut") {
            json!({ "NeverAnswers": true })
        } else {
            continue;
        };
        let entries = per_state
            .entry(state.to_owned())
            .or_insert_with(|| json!({}));
        if let Value::Object(m) = entries {
            let n = m.len().to_string();
            m.insert(n, answer);
        }
    }
    let mocks = MockConfig::default().inline(&Value::Object(per_state))?;
    Ok(Rc::new(LocalTasks {
        mocks,
        s3_dir: Some(s3_objects(case)?),
        ..LocalTasks::default()
    }))
}

/// A fresh local S3 folder holding the objects the case's test uploaded
/// (`s3_objects_put_by_test`); result files the run writes land there too.
fn s3_objects(case: &Value) -> Result<PathBuf, String> {
    let id = case["id"].as_str().unwrap_or("case");
    let safe: String = id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let dir = std::env::temp_dir()
        .join(format!("sfn-local-s3-{}", std::process::id()))
        .join(safe);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let s3 = LocalS3::new(&dir);
    for o in case["s3_objects_put_by_test"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let (Some(bucket), Some(key)) = (o["bucket"].as_str(), o["key"].as_str()) else {
            continue;
        };
        let body = match &o["body"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        s3.put_object(bucket, key, body.as_bytes())?;
    }
    Ok(dir)
}

/// The JSON text a recorded object was parsed from. The recording parsed JSON-object strings
/// (a Lambda's error cause) and lost their spacing; Python Lambdas write `{"a": 1, "b": 2}`.
/// That spelling is taken when the case shows it somewhere (a Catch's output keeps the text),
/// else the compact one.
fn original_text(case: &Value, v: &Value) -> String {
    let compact = v.to_string();
    let spaced = python_json(v);
    let haystack = case.to_string();
    let quoted = Value::String(spaced.clone()).to_string();
    if haystack.contains(&quoted[1..quoted.len() - 1]) {
        spaced
    } else {
        compact
    }
}

/// `json.dumps` spelling: `", "` between items, `": "` after keys.
fn python_json(v: &Value) -> String {
    match v {
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(python_json).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(o) => format!(
            "{{{}}}",
            o.iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), python_json(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

const AWS_TASK: Suite = Suite {
    title: "Task states replayed through mocks",
    name: "aws_task",
    select: |_| true,
    bucket: "aws_task",
    tasks: recorded_mocks,
};

#[test]
fn aws_task_cases_replayed_through_mocks_match_aws() {
    check_suite(&AWS_TASK);
}
