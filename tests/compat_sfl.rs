//! `serve --compat stepfunctions-local`: what a Jest snapshot of Step Functions Local's
//! histories sees, reproduced (`tests/compat_sfl/`).
//!
//! - The Java rules the compat layer follows (`engine::java_json`'s `Double.toString`,
//!   `asl::java_hashmap`'s `HashMap` iteration order) against the JDK's own answers for
//!   `tests/compat_sfl/vectors.txt`, committed in `java_reference.txt` (written by
//!   `JavaRef.java`); where `javac` and `java` are installed, the JDK is asked again and must
//!   still agree with the committed answers.
//! - A Jest suite (`tests/compat_sfl/history.test.js`, @aws-sdk/client-sfn) against `serve
//!   --compat stepfunctions-local` with the folder's mock config, whose committed
//!   `__snapshots__` were written from Step Functions Local's behaviour (issue #50's nine
//!   rules: source key order, `.$` members last, Java's numbers, its Parallel events, ...),
//!   run with `--ci` (a missing or different snapshot fails; nothing is rewritten); and the
//!   same machines in the default mode (`default_mode.test.js`), which stays AWS's.

mod common;

use common::{deps_node_modules, Sandbox};
use serde_json::{json, Value};
use sfn_local::asl::java_hashmap::hashmap_order;
use sfn_local::engine::java_json::java_double;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compat_sfl")
}

/// Our answer for each line of vectors.txt, in JavaRef's format.
fn ours() -> Vec<String> {
    let vectors = std::fs::read_to_string(dir().join("vectors.txt")).unwrap();
    vectors
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|line| {
            let parts: Vec<&str> = line.split(' ').collect();
            if parts[0] == "D" {
                format!("D {}", java_double(parts[1].parse().unwrap()))
            } else {
                let keys = &parts[1..];
                let order: Vec<&str> = hashmap_order(keys).into_iter().map(|i| keys[i]).collect();
                format!("K {}", order.join(" "))
            }
        })
        .collect()
}

#[test]
fn numbers_and_key_order_are_the_jdk_s() {
    let reference = std::fs::read_to_string(dir().join("java_reference.txt")).unwrap();
    let reference: Vec<&str> = reference.lines().collect();
    let ours = ours();
    assert_eq!(ours.len(), reference.len());
    for (o, r) in ours.iter().zip(&reference) {
        assert_eq!(o, r);
    }
}

