//! The virtual clock (`--clock virtual`) end to end, through the binary: hours-long machines
//! finish at once with every deadline at its own instant in AWS's order, runs repeat byte for
//! byte with `--clock-start` and `--seed`, `--time-scale 0` no longer collapses deadlines, and
//! `serve --clock virtual` moves time only when a client asks (`sfn-local clock`), and its
//! `advance` returns only after what it released has committed.

mod common;

use common::http_api::{post, sfn_call, status_and_json};
use common::{types, Output, Sandbox};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// A Wait of a day, then a callback Task nobody answers, with a 60 s heartbeat inside an hour's
/// budget; each clock has its own Catch.
fn day_then_silence() -> Value {
    json!({
        "StartAt": "Day",
        "States": {
            "Day": {"Type": "Wait", "Seconds": 86400, "Next": "Call"},
            "Call": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
                "Parameters": {"FunctionName": "f", "Payload": {"token.$": "$$.Task.Token"}},
                "HeartbeatSeconds": 60,
                "TimeoutSeconds": 3600,
                "Catch": [
                    {"ErrorEquals": ["States.HeartbeatTimeout"], "Next": "Silent"},
                    {"ErrorEquals": ["States.Timeout"], "Next": "Late"}
                ],
                "End": true
            },
            "Silent": {"Type": "Pass", "Result": "silent", "End": true},
            "Late": {"Type": "Pass", "Result": "late", "End": true}
        }
    })
}

/// Milliseconds since the epoch of an event's timestamp.
fn at(event: &Value) -> i64 {
    chrono::DateTime::parse_from_rfc3339(event["timestamp"].as_str().unwrap())
        .unwrap()
        .timestamp_millis()
}

/// The first event of `event_type`.
fn first<'a>(events: &'a [Value], event_type: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["type"] == event_type)
        .unwrap_or_else(|| panic!("no {event_type} in {events:?}"))
}

#[test]
fn a_day_long_wait_and_a_silent_worker_end_through_the_heartbeat_catch_at_once() {
    let sb = Sandbox::new();
    let started = Instant::now();
    let out = sb.run_definition(&day_then_silence(), "silence", &["--clock", "virtual"]);
    // Printed, not asserted: speed is the benchmark's to show.
    eprintln!(
        "a day and a minute of virtual time took {:?}",
        started.elapsed()
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), json!("silent"));
    let events = sb.history("silence");
    let waited = at(first(&events, "WaitStateExited")) - at(first(&events, "WaitStateEntered"));
    assert_eq!(waited, 86_400_000, "the Wait lasted a day of the clock");
    let silent = at(first(&events, "TaskTimedOut")) - at(first(&events, "TaskSubmitted"));
    assert_eq!(silent, 60_000, "the heartbeat, not the budget, ran out");
}

#[test]
fn a_machine_budget_ends_it_at_exactly_its_timeout_between_two_waits() {
    let sb = Sandbox::new();
    let def = json!({
        "StartAt": "A",
        "TimeoutSeconds": 7200,
        "States": {
            "A": {"Type": "Wait", "Seconds": 3600, "Next": "B"},
            "B": {"Type": "Wait", "Seconds": 3601, "End": true}
        }
    });
    let out = sb.run_definition(&def, "budget", &["--clock", "virtual"]);
    assert_eq!(out.code, 3, "TIMED_OUT: {}", out.stderr);
    let events = sb.history("budget");
    assert_eq!(
        types(&events),
        [
            "ExecutionStarted",
            "WaitStateEntered",
            "WaitStateExited",
            "WaitStateEntered",
            "ExecutionTimedOut"
        ]
    );
    let lasted = at(first(&events, "ExecutionTimedOut")) - at(&events[0]);
    assert_eq!(lasted, 7_200_000);
}

