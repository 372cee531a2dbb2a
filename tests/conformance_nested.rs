//! The corpus's `states:startExecution*` cases (tagged `resource:states`) and `aws-sdk:sfn:*`
//! cases (`resource:sfn`) run natively: no mock answers the parent's Task; the `sfn-local`
//! binary runs the parent with the started machine made known (`--machine NAME=FILE`), as a
//! real child execution in the same database, and `aws-sdk:sfn:*` Tasks call Step Functions'
//! API at `sfn-local serve` (`--endpoint sfn=URL`), where the child machine is created.
//!
//! The child's definition is the smallest machine that ends as the recording says the child
//! ended: the `.sync` answer's `Output` from a Pass state's `Result`, its `Error`/`Cause` from
//! a Fail state, `States.Timeout` from a machine whose `TimeoutSeconds` passes while it waits;
//! a request-response child is a Pass state; a child handed the parent's `.sync` task token
//! answers it with `aws-sdk:sfn:sendTaskSuccess` at serve. The recording's placeholders in the input become
//! real names (`<ArnPart_0idx>` the child's name, `<region>` us-east-1, a second account the
//! same account: there is one account locally), and the run is compared with the recording as
//! the other suites compare: status, output or error and cause (placeholders are wildcards
//! bound consistently), event types and their `previousEventId` links. A real call's HTTP metadata (`SdkHttpMetadata`,
//! `SdkResponseMetadata`: AWS's headers, dates and request ids) is not compared, and for a
//! recording made before redrive existed (15 November 2023) neither are the redrive fields AWS
//! has added to DescribeExecution since.
//!
//! Failing cases are listed with the reason in `tests/known_failures/nested.txt`; the test
//! fails when an unlisted case fails and when a listed one passes.

mod common;

use common::conformance::{apply_transformers, known_failures, match_value, normalise};
use common::{conformance_cases, json_files, read_json, Sandbox};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;

/// The child's name, everywhere the recording wrote `<ArnPart_0idx>`.
const CHILD: &str = "child";

/// The recording's placeholders in the input, as real values.
fn unmask(text: &str) -> String {
    // A masked machine name in an ARN is the child's; other masked names become valid names.
    let machine = regex::Regex::new(r"stateMachine:<resource:\d+>").expect("regex");
    let other = regex::Regex::new(r"<resource:(\d+)>").expect("regex");
    let text = machine.replace_all(text, format!("stateMachine:{CHILD}").as_str());
    let text = other.replace_all(&text, "resource-$1");
    text.replace("<partition>", "aws")
        .replace("<region>", "us-east-1")
        .replace("<ArnPart_0idx>", CHILD)
        .replace("<random_arn_part>", "-missing")
        .replace("<secondary_test_aws_account_id>", "111111111111")
        .replace(
            "<trusted_role_arn>",
            "arn:aws:iam::111111111111:role/trusted",
        )
}

/// The `.sync` answer (DescribeExecution's shape) the recording holds, if any: the expected
/// output of a success, the cause of a failure.
fn child_description(case: &Value) -> Option<Value> {
    let e = &case["expected"];
    for v in [&e["output"], &e["cause"]] {
        let v = match v {
            Value::String(s) => serde_json::from_str(s).unwrap_or(Value::Null),
            other => other.clone(),
        };
        if v.get("Status").is_some() {
            return Some(v);
        }
    }
    None
}

/// Whether the parent hands its `.sync` task's token (`$$.Task.Token`) to the child, for a
/// worker to answer: the task ends with that answer, not with the child's end.
fn answers_parent_token(case: &Value) -> bool {
    let definition = case["definition"].to_string();
    definition.contains(".sync") && definition.contains("$$.Task.Token")
}

/// The smallest machine that ends as the recorded child did (a failure, `States.Timeout`
/// included, from a Fail state: the recorded children failed, none timed out as a whole).
/// A child given the parent's token answers it as the recording's worker did, through Step
/// Functions' API (serve's), and then waits until the parent's task, ended by the answer,
/// stops it.
fn child_definition(case: &Value) -> Value {
    if answers_parent_token(case) {
        return json!({"StartAt": "Answer", "States": {
            "Answer": {
                "Type": "Task",
                "Resource": "arn:aws:states:::aws-sdk:sfn:sendTaskSuccess",
                "Parameters": {
                    "TaskToken.$": "$.TaskToken",
                    "Output": case["expected"]["output"].to_string(),
                },
                "ResultPath": null,
                "Next": "Linger"
            },
            "Linger": {"Type": "Wait", "Seconds": 600, "End": true}
        }});
    }
    let pass = json!({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}});
    let Some(d) = child_description(case) else {
        return pass;
    };
    match d["Status"].as_str() {
        Some("SUCCEEDED") => {
            let output = match &d["Output"] {
                Value::String(s) => serde_json::from_str(s).unwrap_or(json!(s)),
                other => other.clone(),
            };
            json!({"StartAt": "P", "States": {"P": {"Type": "Pass", "Result": output, "End": true}}})
        }
        _ => {
            let mut fail = json!({"Type": "Fail"});
            for (k, v) in [("Error", &d["Error"]), ("Cause", &d["Cause"])] {
                if !v.is_null() {
                    fail[k] = v.clone();
                }
            }
            json!({"StartAt": "F", "States": {"F": fail}})
        }
    }
}

