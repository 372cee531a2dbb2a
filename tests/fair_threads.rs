//! One execution cannot hold `serve` from the rest (#38): two executions spinning on a
//! catastrophic regex (each evaluation stopped at JSONata's 10 s limit, in a Catch loop) leave
//! StartExecution of another machine answering at once; StopExecution stops each within a
//! moment, with the events written before the stop in its history and no thread left
//! spinning; after a restart neither runs again. And a long evaluation holds nothing beside it
//! on its thread (it goes on elsewhere while its execution waits), nor lets a virtual clock move.
//!
//! Time bounds here are generous (seconds, against a 10 s evaluation and the old 5 s stop
//! grace): they prove nothing waits behind the spinning executions, not how fast serve is.
//! `benches/fair_threads.py` prints the latencies.

mod common;

use common::http_api::{sfn_call, status_and_json};
use common::served::Served;
use common::Sandbox;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const ROLE: &str = "arn:aws:iam::123456789012:role/local";

/// A Parallel whose branch evaluates a catastrophic regex; its Catch goes back to it.
fn spinning_machine() -> String {
    let subject = "a".repeat(70) + "!";
    json!({
        "QueryLanguage": "JSONata",
        "StartAt": "Spin",
        "States": {"Spin": {
            "Type": "Parallel",
            "Branches": [{"StartAt": "Regex", "States": {"Regex": {
                "Type": "Pass",
                "Output": format!("{{% $match('{subject}', /(a+)+$/) %}}"),
                "End": true
            }}}],
            "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Spin"}],
            "End": true
        }}
    })
    .to_string()
}

fn call(server: &Served, operation: &str, body: Value) -> Value {
    let response = sfn_call(
        &format!("127.0.0.1:{}", server.port),
        operation,
        &body.to_string(),
    );
    let (status, json) = status_and_json(&response);
    assert_eq!(status, 200, "{operation}: {response}");
    json
}

