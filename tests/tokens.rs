//! Task tokens end to end: the real binary, real shell-script workers (`tests/workers/`), a
//! temporary database, and `--time-scale` so that declared minutes last milliseconds. Each
//! scenario checks the outcome, the output or error, and the history's event types against what
//! AWS records for callbacks and activities (aws-semantics §1.4).

mod common;

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A temporary database and a folder the workers leave their tokens in.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Self {
        Sandbox {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `sfn-local` with this sandbox's database; the workers it starts inherit the same.
    fn sfn(&self) -> Command {
        let mut c = Command::new(common::bin());
        c.env("SFN_LOCAL_DB", self.path("state.db"))
            .env("SFN_LOCAL", common::bin())
            .env("TOKEN_DIR", self.dir.path())
            .stdin(Stdio::null());
        c
    }

    fn definition(&self, def: &Value) -> PathBuf {
        let p = self.path("machine.asl.json");
        std::fs::write(&p, def.to_string()).expect("write definition");
        p
    }

    fn run(&self, def: &Value, name: &str, input: &Value, extra: &[&str]) -> Output {
        self.spawn_run(def, name, input, extra)
            .wait_with_output()
            .expect("run")
    }

    fn spawn_run(&self, def: &Value, name: &str, input: &Value, extra: &[&str]) -> Child {
        let path = self.definition(def);
        self.sfn()
            .arg("run")
            .arg(&path)
            .args(["--name", name, "--input", &input.to_string()])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn run")
    }

    fn cli(&self, args: &[&str]) -> Output {
        self.sfn().args(args).output().expect("sfn-local")
    }

    fn history(&self, execution: &str) -> Vec<Value> {
        let out = self.cli(&["get-execution-history", "--execution-arn", execution]);
        assert!(out.status.success(), "{}", stderr(&out));
        let v: Value = serde_json::from_slice(&out.stdout).expect("history JSON");
        v["events"].as_array().cloned().unwrap_or_default()
    }

    fn token(&self, attempt: u64) -> String {
        let p = self.path(&format!("token-{attempt}"));
        wait_for(&p);
        std::fs::read_to_string(p).expect("token file")
    }
}

fn worker(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/workers")
        .join(name)
        .display()
        .to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout_json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}); stderr: {}", stderr(o)))
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().filter_map(|e| e["type"].as_str()).collect()
}

fn details<'a>(events: &'a [Value], event_type: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["type"] == event_type)
        .map(|e| {
            e.as_object()
                .and_then(|o| o.iter().find(|(k, _)| k.ends_with("EventDetails")))
                .map(|(_, v)| v)
                .unwrap_or(&Value::Null)
        })
        .collect()
}