/// The recording's date masks (`$..output.StartDate` → `start-date`) applied to every key of
/// that name: the recording masked them in causes too.
fn mask_dates(case: &Value, v: &mut Value) {
    for t in case["snapshot_other_transformers"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let (Some(path), Some(replacement)) = (t["jsonpath"].as_str(), t["replacement"].as_str())
        else {
            continue;
        };
        let key = path.rsplit('.').next().unwrap_or_default();
        if key.ends_with("Date") {
            replace_key(v, key, replacement);
        }
    }
}

fn replace_key(v: &mut Value, key: &str, replacement: &str) {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                if k == key {
                    *x = json!(replacement);
                } else {
                    replace_key(x, key, replacement);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| replace_key(x, key, replacement)),
        _ => {}
    }
}

/// Whether the recording predates redrive (15 November 2023), when DescribeExecution had no
/// `RedriveCount`, `RedriveStatus` or `RedriveStatusReason`.
fn before_redrive(case: &Value) -> bool {
    // "DD-MM-YYYY, HH:MM:SS"
    let date = case["recorded_date"].as_str().unwrap_or_default();
    let (Some(d), Some(m), Some(y)) = (date.get(0..2), date.get(3..5), date.get(6..10)) else {
        return false;
    };
    format!("{y}{m}{d}").as_str() < "20231115"
}

/// Drops the redrive fields, for recordings made before AWS had them.
fn without_redrive_fields(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for k in ["RedriveCount", "RedriveStatus", "RedriveStatusReason"] {
                m.remove(k);
            }
            m.values_mut().for_each(without_redrive_fields);
        }
        Value::Array(a) => a.iter_mut().for_each(without_redrive_fields),
        _ => {}
    }
}

/// Removes the HTTP metadata of real calls, which no local run reproduces.
fn without_http_metadata(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("SdkHttpMetadata");
            m.remove("SdkResponseMetadata");
            m.values_mut().for_each(without_http_metadata);
        }
        Value::Array(a) => a.iter_mut().for_each(without_http_metadata),
        _ => {}
    }
}

/// A JSON text field as the recording normalised it: an object's text parsed.
fn field(v: &Value) -> Value {
    match v {
        Value::String(s) if s.starts_with('{') => serde_json::from_str(s)
            .map(normalise)
            .unwrap_or_else(|_| normalise(v.clone())),
        other => normalise(other.clone()),
    }
}

