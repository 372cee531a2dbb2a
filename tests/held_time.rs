//! Outside work holds the virtual clock (#49): under `--clock virtual` a history depends only
//! on the definition, the input, the seed, the clock start and what the Tasks returned, never
//! on how long the template's own Lambda code or a `--task` command took in wall time, nor on
//! which of two iterations finished first. `tests/sam_map_app` is a SAM app whose Map runs the
//! template's Python handler, which sleeps a random few milliseconds, then `lambda:invoke`s it
//! once more.

mod common;

use common::{types, Output, Sandbox};
use serde_json::Value;
use std::time::Instant;

const CLOCK: [&str; 6] = [
    "--clock",
    "virtual",
    "--clock-start",
    "2030-01-01T00:00:00Z",
    "--seed",
    "7",
];

/// The year the wall clock reads now.
fn this_year() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    // Good enough within a day of New Year: 365.2425 days a year.
    (1970 + secs * 400 / (146_097 * 86_400)).to_string()
}

/// Runs the app's batch once in a fresh sandbox; returns `get-execution-history`'s text.
fn run_batch() -> String {
    let sb = Sandbox::of_app("sam_map_app");
    let mut args = vec![
        "run",
        "--template",
        "template.yaml",
        "--name",
        "batch-1",
        "--input",
        r#"{"items": [1, 2, 3, 4, 5, 6]}"#,
    ];
    args.extend(CLOCK);
    let out = sb.run_in_sandbox(&args);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let history = sb.run(&["get-execution-history", "--execution-arn", "batch-1"]);
    assert_eq!(history.code, 0, "{}", history.stderr);
    history.stdout
}

