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