/// `sfn-local serve` on the sandbox's database, for `aws-sdk:sfn:*` Tasks; killed when dropped.
struct Served {
    child: std::process::Child,
    url: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    fn start(sb: &Sandbox) -> Served {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let child = sb
            .command()
            .args(["serve", "--port", &port.to_string()])
            .args(["--account-id", "111111111111", "--region", "us-east-1"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn sfn-local serve");
        let served = Served {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(std::time::Instant::now() < until, "serve did not start");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        served
    }

    /// One API call; the status.
    fn call(&self, target: &str, body: &Value) -> u16 {
        let authority = self.url.trim_start_matches("http://");
        let response = common::http_api::sfn_call(authority, target, &body.to_string());
        common::http_api::status_and_json(&response).0
    }
}

/// Runs one case; the differences from the recording (empty when it matches).
fn run(case: &Value) -> Vec<String> {
    let sb = Sandbox::new()
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test");
    let parent = sb.write("parent.asl.json", &unmask(&case["definition"].to_string()));
    let child_text = child_definition(case).to_string();
    let child = sb.write("child.asl.json", &child_text);
    // `aws-sdk:sfn:*` Tasks call Step Functions' API: serve's, where the child is created.
    let sdk = answers_parent_token(case)
        || case["features"]
            .as_array()
            .is_some_and(|f| f.iter().any(|t| t == "resource:sfn"));
    let served = sdk.then(|| Served::start(&sb));
    let mut endpoint = Vec::new();
    if let Some(served) = &served {
        let status = served.call(
            "CreateStateMachine",
            &json!({"name": CHILD, "definition": child_text, "roleArn": "arn:aws:iam::111111111111:role/r"}),
        );
        assert_eq!(status, 200, "CreateStateMachine on serve");
        endpoint = vec!["--endpoint".to_owned(), format!("sfn={}", served.url)];
    }
    let input = unmask(&case["input"].to_string());
    // A machine named by a bare name (the recording masked its ARN) is known by that name.
    let name = serde_json::from_str::<Value>(&input).ok().and_then(|i| {
        i["StateMachineArn"]
            .as_str()
            .filter(|a| !a.contains(':'))
            .map(str::to_owned)
    });
    let name = name.as_deref().unwrap_or(CHILD);
    let args: Vec<String> = [
        "run",
        parent.to_str().unwrap(),
        "--machine",
        &format!("{name}={}", child.display()),
        "--name",
        "parent",
        "--account-id",
        "111111111111",
        "--region",
        "us-east-1",
        "--input",
        &input,
        "--format",
        "json",
    ]
    .into_iter()
    .map(str::to_owned)
    .chain(endpoint)
    .collect();
    let out = sb.run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let mut diffs = Vec::new();
    let Ok(described) = serde_json::from_str::<Value>(&out.stdout) else {
        return vec![format!("no description on stdout: {}", out.stderr)];
    };
    let expected = &case["expected"];
    let mut b = HashMap::new();
    if expected["status"] != described["status"] {
        diffs.push(format!(
            "status: expected {}, got {}",
            expected["status"], described["status"]
        ));
    }
    match expected["status"].as_str() {
        Some("SUCCEEDED") => {
            let mut want = expected["output"].clone();
            let mut got = apply_transformers(case, field(&described["output"]));
            without_http_metadata(&mut want);
            without_http_metadata(&mut got);
            if before_redrive(case) {
                without_redrive_fields(&mut got);
            }
            // A text output is JSON text in DescribeExecution.
            if let (Value::String(w), Value::String(g)) = (&want, &got) {
                if serde_json::from_str::<Value>(g).ok() == Some(json!(w)) {
                    got = json!(w);
                }
            }
            if !match_value(&want, &got, &mut b) {
                diffs.push(format!("output:\n    expected {want}\n    got      {got}"));
            }
        }
        Some("FAILED") => {
            for key in ["error", "cause"] {
                let mut got = apply_transformers(case, field(&described[key]));
                mask_dates(case, &mut got);
                if before_redrive(case) {
                    without_redrive_fields(&mut got);
                }
                if !match_value(&expected[key], &got, &mut b) {
                    diffs.push(format!(
                        "{key}:\n    expected {}\n    got      {got}",
                        expected[key]
                    ));
                }
            }
        }
        _ => {}
    }
    let want: Vec<&str> = case["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["type"].as_str())
        .collect();
    let history = sb.history("parent");
    let got: Vec<&str> = history.iter().filter_map(|e| e["type"].as_str()).collect();
    if want != got {
        diffs.push(format!(
            "event types:\n    expected {want:?}\n    got      {got:?}"
        ));
    } else if case["parallel_branch_events_reordered"] != true {
        // AWS's links between events, as the other suites compare them.
        let recorded = case["events"].as_array().cloned().unwrap_or_default();
        let chain: Vec<String> = recorded
            .iter()
            .zip(&history)
            .filter(|(e, g)| e["previousEventId"] != g["previousEventId"])
            .map(|(e, g)| {
                format!(
                    "#{} {}: AWS links it to {}, ours to {}",
                    g["id"], g["type"], e["previousEventId"], g["previousEventId"]
                )
            })
            .collect();
        if !chain.is_empty() {
            diffs.push(format!("previousEventId:\n    {}", chain.join("\n    ")));
        }
    }
    diffs
}

#[test]
fn start_execution_and_sfn_sdk_cases_run_natively() {
    let cases = conformance_cases();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let known = known_failures(root, "tests/known_failures/nested.txt");
    let mut unexpected = Vec::new();
    let mut fixed = Vec::new();
    let mut total = 0;
    let mut passed = 0;
    for file in json_files(&cases.join("aws_task")) {
        let case = read_json(&file);
        let tagged = case["features"].as_array().is_some_and(|f| {
            f.iter()
                .any(|t| t == "resource:states" || t == "resource:sfn")
        });
        if !tagged {
            continue;
        }
        total += 1;
        let id = case["id"].as_str().unwrap_or_default().to_owned();
        let diffs = run(&case);
        if diffs.is_empty() {
            passed += 1;
        }
        match (diffs.is_empty(), known.contains_key(&id)) {
            (true, true) => fixed.push(id),
            (false, false) => unexpected.push(format!("{id}\n  {}", diffs.join("\n  "))),
            _ => {}
        }
    }
    eprintln!("resource:states and resource:sfn cases run natively: {passed}/{total} match AWS");
    assert!(total > 0, "no resource:states case in the corpus");
    assert!(
        unexpected.is_empty(),
        "cases that do not match AWS (fix them, or list them with the reason in tests/known_failures/nested.txt):\n{}",
        unexpected.join("\n")
    );
    assert!(
        fixed.is_empty(),
        "listed in tests/known_failures/nested.txt but passing now (remove them): {fixed:?}"
    );
}
