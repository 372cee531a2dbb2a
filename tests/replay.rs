//! `sfn-local replay`: a history of sfn-local's own run (a Map whose iterations call a
//! Lambda-like command, one of them retried; a Task whose error a Catch handles) replays
//! `identical` against its definition, read from one page, several concatenated pages, in
//! reverse order or as a bare list; a changed Choice rule, Retry, Catch, ResultPath or
//! Parameters is reported at the event where the definition first does something else, with
//! the path that led there; masked and malformed histories are named.

mod common;

use common::Sandbox;
use serde_json::{json, Value};

/// A Map over three items whose Task (a Lambda invoke, bound to a command) fails once for
/// item 2 and is retried; a Choice on the first result; a Task that always fails, caught.
fn machine() -> Value {
    json!({
      "StartAt": "Init",
      "States": {
        "Init": {"Type": "Pass", "Result": {"items": [{"n": 1}, {"n": 2}, {"n": 3}]}, "Next": "Each"},
        "Each": {
          "Type": "Map", "ItemsPath": "$.items", "ResultPath": "$.results",
          "ItemProcessor": {"StartAt": "Work", "States": {
            "Work": {
              "Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
              "Parameters": {"FunctionName": "work", "Payload.$": "$"},
              "Retry": [{"ErrorEquals": ["Flaky"], "IntervalSeconds": 2, "MaxAttempts": 2}],
              "ResultSelector": {"v.$": "$.Payload.v"},
              "ResultPath": "$.r",
              "End": true
            }
          }},
          "Next": "Check"
        },
        "Check": {"Type": "Choice",
          "Choices": [{"Variable": "$.results[0].r.v", "NumericEquals": 10, "Next": "Charge"}],
          "Default": "Bad"},
        "Charge": {
          "Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
          "Parameters": {"FunctionName": "charge", "Payload": {"total.$": "$.results[2].r.v"}},
          "Catch": [{"ErrorEquals": ["Declined"], "ResultPath": "$.error", "Next": "Recover"}],
          "Next": "Done"
        },
        "Recover": {"Type": "Pass", "ResultPath": "$.recovered", "Result": true, "Next": "Done"},
        "Done": {"Type": "Succeed"},
        "Bad": {"Type": "Fail", "Error": "Bad"}
      }
    })
}

const WORK: &str = r#"#!/bin/sh
x=$(cat)
n=$(printf '%s' "$x" | sed 's/.*"n": *\([0-9]*\).*/\1/')
if [ "$n" = 2 ] && [ ! -f "$(dirname "$0")/flaked" ]; then
  touch "$(dirname "$0")/flaked"
  echo '{"Error":"Flaky","Cause":"once"}' >&2
  exit 1
fi
echo "{\"v\": $((n * 10))}"
"#;

const CHARGE: &str = r#"#!/bin/sh
cat >/dev/null
echo '{"Error":"Declined","Cause":"card expired"}' >&2
exit 1
"#;

/// Runs the machine once in `sandbox` and returns its history as `get-execution-history`
/// prints it (written to `history.json`).
fn recorded(sandbox: &Sandbox) -> Value {
    for (name, text) in [("work.sh", WORK), ("charge.sh", CHARGE)] {
        let path = sandbox.write(name, text);
        let mut perms = std::fs::metadata(&path).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&path, perms).unwrap();
    }
    let work = format!("Work={}", sandbox.path("work.sh").display());
    let charge = format!("Charge={}", sandbox.path("charge.sh").display());
    let flags = ["--clock", "virtual", "--task", &work, "--task", &charge];
    let out = sandbox.run_definition(&machine(), "shop", &flags);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let history = json!({ "events": sandbox.history("shop") });
    sandbox.write("history.json", &history.to_string());
    history
}

/// `replay HISTORY --definition DEF EXTRA...` (files of the sandbox), as printed.
fn replay_files(
    sandbox: &Sandbox,
    history: &str,
    definition: &str,
    extra: &[&str],
) -> common::Output {
    let history = sandbox.path(history);
    let definition = sandbox.path(definition);
    let mut args = vec![
        "replay",
        history.to_str().unwrap(),
        "--definition",
        definition.to_str().unwrap(),
    ];
    args.extend(extra);
    sandbox.run(&args)
}

/// The machine written as `shop.asl.json`, for [`replay_files`].
fn write_machine(sandbox: &Sandbox) {
    sandbox.write("shop.asl.json", &machine().to_string());
}

