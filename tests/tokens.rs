//! Task tokens end to end: the real binary, real shell-script workers (`tests/workers/`), a
//! temporary database, and `--time-scale` so that declared minutes last milliseconds. Each
//! scenario checks the outcome, the output or error, and the history's event types against what
//! AWS records for callbacks and activities (aws-semantics §1.4).

mod common;

use common::{types, worker, Output, Sandbox};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A sandbox whose worker scripts leave their tokens (and what else they report) in its folder
/// (`TOKEN_DIR`).
fn sandbox() -> Sandbox {
    let sb = Sandbox::with_workers();
    let dir = sb.dir.path().to_owned();
    sb.env("TOKEN_DIR", dir)
}

/// This suite's helpers on the shared sandbox.
impl Sandbox {
    /// Writes the definition into the sandbox (`machine.asl.json`) and returns its path.
    fn definition(&self, def: &Value) -> String {
        self.write("machine.asl.json", &def.to_string())
            .display()
            .to_string()
    }

    /// `run` of the definition as execution `name` with `input` and `extra` arguments.
    fn run_machine(&self, def: &Value, name: &str, input: &Value, extra: &[&str]) -> Output {
        Output::of(self.spawn_machine(def, name, input, extra))
    }

    /// Like [`Sandbox::run_machine`], without waiting for it to end.
    fn spawn_machine(&self, def: &Value, name: &str, input: &Value, extra: &[&str]) -> Child {
        let path = self.definition(def);
        let input = input.to_string();
        let mut args = vec!["run", path.as_str(), "--name", name, "--input", &input];
        args.extend(extra);
        self.spawn(&args)
    }

    /// A worker script the test starts itself, with this sandbox's database and the binary
    /// (`SFN_LOCAL_DB`, `SFN_LOCAL`).
    fn worker_process(&self, script: &str) -> Command {
        let mut c = Command::new(script);
        c.env("SFN_LOCAL_DB", self.db())
            .env("SFN_LOCAL", common::bin());
        c
    }

    /// The token the worker of retry `attempt` left behind, waiting for it.
    fn token(&self, attempt: u64) -> String {
        let p = self.path(&format!("token-{attempt}"));
        wait_for(&p);
        // The worker's `>` creates the file before its printf fills it: a loaded machine
        // showed the empty file (the token read as "").
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            let token = std::fs::read_to_string(&p).expect("token file");
            if !token.is_empty() {
                return token;
            }
            assert!(Instant::now() < until, "{} stayed empty", p.display());
            std::thread::sleep(Duration::from_millis(10));
        }
    }
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

/// `task` with the fields of `extra` added (or replaced).
fn merged(mut task: Value, extra: Value) -> Value {
    if let (Some(t), Some(e)) = (task.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            t.insert(k.clone(), v.clone());
        }
    }
    task
}

fn callback_task(extra: Value) -> Value {
    let task = json!({
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
        "Parameters": {
            "FunctionName": "work",
            "Payload": { "token.$": "$$.Task.Token", "input.$": "$" }
        },
        "End": true
    });
    merged(task, extra)
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
    let sb = sandbox();
    let def = json!({
        "StartAt": "Work",
        "States": { "Work": callback_task(json!({
            "HeartbeatSeconds": 10,
            "TimeoutSeconds": 300,
            "Retry": [{ "ErrorEquals": ["States.HeartbeatTimeout"], "IntervalSeconds": 1, "MaxAttempts": 2 }]
        })) }
    });
    let task = format!("Work={}", worker("seed-worker.sh"));
    let out = sb.run_machine(
        &def,
        "seed",
        &json!({"n": 1}),
        &["--time-scale", "0.05", "--task", &task],
    );
    assert_eq!(out.code, 0, "run failed: {}", out.stderr);
    assert_eq!(out.json(), json!({"done": true, "attempt": 1}));
    assert!(out
        .stderr
        .contains("state 'Work' (attempt 1) issued task token"));
    assert!(out
        .stderr
        .contains("state 'Work' (attempt 2) issued task token"));
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
    let late = sb.send_success(&first, "{}");
    late.assert_error(12, "TaskTimedOut");
    assert_eq!(sb.history("seed"), events, "a late answer changes nothing");
}