#[test]
fn retries_back_off_ten_twenty_forty_seconds_on_the_clock() {
    let sb = Sandbox::new();
    let def = json!({
        "StartAt": "Flaky",
        "States": {"Flaky": {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": "flaky"},
            "Retry": [{"ErrorEquals": ["Boom"], "IntervalSeconds": 10, "BackoffRate": 2, "MaxAttempts": 3}],
            "End": true
        }}
    });
    let mocks = json!({
        "StateMachines": {"flaky": {"TestCases": {"Fails": {"Flaky": "Boom"}}}},
        "MockedResponses": {"Boom": {"0-3": {"Throw": {"Error": "Boom", "Cause": "again"}}}}
    });
    let config = sb.write("mocks.json", &mocks.to_string());
    let out = sb.run_definition(
        &def,
        "flaky",
        &[
            "--clock",
            "virtual",
            "--mock-config",
            config.to_str().unwrap(),
            "--test-case",
            "Fails",
        ],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    let events = sb.history("flaky");
    let scheduled: Vec<i64> = events
        .iter()
        .filter(|e| e["type"] == "TaskScheduled")
        .map(at)
        .collect();
    let gaps: Vec<i64> = scheduled.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(gaps, [10_000, 20_000, 40_000]);
}

/// The history `get-execution-history` prints of a run of `definition` with `input` on a
/// virtual clock from 2030 with seed 42, in a sandbox of its own.
fn seeded_history(definition: &Value, input: &str) -> String {
    let sb = Sandbox::new();
    let path = sb.write("same.asl.json", &definition.to_string());
    let out = sb.run(&[
        "run",
        path.to_str().unwrap(),
        "--input",
        input,
        "--clock",
        "virtual",
        "--clock-start",
        "2030-01-01T00:00:00Z",
        "--seed",
        "42",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let listed = sb.run(&[
        "list-executions",
        "--query",
        "executions[0].executionArn",
        "--output",
        "text",
    ]);
    let arn = listed.stdout.trim().to_owned();
    let history = sb.run(&["get-execution-history", "--execution-arn", &arn]);
    assert_eq!(history.code, 0, "{}", history.stderr);
    assert!(history.stdout.contains("2030-01-01T00:00:00.000Z"));
    history.stdout
}

#[test]
fn two_runs_with_the_same_clock_start_and_seed_write_byte_identical_histories() {
    let histories: Vec<String> = (0..2)
        .map(|_| seeded_history(&day_then_silence(), "{}"))
        .collect();
    assert_eq!(histories[0], histories[1]);
}

/// Regression: an execution let the others of its thread run after 5 ms of wall time,
/// wherever that fell, and such a yield lets its own other Map iterations go first: a long
/// Map under `--clock virtual --seed` wrote its events in another order now and then.
#[test]
fn a_long_map_writes_the_same_history_every_run() {
    let definition = json!({"StartAt": "Map", "States": {"Map": {
        "Type": "Map", "ItemsPath": "$.items", "End": true,
        "ItemProcessor": {"StartAt": "A", "States": {
            "A": {"Type": "Pass", "Parameters": {"n.$": "States.Format('n-{}', $)"}, "Next": "B"},
            "B": {"Type": "Pass", "End": true}}}}}});
    let input = json!({ "items": (0..600).collect::<Vec<u32>>() }).to_string();
    let histories: Vec<String> = (0..3)
        .map(|_| seeded_history(&definition, &input))
        .collect();
    assert!(histories[0].contains("MapIterationSucceeded"));
    assert!(histories.iter().all(|h| *h == histories[0]));
}

/// Regression: `--time-scale 0` put the heartbeat and the budget on one instant, and the
/// budget's Catch (`Late`) was taken where AWS takes the heartbeat's.
#[test]
fn time_scale_zero_keeps_the_heartbeat_before_the_budget() {
    let sb = Sandbox::new();
    let out = sb.run_definition(&day_then_silence(), "zero", &["--time-scale", "0"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), json!("silent"));
    let refused = sb.run_definition(
        &day_then_silence(),
        "real-zero",
        &["--clock", "real", "--time-scale", "0"],
    );
    assert_eq!(refused.code, 2);
    assert!(
        refused.stderr.contains("--clock virtual"),
        "{}",
        refused.stderr
    );
}

/// The seed scenario under the virtual clock: the worker heartbeats twice and is killed; the
/// heartbeat clock times the attempt out, the retry's worker answers, the late answer of the
/// first is refused. Same outcome as on the real clock (tests/tokens.rs).
#[test]
fn the_seed_scenario_keeps_its_outcome_on_the_virtual_clock() {
    let sb = Sandbox::with_workers();
    let dir = sb.dir.path().to_owned();
    let sb = sb.env("TOKEN_DIR", dir);
    let def = json!({
        "StartAt": "Work",
        "States": {"Work": {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
            "Parameters": {"FunctionName": "work", "Payload": {"token.$": "$$.Task.Token", "input.$": "$"}},
            "HeartbeatSeconds": 10,
            "TimeoutSeconds": 300,
            "Retry": [{"ErrorEquals": ["States.HeartbeatTimeout"], "IntervalSeconds": 1, "MaxAttempts": 2}],
            "End": true
        }}
    });
    let task = format!("Work={}", common::worker("seed-worker.sh"));
    let out = sb.run_definition(&def, "seed", &["--clock", "virtual", "--task", &task]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), json!({"done": true, "attempt": 1}));
    let events = sb.history("seed");
    let timed_out = first(&events, "TaskTimedOut");
    assert_eq!(
        timed_out["taskTimedOutEventDetails"]["error"],
        "States.Timeout"
    );
    // The silence lasted the heartbeat's 10 s of the clock after the last beat, not more:
    // beats land at the instant they arrive.
    let silence = at(timed_out) - at(first(&events, "TaskSubmitted"));
    assert!((10_000..11_000).contains(&silence), "{silence} ms");
    let first_token = std::fs::read_to_string(sb.path("token-0")).unwrap();
    let late = sb.send_success(&first_token, "{}");
    late.assert_error(12, "TaskTimedOut");
    assert_eq!(sb.history("seed"), events, "a late answer changes nothing");
}

/// Coverage credits the clock that ran out: the heartbeat's expiry and Catch are covered, the
/// budget's are not (at `--time-scale 0` both clocks ran out at one instant and the budget was
/// credited).
#[test]
fn coverage_credits_the_heartbeat_that_ran_out() {
    let sb = Sandbox::new();
    let path = sb.write("cov.asl.json", &day_then_silence().to_string());
    let out = sb.run(&["run", path.to_str().unwrap(), "--clock", "virtual"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = sb.run(&["coverage", path.to_str().unwrap(), "--format", "json"]);
    assert_eq!(report.code, 0, "{}", report.stderr);
    let hits: Vec<(String, u64)> = report.json()["machines"][0]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["description"].as_str().unwrap().to_owned(),
                i["hits"].as_u64().unwrap(),
            )
        })
        .collect();
    let hit = |what: &str| hits.iter().find(|(d, _)| d == what).map(|(_, n)| *n);
    assert_eq!(hit("HeartbeatSeconds of Call ran out"), Some(1), "{hits:?}");
    assert_eq!(
        hit("Catch 1 of Call (States.HeartbeatTimeout → Silent)"),
        Some(1)
    );
    assert_eq!(hit("TimeoutSeconds of Call ran out"), Some(0));
    assert_eq!(hit("Catch 2 of Call (States.Timeout → Late)"), Some(0));
}

/// `serve --clock virtual` on a free port, killed when dropped.
struct Served {
    child: std::process::Child,
    endpoint: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        common::kill(&mut self.child);
    }
}