// Regression: while a Lambda ran the virtual clock ran at wall speed, so the milliseconds of
// every later event changed from run to run, the iterations' events came in the order their
// handlers happened to end, and `lambda:invoke`'s `Date` and trace id read the wall clock.
#[test]
fn real_lambda_code_in_a_map_writes_byte_identical_histories() {
    let histories: Vec<String> = (0..3).map(|_| run_batch()).collect();
    assert_eq!(histories[0], histories[1], "runs 1 and 2 differ");
    assert_eq!(histories[0], histories[2], "runs 1 and 3 differ");
    let history = &histories[0];
    assert!(
        !history.contains(&this_year()),
        "the wall clock's year is in the history:\n{history}"
    );
    let events: Vec<Value> = serde_json::from_str::<Value>(history).unwrap()["events"]
        .as_array()
        .unwrap()
        .clone();
    // No virtual time passed while the handlers ran.
    assert!(
        events
            .iter()
            .all(|e| e["timestamp"] == "2030-01-01T00:00:00.000Z"),
        "{history}"
    );
    let ended: Vec<u64> = events
        .iter()
        .filter(|e| e["type"] == "MapIterationSucceeded")
        .map(|e| {
            e["mapIterationSucceededEventDetails"]["index"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(
        ended,
        [0, 1, 2, 3, 4, 5],
        "iterations recorded in index order"
    );
    let summary = events
        .iter()
        .find(|e| e["type"] == "TaskSucceeded")
        .unwrap();
    let output = summary["taskSucceededEventDetails"]["output"]
        .as_str()
        .unwrap();
    assert!(
        output.contains("Tue, 01 Jan 2030 00:00:00 GMT"),
        "the Date header reads the virtual clock: {output}"
    );
    assert!(
        output.contains("root=1-70dbd880-"),
        "the trace id's time is the virtual clock's: {output}"
    );
}

// The snapshot case of `tests/sam_map_app` (the same Map over the real handler) written once
// and then compared on 20 runs in a row: each run's history matches the first byte for byte.
#[test]
fn a_history_snapshot_over_real_lambda_code_passes_twenty_runs_in_a_row() {
    let sb = Sandbox::of_app("sam_map_app");
    let written = sb.run_in_sandbox(&["test", "batch.sfntest.json", "--update-snapshots"]);
    assert_eq!(written.code, 0, "{}{}", written.stdout, written.stderr);
    let started = Instant::now();
    for run in 1..=20 {
        let out = sb.run_in_sandbox(&["test", "batch.sfntest.json"]);
        assert_eq!(out.code, 0, "run {run}: {}{}", out.stdout, out.stderr);
    }
    eprintln!("20 runs in {:?}", started.elapsed());
}

/// Runs a one-Task machine (execution `command`) whose Task, with `timeout` seconds, is
/// `--task`'s `command`.
fn run_command(command: &str, timeout: u64) -> (Sandbox, Output) {
    let sb = Sandbox::new();
    let definition = serde_json::json!({
        "StartAt": "Work",
        "States": {"Work": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": "f"}, "TimeoutSeconds": timeout, "End": true}}
    });
    let binding = format!("Work={command}");
    let mut args = vec!["--task", binding.as_str()];
    args.extend(CLOCK);
    let out = sb.run_definition(&definition, "command", &args);
    (sb, out)
}

// Regression: a `--task` command ran in wall time on a virtual clock, so the events after it
// were dated by how long it took (00:00:00.3xx for a 0.3 s command).
#[test]
fn a_command_takes_no_virtual_time() {
    let (sb, out) = run_command("sh -c 'sleep 0.3; echo {}'", 60);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let history = sb.history("command");
    let last = history.last().unwrap();
    assert_eq!(last["type"], "ExecutionSucceeded");
    assert_eq!(last["timestamp"], "2030-01-01T00:00:00.000Z", "{history:?}");
}

// A command that runs past its Task's TimeoutSeconds in wall time times out at the Task's
// virtual deadline, and the clock moves on from there.
#[test]
fn a_command_past_its_timeout_seconds_times_out_at_its_virtual_deadline() {
    let started = Instant::now();
    let (sb, out) = run_command("sleep 30", 1);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        started.elapsed().as_secs() < 20,
        "the command was not ended"
    );
    let history = sb.history("command");
    assert_eq!(
        types(&history)[4..],
        ["TaskTimedOut", "ExecutionFailed"],
        "{history:?}"
    );
    assert_eq!(history[4]["timestamp"], "2030-01-01T00:00:01.000Z");
}

// Regression (seen in review of this change): a command with no TimeoutSeconds that ran past
// the hold's patience let the clock jump to the next deadline while it still ran, so a
// machine's hour-long TimeoutSeconds ended an execution whose command took a second. Past the
// patience (shortened here), time flows at wall speed while the command runs, as while a
// worker runs.
#[test]
fn a_long_command_without_timeout_seconds_lets_time_flow_not_jump() {
    let sb = Sandbox::new().env("SFN_LOCAL_HOLD_PATIENCE_MS", "100");
    let definition = serde_json::json!({
        "TimeoutSeconds": 3600,
        "StartAt": "Build",
        "States": {"Build": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": "f"}, "End": true}}
    });
    let mut args = vec!["--task", "Build=sh -c 'sleep 1; echo {}'"];
    args.extend(CLOCK);
    let out = sb.run_definition(&definition, "build", &args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let history = sb.history("build");
    let last = history.last().unwrap();
    assert_eq!(last["type"], "ExecutionSucceeded", "{history:?}");
    let ended = last["timestamp"].as_str().unwrap();
    assert!(
        ended.starts_with("2030-01-01T00:00:0"),
        "time flowed for about the command's second past the patience, no more: {ended}"
    );
}

// Regression: Parallel branches running commands were recorded in the order the commands
// happened to end (the slow branch A after the quick B), at wall-clock milliseconds. Now A's
// events come first, and two runs agree on every byte (a later `States.UUID()` and
// `$$.Execution.StartTime` included).
#[test]
fn branches_that_end_at_one_instant_are_recorded_in_index_order() {
    let branch = |state: &str| {
        serde_json::json!({"StartAt": state, "States": {state: {"Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": state},
            "TimeoutSeconds": 30, "End": true}}})
    };
    let definition = serde_json::json!({
        "StartAt": "Both",
        "States": {
            "Both": {"Type": "Parallel", "Branches": [branch("A"), branch("B")], "Next": "Draw"},
            "Draw": {"Type": "Pass", "End": true, "Parameters": {
                "id.$": "States.UUID()", "start.$": "$$.Execution.StartTime"}}
        }
    });
    let run = || {
        let sb = Sandbox::new();
        let mut args = vec![
            "--task",
            "A=sh -c 'sleep 0.4; echo {}'",
            "--task",
            "B=sh -c 'sleep 0.05; echo {}'",
        ];
        args.extend(CLOCK);
        let out = sb.run_definition(&definition, "both", &args);
        assert_eq!(out.code, 0, "{}", out.stderr);
        sb.history("both")
    };
    let (first, second) = (run(), run());
    assert_eq!(first, second, "two runs differ");
    let exited: Vec<&str> = first
        .iter()
        .filter(|e| e["type"] == "TaskStateExited")
        .map(|e| e["stateExitedEventDetails"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(exited, ["A", "B"], "{first:?}");
    let output = first.last().unwrap()["executionSucceededEventDetails"]["output"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        output.contains(r#""start":"2030-01-01T00:00:00.000Z""#),
        "{output}"
    );
}