/// `replay HISTORY --definition DEF --format json`.
fn replay(sandbox: &Sandbox, history: &str, definition: &Value) -> (i32, Value) {
    let def = sandbox.write("changed.asl.json", &definition.to_string());
    let out = sandbox.run(&[
        "replay",
        sandbox.path(history).to_str().unwrap(),
        "--definition",
        def.to_str().unwrap(),
        "--format",
        "json",
    ]);
    (out.code, out.json())
}

/// `replay` of `history` against `definition`, which must say `identical` (exit 0); the
/// verdict, for what else a test checks in it.
fn replays_identical(sandbox: &Sandbox, history: &str, definition: &Value) -> Value {
    let (code, verdict) = replay(sandbox, history, definition);
    assert_eq!(
        (code, &verdict["identical"]),
        (0, &json!(true)),
        "{history}: {verdict}"
    );
    verdict
}

/// The id of the first recorded event of `type` (for `state`, when given).
fn event_id(history: &Value, event_type: &str, state: Option<&str>) -> i64 {
    history["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| {
            e["type"] == event_type
                && state.is_none_or(|s| {
                    e.as_object()
                        .unwrap()
                        .values()
                        .any(|d| d.get("name").and_then(Value::as_str) == Some(s))
                })
        })
        .and_then(|e| e["id"].as_i64())
        .unwrap_or_else(|| panic!("no {event_type} for {state:?}"))
}