fn create(server: &Served, name: &str, definition: &str) -> String {
    let body = json!({"name": name, "definition": definition, "roleArn": ROLE});
    call(server, "CreateStateMachine", body)["stateMachineArn"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn start(server: &Served, machine: &str, name: &str) -> (String, Duration) {
    let t = Instant::now();
    let body = json!({"stateMachineArn": machine, "name": name});
    let arn = call(server, "StartExecution", body)["executionArn"]
        .as_str()
        .unwrap()
        .to_owned();
    (arn, t.elapsed())
}

fn status(server: &Served, arn: &str) -> String {
    call(server, "DescribeExecution", json!({"executionArn": arn}))["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn history(server: &Served, arn: &str) -> Vec<Value> {
    let body = json!({"executionArn": arn, "maxResults": 1000});
    call(server, "GetExecutionHistory", body)["events"]
        .as_array()
        .unwrap()
        .clone()
}

/// CPU time the process used (user + system), from /proc.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = stat.rsplit_once(')').unwrap().1;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line; 12 and 13 after the name.
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

/// CPU time used over one second of wall time.
fn cpu_over_a_second(pid: u32) -> Duration {
    let before = cpu_time(pid);
    std::thread::sleep(Duration::from_secs(1));
    cpu_time(pid) - before
}

#[test]
fn spinning_executions_hold_no_start_and_stop_at_once_for_good() {
    let sandbox = Sandbox::new();
    let server = Served::serve(&sandbox, &[]);
    let spin = create(&server, "Spin", &spinning_machine());
    let pass = r#"{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}"#;
    let other = create(&server, "Other", pass);
    let spinning: Vec<String> = (0..2)
        .map(|i| start(&server, &spin, &format!("spin-{i}")).0)
        .collect();
    // Both are inside their first 10-second evaluation.
    std::thread::sleep(Duration::from_millis(500));

    let mut slowest = Duration::ZERO;
    for i in 0..20 {
        let (arn, took) = start(&server, &other, &format!("other-{i}"));
        slowest = slowest.max(took);
        let until = Instant::now() + Duration::from_secs(5);
        while status(&server, &arn) == "RUNNING" {
            assert!(
                Instant::now() < until,
                "{arn} waited behind the spinning executions"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(status(&server, &arn), "SUCCEEDED");
    }
    assert!(
        slowest < Duration::from_secs(2),
        "a StartExecution took {slowest:?} while two executions spun"
    );

    for arn in &spinning {
        let t = Instant::now();
        call(
            &server,
            "StopExecution",
            json!({"executionArn": arn, "error": "Enough"}),
        );
        let took = t.elapsed();
        assert!(took < Duration::from_secs(2), "StopExecution took {took:?}");
        assert_eq!(status(&server, arn), "ABORTED");
        let events = history(&server, arn);
        let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            types[..3],
            [
                "ExecutionStarted",
                "ParallelStateEntered",
                "ParallelStateStarted"
            ]
        );
        assert_eq!(types.last(), Some(&"ExecutionAborted"), "{types:?}");
        // The evaluation the stop cut short is no failure of the state's.
        assert!(!types.contains(&"EvaluationFailed"), "{types:?}");
        assert_eq!(
            events.last().unwrap()["executionAbortedEventDetails"]["error"],
            "Enough"
        );
    }
    // Nothing spins any more.
    let busy = cpu_over_a_second(server.child.id());
    assert!(
        busy < Duration::from_millis(500),
        "serve still used {busy:?} of CPU a second"
    );

    // After a restart neither runs again.
    let before: Vec<usize> = spinning.iter().map(|a| history(&server, a).len()).collect();
    drop(server);
    let server = Served::serve(&sandbox, &[]);
    std::thread::sleep(Duration::from_millis(500));
    for (arn, len) in spinning.iter().zip(before) {
        assert_eq!(status(&server, arn), "ABORTED");
        assert_eq!(
            history(&server, arn).len(),
            len,
            "{arn} ran again after the restart"
        );
    }
    let busy = cpu_over_a_second(server.child.id());
    assert!(
        busy < Duration::from_millis(500),
        "the restarted serve used {busy:?} of CPU a second"
    );
}

/// A Parallel of two branches (one thread, one execution): `slow` evaluates `expression`,
/// `beside` runs `beside_states` from `B`.
fn slow_branch_beside(expression: &str, beside_states: Value) -> Value {
    json!({
        "QueryLanguage": "JSONata",
        "StartAt": "Both",
        "States": {"Both": {
            "Type": "Parallel",
            "Branches": [
                {"StartAt": "Slow", "States": {"Slow": {
                    "Type": "Pass", "Output": expression, "End": true
                }}},
                {"StartAt": "B", "States": beside_states}
            ],
            "End": true
        }}
    })
}

fn run_definition(sandbox: &Sandbox, name: &str, definition: &Value, extra: &[&str]) -> Vec<Value> {
    let out = sandbox.run_definition(definition, name, extra);
    assert!(out.code != -1, "{}", out.stderr);
    sandbox.history(name)
}

/// The executions beside a long evaluation on its thread go on meanwhile: here the branch
/// beside it (same execution, so same thread) fails the Parallel while the regex still runs,
/// and the regex is abandoned. Before, the branch waited for the regex's 10 s to end, and the
/// Parallel failed with the regex's error instead.
#[test]
fn a_long_evaluation_holds_no_branch_beside_it() {
    let sandbox = Sandbox::new();
    let subject = "a".repeat(70) + "!";
    let definition = slow_branch_beside(
        &format!("{{% $match('{subject}', /(a+)+$/) %}}"),
        json!({
            "B": {"Type": "Pass", "Next": "Beside"},
            "Beside": {"Type": "Fail", "Error": "Beside", "Cause": "the branch beside ran"}
        }),
    );
    let started = Instant::now();
    let events = run_definition(&sandbox, "beside", &definition, &[]);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "ExecutionFailed", "{events:?}");
    assert_eq!(last["executionFailedEventDetails"]["error"], "Beside");
    assert!(
        !events.iter().any(|e| e["type"] == "EvaluationFailed"),
        "{events:?}"
    );
    // The abandoned regex did not keep `run` to its 10 s.
    assert!(started.elapsed() < Duration::from_secs(8));
}

/// A virtual clock does not move while an evaluation runs off its execution's thread: the
/// long branch ends at the start's instant, the hour-long Wait beside it an hour later.
#[test]
fn a_virtual_clock_waits_for_a_long_evaluation() {
    let sandbox = Sandbox::new();
    let definition = slow_branch_beside(
        "{% $sum($map([1..300000], function($v) { $v * 2 })) %}",
        json!({"B": {"Type": "Wait", "Seconds": 3600, "End": true}}),
    );
    let events = run_definition(&sandbox, "virtual", &definition, &["--clock", "virtual"]);
    let at = |event_type: &str| {
        let e = events.iter().find(|e| e["type"] == event_type);
        let ts = e.unwrap_or_else(|| panic!("no {event_type}: {events:?}"))["timestamp"]
            .as_str()
            .unwrap();
        chrono::DateTime::parse_from_rfc3339(ts)
            .unwrap()
            .timestamp_millis()
    };
    let start = at("ExecutionStarted");
    assert_eq!(
        events.last().unwrap()["type"],
        "ExecutionSucceeded",
        "{events:?}"
    );
    assert!(at("PassStateExited") - start < 1000, "{events:?}");
    assert_eq!(at("WaitStateExited") - start, 3_600_000, "{events:?}");
}