/// `serve --port 0 EXTRA` in the sandbox, once it is ready.
fn serve(sb: &Sandbox, extra: &[&str]) -> Served {
    let ready = sb.path("ready.json");
    let mut args = vec![
        "serve",
        "--port",
        "0",
        "--ready-file",
        ready.to_str().unwrap(),
    ];
    args.extend(extra);
    let child = sb.spawn(&args);
    let until = Instant::now() + Duration::from_secs(60);
    while !ready.exists() {
        assert!(Instant::now() < until, "serve did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let ready: Value = serde_json::from_str(&std::fs::read_to_string(&ready).unwrap()).unwrap();
    Served {
        child,
        endpoint: ready["endpoint"].as_str().unwrap().to_owned(),
    }
}

impl Served {
    fn call(&self, operation: &str, body: Value) -> Value {
        let authority = self.endpoint.trim_start_matches("http://");
        let (status, answer) = status_and_json(&sfn_call(authority, operation, &body.to_string()));
        assert_eq!(status, 200, "{operation}: {answer}");
        answer
    }

    fn clock(&self, sb: &Sandbox, args: &[&str]) -> Value {
        let mut all = vec!["clock"];
        all.extend(args);
        all.extend(["--endpoint-url", self.endpoint.as_str()]);
        let out = sb.run(&all);
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.json()
    }

    fn status(&self, arn: &str) -> String {
        self.call("DescribeExecution", json!({"executionArn": arn}))["status"]
            .as_str()
            .unwrap()
            .to_owned()
    }
}

#[test]
fn serve_moves_virtual_time_only_when_a_client_asks() {
    let sb = Sandbox::new();
    let server = serve(&sb, &["--clock", "virtual"]);
    let mut machine = day_then_silence();
    machine["StartAt"] = json!("Call");
    machine["States"].as_object_mut().unwrap().remove("Day");
    let created = server.call(
        "CreateStateMachine",
        json!({"name": "Reminder", "definition": machine.to_string(), "roleArn": "arn:aws:iam::123456789012:role/r"}),
    );
    let start = |name: &str| {
        server.call(
            "StartExecution",
            json!({"stateMachineArn": created["stateMachineArn"], "name": name}),
        )["executionArn"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let silent = start("silent");
    let beating = start("beating");
    server.clock(&sb, &["now"]);
    // Three seconds of wall time: nothing moves on its own.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(server.status(&silent), "RUNNING");
    // The second execution's worker beats 50 s in: its deadline moves to 110 s.
    let token = sb
        .run(&[
            "list-tasks",
            "--execution-arn",
            &beating,
            "--format",
            "json",
        ])
        .json()["tasks"][0]["taskToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let moved = server.clock(&sb, &["advance", "50s"]);
    assert_eq!(moved["clock"], "virtual");
    server.call("SendTaskHeartbeat", json!({"taskToken": token}));
    server.clock(&sb, &["advance", "11s"]);
    // 61 s: the silent one took its heartbeat Catch; the beating one is alive.
    let done = server.call("DescribeExecution", json!({"executionArn": silent}));
    assert_eq!(
        (done["status"].as_str(), done["output"].as_str()),
        (Some("SUCCEEDED"), Some("\"silent\""))
    );
    assert_eq!(server.status(&beating), "RUNNING");
    server.clock(&sb, &["next"]);
    assert_eq!(server.status(&beating), "SUCCEEDED");
    let events = server.call("GetExecutionHistory", json!({"executionArn": beating}))["events"]
        .as_array()
        .unwrap()
        .clone();
    let seconds = |e: &Value| (e["timestamp"].as_f64().unwrap() * 1000.0).round() as i64;
    let submitted = events
        .iter()
        .find(|e| e["type"] == "TaskSubmitted")
        .unwrap();
    let timed_out = events.iter().find(|e| e["type"] == "TaskTimedOut").unwrap();
    assert_eq!(
        seconds(timed_out) - seconds(submitted),
        110_000,
        "60 s after the beat at 50 s"
    );
}

#[test]
fn the_clock_command_refuses_a_real_clock_and_a_bad_duration() {
    let sb = Sandbox::new();
    let bad = sb.run(&[
        "clock",
        "advance",
        "soon",
        "--endpoint-url",
        "http://127.0.0.1:9",
    ]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("not a duration"), "{}", bad.stderr);
    let served = serve(&sb, &[]);
    let refused = sb.run(&["clock", "advance", "1s", "--endpoint-url", &served.endpoint]);
    assert_eq!(refused.code, 1);
    assert!(
        refused.stderr.contains("--clock virtual"),
        "{}",
        refused.stderr
    );
    assert_eq!(served.clock(&sb, &["now"])["clock"], "real");
}

/// No example, README or page of the book recommends a setting that reorders deadlines
/// (`--time-scale 0` on a real clock, `timeScale: 0`, `sfn_local_time_scale = 0`): the
/// virtual clock is what they show. The page that explains the change names it once.
#[test]
fn no_example_recommends_a_setting_that_reorders_deadlines() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md"), root.join("action.yml")];
    for dir in ["docs/src", "python", "npm", "docker", "definitions"] {
        collect(&root.join(dir), &mut files);
    }
    let zero = |text: &str, pattern: &str| {
        text.match_indices(pattern).any(|(i, _)| {
            let next = text[i + pattern.len()..].chars().next();
            !next.is_some_and(|c| c == '.' || c.is_ascii_digit())
        })
    };
    let patterns = [
        "--time-scale 0",
        "--time-scale=0",
        "timeScale: 0",
        "time_scale = 0",
        "time_scale=0",
        "WAIT_TIME_SCALE: \"0\"",
    ];
    let offenders: Vec<String> = files
        .iter()
        .filter(|f| {
            !f.ends_with("docs/src/time.md") && !f.ends_with("docs/src/reference/commands.md")
        })
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).ok()?;
            let hit = patterns.iter().find(|p| zero(&text, p))?;
            Some(format!("{}: {hit}", f.display()))
        })
        .collect();
    assert!(offenders.is_empty(), "{offenders:#?}");
}

fn collect(dir: &std::path::Path, files: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().to_string();
        if name == "node_modules" || name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            collect(&path, files);
        } else {
            files.push(path);
        }
    }
}