/// Waits (generously) for a file a worker writes.
fn wait_for(p: &Path) {
    let until = Instant::now() + Duration::from_secs(20);
    while !p.exists() {
        assert!(Instant::now() < until, "{} never appeared", p.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn callback_task(extra: Value) -> Value {
    let mut task = json!({
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
        "Parameters": {
            "FunctionName": "work",
            "Payload": { "token.$": "$$.Task.Token", "input.$": "$" }
        },
        "End": true
    });
    if let (Some(t), Some(e)) = (task.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            t.insert(k.clone(), v.clone());
        }
    }
    task
}

const CALLBACK: [&str; 5] = [
    "ExecutionStarted",
    "TaskStateEntered",
    "TaskScheduled",
    "TaskStarted",
    "TaskSubmitted",
];

/// Scenario 1 (the seed): a worker heartbeats twice and is killed by SIGKILL; the heartbeat
/// clock times the attempt out, the `States.HeartbeatTimeout` retrier starts a second attempt
/// with a new token, its worker succeeds. The first worker's late answer is `TaskTimedOut`
/// and changes nothing.
#[test]
fn seed_killed_worker_is_retried_after_its_heartbeat_and_late_answer_is_refused() {
    let sb = Sandbox::new();
    let def = json!({
        "StartAt": "Work",
        "States": { "Work": callback_task(json!({
            "HeartbeatSeconds": 10,
            "TimeoutSeconds": 300,
            "Retry": [{ "ErrorEquals": ["States.HeartbeatTimeout"], "IntervalSeconds": 1, "MaxAttempts": 2 }]
        })) }
    });
    let task = format!("Work={}", worker("seed-worker.sh"));
    let out = sb.run(
        &def,
        "seed",
        &json!({"n": 1}),
        &["--time-scale", "0.05", "--task", &task],
    );
    assert!(out.status.success(), "run failed: {}", stderr(&out));
    assert_eq!(stdout_json(&out), json!({"done": true, "attempt": 1}));
    assert!(stderr(&out).contains("state 'Work' (attempt 1) issued task token"));
    assert!(stderr(&out).contains("state 'Work' (attempt 2) issued task token"));
    let events = sb.history("seed");
    let mut expected = CALLBACK.to_vec();
    expected.extend([
        "TaskTimedOut",
        "TaskScheduled",
        "TaskStarted",
        "TaskSubmitted",
    ]);
    expected.extend(["TaskSucceeded", "TaskStateExited", "ExecutionSucceeded"]);
    assert_eq!(types(&events), expected);
    // AWS records both clocks' expiry as States.Timeout with no cause.
    let timed_out = details(&events, "TaskTimedOut");
    assert_eq!(timed_out[0]["error"], "States.Timeout");
    assert!(timed_out[0].get("cause").is_none());
    let scheduled = details(&events, "TaskScheduled");
    assert_eq!(scheduled[0]["heartbeatInSeconds"], 10);
    assert_eq!(scheduled[0]["timeoutInSeconds"], 300);
    let (first, second) = (sb.token(0), sb.token(1));
    assert_ne!(first, second, "each attempt has its own token");
    assert!(scheduled[0]["parameters"].to_string().contains(&first));
    assert!(scheduled[1]["parameters"].to_string().contains(&second));
    // The dead worker's late answer.
    let late = sb.cli(&[
        "send-task-success",
        "--task-token",
        &first,
        "--task-output",
        "{}",
    ]);
    assert_eq!(late.status.code(), Some(12), "{}", stderr(&late));
    assert!(stderr(&late).contains("TaskTimedOut"));
    assert_eq!(sb.history("seed"), events, "a late answer changes nothing");
}

/// Scenario 2: heartbeats keep a task alive only up to `TimeoutSeconds`; that expiry is not a
/// heartbeat timeout, so a retrier on `States.HeartbeatTimeout` alone does not retry it. The
/// worker learns it is cancelled when its next heartbeat is refused.
#[test]
fn heartbeating_worker_is_timed_out_by_the_total_budget_and_not_retried() {
    let sb = Sandbox::new();
    let def = json!({
        "StartAt": "Work",
        "States": { "Work": callback_task(json!({
            "HeartbeatSeconds": 10,
            "TimeoutSeconds": 30,
            "Retry": [{ "ErrorEquals": ["States.HeartbeatTimeout"], "MaxAttempts": 3 }]
        })) }
    });
    let task = format!("Work={}", worker("heartbeat-forever.sh"));
    let out = sb.run(
        &def,
        "slow",
        &json!({}),
        &["--time-scale", "0.05", "--task", &task],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let events = sb.history("slow");
    let mut expected = CALLBACK.to_vec();
    expected.extend(["TaskTimedOut", "ExecutionFailed"]);
    assert_eq!(types(&events), expected);
    assert_eq!(
        details(&events, "ExecutionFailed")[0],
        &json!({"error": "States.Timeout"})
    );
    wait_for(&sb.path("cancelled"));
    let refusal = std::fs::read_to_string(sb.path("heartbeat-error")).unwrap_or_default();
    assert!(refusal.contains("TaskTimedOut"), "{refusal}");
}

/// Scenario 3: `TimeoutSecondsPath`/`HeartbeatSecondsPath` read from the input (and recorded as
/// resolved numbers); a bad value there fails the execution with `States.Runtime`.
#[test]
fn seconds_paths_come_from_the_input_and_bad_values_fail_the_execution() {
    let sb = Sandbox::new();
    let def = json!({
        "StartAt": "Work",
        "States": {
            "Work": callback_task(json!({
                "TimeoutSecondsPath": "$.limits.timeout",
                "HeartbeatSecondsPath": "$.limits.heartbeat",
                "Catch": [{ "ErrorEquals": ["States.HeartbeatTimeout"], "ResultPath": "$.error", "Next": "Crashed" }],
                "End": null
            })),
            "Crashed": { "Type": "Pass", "End": true }
        }
    });
    let mut def = def;
    if let Some(work) = def["States"]["Work"].as_object_mut() {
        work.remove("End");
        work.insert("Next".into(), json!("Crashed"));
    }
    let task = format!("Work={}", worker("silent.sh"));
    let scale = ["--time-scale", "0.02", "--task", &task];
    let input = json!({"limits": {"timeout": 200, "heartbeat": 5}});
    let out = sb.run(&def, "paths", &input, &scale);
    assert!(out.status.success(), "{}", stderr(&out));
    // AWS hands a Catch `"Cause": ""` for a timeout (recorded: error_handling
    // test_task_service_lambda test_invoke_timeout), though history records no cause.
    assert_eq!(
        stdout_json(&out)["error"],
        json!({"Error": "States.Timeout", "Cause": ""})
    );
    let events = sb.history("paths");
    let mut expected = CALLBACK.to_vec();
    expected.extend([
        "TaskTimedOut",
        "TaskStateExited",
        "PassStateEntered",
        "PassStateExited",
    ]);
    expected.push("ExecutionSucceeded");
    assert_eq!(types(&events), expected);
    let scheduled = details(&events, "TaskScheduled");
    assert_eq!(scheduled[0]["timeoutInSeconds"], 200);
    assert_eq!(scheduled[0]["heartbeatInSeconds"], 5);

    for (name, limits) in [
        ("not-a-number", json!({"timeout": "soon", "heartbeat": 5})),
        ("zero", json!({"timeout": 0, "heartbeat": 5})),
        ("heartbeat-too-long", json!({"timeout": 5, "heartbeat": 5})),
    ] {
        let out = sb.run(&def, name, &json!({ "limits": limits }), &scale);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", stderr(&out));
        let events = sb.history(name);
        assert_eq!(
            types(&events),
            ["ExecutionStarted", "TaskStateEntered", "ExecutionFailed"],
            "{name}"
        );
        assert_eq!(
            details(&events, "ExecutionFailed")[0]["error"],
            "States.Runtime"
        );
    }
    let missing = sb.run(&def, "missing", &json!({}), &scale);
    assert_eq!(missing.status.code(), Some(1));
}

fn activity_machine(arn: &str, extra: Value) -> Value {
    let mut task = json!({ "Type": "Task", "Resource": arn, "End": true });
    if let (Some(t), Some(e)) = (task.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            t.insert(k.clone(), v.clone());
        }
    }
    json!({ "StartAt": "Parse", "States": { "Parse": task } })
}

/// Scenario 4: an activity worker loop in bash takes the task with `get-activity-task`,
/// heartbeats and answers; with no worker polling, `TimeoutSeconds` (which covers the time in the
/// queue) times the task out.
#[test]
fn activity_worker_loop_answers_and_an_unpolled_activity_times_out() {
    let sb = Sandbox::new();
    let arn = "arn:aws:states:us-east-1:123456789012:activity:parse-stock";
    let def = activity_machine(arn, json!({"TimeoutSeconds": 100, "HeartbeatSeconds": 20}));
    let run = sb.spawn_run(
        &def,
        "act",
        &json!({"file": "a.csv"}),
        &["--time-scale", "0.05"],
    );
    let worker = Command::new(worker("activity-worker.sh"))
        .env("SFN_LOCAL_DB", sb.path("state.db"))
        .env("SFN_LOCAL", common::bin())
        .env("ACTIVITY_ARN", arn)
        .env("WORKER_NAME", "bash-loop")
        .output()
        .expect("worker");
    assert!(worker.status.success(), "{}", stderr(&worker));
    let out = run.wait_with_output().expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout_json(&out), json!({"rows": 2}));
    let events = sb.history("act");
    assert_eq!(
        types(&events),
        [
            "ExecutionStarted",
            "TaskStateEntered",
            "ActivityScheduled",
            "ActivityStarted",
            "ActivitySucceeded",
            "TaskStateExited",
            "ExecutionSucceeded"
        ]
    );
    assert_eq!(
        details(&events, "ActivityStarted")[0],
        &json!({"workerName": "bash-loop"})
    );
    let scheduled = details(&events, "ActivityScheduled")[0];
    assert_eq!(scheduled["resource"], arn);
    assert_eq!(scheduled["input"], "{\"file\":\"a.csv\"}");
    assert_eq!(scheduled["timeoutInSeconds"], 100);

    // Nobody polls: the queue time counts against TimeoutSeconds.
    let lonely = activity_machine(arn, json!({"TimeoutSeconds": 5}));
    let out = sb.run(&lonely, "lonely", &json!({}), &["--time-scale", "0.02"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let events = sb.history("lonely");
    assert_eq!(
        types(&events),
        [
            "ExecutionStarted",
            "TaskStateEntered",
            "ActivityScheduled",
            "ActivityTimedOut",
            "ExecutionFailed"
        ]
    );
    assert_eq!(
        details(&events, "ActivityTimedOut")[0],
        &json!({"error": "States.Timeout"})
    );
    // A worker that comes too late finds nothing.
    let late = sb.cli(&[
        "get-activity-task",
        "--activity-arn",
        arn,
        "--poll-seconds",
        "0",
    ]);
    assert!(late.status.success());
    assert_eq!(stdout_json(&late), json!({}));
    let bad = sb.cli(&[
        "get-activity-task",
        "--activity-arn",
        "not-an-arn",
        "--poll-seconds",
        "0",
    ]);
    assert_eq!(bad.status.code(), Some(16));
}

/// Scenario 5: `send-task-failure` caught by a Catch; unknown and malformed tokens; the worker
/// of a stopped execution.
#[test]
fn failures_are_caught_bad_tokens_refused_and_stopped_executions_close_their_tokens() {
    let sb = Sandbox::new();
    let mut work = callback_task(json!({
        "Catch": [{ "ErrorEquals": ["OutOfStock"], "ResultPath": "$.error", "Next": "Handled" }]
    }));
    if let Some(w) = work.as_object_mut() {
        w.remove("End");
        w.insert("Next".into(), json!("Done"));
    }
    let def = json!({
        "StartAt": "Work",
        "States": {
            "Work": work,
            "Done": { "Type": "Succeed" },
            "Handled": { "Type": "Pass", "End": true }
        }
    });
    let task = format!("Work={}", worker("fail-worker.sh"));
    let out = sb.run(&def, "caught", &json!({"a": 1}), &["--task", &task]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout_json(&out),
        json!({"a": 1, "error": {"Error": "OutOfStock", "Cause": "sku A1 is gone"}})
    );
    let events = sb.history("caught");
    let mut expected = CALLBACK.to_vec();
    expected.extend([
        "TaskFailed",
        "TaskStateExited",
        "PassStateEntered",
        "PassStateExited",
    ]);
    expected.push("ExecutionSucceeded");
    assert_eq!(types(&events), expected);
    let failed = details(&events, "TaskFailed")[0];
    assert_eq!(failed["error"], "OutOfStock");
    assert_eq!(failed["cause"], "sku A1 is gone");
    assert_eq!(failed["resourceType"], "lambda");

    // Unknown, malformed and over-long tokens; bad outputs; over-long errors.
    let unknown = "A".repeat(43);
    let cases: [(&[&str], i32, &str); 6] = [
        (
            &[
                "send-task-success",
                "--task-token",
                &unknown,
                "--task-output",
                "{}",
            ],
            10,
            "TaskDoesNotExist",
        ),
        (
            &["send-task-heartbeat", "--task-token", &unknown],
            10,
            "TaskDoesNotExist",
        ),
        (
            &["send-task-failure", "--task-token", "not a token!"],
            11,
            "InvalidToken",
        ),
        (
            &["send-task-heartbeat", "--task-token", &"A".repeat(2049)],
            11,
            "InvalidToken",
        ),
        (
            &[
                "send-task-success",
                "--task-token",
                &unknown,
                "--task-output",
                "{oops",
            ],
            13,
            "InvalidOutput",
        ),
        (
            &[
                "send-task-failure",
                "--task-token",
                &unknown,
                "--error",
                &"E".repeat(257),
            ],
            14,
            "ValidationException",
        ),
    ];
    for (args, code, name) in cases {
        let out = sb.cli(args);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(name), "{args:?}: {}", stderr(&out));
    }

    // A stopped execution: its run exits 4, its worker's heartbeat is refused, its token dies.
    let forever = format!("Work={}", worker("heartbeat-forever.sh"));
    let run = sb.spawn_run(&def, "stopped", &json!({}), &["--task", &forever]);
    let token = sb.token(0);
    let listed = sb.cli(&[
        "list-tasks",
        "--execution-arn",
        "stopped",
        "--format",
        "json",
    ]);
    assert!(listed.status.success());
    let listed = stdout_json(&listed);
    assert_eq!(listed["tasks"][0]["taskToken"], token.as_str());
    assert_eq!(listed["tasks"][0]["stateName"], "Work");
    let stop = sb.cli(&[
        "stop-execution",
        "--execution-arn",
        "stopped",
        "--error",
        "Halt",
        "--cause",
        "by the test",
    ]);
    assert!(stop.status.success(), "{}", stderr(&stop));
    assert!(stdout_json(&stop)["stopDate"].is_string());
    let out = run.wait_with_output().expect("run");
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let events = sb.history("stopped");
    let mut expected = CALLBACK.to_vec();
    // AWS writes no *StateAborted when the execution itself is stopped, and points
    // ExecutionAborted at nothing.
    expected.push("ExecutionAborted");
    assert_eq!(types(&events), expected);
    assert_eq!(events.last().expect("events")["previousEventId"], 0);
    assert_eq!(
        details(&events, "ExecutionAborted")[0],
        &json!({"error": "Halt", "cause": "by the test"})
    );
    wait_for(&sb.path("cancelled"));
    let late = sb.cli(&[
        "send-task-success",
        "--task-token",
        &token,
        "--task-output",
        "{}",
    ]);
    assert_eq!(late.status.code(), Some(12));
    assert_eq!(sb.history("stopped"), events);
    let described = sb.cli(&["describe-execution", "--execution-arn", "stopped"]);
    assert_eq!(stdout_json(&described)["status"], "ABORTED");
    let again = sb.cli(&["stop-execution", "--execution-arn", "stopped"]);
    assert!(again.status.success());
    let missing = sb.cli(&["stop-execution", "--execution-arn", "nope"]);
    assert_eq!(missing.status.code(), Some(15));
}

/// The machine's own `TimeoutSeconds` bounds a state waiting for a token.
#[test]
fn execution_timeout_bounds_a_waiting_task() {
    let sb = Sandbox::new();
    let def = json!({ "StartAt": "Work", "TimeoutSeconds": 5, "States": { "Work": callback_task(json!({})) } });
    let task = format!("Work={}", worker("silent.sh"));
    let out = sb.run(
        &def,
        "bounded",
        &json!({}),
        &["--time-scale", "0.02", "--task", &task],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let events = sb.history("bounded");
    let mut expected = CALLBACK.to_vec();
    expected.push("ExecutionTimedOut");
    assert_eq!(types(&events), expected);
    let late = sb.cli(&["send-task-heartbeat", "--task-token", &sb.token(0)]);
    assert_eq!(late.status.code(), Some(12));
}

fn repo(path: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(path)
        .display()
        .to_string()
}

/// The README's examples: the video transcode with its worker script, and the stock import with
/// its activity worker loop.
#[test]
fn readme_examples_run_with_their_shell_workers() {
    let sb = Sandbox::new();
    let out = sb
        .sfn()
        .args([
            "run",
            &repo("definitions/video-transcode.asl.json"),
            "--name",
            "video",
        ])
        .args(["--input-file", &repo("fixtures/video.json")])
        .arg("--task")
        .arg(format!(
            "ConvertVideo={}",
            repo("fixtures/workers/transcode-worker.sh")
        ))
        .env("TRANSCODE_SECONDS", "0.01")
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout_json(&out),
        json!({"videoId": "v-123", "outputs": ["s3://media/v-123/720p.mp4", "s3://media/v-123/1080p.mp4"], "status": "PUBLISHED"})
    );

    let mut worker = Command::new(repo("fixtures/workers/stock-worker.sh"))
        .env("SFN_LOCAL_DB", sb.path("state.db"))
        .env("SFN_LOCAL", common::bin())
        .env("STOCK_WORKER_MAX_TASKS", "1")
        .env("POLL_SECONDS", "10")
        .env("WORKER_NAME", "stock-1")
        .stderr(Stdio::null())
        .spawn()
        .expect("worker");
    let out = sb
        .sfn()
        .args([
            "run",
            &repo("definitions/stock-import.asl.json"),
            "--name",
            "stock",
        ])
        .args(["--input-file", &repo("fixtures/stock.json")])
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(worker.wait().expect("worker").success());
    assert_eq!(stdout_json(&out)["rows"], 3);
    let events = sb.history("stock");
    assert_eq!(
        details(&events, "ActivityStarted")[0],
        &json!({"workerName": "stock-1"})
    );
}