#[test]
fn own_run_with_a_map_a_retry_and_a_catch_replays_identical() {
    let sandbox = Sandbox::new();
    let history = recorded(&sandbox);
    let types: Vec<&str> = history["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["type"].as_str())
        .collect();
    assert!(types.contains(&"MapIterationStarted") && types.contains(&"TaskFailed"));
    write_machine(&sandbox);
    let out = replay_files(&sandbox, "history.json", "shop.asl.json", &[]);
    assert_eq!(
        (out.code, out.stdout.trim()),
        (0, "identical"),
        "{}",
        out.stderr
    );
    let (code, verdict) = replay(&sandbox, "history.json", &machine());
    assert_eq!(code, 0);
    assert_eq!(verdict["identical"], true);
    assert_eq!(verdict["recordedEvents"], verdict["replayedEvents"]);
}

#[test]
fn several_pages_concatenated_reversed_or_a_bare_list_are_read_whole() {
    let sandbox = Sandbox::new();
    let history = recorded(&sandbox);
    let events = history["events"].as_array().unwrap();
    let mut pages = String::new();
    for (i, chunk) in events.chunks(7).rev().enumerate() {
        let page =
            json!({"events": chunk.iter().rev().collect::<Vec<_>>(), "nextToken": format!("t{i}")});
        pages.push_str(&serde_json::to_string_pretty(&page).unwrap());
        pages.push('\n');
    }
    sandbox.write("pages.json", &pages);
    sandbox.write("bare.json", &Value::Array(events.clone()).to_string());
    for file in ["pages.json", "bare.json"] {
        let verdict = replays_identical(&sandbox, file, &machine());
        assert_eq!(verdict["recordedEvents"], events.len(), "{file}");
    }
    // A page left out is named, not guessed.
    let mut missing = String::new();
    for chunk in events.chunks(7).skip(1) {
        missing.push_str(&json!({"events": chunk}).to_string());
    }
    sandbox.write("missing.json", &missing);
    write_machine(&sandbox);
    let out = replay_files(&sandbox, "missing.json", "shop.asl.json", &[]);
    out.assert_error(2, "events 1 to 7 are missing (a page left out?)");
}

#[test]
fn a_changed_choice_rule_is_reported_where_the_choice_went_elsewhere() {
    let sandbox = Sandbox::new();
    let history = recorded(&sandbox);
    let mut def = machine();
    def["States"]["Check"]["Choices"][0]["NumericEquals"] = json!(20);
    let (code, verdict) = replay(&sandbox, "history.json", &def);
    assert_eq!(code, 1, "{verdict}");
    let d = &verdict["divergence"];
    assert_eq!(
        d["event"],
        event_id(&history, "TaskStateEntered", Some("Charge")),
        "{d}"
    );
    assert_eq!(d["state"], "Charge");
    assert!(
        d["replayed"]
            .as_str()
            .unwrap()
            .starts_with("FailStateEntered Bad"),
        "{d}"
    );
    assert_eq!(d["path"], json!(["Init", "Each", "Check", "Charge"]));
}

#[test]
fn a_changed_retry_is_reported_at_the_retried_attempt() {
    let sandbox = Sandbox::new();
    let history = recorded(&sandbox);
    let mut def = machine();
    def["States"]["Each"]["ItemProcessor"]["States"]["Work"]["Retry"][0]["ErrorEquals"] =
        json!(["Other"]);
    let (code, verdict) = replay(&sandbox, "history.json", &def);
    assert_eq!(code, 1, "{verdict}");
    let d = &verdict["divergence"];
    let failed = event_id(&history, "TaskFailed", None);
    assert_eq!(
        d["what"],
        format!("after event {failed} the definition did something else"),
        "{d}"
    );
    assert!(
        d["recorded"].as_str().unwrap().starts_with("TaskScheduled"),
        "{d}"
    );
    assert_eq!(d["path"], json!(["Init", "Each", "[iteration 1]", "Work"]));
}

#[test]
fn a_changed_catch_or_result_path_is_reported_at_its_event() {
    let sandbox = Sandbox::new();
    let history = recorded(&sandbox);
    let exited = event_id(&history, "TaskStateExited", Some("Charge"));
    let mut def = machine();
    def["States"]["Charge"]["Catch"][0]["ResultPath"] = json!("$.failure");
    let (code, verdict) = replay(&sandbox, "history.json", &def);
    assert_eq!(
        (code, &verdict["divergence"]["event"]),
        (1, &json!(exited)),
        "{verdict}"
    );
    assert_eq!(verdict["divergence"]["what"], "its output differs");
    let mut def = machine();
    def["States"]["Charge"]["Catch"][0]["ErrorEquals"] = json!(["Other"]);
    let (code, verdict) = replay(&sandbox, "history.json", &def);
    assert_eq!(
        (code, &verdict["divergence"]["event"]),
        (1, &json!(exited)),
        "{verdict}"
    );
    assert!(verdict["divergence"]["replayed"]
        .as_str()
        .unwrap()
        .starts_with("ExecutionFailed"));
    assert_eq!(verdict["status"], "FAILED");
}

#[test]
fn a_task_called_with_parameters_the_recording_never_saw_is_a_divergence() {
    let sandbox = Sandbox::new();
    let history = recorded(&sandbox);
    let mut def = machine();
    def["States"]["Charge"]["Parameters"]["FunctionName"] = json!("charge-v2");
    let (code, verdict) = replay(&sandbox, "history.json", &def);
    assert_eq!(code, 1, "{verdict}");
    let d = &verdict["divergence"];
    assert_eq!(d["event"], charge_scheduled(&history));
    assert_eq!(
        d["what"],
        "the definition called the Task with parameters the recording never saw"
    );
    assert!(d["replayed"].as_str().unwrap().contains("charge-v2"), "{d}");
}

/// The id of Charge's `TaskScheduled`.
fn charge_scheduled(history: &Value) -> i64 {
    let entered = event_id(history, "TaskStateEntered", Some("Charge"));
    history["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "TaskScheduled" && e["previousEventId"] == entered)
        .and_then(|e| e["id"].as_i64())
        .unwrap()
}

#[test]
fn a_masked_input_is_named_not_guessed() {
    let sandbox = Sandbox::new();
    let mut history = recorded(&sandbox);
    history["events"][0]["executionStartedEventDetails"]["inputDetails"]["truncated"] = json!(true);
    sandbox.write("masked.json", &history.to_string());
    let (code, verdict) = replay(&sandbox, "masked.json", &machine());
    assert_eq!(code, 1);
    assert_eq!(verdict["identical"], false);
    assert!(
        verdict["masked"]
            .as_str()
            .unwrap()
            .contains("input (event 1) was truncated"),
        "{verdict}"
    );
}

#[test]
fn a_history_that_is_not_one_is_a_clear_error() {
    let sandbox = Sandbox::new();
    sandbox.write("bad.json", r#"{"executions": []}"#);
    write_machine(&sandbox);
    let out = replay_files(&sandbox, "bad.json", "shop.asl.json", &[]);
    out.assert_error(
        2,
        "bad.json: the history, at page 1: an object without an \"events\" list",
    );
}

#[test]
fn the_written_test_of_an_identical_replay_passes_and_a_divergent_one_is_not_written() {
    let sandbox = Sandbox::new();
    recorded(&sandbox);
    write_machine(&sandbox);
    let dir = sandbox.path("regression");
    let out = replay_files(
        &sandbox,
        "history.json",
        "shop.asl.json",
        &["--write-test", dir.to_str().unwrap()],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("recorded.sfntest.json"),
        "{}",
        out.stderr
    );
    let mocks = common::read_json(&dir.join("recorded.mocks.json"));
    let work = &mocks["MockedResponses"]["Work (recorded)"];
    assert_eq!(
        work.as_object().unwrap().len(),
        4,
        "three items, one retried: {work}"
    );
    let spec = common::read_json(&dir.join("recorded.sfntest.json"));
    assert_eq!(spec["cases"][0]["expect"]["status"], "SUCCEEDED");
    assert_eq!(spec["cases"][0]["expect"]["output"]["recovered"], true);
    let test = sandbox.run(&["test", dir.to_str().unwrap()]);
    assert_eq!(test.code, 0, "{}\n{}", test.stdout, test.stderr);
    assert!(
        test.stdout.contains("1 passed, 0 failed"),
        "{}",
        test.stdout
    );

    let mut changed = machine();
    changed["States"]["Check"]["Choices"][0]["NumericEquals"] = json!(20);
    sandbox.write("changed.asl.json", &changed.to_string());
    let other = sandbox.path("not-written");
    let out = replay_files(
        &sandbox,
        "history.json",
        "changed.asl.json",
        &["--write-test", other.to_str().unwrap()],
    );
    out.assert_error(1, "no test written: the replay is not identical");
    assert!(
        out.stdout.starts_with("diverged at event"),
        "{}",
        out.stdout
    );
    assert!(!other.exists());
}

/// Past 40 iterations an inline Map starts each new iteration when an earlier one's work
/// ends, linked to that event: which one ended first is scheduling, so a replay whose
/// answers take their own time still matches.
#[test]
fn a_map_wider_than_its_concurrency_window_replays_identical() {
    let sandbox = Sandbox::new();
    let def = json!({"StartAt": "Each", "States": {"Each": {
        "Type": "Map", "ItemsPath": "$.items",
        "ItemProcessor": {"StartAt": "Work", "States": {"Work": {
            "Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": "f", "Payload.$": "$"}, "End": true}}},
        "End": true}}});
    let mocks = json!({
        "StateMachines": {"wide": {"TestCases": {"T": {"Work": "R"}}}},
        "MockedResponses": {"R": {"0-99": {"Return": {"Payload": 1}}}}
    });
    let mocks = sandbox.write("mocks.json", &mocks.to_string());
    let items: Vec<u32> = (0..90).collect();
    let input = json!({ "items": items }).to_string();
    let flags = [
        "--clock",
        "virtual",
        "--mock-config",
        mocks.to_str().unwrap(),
        "--test-case",
        "T",
        "--input",
        &input,
    ];
    let out = sandbox.run_definition(&def, "wide", &flags);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let history = json!({ "events": sandbox.history("wide") });
    let late_start = history["events"].as_array().unwrap().iter().any(|e| {
        e["type"] == "MapIterationStarted" && e["mapIterationStartedEventDetails"]["index"] == 60
    });
    assert!(late_start);
    sandbox.write("history.json", &history.to_string());
    replays_identical(&sandbox, "history.json", &def);
}

/// `replay(history, definition)` of the pytest and Jest/Vitest helpers: a parsed history (the
/// SDKs' events) against a definition object, and files; the verdict as `--format json` has it.
#[test]
fn the_python_and_node_helpers_replay_a_history() {
    let sandbox = Sandbox::new();
    recorded(&sandbox);
    let def = sandbox.write("shop.asl.json", &machine().to_string());
    let mut changed = machine();
    changed["States"]["Check"]["Choices"][0]["NumericEquals"] = json!(20);
    let changed = sandbox.write("changed.asl.json", &changed.to_string());
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = r#"
import json, sys
from sfn_local import replay
history = json.load(open(sys.argv[1]))
same = replay(history["events"], json.load(open(sys.argv[2])))
other = replay(sys.argv[1], sys.argv[3])
print(json.dumps([same["identical"], other["identical"], other["divergence"]["state"]]))
"#;
    let node = r#"
const fs = require("node:fs");
// `node -e SCRIPT A B...`: process.argv is [node, A, B, ...].
const [, helpers, historyFile, definition, changed] = process.argv;
const { replay } = require(helpers);
(async () => {
  const history = JSON.parse(fs.readFileSync(historyFile, "utf8"));
  const same = await replay(history.events, JSON.parse(fs.readFileSync(definition, "utf8")));
  const other = await replay(historyFile, changed);
  console.log(JSON.stringify([same.identical, other.identical, other.divergence.state]));
})().catch((e) => { console.error(e); process.exit(1); });
"#;
    let history = sandbox.path("history.json");
    let files = [history.as_path(), def.as_path(), changed.as_path()];
    let py = std::process::Command::new(common::deps_python_bin("python"))
        .arg("-c")
        .arg(python)
        .args(files)
        .env("PYTHONPATH", root.join("python"))
        .env("SFN_LOCAL_BIN", common::bin())
        .output()
        .expect("run python");
    let js = std::process::Command::new("node")
        .arg("-e")
        .arg(node)
        .arg(root.join("npm/sfn-local/index.js"))
        .args(files)
        .env("SFN_LOCAL_BIN", common::bin())
        .output()
        .expect("run node");
    for (name, out) in [("python", py), ("node", js)] {
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name}: {stderr}");
        let verdicts: Value = serde_json::from_str(stdout.trim()).expect(name);
        assert_eq!(verdicts, json!([true, false, "Charge"]), "{name}: {stderr}");
    }
}

/// A Task result AWS truncated (over 256 KiB) stops the replay at that Task, named; a
/// truncated state output is left out of the comparison with a note.
#[test]
fn a_truncated_task_result_is_named_and_a_truncated_output_is_not_compared() {
    let sandbox = Sandbox::new();
    let mut history = recorded(&sandbox);
    let events = history["events"].as_array_mut().unwrap();
    let exited = events
        .iter_mut()
        .find(|e| e["type"] == "PassStateExited")
        .unwrap();
    exited["stateExitedEventDetails"]["outputDetails"]["truncated"] = json!(true);
    exited["stateExitedEventDetails"]["output"] = json!("{\"items\": [{\"n\": 1}, {\"n\"");
    sandbox.write("output-masked.json", &history.to_string());
    let verdict = replays_identical(&sandbox, "output-masked.json", &machine());
    let note = verdict["notCompared"][0].as_str().unwrap();
    assert!(
        note.starts_with("the output of event 3 (PassStateExited) was truncated"),
        "{note}"
    );

    let events = history["events"].as_array_mut().unwrap();
    let succeeded = events
        .iter_mut()
        .find(|e| e["type"] == "TaskSucceeded")
        .unwrap();
    let id = succeeded["id"].clone();
    succeeded["taskSucceededEventDetails"]["outputDetails"]["truncated"] = json!(true);
    sandbox.write("result-masked.json", &history.to_string());
    let (code, verdict) = replay(&sandbox, "result-masked.json", &machine());
    assert_eq!(code, 1, "{verdict}");
    let masked = verdict["masked"].as_str().unwrap();
    let want = format!("the result of event {id} (TaskSucceeded) was truncated by AWS");
    assert!(masked.contains(&want), "{masked}");
}

/// A Map retried as a whole opens its iterations again under the same indices: each attempt's
/// iterations are places of their own.
#[test]
fn a_retried_map_replays_identical() {
    let sandbox = Sandbox::new();
    let def = json!({"StartAt": "Each", "States": {"Each": {
        "Type": "Map", "ItemsPath": "$.items",
        "Retry": [{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 1, "MaxAttempts": 2}],
        "ItemProcessor": {"StartAt": "Work", "States": {"Work": {"Type": "Fail", "Error": "X"}}},
        "End": true}}});
    let out = sandbox.run_definition(
        &def,
        "retried",
        &["--clock", "virtual", "--input", r#"{"items": [1, 2]}"#],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    let history = json!({ "events": sandbox.history("retried") });
    let starts = history["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "MapStateStarted")
        .count();
    assert_eq!(starts, 3);
    sandbox.write("history.json", &history.to_string());
    let verdict = replays_identical(&sandbox, "history.json", &def);
    assert_eq!(verdict["status"], "FAILED");
}

/// A history fetched while the execution still ran is compared as far as it goes, and says so.
#[test]
fn a_recording_of_a_running_execution_is_compared_as_far_as_it_goes() {
    let sandbox = Sandbox::new();
    let history = recorded(&sandbox);
    let head: Vec<Value> = history["events"].as_array().unwrap()[..20].to_vec();
    sandbox.write("running.json", &json!({ "events": head }).to_string());
    write_machine(&sandbox);
    let out = replay_files(&sandbox, "running.json", "shop.asl.json", &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout.trim(),
        "identical as far as the recording goes (it ends at event 20, before the execution ended)"
    );
    let (_, verdict) = replay(&sandbox, "running.json", &machine());
    assert_eq!(verdict["recordingComplete"], false);
}

/// Regression (#52): a callback whose worker went silent past HeartbeatSeconds was recorded as
/// `TaskTimedOut`; its replay waited for TimeoutSeconds that never came and failed the attempt
/// with `TaskFailed`. It now runs out of heartbeat as the recording did.
#[test]
fn a_recorded_heartbeat_timeout_replays_as_a_timeout() {
    let sandbox = Sandbox::new();
    let definition = json!({"StartAt": "Send", "States": {"Send": {
        "Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
        "HeartbeatSeconds": 5,
        "Parameters": {"QueueUrl": "q", "MessageBody": {"TaskToken.$": "$$.Task.Token"}},
        "End": true}}});
    let sqs = json!({"resource": "sendMessage.waitForTaskToken", "resourceType": "sqs"});
    let with = |extra: Value| {
        let mut d = sqs.clone();
        d.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        d
    };
    let parameters = json!({"QueueUrl": "q", "MessageBody": {"TaskToken": "t"}}).to_string();
    let events = [
        (
            "ExecutionStarted",
            "executionStartedEventDetails",
            json!({"input": "{}"}),
            0,
        ),
        (
            "TaskStateEntered",
            "stateEnteredEventDetails",
            json!({"name": "Send", "input": "{}"}),
            0,
        ),
        (
            "TaskScheduled",
            "taskScheduledEventDetails",
            with(json!({"heartbeatInSeconds": 5, "parameters": parameters, "region": "us-east-1"})),
            0,
        ),
        ("TaskStarted", "taskStartedEventDetails", sqs.clone(), 0),
        (
            "TaskSubmitted",
            "taskSubmittedEventDetails",
            with(json!({"output": "{\"MessageId\":\"m\"}"})),
            0,
        ),
        (
            "TaskTimedOut",
            "taskTimedOutEventDetails",
            with(json!({"error": "States.Timeout"})),
            5,
        ),
        (
            "ExecutionFailed",
            "executionFailedEventDetails",
            json!({"error": "States.Timeout"}),
            5,
        ),
    ];
    let events: Vec<Value> = events
        .into_iter()
        .enumerate()
        .map(|(i, (ty, key, details, at))| {
            // AWS links the first state's entry to nothing.
            let previous = if i == 1 { 0 } else { i };
            json!({"id": i + 1, "previousEventId": previous, "type": ty,
                   "timestamp": 1_704_067_200 + at, key: details})
        })
        .collect();
    sandbox.write("heartbeat.json", &json!({ "events": events }).to_string());
    let (code, verdict) = replay(&sandbox, "heartbeat.json", &definition);
    assert_eq!(verdict["divergence"], Value::Null, "{verdict}");
    assert_eq!(
        (code, &verdict["identical"]),
        (0, &json!(true)),
        "{verdict}"
    );
}

/// `s` as Python's `json.dumps` writes it by default (what the AWS CLI prints): every
/// character past ASCII as `\uXXXX`, astral ones as a surrogate pair.
fn ascii_escaped(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            for unit in c.encode_utf16(&mut [0; 2]) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

#[test]
fn a_recording_escaped_otherwise_and_indented_replays_identical_and_a_change_is_found() {
    let sandbox = Sandbox::new();
    let machine = json!({"StartAt": "Café", "States": {
        "Café": {"Type": "Pass", "Result": {"order": "crème ☕ 🥐"}, "Next": "Done"},
        "Done": {"Type": "Succeed"}}});
    let out = sandbox.run_definition(&machine, "cafe", &["--clock", "virtual"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let history = json!({ "events": sandbox.history("cafe") });
    let text = ascii_escaped(&serde_json::to_string_pretty(&history).unwrap());
    assert!(text.contains(r"Caf\u00e9") && text.contains(r"\ud83e\udd50"));
    sandbox.write("escaped.json", &text);
    replays_identical(&sandbox, "escaped.json", &machine);
    let mut changed = machine.clone();
    changed["States"]["Café"]["Result"]["order"] = json!("crème ☕");
    let (code, verdict) = replay(&sandbox, "escaped.json", &changed);
    assert_eq!(code, 1, "{verdict}");
    assert_eq!(verdict["divergence"]["what"], "its output differs");
    assert_eq!(verdict["divergence"]["state"], "Café");
}