/// Scenario 2: heartbeats keep a task alive only up to `TimeoutSeconds`; that expiry is not a
/// heartbeat timeout, so a retrier on `States.HeartbeatTimeout` alone does not retry it. The
/// worker learns it is cancelled when its next heartbeat is refused.
#[test]
fn heartbeating_worker_is_timed_out_by_the_total_budget_and_not_retried() {
    let sb = sandbox();
    let def = json!({
        "StartAt": "Work",
        "States": { "Work": callback_task(json!({
            "HeartbeatSeconds": 10,
            "TimeoutSeconds": 30,
            "Retry": [{ "ErrorEquals": ["States.HeartbeatTimeout"], "MaxAttempts": 3 }]
        })) }
    });
    let task = format!("Work={}", worker("heartbeat-forever.sh"));
    let out = sb.run_machine(
        &def,
        "slow",
        &json!({}),
        &["--time-scale", "0.05", "--task", &task],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
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
    let sb = sandbox();
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
    let out = sb.run_machine(&def, "paths", &input, &scale);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // AWS hands a Catch `"Cause": ""` for a timeout (recorded: error_handling
    // test_task_service_lambda test_invoke_timeout), though history records no cause.
    assert_eq!(
        out.json()["error"],
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
        let out = sb.run_machine(&def, name, &json!({ "limits": limits }), &scale);
        assert_eq!(out.code, 1, "{name}: {}", out.stderr);
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
    let missing = sb.run_machine(&def, "missing", &json!({}), &scale);
    assert_eq!(missing.code, 1);
}

fn activity_machine(arn: &str, extra: Value) -> Value {
    let task = merged(
        json!({ "Type": "Task", "Resource": arn, "End": true }),
        extra,
    );
    json!({ "StartAt": "Parse", "States": { "Parse": task } })
}

/// Scenario 4: an activity worker loop in bash takes the task with `get-activity-task`,
/// heartbeats and answers; with no worker polling, `TimeoutSeconds` (which covers the time in the
/// queue) times the task out.
#[test]
fn activity_worker_loop_answers_and_an_unpolled_activity_times_out() {
    let sb = sandbox();
    let arn = "arn:aws:states:us-east-1:123456789012:activity:parse-stock";
    let def = activity_machine(arn, json!({"TimeoutSeconds": 100, "HeartbeatSeconds": 20}));
    let run = sb.spawn_machine(
        &def,
        "act",
        &json!({"file": "a.csv"}),
        &["--time-scale", "0.05"],
    );
    let worker = sb
        .worker_process(&worker("activity-worker.sh"))
        .env("ACTIVITY_ARN", arn)
        .env("WORKER_NAME", "bash-loop")
        .output()
        .expect("worker");
    let worker = Output::from(worker);
    assert_eq!(worker.code, 0, "{}", worker.stderr);
    let out = Output::of(run);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), json!({"rows": 2}));
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
    let out = sb.run_machine(&lonely, "lonely", &json!({}), &["--time-scale", "0.02"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
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
    let late = sb.run(&[
        "get-activity-task",
        "--activity-arn",
        arn,
        "--poll-seconds",
        "0",
    ]);
    assert_eq!(late.code, 0);
    assert_eq!(late.json(), json!({}));
    let bad = sb.run(&[
        "get-activity-task",
        "--activity-arn",
        "not-an-arn",
        "--poll-seconds",
        "0",
    ]);
    assert_eq!(bad.code, 16);
}

/// Scenario 5: `send-task-failure` caught by a Catch; unknown and malformed tokens; the worker
/// of a stopped execution.
#[test]
fn failures_are_caught_bad_tokens_refused_and_stopped_executions_close_their_tokens() {
    let sb = sandbox();
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
    let out = sb.run_machine(&def, "caught", &json!({"a": 1}), &["--task", &task]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.json(),
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
        let out = sb.run(args);
        assert_eq!(out.code, code, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(name), "{args:?}: {}", out.stderr);
    }
    // The corpus's unknown token is not one sfn-local issues: AWS's InvalidToken, with AWS's
    // message, found before the output is looked at.
    let out = sb.run(&[
        "send-task-success",
        "--task-token",
        "NoSuchTaskToken",
        "--task-output",
        "ParameterOutput",
    ]);
    out.assert_error(11, "InvalidToken");
    assert!(
        out.stderr.contains("Invalid Token: 'Invalid token'"),
        "{}",
        out.stderr
    );

    // A stopped execution: its run exits 4, its worker's heartbeat is refused, its token dies.
    let forever = format!("Work={}", worker("heartbeat-forever.sh"));
    let run = sb.spawn_machine(&def, "stopped", &json!({}), &["--task", &forever]);
    let token = sb.token(0);
    let listed = sb.run(&[
        "list-tasks",
        "--execution-arn",
        "stopped",
        "--format",
        "json",
    ]);
    assert_eq!(listed.code, 0);
    let listed = listed.json();
    assert_eq!(listed["tasks"][0]["taskToken"], token.as_str());
    assert_eq!(listed["tasks"][0]["stateName"], "Work");
    let stop = sb.run(&[
        "stop-execution",
        "--execution-arn",
        "stopped",
        "--error",
        "Halt",
        "--cause",
        "by the test",
    ]);
    assert_eq!(stop.code, 0, "{}", stop.stderr);
    assert!(stop.json()["stopDate"].is_string());
    let out = Output::of(run);
    assert_eq!(out.code, 4, "{}", out.stderr);
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
    let late = sb.send_success(&token, "{}");
    assert_eq!(late.code, 12);
    assert_eq!(sb.history("stopped"), events);
    let described = sb.run(&["describe-execution", "--execution-arn", "stopped"]);
    assert_eq!(described.json()["status"], "ABORTED");
    let again = sb.run(&["stop-execution", "--execution-arn", "stopped"]);
    assert_eq!(again.code, 0);
    let missing = sb.run(&["stop-execution", "--execution-arn", "nope"]);
    assert_eq!(missing.code, 15);
}

/// The machine's own `TimeoutSeconds` bounds a state waiting for a token.
#[test]
fn execution_timeout_bounds_a_waiting_task() {
    let sb = sandbox();
    let def = json!({ "StartAt": "Work", "TimeoutSeconds": 5, "States": { "Work": callback_task(json!({})) } });
    let task = format!("Work={}", worker("silent.sh"));
    let out = sb.run_machine(
        &def,
        "bounded",
        &json!({}),
        &["--time-scale", "0.02", "--task", &task],
    );
    assert_eq!(out.code, 3, "{}", out.stderr);
    let events = sb.history("bounded");
    let mut expected = CALLBACK.to_vec();
    expected.push("ExecutionTimedOut");
    assert_eq!(types(&events), expected);
    let late = sb.run(&["send-task-heartbeat", "--task-token", &sb.token(0)]);
    assert_eq!(late.code, 12);
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
    let sb = sandbox();
    let transcode = format!(
        "ConvertVideo={}",
        repo("fixtures/workers/transcode-worker.sh")
    );
    let out = sb.run_env(
        &[
            "run",
            &repo("definitions/video-transcode.asl.json"),
            "--name",
            "video",
            "--input-file",
            &repo("fixtures/video.json"),
            "--task",
            &transcode,
        ],
        &[("TRANSCODE_SECONDS", "0.01")],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.json(),
        json!({"videoId": "v-123", "outputs": ["s3://media/v-123/720p.mp4", "s3://media/v-123/1080p.mp4"], "status": "PUBLISHED"})
    );

    let mut worker = sb
        .worker_process(&repo("fixtures/workers/stock-worker.sh"))
        .env("STOCK_WORKER_MAX_TASKS", "1")
        .env("POLL_SECONDS", "10")
        .env("WORKER_NAME", "stock-1")
        .stderr(Stdio::null())
        .spawn()
        .expect("worker");
    let out = sb.run(&[
        "run",
        &repo("definitions/stock-import.asl.json"),
        "--name",
        "stock",
        "--input-file",
        &repo("fixtures/stock.json"),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(worker.wait().expect("worker").success());
    assert_eq!(out.json()["rows"], 3);
    let events = sb.history("stock");
    assert_eq!(
        details(&events, "ActivityStarted")[0],
        &json!({"workerName": "stock-1"})
    );
}