/// Everything reads the virtual clock: a Wait until 2030 ends at once with the clock then at
/// 2030, and JSONata's `$now()` and `$millis()` say so, beside `$$.Execution.StartTime`.
#[test]
fn a_wait_until_2030_ends_at_once_and_now_reads_the_clock() {
    let sb = Sandbox::new();
    let def = json!({
        "QueryLanguage": "JSONata",
        "StartAt": "Until",
        "States": {
            "Until": {"Type": "Wait", "Timestamp": "2030-01-01T00:00:00Z", "Next": "Read"},
            "Read": {"Type": "Pass", "Output": {
                "now": "{% $now() %}",
                "millis": "{% $millis() %}",
                "started": "{% $states.context.Execution.StartTime %}"
            }, "End": true}
        }
    });
    let out = sb.run_definition(
        &def,
        "until",
        &[
            "--clock",
            "virtual",
            "--clock-start",
            "2029-06-01T00:00:00Z",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.json(),
        json!({"now": "2030-01-01T00:00:00.000Z", "millis": 1_893_456_000_000_i64, "started": "2029-06-01T00:00:00.000Z"})
    );
}

/// A killed run on the virtual clock resumes on a virtual clock standing where its history
/// ended: the Wait keeps its place, and the answer from another process lands.
#[test]
fn a_virtual_run_resumes_on_a_virtual_clock_where_its_history_ended() {
    let sb = Sandbox::new().lease_ms(200);
    let def = json!({
        "StartAt": "Hour",
        "States": {
            "Hour": {"Type": "Wait", "Seconds": 3600, "Next": "Ask"},
            "Ask": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
                "Parameters": {"FunctionName": "f", "Payload": {"token.$": "$$.Task.Token"}},
                "End": true
            }
        }
    });
    let path = sb.write("resumed.asl.json", &def.to_string());
    let flags = [
        "--clock",
        "virtual",
        "--clock-start",
        "2030-01-01T00:00:00Z",
    ];
    let mut args = vec!["run", path.to_str().unwrap(), "--name", "resumed"];
    args.extend(flags);
    let mut killed = sb.spawn(&args);
    let token = wait_for_token(&sb, "resumed");
    common::kill(&mut killed);
    // Its 200 ms lease lapses.
    std::thread::sleep(Duration::from_millis(400));
    let resumed = sb.spawn(&["resume", "--execution-arn", "resumed"]);
    // The resumed runner holds the token again; its answer ends the execution.
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = sb.send_success(&token, "{\"ok\":true}");
        if answer.code == 0 {
            break;
        }
        assert!(Instant::now() < until, "{}", answer.stderr);
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = Output::of(resumed);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = sb.history("resumed");
    assert_eq!(
        at(first(&events, "WaitStateExited")),
        1_893_459_600_000,
        "2030, an hour in"
    );
    assert!(at(events.last().unwrap()) >= 1_893_459_600_000);
}

