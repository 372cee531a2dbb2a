//! Managed workers end to end (`sfn-local worker` and `run --worker`): the real binary, real
//! handler processes (`tests/workers/managed-*.sh`), a real database, and `--time-scale` so
//! declared heartbeat windows last a second. Each test is one scenario of the issue: a crash
//! retried, a quiet handler kept alive, a stubborn one killed, a stop delivered as SIGTERM,
//! four at once, the runner itself killed.

mod common;

use common::{types, worker, Output, Sandbox};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

const ACTIVITY: &str = "arn:aws:states:us-east-1:123456789012:activity:managed";

/// A sandbox whose handlers leave their marks in its folder (`TOKEN_DIR`).
fn sandbox() -> Sandbox {
    let sb = Sandbox::with_workers();
    let dir = sb.dir.path().to_owned();
    sb.env("TOKEN_DIR", dir)
}

/// Waits (generously: the machine may be loaded) for a file a handler writes.
fn wait_for(p: &Path) {
    let until = Instant::now() + Duration::from_secs(30);
    while !p.exists() {
        assert!(Instant::now() < until, "{} never appeared", p.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn read(p: &Path) -> String {
    wait_for(p);
    std::fs::read_to_string(p).expect("read").trim().to_owned()
}

/// Whether a process is alive (`kill -0`).
fn alive(pid: &str) -> bool {
    std::process::Command::new("kill")
        .args(["-0", pid])
        .stderr(std::process::Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Kills a handler's whole process group (cleanup of handlers orphaned on purpose).
fn kill_group(pid: &str) {
    let _ = std::process::Command::new("kill")
        .args(["-9", "--", &format!("-{pid}")])
        .status();
}

/// A machine of one Task with `task`'s fields.
fn one_task(task: Value) -> Value {
    let mut t = json!({ "Type": "Task", "End": true });
    for (k, v) in task.as_object().expect("object") {
        t[k] = v.clone();
    }
    json!({ "StartAt": "Work", "States": { "Work": t } })
}

fn activity_task(extra: Value) -> Value {
    let mut t = json!({
        "Resource": ACTIVITY,
        "HeartbeatSeconds": 2,
        "TimeoutSeconds": 120,
    });
    for (k, v) in extra.as_object().expect("object") {
        t[k] = v.clone();
    }
    one_task(t)
}

fn callback_task(extra: Value) -> Value {
    let mut t = json!({
        "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
        "Parameters": { "QueueUrl": "q", "MessageBody": { "token.$": "$$.Task.Token", "n.$": "$.n" } },
        "TimeoutSeconds": 120,
    });
    for (k, v) in extra.as_object().expect("object") {
        t[k] = v.clone();
    }
    one_task(t)
}

fn retry_crashed() -> Value {
    json!([{ "ErrorEquals": ["States.HeartbeatTimeout"], "IntervalSeconds": 1, "MaxAttempts": 2 }])
}

impl Sandbox {
    /// Starts `run` of `def` as execution `name`; HeartbeatSeconds 2 lasts a second.
    fn start(&self, def: &Value, name: &str, extra: &[&str]) -> Child {
        let path = self.write(&format!("{name}.asl.json"), &def.to_string());
        let path = path.display().to_string();
        let mut args = vec![
            "run",
            path.as_str(),
            "--name",
            name,
            "--input",
            r#"{"n":7}"#,
            "--time-scale",
            "0.5",
        ];
        args.extend(extra);
        self.spawn(&args)
    }

    /// Starts `sfn-local worker` on the test activity with `handler` and `extra` options.
    fn start_worker(&self, handler: &str, extra: &[&str]) -> Child {
        let handler = worker(handler);
        let mut args = vec!["worker", "--activity-arn", ACTIVITY];
        args.extend(extra);
        args.push("--");
        args.push(&handler);
        self.spawn(&args)
    }
}

#[test]
fn a_handler_killed_mid_task_times_out_by_heartbeat_and_the_retry_succeeds_on_a_second_handler() {
    let sb = sandbox();
    let def = activity_task(json!({ "Retry": retry_crashed() }));
    let run = sb.start(&def, "crash", &[]);
    let worker = sb.start_worker(
        "managed-crash-once.sh",
        &["--max-tasks", "2", "--worker-name", "w1"],
    );
    let first = read(&sb.path("pid-0"));
    // SIGKILL from outside, mid-task: an OOM kill, a crash.
    assert!(std::process::Command::new("kill")
        .args(["-9", &first])
        .status()
        .expect("kill")
        .success());
    let out = Output::of(run);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), json!({"attempt": 1, "input": {"n": 7}}));
    let second = read(&sb.path("pid-1"));
    assert_ne!(first, second, "the retry ran on a second handler");
    let w = Output::of(worker);
    assert_eq!(w.code, 0, "{}", w.stderr);
    assert!(
        w.stderr.contains("was killed by signal 9; no answer"),
        "{}",
        w.stderr
    );
    assert!(
        w.stderr.contains("answered with SendTaskSuccess"),
        "{}",
        w.stderr
    );
    let events = sb.history("crash");
    let t = types(&events);
    assert_eq!(
        t.iter().filter(|t| *t == "ActivityStarted").count(),
        2,
        "{t:?}"
    );
    assert_eq!(
        t.iter().filter(|t| *t == "ActivityTimedOut").count(),
        1,
        "{t:?}"
    );
    assert!(!t.contains(&"ActivityFailed".to_owned()), "{t:?}");
}

#[test]
fn a_quiet_handler_lives_through_five_heartbeat_windows_under_auto_and_times_out_under_manual() {
    let sb = sandbox();
    let def = callback_task(json!({ "HeartbeatSeconds": 2 }));
    let handler = format!("Work={}", worker("managed-quiet.sh"));
    // Five 1-second windows without a word from the handler.
    let out = Output::of(
        sb.command()
            .args([
                "run",
                sb.write("quiet.asl.json", &def.to_string())
                    .to_str()
                    .unwrap(),
                "--name",
                "auto",
                "--input",
                r#"{"n":7}"#,
                "--time-scale",
                "0.5",
                "--worker",
                &handler,
            ])
            .env("QUIET_SECONDS", "5")
            .spawn()
            .expect("run"),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.json(),
        json!({"worked": 5, "input": {"QueueUrl": "q", "MessageBody": {"token": out.json()["input"]["MessageBody"]["token"], "n": 7}}})
    );
    let t = types(&sb.history("auto"));
    assert!(t.contains(&"TaskSucceeded".to_owned()), "{t:?}");
    assert!(!t.contains(&"TaskTimedOut".to_owned()), "{t:?}");

    // The same handler under --heartbeat manual is silence: the heartbeat runs out, and the
    // handler is cancelled.
    let out = Output::of(
        sb.command()
            .args([
                "run",
                sb.path("quiet.asl.json").to_str().unwrap(),
                "--name",
                "manual",
                "--input",
                r#"{"n":7}"#,
                "--time-scale",
                "0.5",
                "--heartbeat",
                "manual",
                "--worker",
                &handler,
            ])
            .env("QUIET_SECONDS", "5")
            .spawn()
            .expect("run"),
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("States.Timeout"), "{}", out.stderr);
    assert!(out.stderr.contains("sent SIGTERM"), "{}", out.stderr);
    assert!(
        out.stderr.contains("its outcome is discarded"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_handler_past_timeout_that_ignores_sigterm_is_killed_and_its_late_answers_discarded() {
    let sb = sandbox();
    // TimeoutSeconds 2 lasts a second; no HeartbeatSeconds, so no beats.
    let def = callback_task(json!({ "TimeoutSeconds": 2 }));
    let handler = format!("Work={}", worker("managed-stubborn.sh"));
    let run = sb.start(
        &def,
        "stubborn",
        &["--kill-after", "4", "--worker", &handler],
    );
    let out = Output::of(run);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("States.Timeout"), "{}", out.stderr);
    assert_eq!(
        out.stderr.matches("gets no heartbeats").count(),
        1,
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("sent SIGKILL"), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("SIGTERM, then SIGKILL; its outcome is discarded"),
        "{}",
        out.stderr
    );
    // Its own late send-task-success was refused as AWS refuses it.
    assert_eq!(read(&sb.path("late-status")), "12");
    assert!(read(&sb.path("late-error")).contains("TaskTimedOut"));
    let pid = read(&sb.path("pid"));
    assert!(!alive(&pid), "the handler {pid} is gone");
    assert!(!sb.path("survived").exists());
    let t = types(&sb.history("stubborn"));
    assert!(t.contains(&"TaskTimedOut".to_owned()), "{t:?}");
    assert!(!t.contains(&"TaskSucceeded".to_owned()), "{t:?}");
}

#[test]
fn stop_execution_reaches_the_handler_as_sigterm() {
    let sb = sandbox();
    let run = sb.start(&activity_task(json!({})), "stopped", &[]);
    let worker = sb.start_worker("managed-until-term.sh", &["--max-tasks", "1"]);
    read(&sb.path("pid-0"));
    let stop = sb.run(&["stop-execution", "--execution-arn", "stopped"]);
    assert_eq!(stop.code, 0, "{}", stop.stderr);
    assert_eq!(read(&sb.path("term-0")), "term");
    let out = Output::of(run);
    assert_eq!(out.code, 4, "{}", out.stderr);
    let w = Output::of(worker);
    assert_eq!(w.code, 0, "{}", w.stderr);
    assert!(w.stderr.contains("sent SIGTERM"), "{}", w.stderr);
    assert!(
        w.stderr.contains("its outcome is discarded"),
        "{}",
        w.stderr
    );
    let t = types(&sb.history("stopped"));
    assert!(!t.contains(&"ActivitySucceeded".to_owned()), "{t:?}");
    assert_eq!(t.last().map(String::as_str), Some("ExecutionAborted"));
}

#[test]
fn concurrency_4_runs_four_tasks_at_once() {
    let sb = sandbox();
    let def = json!({
        "StartAt": "Each",
        "States": { "Each": {
            "Type": "Map", "ItemsPath": "$.items", "MaxConcurrency": 4, "End": true,
            "ItemProcessor": { "StartAt": "Work", "States": { "Work": {
                "Type": "Task", "Resource": ACTIVITY, "HeartbeatSeconds": 2,
                "TimeoutSeconds": 120, "End": true } } } } }
    });
    let path = sb.write("four.asl.json", &def.to_string());
    let run = sb.spawn(&[
        "run",
        path.to_str().unwrap(),
        "--name",
        "four",
        "--input",
        r#"{"items":[1,2,3,4]}"#,
        "--time-scale",
        "0.5",
    ]);
    // Each handler answers only when all four run at the same time.
    let worker = {
        let handler = worker("managed-rendezvous.sh");
        sb.command()
            .args([
                "worker",
                "--activity-arn",
                ACTIVITY,
                "--concurrency",
                "4",
                "--max-tasks",
                "4",
                "--",
                &handler,
            ])
            .env("RENDEZVOUS", "4")
            .spawn()
            .expect("worker")
    };
    let out = Output::of(run);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = out.json();
    let results = results.as_array().expect("array");
    assert_eq!(results.len(), 4);
    for r in results {
        assert_eq!(r["together"], 4, "{r}");
    }
    let w = Output::of(worker);
    assert_eq!(
        w.stderr.matches("answered with SendTaskSuccess").count(),
        4,
        "{}",
        w.stderr
    );
}

#[test]
fn the_runner_killed_minus_9_stops_beating_and_the_work_is_retried() {
    let sb = sandbox();
    let def = activity_task(json!({ "Retry": retry_crashed() }));
    let run = sb.start(&def, "orphaned", &[]);
    let mut first = sb.start_worker("managed-crash-once.sh", &["--worker-name", "first"]);
    let orphan = read(&sb.path("pid-0"));
    common::kill(&mut first);
    // The handler lives on in its own process group, but nobody beats for it: its heartbeat
    // runs out, and a second worker takes the retry.
    let second = sb.start_worker(
        "managed-crash-once.sh",
        &["--worker-name", "second", "--max-tasks", "1"],
    );
    let out = Output::of(run);
    kill_group(&orphan);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), json!({"attempt": 1, "input": {"n": 7}}));
    let w = Output::of(second);
    assert_eq!(w.code, 0, "{}", w.stderr);
    let events = sb.history("orphaned");
    let started: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "ActivityStarted")
        .collect();
    let names: Vec<&str> = started
        .iter()
        .map(|e| {
            e["activityStartedEventDetails"]["workerName"]
                .as_str()
                .unwrap_or("")
        })
        .collect();
    assert_eq!(names, ["first", "second"]);
    assert!(types(&events).contains(&"ActivityTimedOut".to_owned()));
}

#[test]
fn the_readme_example_runs_with_a_managed_handler_and_a_self_answering_one_is_not_answered_twice() {
    let sb = sandbox();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (name, handler) in [
        ("managed", "fixtures/workers/transcode-handler.sh"),
        ("self-answering", "fixtures/workers/transcode-worker.sh"),
    ] {
        let out = sb.run_env(
            &[
                "run",
                root.join("definitions/video-transcode.asl.json")
                    .to_str()
                    .unwrap(),
                "--input-file",
                root.join("fixtures/video.json").to_str().unwrap(),
                "--name",
                name,
                "--worker",
                &format!("ConvertVideo={handler}"),
            ],
            &[("TRANSCODE_SECONDS", "0.1")],
        );
        assert_eq!(out.code, 0, "{name}: {}", out.stderr);
        assert_eq!(
            out.json(),
            json!({"videoId": "v-123", "outputs": ["s3://media/v-123/720p.mp4", "s3://media/v-123/1080p.mp4"], "status": "PUBLISHED"}),
            "{name}"
        );
        if name == "self-answering" {
            assert!(out.stderr.contains("not answering twice"), "{}", out.stderr);
        }
    }
}

#[test]
fn resume_binds_the_managed_handler_again() {
    let sb = sandbox().lease_ms(300);
    let def = callback_task(json!({ "HeartbeatSeconds": 2, "Retry": retry_crashed() }));
    let handler = format!("Work={}", worker("managed-crash-once.sh"));
    let mut run = sb.start(&def, "resumed", &["--worker", &handler]);
    let orphan = read(&sb.path("pid-0"));
    // The runner dies with its handler's supervisor; the handler's work is lost.
    common::kill(&mut run);
    kill_group(&orphan);
    // Whether the killed runner committed TaskSubmitted decides which attempt the resumed one
    // runs (the first again, or a retry after the heartbeat ran out); either way a handler
    // bound by the stored --worker answers.
    let out = sb.resume("resumed");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains(r#""attempt":"#), "{}", out.stdout);
    assert!(
        out.stderr.contains("answered with SendTaskSuccess"),
        "{}",
        out.stderr
    );
}

#[test]
fn bad_bindings_and_arns_are_refused_before_anything_runs() {
    let sb = sandbox();
    let def = json!({
        "StartAt": "Call",
        "States": {
            "Call": { "Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                      "Parameters": { "QueueUrl": "q", "MessageBody": { "t.$": "$$.Task.Token" } },
                      "Next": "Act" },
            "Act": { "Type": "Task", "Resource": ACTIVITY, "Next": "Plain" },
            "Plain": { "Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "End": true }
        }
    });
    let path = sb.write("bad.asl.json", &def.to_string());
    let path = path.to_str().unwrap();
    for (binding, extra, message) in [
        ("Call", None, "--worker expects STATE=COMMAND"),
        ("Nope=true", None, "no Task state named 'Nope'"),
        ("Act=true", None, "sfn-local worker --activity-arn"),
        ("Plain=true", None, "does not wait for a task token"),
        ("Call=true", Some("Call=false"), "also bound with --task"),
        ("Call='unbalanced", None, "--worker 'Call='unbalanced'"),
    ] {
        let mut args = vec!["run", path, "--worker", binding];
        if let Some(task) = extra {
            args.extend(["--task", task]);
        }
        sb.run(&args).assert_error(2, message);
    }
    let none = sb.run(&["list-executions"]);
    assert!(!none.stdout.contains("arn:"), "{}", none.stdout);
    sb.run(&[
        "worker",
        "--activity-arn",
        "arn:aws:states:::lambda:invoke",
        "--",
        "true",
    ])
    .assert_error(16, "InvalidArn");
    sb.run(&[
        "worker",
        "--activity-arn",
        ACTIVITY,
        "--concurrency",
        "0",
        "--",
        "true",
    ])
    .assert_error(2, "--concurrency");
    sb.run(&[
        "worker",
        "--activity-arn",
        ACTIVITY,
        "--kill-after",
        "-1",
        "--",
        "true",
    ])
    .assert_error(2, "--kill-after");
}

// ---- `sfn-local worker --endpoint-url`: the same worker over the Step Functions API ----

/// A running `sfn-local serve` at `--time-scale 0.5` on the sandbox's database, killed when
/// dropped.
struct Served {
    child: Child,
    port: u16,
}

impl Served {
    fn start(sb: &Sandbox) -> Served {
        Served::start_with(sb, &[])
    }

    fn start_with(sb: &Sandbox, extra: &[&str]) -> Served {
        use std::io::{BufRead, BufReader};
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let port_text = port.to_string();
        let mut args = vec!["serve", "--port", &port_text, "--time-scale", "0.5"];
        args.extend(extra);
        let mut child = sb.spawn(&args);
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        loop {
            match lines.next() {
                Some(Ok(line)) if line.contains("listening on") => break,
                Some(Ok(_)) => {}
                _ => panic!("serve did not start"),
            }
        }
        // Keep draining its stderr so it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Served { child, port }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// One raw API call (unsigned: serve takes the region from its flag then); the body.
    fn call(&self, action: &str, body: Value) -> Value {
        let authority = format!("127.0.0.1:{}", self.port);
        let response = common::http_api::sfn_call(&authority, action, &body.to_string());
        common::http_api::status_and_json(&response).1
    }

    /// Creates a machine (and the test activity if it uses it); returns the machine's ARN.
    fn machine(&self, name: &str, def: &Value) -> String {
        if def.to_string().contains(ACTIVITY) {
            let activity = self.call("CreateActivity", json!({ "name": "managed" }));
            assert_eq!(activity["activityArn"], ACTIVITY, "{activity}");
        }
        let created = self.call(
            "CreateStateMachine",
            json!({ "name": name, "definition": def.to_string(),
                    "roleArn": "arn:aws:iam::123456789012:role/r" }),
        );
        created["stateMachineArn"]
            .as_str()
            .unwrap_or_else(|| panic!("{created}"))
            .to_owned()
    }

    fn start_execution(&self, machine: &str, input: Value) -> String {
        let started = self.call(
            "StartExecution",
            json!({ "stateMachineArn": machine, "input": input.to_string() }),
        );
        started["executionArn"]
            .as_str()
            .unwrap_or_else(|| panic!("{started}"))
            .to_owned()
    }

    /// Waits for the execution to end; its description.
    fn finished(&self, execution: &str) -> Value {
        let until = Instant::now() + Duration::from_secs(60);
        loop {
            let d = self.call("DescribeExecution", json!({ "executionArn": execution }));
            if d["status"] != "RUNNING" {
                return d;
            }
            assert!(Instant::now() < until, "still running: {d}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `sfn-local worker --endpoint-url` with `managed-api.sh`. Its `SFN_LOCAL_DB` names a
    /// file in a folder that does not exist: the worker must not need the database.
    fn worker(&self, sb: &Sandbox, extra: &[&str]) -> Child {
        let handler = worker("managed-api.sh");
        let endpoint = self.endpoint();
        let mut args = vec![
            "worker",
            "--endpoint-url",
            &endpoint,
            "--activity-arn",
            ACTIVITY,
        ];
        args.extend(extra);
        args.push("--");
        args.push(&handler);
        sb.command()
            .args(&args)
            .env("SFN_LOCAL_DB", sb.path("no-such-folder/sfn-local.db"))
            .spawn()
            .expect("spawn worker")
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A handler's recorded environment (`managed-api.sh` writes `$TOKEN_DIR/hN/env`).
fn handler_env(sb: &Sandbox, n: usize) -> std::collections::HashMap<String, String> {
    read(&sb.path(&format!("h{n}/env")))
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

#[test]
fn over_the_api_a_crashed_handler_is_retried_and_a_quiet_one_is_kept_alive_by_beats() {
    let sb = sandbox();
    let served = Served::start(&sb);
    let machine = served.machine("api", &activity_task(json!({ "Retry": retry_crashed() })));
    let execution = served.start_execution(&machine, json!({ "mode": "crash-once quiet" }));
    // Two handlers: the first is killed mid-task; the second works three 1-second heartbeat
    // windows without a word, beaten for over HTTP.
    let worker = served.worker(&sb, &["--max-tasks", "2", "--worker-name", "api-worker"]);
    let first = handler_env(&sb, 0);
    assert_eq!(first["endpoint"], served.endpoint());
    assert_eq!(first["region"], "us-east-1");
    assert_eq!(first["account"], "123456789012");
    assert_eq!(first["token"], "set");
    assert!(std::process::Command::new("kill")
        .args(["-9", &first["pid"]])
        .status()
        .expect("kill")
        .success());
    let done = served.finished(&execution);
    assert_eq!(done["status"], "SUCCEEDED", "{done}");
    let output: Value = serde_json::from_str(done["output"].as_str().unwrap()).unwrap();
    assert_eq!(
        output,
        json!({"handler": 1, "input": {"mode": "crash-once quiet"}})
    );
    let w = Output::of(worker);
    assert_eq!(w.code, 0, "{}", w.stderr);
    assert!(
        w.stderr.contains("was killed by signal 9; no answer"),
        "{}",
        w.stderr
    );
    assert!(
        w.stderr.contains("answered with SendTaskSuccess"),
        "{}",
        w.stderr
    );
    let events = sb.history(&execution);
    let t = types(&events);
    assert_eq!(
        t.iter().filter(|t| *t == "ActivityTimedOut").count(),
        1,
        "{t:?}"
    );
    let names: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "ActivityStarted")
        .map(|e| {
            e["activityStartedEventDetails"]["workerName"]
                .as_str()
                .unwrap_or("")
        })
        .collect();
    assert_eq!(names, ["api-worker", "api-worker"]);
}

#[test]
fn over_the_api_stop_execution_reaches_the_handler_as_sigterm_and_failures_are_answered() {
    let sb = sandbox();
    let served = Served::start(&sb);
    let machine = served.machine("api", &activity_task(json!({})));
    let stopped = served.start_execution(&machine, json!({ "mode": "until-term" }));
    let worker = served.worker(&sb, &["--max-tasks", "2"]);
    handler_env(&sb, 0);
    let stop = served.call("StopExecution", json!({ "executionArn": stopped }));
    assert!(stop["stopDate"].is_number(), "{stop}");
    // The next beat is refused with TaskTimedOut: the handler gets SIGTERM.
    assert_eq!(read(&sb.path("term")), "term");
    let failed = served.start_execution(&machine, json!({ "mode": "fail" }));
    let done = served.finished(&failed);
    assert_eq!(done["status"], "FAILED", "{done}");
    assert_eq!(done["error"], "Handler.Broken", "{done}");
    assert_eq!(done["cause"], "the codec is missing", "{done}");
    let w = Output::of(worker);
    assert_eq!(w.code, 0, "{}", w.stderr);
    assert!(
        w.stderr.contains("a heartbeat was refused: TaskTimedOut"),
        "{}",
        w.stderr
    );
    assert!(
        w.stderr.contains("its outcome is discarded"),
        "{}",
        w.stderr
    );
    let t = types(&sb.history(&stopped));
    assert!(!t.contains(&"ActivitySucceeded".to_owned()), "{t:?}");
    assert_eq!(t.last().map(String::as_str), Some("ExecutionAborted"));
}

#[test]
fn over_the_api_bad_endpoints_and_unknown_activities_are_named() {
    let sb = sandbox();
    let handler = worker("managed-api.sh");
    let out = sb.run(&[
        "worker",
        "--endpoint-url",
        "localhost:8083",
        "--activity-arn",
        ACTIVITY,
        "--",
        &handler,
    ]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("--endpoint-url 'localhost:8083'"),
        "{}",
        out.stderr
    );
    // No activity created: AWS's error, as the AWS CLI prints it, and exit 1.
    let served = Served::start(&sb);
    let out = Output::of(served.worker(&sb, &[]));
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "An error occurred (ActivityDoesNotExist) when calling the GetActivityTask operation"
        ),
        "{}",
        out.stderr
    );
    // Nothing listening: the worker says so and keeps trying until stopped.
    drop(served);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let child = sb
        .command()
        .args([
            "worker",
            "--endpoint-url",
            &format!("http://127.0.0.1:{port}"),
            "--activity-arn",
            ACTIVITY,
            "--",
            &handler,
        ])
        .spawn()
        .expect("worker");
    std::thread::sleep(Duration::from_millis(1500));
    assert!(std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill")
        .success());
    let out = Output::of(child);
    assert!(
        out.stderr.contains("cannot take a task") && out.stderr.contains("trying again"),
        "{}",
        out.stderr
    );
}

#[test]
fn serve_binds_a_managed_handler_to_a_callback_state_of_one_machine() {
    let sb = sandbox().env("QUIET_SECONDS", "3");
    let binding = format!("quiet:Work={}", worker("managed-quiet.sh"));
    let served = Served::start_with(&sb, &["--worker", &binding]);
    // Three 1-second heartbeat windows without a word from the handler: serve beats for it.
    let machine = served.machine("quiet", &callback_task(json!({ "HeartbeatSeconds": 2 })));
    let execution = served.start_execution(&machine, json!({ "n": 7 }));
    let done = served.finished(&execution);
    assert_eq!(done["status"], "SUCCEEDED", "{done}");
    let output: Value = serde_json::from_str(done["output"].as_str().unwrap()).unwrap();
    assert_eq!(output["worked"], 3, "{output}");
    assert_eq!(output["input"]["MessageBody"]["n"], 7, "{output}");
    let t = types(&sb.history(&execution));
    assert!(!t.contains(&"TaskTimedOut".to_owned()), "{t:?}");
    // A binding whose program cannot be started is refused before the server starts (one
    // without the machine's name binds the state in every machine).
    let out = sb.run(&[
        "serve",
        "--port",
        "0",
        "--worker",
        "Work=no-such-handler-program",
    ]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("--worker 'Work=no-such-handler-program'"),
        "{}",
        out.stderr
    );
}

#[test]
fn managed_handlers_get_the_executions_region_and_account_as_task_commands_do() {
    let sb = sandbox();
    let def = sb.write("env.asl.json", &callback_task(json!({})).to_string());
    let handler = r#"Work=sh -c 'cat > /dev/null; printf "{\"region\":\"%s\",\"default\":\"%s\",\"account\":\"%s\",\"db\":\"%s\"}" "$AWS_REGION" "$AWS_DEFAULT_REGION" "$SFN_LOCAL_ACCOUNT_ID" "$SFN_LOCAL_DB"'"#;
    let out = sb.run(&[
        "run",
        def.to_str().unwrap(),
        "--input",
        r#"{"n":7}"#,
        "--region",
        "eu-west-1",
        "--account-id",
        "111122223333",
        "--worker",
        handler,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.json(),
        json!({"region": "eu-west-1", "default": "eu-west-1", "account": "111122223333",
               "db": sb.db().display().to_string()})
    );
}

#[test]
fn over_the_api_the_worker_sends_aws_shapes_signed_for_the_activitys_region() {
    use std::io::{BufRead, BufReader, Read, Write};
    // A listener standing in for AWS records the worker's first request and answers "no task".
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("addr").port();
    let recorder = std::thread::spawn(move || {
        let (stream, _) = listener.accept().expect("accept");
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut head = Vec::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).expect("read");
            if line.trim().is_empty() {
                break;
            }
            head.push(line.trim().to_owned());
        }
        let length: usize = head
            .iter()
            .find_map(|h| {
                h.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().parse().unwrap())
            })
            .expect("content-length");
        let mut body = vec![0; length];
        reader.read_exact(&mut body).expect("body");
        let mut stream = stream;
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: 2\r\n\r\n{{}}"
        );
        (head, String::from_utf8(body).expect("utf-8"))
    });
    let sb = sandbox();
    let arn = "arn:aws:states:eu-west-1:111122223333:activity:shapes";
    let handler = worker("managed-api.sh");
    let endpoint = format!("http://127.0.0.1:{port}");
    let child = sb
        .command()
        .args([
            "worker",
            "--endpoint-url",
            &endpoint,
            "--activity-arn",
            arn,
            "--worker-name",
            "w1",
            "--",
            &handler,
        ])
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env_remove("AWS_SESSION_TOKEN")
        .spawn()
        .expect("worker");
    let (head, body) = recorder.join().expect("recorder");
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let out = Output::of(child);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let header = |name: &str| {
        head.iter()
            .find_map(|h| {
                let (k, v) = h.split_once(':')?;
                k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
            })
            .unwrap_or_else(|| panic!("no {name} in {head:?}"))
    };
    assert_eq!(head[0], "POST / HTTP/1.1");
    assert_eq!(header("x-amz-target"), "AWSStepFunctions.GetActivityTask");
    assert_eq!(header("content-type"), "application/x-amz-json-1.0");
    // botocore's GetActivityTaskInput: activityArn (required) and workerName.
    assert_eq!(
        serde_json::from_str::<Value>(&body).expect("json"),
        json!({ "activityArn": arn, "workerName": "w1" })
    );
    let authorization = header("authorization");
    assert!(
        authorization.starts_with("AWS4-HMAC-SHA256 Credential=test/")
            && authorization.contains("/eu-west-1/states/aws4_request"),
        "{authorization}"
    );
}