#[test]
fn the_committed_reference_is_what_the_jdk_answers() {
    let javac = Command::new("javac").arg("-version").output();
    if !javac.is_ok_and(|o| o.status.success()) {
        // No JDK here: the committed answers (checked above) stand; they were written by it.
        eprintln!("no javac: the JDK's committed answers are used as they are");
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let compiled = Command::new("javac")
        .arg("-d")
        .arg(out.path())
        .arg(dir().join("JavaRef.java"))
        .status()
        .unwrap();
    assert!(compiled.success());
    let run = Command::new("java")
        .arg("-cp")
        .arg(out.path())
        .arg("JavaRef")
        .arg(dir().join("vectors.txt"))
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let reference = std::fs::read_to_string(dir().join("java_reference.txt")).unwrap();
    assert_eq!(String::from_utf8_lossy(&run.stdout), reference);
}

/// `serve --port P ARGS` in `sb`, once its ready line is out; killed when dropped.
struct Served(std::process::Child, u16);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(sb: &Sandbox, args: &[&str]) -> Served {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let mut child = sb
        .command()
        .args(["serve", "--port", &port.to_string()])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn sfn-local serve");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.contains("Starting server on port") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("serve's ready line");
    Served(child, port)
}

fn mock_config() -> PathBuf {
    dir().join("MockConfigFile.json")
}

/// `serve ARGS` with this folder's mock config, and the Jest file `test_file` of this folder
/// run against it with `--ci` (a missing or different snapshot fails; nothing is rewritten):
/// Jest's output, once it passed.
fn jest_against_serve(serve_args: &[&str], test_file: &str) -> String {
    let sb = Sandbox::new()
        .env("SFN_MOCK_CONFIG", mock_config())
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test");
    let served = serve(&sb, serve_args);
    let config = json!({
        "rootDir": dir(),
        "testMatch": [format!("**/{test_file}")],
        "modulePaths": [deps_node_modules()],
        "testEnvironment": "node",
    });
    let out = Command::new("node")
        .arg(deps_node_modules().join("jest/bin/jest.js"))
        .args(["--ci", "--runInBand", "--config", &config.to_string()])
        .current_dir(dir())
        .env("SFN_ENDPOINT", format!("http://127.0.0.1:{}", served.1))
        .env("NODE_PATH", deps_node_modules())
        .stdin(Stdio::null())
        .output()
        .expect("run jest");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{test_file} failed:\n{text}");
    text
}

#[test]
fn a_jest_suite_snapshotting_step_functions_local_histories_passes_with_compat() {
    let text = jest_against_serve(&["--compat", "stepfunctions-local"], "history.test.js");
    // Every case ran and every snapshot was compared (none written, none skipped).
    assert!(text.contains("Tests:       9 passed, 9 total"), "{text}");
    assert!(text.contains("Snapshots:   9 passed, 9 total"), "{text}");
}

/// Issue #50: the emulator's key order in Parameters, its Parallel links and its caught
/// branch failures are written only under `--compat stepfunctions-local`; the same machines
/// in the default mode keep AWS's (`default_mode.test.js`).
#[test]
fn the_emulator_s_rules_apply_only_under_compat() {
    let text = jest_against_serve(&[], "default_mode.test.js");
    assert!(text.contains("Tests:       4 passed, 4 total"), "{text}");
}

#[test]
fn the_default_mode_keeps_aws_s_numbers_key_order_and_raw_task_results() {
    let sb = Sandbox::new()
        .env("SFN_MOCK_CONFIG", mock_config())
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test");
    let served = serve(&sb, &[]);
    let authority = format!("127.0.0.1:{}", served.1);
    let call = |op: &str, body: Value| {
        common::http_api::status_and_json(&common::http_api::sfn_call(
            &authority,
            op,
            &body.to_string(),
        ))
        .1
    };
    let definition = r#"{"StartAt":"Analyse","States":{"Analyse":{"Type":"Task",
        "Resource":"arn:aws:states:::lambda:invoke",
        "Parameters":{"FunctionName":"analyse","Payload":{"text.$":"$.text"}},
        "ResultSelector":{"sentiment.$":"$.Payload.Sentiment"},"ResultPath":"$.result",
        "End":true}}}"#;
    let created = call(
        "CreateStateMachine",
        json!({"name": "Sentiment", "definition": definition,
               "roleArn": "arn:aws:iam::123456789012:role/r"}),
    );
    let arn = format!("{}#Positive", created["stateMachineArn"].as_str().unwrap());
    let started = call(
        "StartExecution",
        json!({"stateMachineArn": arn, "input": r#"{"text": "great", "n": 10000000.0}"#}),
    );
    let execution = started["executionArn"].as_str().unwrap().to_owned();
    let until = Instant::now() + Duration::from_secs(30);
    while call("DescribeExecution", json!({"executionArn": execution}))["status"] == "RUNNING" {
        assert!(Instant::now() < until);
        std::thread::sleep(Duration::from_millis(20));
    }
    let events = call("GetExecutionHistory", json!({"executionArn": execution}))["events"].clone();
    let details = |ty: &str, key: &str| -> String {
        let e = events
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["type"] == ty)
            .unwrap_or_else(|| panic!("no {ty}: {events}"));
        e[key]["output"]
            .as_str()
            .or(e[key]["input"].as_str())
            .unwrap()
            .to_owned()
    };
    // AWS: input as given (members in their order, 10000000.0 as JSON writes it), the raw
    // result in TaskSucceeded.
    assert_eq!(
        details("ExecutionStarted", "executionStartedEventDetails"),
        r#"{"text":"great","n":10000000.0}"#
    );
    let succeeded = details("TaskSucceeded", "taskSucceededEventDetails");
    assert!(
        succeeded.starts_with(r#"{"StatusCode":200,"Payload":{"Sentiment""#),
        "{succeeded}"
    );
}

/// Issue #50, rule 8, and resume: a Parallel the emulator's rule ended (its exit a
/// `TaskStateExited`) and its handler waiting when `serve` is killed. The `serve` started next
/// resumes the execution from its history: the Parallel is not run again, the handler goes on.
#[test]
fn a_parallel_ended_by_a_caught_branch_failure_is_not_run_again_on_resume() {
    let sb = Sandbox::new()
        .lease_ms(1_000)
        .env("SFN_MOCK_CONFIG", mock_config())
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test");
    let compat = ["--compat", "stepfunctions-local"];
    let mut first = common::served::Served::serve(&sb, &compat);
    let definition = json!({"StartAt": "Verify", "States": {
        "Verify": {"Type": "Parallel", "Branches": [{"StartAt": "CheckAddress", "States": {
            "CheckAddress": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
                             "Parameters": {"FunctionName": "check-address"}, "End": true}}}],
            "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Hold"}], "End": true},
        "Hold": {"Type": "Wait", "Seconds": 2, "Next": "Done"},
        "Done": {"Type": "Pass", "End": true}}});
    let (_, created) = first.call(
        "CreateStateMachine",
        json!({"name": "Resumed", "definition": definition.to_string(),
               "roleArn": "arn:aws:iam::123456789012:role/r"}),
    );
    let arn = format!(
        "{}#AddressFails",
        created["stateMachineArn"].as_str().unwrap()
    );
    let (_, started) = first.call("StartExecution", json!({"stateMachineArn": arn}));
    let execution = started["executionArn"].as_str().unwrap().to_owned();
    let history = |served: &common::served::Served| -> Vec<String> {
        let (_, h) = served.call("GetExecutionHistory", json!({"executionArn": execution}));
        let events = h["events"].as_array().unwrap().clone();
        events
            .iter()
            .map(|e| e["type"].as_str().unwrap().to_owned())
            .collect()
    };
    let until = Instant::now() + Duration::from_secs(30);
    while !history(&first).contains(&"WaitStateEntered".to_owned()) {
        assert!(Instant::now() < until, "{:?}", history(&first));
        std::thread::sleep(Duration::from_millis(20));
    }
    common::kill(&mut first.child);
    let second = common::served::Served::serve(&sb, &compat);
    while history(&second).last().map(String::as_str) != Some("ExecutionSucceeded") {
        assert!(Instant::now() < until, "{:?}", history(&second));
        std::thread::sleep(Duration::from_millis(50));
    }
    let events = history(&second);
    let count = |ty: &str| events.iter().filter(|e| *e == ty).count();
    assert_eq!(count("ParallelStateEntered"), 1, "{events:?}");
    assert_eq!(count("TaskFailed"), 1, "{events:?}");
    assert_eq!(count("TaskStateExited"), 1, "{events:?}");
    assert_eq!(count("PassStateEntered"), 1, "{events:?}");
}