/// Waits for the execution's open token (`list-tasks`).
fn wait_for_token(sb: &Sandbox, execution: &str) -> String {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let listed = sb.run(&[
            "list-tasks",
            "--execution-arn",
            execution,
            "--format",
            "json",
        ]);
        // Before the run has created the database, list-tasks says it does not exist.
        let tasks: Value = serde_json::from_str(&listed.stdout).unwrap_or(Value::Null);
        if let Some(token) = tasks["tasks"][0]["taskToken"].as_str() {
            return token.to_owned();
        }
        assert!(Instant::now() < until, "no token: {}", listed.stderr);
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Regression (#47): `clock advance 1e18` was accepted, and the clock then read 1970 with
/// nowMillis 3.9e18 (the milliseconds wrapped), never to come back. An advance past
/// 9999-12-31T23:59:59.999Z is refused (the command before any request, exit 2; the server
/// with a 400 naming the limit) and the clock does not move; one that lands on it works, and
/// `--clock-start` past it is refused.
#[test]
fn an_advance_past_year_9999_is_refused_and_the_clock_stays() {
    let sb = Sandbox::new();
    let server = serve(
        &sb,
        &[
            "--clock",
            "virtual",
            "--clock-start",
            "9999-12-31T23:58:59.999Z",
        ],
    );
    let before = server.clock(&sb, &["now"]);
    let refused = sb.run(&[
        "clock",
        "advance",
        "1e18",
        "--endpoint-url",
        &server.endpoint,
    ]);
    refused.assert_error(2, "9999-12-31T23:59:59.999Z");
    assert_eq!(server.clock(&sb, &["now"]), before);

    // Within what a duration may be, but past the limit from where this clock stands.
    let authority = server.endpoint.trim_start_matches("http://");
    for duration in [json!("61s"), json!(1e18), json!(1.844_674_407_370_955e16)] {
        let body = json!({"action": "advance", "duration": duration}).to_string();
        let answer = post(
            authority,
            "/sfn-local/clock",
            "Content-Type: application/json",
            &body,
        );
        let (status, error) = status_and_json(&answer);
        assert_eq!(status, 400, "{duration}: {answer}");
        assert_eq!(error["__type"], "ValidationException", "{error}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains("9999-12-31T23:59:59.999Z"), "{message}");
    }
    let refused = sb.run(&[
        "clock",
        "advance",
        "61s",
        "--endpoint-url",
        &server.endpoint,
    ]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("past 9999-12-31T23:59:59.999Z"),
        "{}",
        refused.stderr
    );
    assert_eq!(server.clock(&sb, &["now"]), before);

    let landed = server.clock(&sb, &["advance", "60s"]);
    assert_eq!(landed["now"], "9999-12-31T23:59:59.999Z");
    assert_eq!(landed["nowMillis"], 253_402_300_799_999_i64);

    let late = sb.run(&[
        "serve",
        "--port",
        "0",
        "--clock",
        "virtual",
        "--clock-start",
        "9999-12-31T23:59:59.999-01:00",
    ]);
    late.assert_error(2, "latest instant");
}

/// #47, item 7: `clock advance` returns only after the work the deadlines it fired released
/// has committed, by construction: a fired deadline counts its execution as in flight from its
/// wake, each write counts from its submission until its commit, and a program it runs counts
/// until it ends (up to the clock's 5 s patience for work outside the process). The window
/// is wide here: the Wait's deadline releases a Task whose program takes 1.5 s of wall time,
/// then a Pass; the history read the moment `advance` returns already ends the execution.
#[test]
fn clock_advance_returns_after_the_work_it_released_has_committed() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let slow = sb.write("slow.sh", "#!/bin/sh\nsleep 1.5\ncat\n");
    std::fs::set_permissions(&slow, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let binding = format!("Slow={}", slow.display());
    let server = serve(&sb, &["--clock", "virtual", "--task", &binding]);
    let machine = json!({"StartAt": "Minute", "States": {
        "Minute": {"Type": "Wait", "Seconds": 60, "Next": "Slow"},
        "Slow": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Next": "After"},
        "After": {"Type": "Pass", "Result": "done", "End": true}
    }});
    let created = server.call(
        "CreateStateMachine",
        json!({"name": "SlowTask", "definition": machine.to_string(), "roleArn": "arn:aws:iam::123456789012:role/r"}),
    );
    let arn = server.call(
        "StartExecution",
        json!({"stateMachineArn": created["stateMachineArn"], "name": "slow"}),
    )["executionArn"]
        .as_str()
        .unwrap()
        .to_owned();
    server.clock(&sb, &["advance", "60s"]);
    let events = server.call("GetExecutionHistory", json!({"executionArn": arn}))["events"]
        .as_array()
        .unwrap()
        .clone();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.last(), Some(&"ExecutionSucceeded"), "{types:?}");
    assert!(types.contains(&"TaskSucceeded"), "{types:?}");
    assert_eq!(server.status(&arn), "SUCCEEDED");
}
