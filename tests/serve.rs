//! `sfn-local serve` driven by real clients in real processes: the AWS CLI (with a shell
//! worker), boto3 and the JavaScript SDK v3, each unchanged but for the endpoint URL; raw HTTP
//! for the protocol's error shapes; and a SIGTERM'd server whose successor resumes its
//! executions.

mod common;

use common::{bin, deps_dir, deps_node_modules, deps_python_bin, Sandbox};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A running `sfn-local serve`, killed when dropped.
struct Served {
    child: Child,
    port: u16,
    stderr: Arc<Mutex<String>>,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/serve")
}

/// The sandbox's environment for the server, its workers and the clients: fake credentials,
/// the region, the AWS CLI on PATH, and where the server listens.
fn sandbox(port: u16) -> Sandbox {
    let path = format!(
        "{}:{}",
        deps_python_bin("aws").parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Sandbox::new()
        .env("PATH", path)
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_DEFAULT_REGION", "us-east-1")
        .env("AWS_PAGER", "")
        .env("ENDPOINT", format!("http://127.0.0.1:{port}"))
        .env("SFN_LOCAL", bin())
}

impl Served {
    fn start(sandbox: &Sandbox, port: u16, extra: &[&str]) -> Served {
        let port_text = port.to_string();
        let mut child = sandbox
            .command()
            .args(["serve", "--port", &port_text])
            .args(extra)
            .spawn()
            .expect("spawn sfn-local serve");
        let stderr = Arc::new(Mutex::new(String::new()));
        let pipe = child.stderr.take().expect("stderr");
        let sink = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        let served = Served {
            child,
            port,
            stderr,
        };
        let until = Instant::now() + Duration::from_secs(60);
        while !served.log().contains("listening on") {
            assert!(
                Instant::now() < until,
                "serve did not start: {}",
                served.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        served
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn log(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// SIGTERM, then waits for the exit.
    fn terminate(mut self) -> (ExitStatus, String) {
        let pid = self.child.id().to_string();
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill");
        let status = self.child.wait().expect("wait");
        std::thread::sleep(Duration::from_millis(50));
        (status, self.log())
    }

    /// One raw API call: the status and the body as JSON.
    fn call(&self, target: &str, body: &str) -> (u16, Value) {
        let operation = target
            .strip_prefix("AWSStepFunctions.")
            .expect("a Step Functions target");
        let authority = format!("127.0.0.1:{}", self.port);
        common::http_api::status_and_json(&common::http_api::sfn_call(&authority, operation, body))
    }
}

impl Served {
    /// A request announcing a body of `len` bytes with `Expect: 100-continue`, so the server
    /// may answer before the body is sent; sent only if the server asks for it.
    fn call_oversized(&self, target: &str, len: usize) -> (u16, Value) {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        write!(
            stream,
            "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-amz-json-1.0\r\nX-Amz-Target: {target}\r\nContent-Length: {len}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n"
        )
        .expect("write");
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut status_line = String::new();
        reader.read_line(&mut status_line).expect("status line");
        if status_line.contains(" 100 ") {
            let mut blank = String::new();
            reader.read_line(&mut blank).expect("blank line");
            let _ = stream.write_all(&vec![b' '; len]);
            status_line.clear();
            reader.read_line(&mut status_line).expect("status line");
        }
        let status: u16 = status_line[9..12].parse().expect("status");
        let mut rest = String::new();
        let _ = reader.read_to_string(&mut rest);
        let body = rest.split("\r\n\r\n").nth(1).unwrap_or("");
        (status, serde_json::from_str(body).unwrap_or(Value::Null))
    }

    /// A page of the console on the same port: the status and the HTML.
    fn get(&self, path: &str) -> (u16, String) {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        )
        .expect("write");
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("read");
        let status: u16 = response[9..12].parse().expect("status");
        let body = response.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
        (status, body)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs a client script with the sandbox's environment; asserts it passed.
fn client(
    sandbox: &Sandbox,
    served: &Served,
    program: &Path,
    args: &[&str],
    extra_env: &[(&str, &Path)],
) {
    let mut c = Command::new(program);
    c.args(args)
        .env("SFN_LOCAL_DB", sandbox.db())
        .env("OUT_DIR", sandbox.dir.path())
        .stdin(Stdio::null());
    for (k, v) in extra_env {
        c.env(k, v);
    }
    // The sandbox's variables (credentials, PATH, ENDPOINT) come from a command it built.
    let template = sandbox.command();
    for (k, v) in template.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    let out = c.output().expect("run client");
    assert!(
        out.status.success(),
        "{} failed\nstdout:\n{}\nstderr:\n{}\nserver:\n{}",
        program.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        served.log()
    );
}

#[test]
fn the_aws_cli_drives_workers_activities_mocks_and_sync_executions() {
    let port = free_port();
    let sandbox = sandbox(port);
    let worker = format!(
        "Callback:Double={}",
        here().join("callback-worker.sh").display()
    );
    let mocks = here().join("mocks.json");
    let served = Served::start(
        &sandbox,
        port,
        &["--task", &worker, "--mock-config", mocks.to_str().unwrap()],
    );
    client(&sandbox, &served, &here().join("aws-cli.sh"), &[], &[]);
}

#[test]
fn boto3_sees_aws_shapes_and_exceptions() {
    let port = free_port();
    let sandbox = sandbox(port);
    let served = Served::start(&sandbox, port, &[]);
    let script = here().join("boto3_client.py");
    client(
        &sandbox,
        &served,
        &deps_python_bin("python"),
        &[
            script.to_str().unwrap(),
            &served.endpoint(),
            here().to_str().unwrap(),
        ],
        &[],
    );
}

#[test]
fn the_javascript_sdk_sees_aws_shapes_and_exceptions() {
    let port = free_port();
    let sandbox = sandbox(port);
    let served = Served::start(&sandbox, port, &[]);
    let _ = deps_dir();
    let script = here().join("js_client.cjs");
    client(
        &sandbox,
        &served,
        Path::new("node"),
        &[
            script.to_str().unwrap(),
            &served.endpoint(),
            here().to_str().unwrap(),
        ],
        &[("NODE_PATH", &deps_node_modules())],
    );
}

#[test]
fn bad_requests_get_aws_errors_and_store_nothing() {
    let port = free_port();
    let sandbox = sandbox(port);
    let served = Served::start(&sandbox, port, &[]);
    let (status, body) = served.call("AWSStepFunctions.NoSuchThing", "{}");
    assert_eq!(
        (status, body["__type"].as_str()),
        (400, Some("UnknownOperationException"))
    );
    let (status, body) = served.call("AWSStepFunctions.ListStateMachines", "{not json");
    assert_eq!(
        (status, body["__type"].as_str()),
        (400, Some("SerializationException"))
    );
    let (status, body) = served.call("AWSStepFunctions.StartExecution", "{}");
    assert_eq!(status, 400);
    assert_eq!(body["__type"], "ValidationException");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("'stateMachineArn'"),
        "{body}"
    );
    let (status, body) = served.call(
        "AWSStepFunctions.CreateStateMachine",
        r#"{"name": "M", "definition": "{}", "roleArn": "arn:aws:iam::1:role/r", "type": "SLOW"}"#,
    );
    assert_eq!(
        (status, body["__type"].as_str()),
        (400, Some("ValidationException"))
    );
    assert!(
        body["message"].as_str().unwrap().contains("'type'"),
        "{body}"
    );
    let big = "x".repeat(1_048_577);
    let request =
        serde_json::json!({"name": "Big", "definition": big, "roleArn": "arn:aws:iam::1:role/r"});
    let (status, body) = served.call("AWSStepFunctions.CreateStateMachine", &request.to_string());
    assert_eq!(
        (status, body["__type"].as_str()),
        (400, Some("ValidationException"))
    );
    assert!(
        body["message"].as_str().unwrap().contains("'definition'"),
        "{body}"
    );
    let (status, body) = served.call(
        "AWSStepFunctions.CreateStateMachine",
        r#"{"name": "bad name", "definition": "{}", "roleArn": "arn:aws:iam::1:role/r"}"#,
    );
    assert_eq!(
        (status, body["__type"].as_str()),
        (400, Some("InvalidName"))
    );
    let (status, body) = served.call(
        "AWSStepFunctions.DescribeExecution",
        r#"{"executionArn": "nope"}"#,
    );
    assert_eq!((status, body["__type"].as_str()), (400, Some("InvalidArn")));
    let (status, body) = served.call("AWSStepFunctions.TestState", r#"{"definition": "{}"}"#);
    assert_eq!(
        (status, body["__type"].as_str()),
        (400, Some("InvalidDefinition")),
        "{body}"
    );
    // TestState is the engine's, the same as `sfn-local test-state`.
    let (status, body) = served.call(
        "AWSStepFunctions.TestState",
        r#"{"definition": "{\"Type\":\"Pass\",\"Result\":{\"n\":1},\"End\":true}", "input": "{}"}"#,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "SUCCEEDED", "{body}");
    assert_eq!(body["output"], r#"{"n":1}"#, "{body}");
    // A body over the server's limit is AWS's error too, never axum's plain 413.
    let (status, body) = served.call_oversized("AWSStepFunctions.CreateStateMachine", 9 << 20);
    assert_eq!(
        (status, body["__type"].as_str()),
        (400, Some("ValidationException")),
        "{body}"
    );
    let (_, listed) = served.call("AWSStepFunctions.ListStateMachines", "{}");
    assert_eq!(listed["stateMachines"], serde_json::json!([]));
}

#[test]
fn sigterm_leaves_executions_resumable_and_the_next_server_resumes_them() {
    let port = free_port();
    let sandbox = sandbox(port).lease_ms(300);
    let served = Served::start(&sandbox, port, &[]);
    let definition = std::fs::read_to_string(here().join("callback.asl.json")).unwrap();
    let request = serde_json::json!({"name": "Waits", "definition": definition, "roleArn": "arn:aws:iam::1:role/r"});
    let (status, created) =
        served.call("AWSStepFunctions.CreateStateMachine", &request.to_string());
    assert_eq!(status, 200, "{created}");
    let start = serde_json::json!({"stateMachineArn": created["stateMachineArn"], "name": "w-1", "input": "{\"n\": 2}"});
    let (status, started) = served.call("AWSStepFunctions.StartExecution", &start.to_string());
    assert_eq!(status, 200, "{started}");
    let arn = started["executionArn"].as_str().unwrap().to_owned();
    // Wait until the task token is out, then stop the server.
    let token = wait_for_token(&sandbox);
    let (status, log) = served.terminate();
    assert!(status.success(), "serve exited {status:?}: {log}");
    let described = sandbox
        .run(&["describe-execution", "--execution-arn", &arn])
        .json();
    assert_eq!(described["status"], "RUNNING");
    // A new server takes the execution over; the worker's answer (from the CLI) finishes it.
    std::thread::sleep(Duration::from_millis(400));
    let served = Served::start(&sandbox, port, &[]);
    assert!(
        served.log().contains("resumed 1 execution"),
        "{}",
        served.log()
    );
    let answered = sandbox.run(&[
        "send-task-success",
        "--task-token",
        &token,
        "--task-output",
        "{\"ok\":1}",
    ]);
    assert_eq!(answered.code, 0, "{}", answered.stderr);
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, d) = served.call(
            "AWSStepFunctions.DescribeExecution",
            &serde_json::json!({"executionArn": arn}).to_string(),
        );
        if d["status"] != "RUNNING" {
            assert_eq!(d["status"], "SUCCEEDED", "{d}");
            assert_eq!(d["output"], "{\"ok\":1}");
            break;
        }
        assert!(Instant::now() < until, "not resumed: {}", served.log());
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn wait_for_token(sandbox: &Sandbox) -> String {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let tasks = sandbox.run(&["list-tasks", "--format", "json"]).json();
        if let Some(token) = tasks["tasks"][0]["taskToken"].as_str() {
            return token.to_owned();
        }
        assert!(Instant::now() < until, "no task token");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_console_is_served_beside_the_api_and_lists_machines_created_through_it() {
    let port = free_port();
    let sb = sandbox(port);
    let served = Served::start(&sb, port, &[]);
    let (status, body) = served.call(
        "AWSStepFunctions.CreateStateMachine",
        r#"{"name": "never-run", "definition": "{\"StartAt\":\"P\",\"States\":{\"P\":{\"Type\":\"Pass\",\"End\":true}}}", "roleArn": "arn:aws:iam::123456789012:role/r"}"#,
    );
    assert_eq!(status, 200, "{body}");
    let (status, page) = served.get("/");
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("never-run"), "{page}");
    let (status, _) = served.get("/console/executions?status=RUNNING");
    assert_eq!(status, 200);
}

#[test]
fn redrive_execution_over_the_api_reopens_a_failed_execution() {
    let port = free_port();
    let sb = sandbox(port);
    let served = Served::start(&sb, port, &[]);
    let (status, body) = served.call(
        "AWSStepFunctions.CreateStateMachine",
        r#"{"name": "fails", "definition": "{\"StartAt\":\"F\",\"States\":{\"F\":{\"Type\":\"Fail\",\"Error\":\"Broken\"}}}", "roleArn": "arn:aws:iam::123456789012:role/r"}"#,
    );
    assert_eq!(status, 200, "{body}");
    let machine = body["stateMachineArn"].as_str().unwrap().to_owned();
    let (status, body) = served.call(
        "AWSStepFunctions.StartExecution",
        &format!(r#"{{"stateMachineArn": "{machine}", "name": "once"}}"#),
    );
    assert_eq!(status, 200, "{body}");
    let execution = body["executionArn"].as_str().unwrap().to_owned();
    let mut failed = false;
    for _ in 0..500 {
        let (_, d) = served.call(
            "AWSStepFunctions.DescribeExecution",
            &format!(r#"{{"executionArn": "{execution}"}}"#),
        );
        if d["status"] == "FAILED" {
            failed = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(failed, "{execution} never failed");
    let (status, body) = served.call(
        "AWSStepFunctions.RedriveExecution",
        &format!(r#"{{"executionArn": "{execution}"}}"#),
    );
    assert_eq!(status, 200, "{body}");
    assert!(body["redriveDate"].is_number(), "{body}");
    // Redriven, it runs its failed state again (and fails again): the history shows the redrive.
    let mut redriven = false;
    for _ in 0..500 {
        let (_, h) = served.call(
            "AWSStepFunctions.GetExecutionHistory",
            &format!(r#"{{"executionArn": "{execution}"}}"#),
        );
        let types: Vec<&str> = h["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["type"].as_str().unwrap())
            .collect();
        if types.contains(&"ExecutionRedriven")
            && types.last() == Some(&"ExecutionFailed")
            && types.iter().filter(|t| **t == "ExecutionFailed").count() == 2
        {
            redriven = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        redriven,
        "the redriven execution did not run its failed state again"
    );
    let (_, d) = served.call(
        "AWSStepFunctions.DescribeExecution",
        &format!(r#"{{"executionArn": "{execution}"}}"#),
    );
    assert_eq!(d["status"], "FAILED", "{d}");
    assert_eq!(d["redriveCount"], 1, "{d}");
    // ListExecutions' redriveFilter.
    for (filter, expected) in [("REDRIVEN", 1), ("NOT_REDRIVEN", 0)] {
        let (status, listed) = served.call(
            "AWSStepFunctions.ListExecutions",
            &format!(r#"{{"stateMachineArn": "{machine}", "redriveFilter": "{filter}"}}"#),
        );
        assert_eq!(status, 200, "{listed}");
        assert_eq!(
            listed["executions"].as_array().map(Vec::len),
            Some(expected),
            "{filter}: {listed}"
        );
    }
    // A SUCCEEDED or RUNNING execution is not redrivable; an unknown one does not exist.
    let (status, body) = served.call(
        "AWSStepFunctions.RedriveExecution",
        r#"{"executionArn": "arn:aws:states:us-east-1:123456789012:execution:fails:nope"}"#,
    );
    assert_eq!(
        (status, body["__type"].as_str()),
        (400, Some("ExecutionDoesNotExist")),
        "{body}"
    );
}

/// Runs one of the boto3 scripts under `tests/serve/` against a fresh server.
fn boto3_script(name: &str) {
    let port = free_port();
    let sandbox = sandbox(port);
    let served = Served::start(&sandbox, port, &[]);
    let script = here().join(name);
    client(
        &sandbox,
        &served,
        &deps_python_bin("python"),
        &[script.to_str().unwrap(), &served.endpoint()],
        &[],
    );
}

#[test]
fn boto3_sees_map_runs_and_update_map_run_changes_the_running_map() {
    boto3_script("map_runs.py");
}

#[test]
fn a_machine_created_through_the_api_starts_another_as_a_real_child() {
    boto3_script("children.py");
}

#[test]
fn a_map_run_cut_by_sigterm_resumes_in_the_next_server_with_the_same_children() {
    let port = free_port();
    let sb = sandbox(port).lease_ms(300);
    let served = Served::start(&sb, port, &[]);
    let processor = r#"{"ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}, "StartAt": "Nap", "States": {"Nap": {"Type": "Wait", "Seconds": 2, "End": true}}}"#;
    let definition = format!(
        r#"{{"StartAt": "Fan", "States": {{"Fan": {{"Type": "Map", "Label": "Nap", "ItemsPath": "$.items", "MaxConcurrency": 2, "End": true, "ItemProcessor": {processor}}}}}}}"#
    );
    let request = serde_json::json!({"name": "Long", "definition": definition, "roleArn": "arn:aws:iam::1:role/r"});
    let (status, created) =
        served.call("AWSStepFunctions.CreateStateMachine", &request.to_string());
    assert_eq!(status, 200, "{created}");
    let start = serde_json::json!({"stateMachineArn": created["stateMachineArn"], "name": "x", "input": "{\"items\": [1, 2, 3]}"});
    let (status, started) = served.call("AWSStepFunctions.StartExecution", &start.to_string());
    assert_eq!(status, 200, "{started}");
    let execution = started["executionArn"].as_str().unwrap().to_owned();
    // Children are listed by the run once two run side by side.
    let children = |served: &Served, run: &str| -> Vec<(String, String)> {
        let (_, listed) = served.call(
            "AWSStepFunctions.ListExecutions",
            &format!(r#"{{"mapRunArn": "{run}"}}"#),
        );
        let mut names: Vec<(String, String)> = listed["executions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap().to_owned(),
                    c["status"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        names.sort();
        names
    };
    let mut run = String::new();
    let mut before = Vec::new();
    for _ in 0..1000 {
        let (_, runs) = served.call(
            "AWSStepFunctions.ListMapRuns",
            &format!(r#"{{"executionArn": "{execution}"}}"#),
        );
        if let Some(r) = runs["mapRuns"][0]["mapRunArn"].as_str() {
            run = r.to_owned();
            before = children(&served, &run);
            if before.len() == 2 {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(before.len(), 2, "two children never ran: {before:?}");
    let (exit, _) = served.terminate();
    assert!(exit.success());
    // The next server resumes the execution; the children cut off run again under their names.
    let served = Served::start(&sb, port, &[]);
    let mut d = Value::Null;
    for _ in 0..1500 {
        d = served
            .call(
                "AWSStepFunctions.DescribeMapRun",
                &format!(r#"{{"mapRunArn": "{run}"}}"#),
            )
            .1;
        if d["status"] == "SUCCEEDED" {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(d["status"], "SUCCEEDED", "{d}\n{}", served.log());
    assert_eq!(d["executionCounts"]["total"], 3, "{d}");
    assert_eq!(d["executionCounts"]["succeeded"], 3, "{d}");
    let after = children(&served, &run);
    assert_eq!(after.len(), 3, "{after:?}");
    for (name, _) in &before {
        assert!(
            after.contains(&(name.clone(), "SUCCEEDED".to_owned())),
            "{name} was not run again under its name: {after:?}"
        );
    }
    // Every child's history is whole and begins once, a child run again included.
    let (_, listed) = served.call(
        "AWSStepFunctions.ListExecutions",
        &format!(r#"{{"mapRunArn": "{run}"}}"#),
    );
    for child in listed["executions"].as_array().unwrap() {
        let request = serde_json::json!({"executionArn": child["executionArn"]});
        let (status, history) =
            served.call("AWSStepFunctions.GetExecutionHistory", &request.to_string());
        assert_eq!(status, 200, "{history}");
        let types: Vec<&str> = history["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            types,
            [
                "ExecutionStarted",
                "WaitStateEntered",
                "WaitStateExited",
                "ExecutionSucceeded"
            ],
            "{history}"
        );
    }
}
