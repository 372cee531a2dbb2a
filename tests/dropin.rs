//! Bring your own suite: tests written for AWS's Step Functions Local pass against `sfn-local
//! serve` and its Docker image with nothing changed but the image (or the command that starts
//! the emulator). Real clients in real processes: a pytest + boto3 suite in the style of AWS's
//! samples (`ARN#TestCase`, history assertions), a Jest + @aws-sdk/client-sfn suite, and
//! testcontainers' own wait on the ready line, against the binary and against the image; moto's
//! Lambda behind `LAMBDA_ENDPOINT`. Beside them, what the suites rely on, one behaviour per test:
//! the ready line, Step Functions Local's settings, bindings for every machine, `--compat
//! stepfunctions-local`, and one world between `run` and the API.

mod common;

use common::http_api::{one_shot, sfn_call, status_and_json};
use common::{bin, deps_node_modules, deps_python_bin, Output, Sandbox};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

/// `tests/dropin`: the suites and their fixtures.
fn suite_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/dropin")
}

/// Collects a pipe's lines into a shared string, on a thread of its own.
fn collect(pipe: impl Read + Send + 'static) -> Arc<Mutex<String>> {
    let sink = Arc::new(Mutex::new(String::new()));
    let out = sink.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            let mut s = out.lock().unwrap();
            s.push_str(&line);
            s.push('\n');
        }
    });
    sink
}

/// A running `sfn-local serve`, killed when dropped.
struct Served {
    child: Child,
    port: u16,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
}

impl Served {
    /// Starts `serve --port P ARGS` and waits for Step Functions Local's ready line on stdout.
    fn start(sandbox: &Sandbox, args: &[&str]) -> Served {
        let port = free_port();
        let mut child = sandbox
            .command()
            .args(["serve", "--port", &port.to_string()])
            .args(args)
            .spawn()
            .expect("spawn sfn-local serve");
        let stdout = collect(child.stdout.take().expect("stdout"));
        let stderr = collect(child.stderr.take().expect("stderr"));
        let mut served = Served {
            child,
            port,
            stdout,
            stderr,
        };
        let ready = format!("Starting server on port {port} ");
        let until = Instant::now() + Duration::from_secs(60);
        while !served.stdout.lock().unwrap().contains(&ready) {
            if let Ok(Some(status)) = served.child.try_wait() {
                panic!("serve exited ({status}): {}", served.log());
            }
            assert!(Instant::now() < until, "no ready line: {}", served.log());
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

    /// Waits until stderr says `text`.
    fn wait_log(&self, text: &str) {
        let until = Instant::now() + Duration::from_secs(30);
        while !self.log().contains(text) {
            assert!(
                Instant::now() < until,
                "serve never said {text:?}: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// One raw API call: the status and the body as JSON.
    fn call(&self, operation: &str, body: Value) -> (u16, Value) {
        let authority = format!("127.0.0.1:{}", self.port);
        status_and_json(&sfn_call(&authority, operation, &body.to_string()))
    }

    /// CreateStateMachine; the ARN.
    fn create(&self, name: &str, definition: &Value) -> String {
        let (status, body) = self.call(
            "CreateStateMachine",
            json!({"name": name, "definition": definition.to_string(),
                   "roleArn": "arn:aws:iam::123456789012:role/r"}),
        );
        assert_eq!(status, 200, "{body}");
        body["stateMachineArn"].as_str().expect("arn").to_owned()
    }

    /// Starts an execution and waits for its end; DescribeExecution's answer.
    fn execute(&self, machine_arn: &str, input: Value) -> Value {
        let (status, started) = self.call(
            "StartExecution",
            json!({"stateMachineArn": machine_arn, "input": input.to_string()}),
        );
        assert_eq!(status, 200, "{started}");
        let arn = started["executionArn"].as_str().expect("execution arn");
        let until = Instant::now() + Duration::from_secs(60);
        loop {
            let (_, d) = self.call("DescribeExecution", json!({"executionArn": arn}));
            if d["status"] != "RUNNING" {
                return d;
            }
            assert!(Instant::now() < until, "still running: {d}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The history's events.
    fn history(&self, execution_arn: &str) -> Vec<Value> {
        let (_, h) = self.call(
            "GetExecutionHistory",
            json!({"executionArn": execution_arn, "maxResults": 1000}),
        );
        h["events"].as_array().cloned().unwrap_or_default()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn task(resource: &str) -> Value {
    json!({"StartAt": "Call", "States": {"Call": {"Type": "Task", "Resource": resource,
        "Parameters": {"FunctionName": "fn", "Payload": {"x": 1}}, "End": true}}})
}

#[test]
fn the_ready_line_is_step_functions_locals_on_stdout_with_its_account_setting() {
    let sb = Sandbox::new().env("AWS_ACCOUNT_ID", "111122223333");
    let served = Served::start(&sb, &[]);
    let stdout = served.stdout.lock().unwrap().clone();
    let line = stdout
        .lines()
        .find(|l| l.contains("Starting server"))
        .expect("ready line");
    // `2026-01-29 15:38:06.326: Starting server on port 8083 with account ..., region ...`
    let (stamp, rest) = line.split_once(": ").expect("timestamp");
    assert!(
        chrono::NaiveDateTime::parse_from_str(stamp, "%Y-%m-%d %H:%M:%S%.3f").is_ok(),
        "{line}"
    );
    assert_eq!(
        rest,
        format!(
            "Starting server on port {} with account 111122223333, region us-east-1",
            served.port
        )
    );
    let arn = served.create(
        "Acct",
        &json!({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}}),
    );
    assert_eq!(
        arn,
        "arn:aws:states:us-east-1:111122223333:stateMachine:Acct"
    );
}

#[test]
fn a_binding_whose_program_is_missing_is_refused_at_start() {
    let sb = Sandbox::new();
    let out: Output = sb
        .command()
        .args(["serve", "--port", "0", "--task", "order:Charg=./nothere.sh"])
        .output()
        .expect("serve")
        .into();
    out.assert_error(2, "--task 'order:Charg=./nothere.sh'");
    assert!(out.stderr.contains("nothere.sh"), "{}", out.stderr);
    let out: Output = sb
        .command()
        .args([
            "serve",
            "--port",
            "0",
            "--worker",
            "Approve=no-such-program-here",
        ])
        .output()
        .expect("serve")
        .into();
    out.assert_error(2, "--worker 'Approve=no-such-program-here'");
}

#[test]
fn a_binding_that_matches_no_state_is_logged_when_machines_are_created() {
    let sb = Sandbox::new();
    let stamp = suite_dir().join("stamp.sh").display().to_string();
    let typo = format!("order:Charg={stamp}");
    let nowhere = format!("Nope={stamp}");
    let served = Served::start(&sb, &["--task", &typo, "--task", &nowhere]);
    let charge = json!({"StartAt": "Charge", "States": {"Charge": {"Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": "f"}, "End": true}}});
    served.create("order", &charge);
    served.wait_log("--task 'order:Charg=");
    served.wait_log(
        "state machine 'order' has no Task state named 'Charg' (did you mean \"Charge\"?)",
    );
    served.wait_log(
        "no state machine created so far has a Task state named 'Nope' ('order' has Charge)",
    );
}

#[test]
fn a_binding_for_every_machine_serves_machines_with_any_name_and_one_machine_wins() {
    let sb = Sandbox::new();
    let stamp = suite_dir().join("stamp.sh").display().to_string();
    let every = format!("Call={stamp}");
    let only_b = r#"b:Call=echo '{"only":"b"}'"#.to_owned();
    let served = Served::start(&sb, &["--task", &every, "--task", &only_b]);
    for name in ["a", "random-7f3e"] {
        let arn = served.create(name, &task("arn:aws:states:::lambda:invoke"));
        let d = served.execute(&arn, json!({}));
        assert_eq!(d["status"], "SUCCEEDED", "{d}");
        let output: Value = serde_json::from_str(d["output"].as_str().unwrap()).unwrap();
        assert_eq!(
            output["Payload"],
            json!({"stamped": true, "input": {"x": 1}})
        );
    }
    let arn = served.create("b", &task("arn:aws:states:::lambda:invoke"));
    let d = served.execute(&arn, json!({}));
    assert_eq!(d["status"], "SUCCEEDED", "{d}");
    let output: Value = serde_json::from_str(d["output"].as_str().unwrap()).unwrap();
    assert_eq!(output["Payload"], json!({"only": "b"}), "{d}");
}

#[test]
fn an_unbound_task_advises_the_servers_flags_and_settings_not_runs() {
    let sb = Sandbox::new();
    let served = Served::start(&sb, &[]);
    let arn = served.create("unbound", &task("arn:aws:states:::lambda:invoke"));
    let d = served.execute(&arn, json!({}));
    assert_eq!(d["status"], "FAILED", "{d}");
    let cause = d["cause"].as_str().unwrap();
    assert!(
        cause.contains("start the server with --task 'Call=COMMAND'"),
        "{cause}"
    );
    assert!(cause.contains("set LAMBDA_ENDPOINT=URL"), "{cause}");
    assert!(cause.contains("SFN_MOCK_CONFIG"), "{cause}");
}

#[test]
fn lambda_endpoint_gets_lambdas_invoke_for_both_lambda_resources() {
    for resource in [
        "arn:aws:states:::lambda:invoke",
        "arn:aws:lambda:us-east-1:123456789012:function:fn",
    ] {
        let (url, request) = one_shot("200 OK", r#"{"answer":42}"#);
        let sb = Sandbox::new().env("LAMBDA_ENDPOINT", &url);
        let served = Served::start(&sb, &[]);
        let arn = served.create("lambda", &task(resource));
        let d = served.execute(&arn, json!({}));
        assert_eq!(d["status"], "SUCCEEDED", "{d}");
        let got = request.join().unwrap();
        // The function's name, as Step Functions Local and local emulators match it (#37).
        assert!(
            got.starts_with("POST /2015-03-31/functions/fn/invocations"),
            "{got}"
        );
        let output: Value = serde_json::from_str(d["output"].as_str().unwrap()).unwrap();
        let payload = if resource.ends_with(":fn") {
            &output
        } else {
            &output["Payload"]
        };
        assert_eq!(payload, &json!({"answer": 42}), "{output}");
    }
}

#[test]
fn batch_ecs_and_sagemaker_endpoints_are_step_functions_locals_settings_too() {
    let (url, request) = one_shot(
        "200 OK",
        r#"{"jobArn":"arn:aws:batch:job/1","jobId":"1","jobName":"j"}"#,
    );
    let sb = Sandbox::new().env("BATCH_ENDPOINT", &url);
    let served = Served::start(&sb, &[]);
    let definition = json!({"StartAt": "Submit", "States": {"Submit": {"Type": "Task",
        "Resource": "arn:aws:states:::batch:submitJob",
        "Parameters": {"JobName": "j", "JobQueue": "q", "JobDefinition": "d"}, "End": true}}});
    let arn = served.create("batch", &definition);
    let d = served.execute(&arn, json!({}));
    assert_eq!(d["status"], "SUCCEEDED", "{d}");
    let got = request.join().unwrap();
    assert!(got.starts_with("POST /v1/submitjob "), "{got}");
    assert!(got.contains(r#""jobName":"j""#), "{got}");
    let output: Value = serde_json::from_str(d["output"].as_str().unwrap()).unwrap();
    assert_eq!(output["JobId"], "1", "{output}");

    let (url, request) = one_shot("200 OK", r#"{"tasks":[],"failures":[]}"#);
    let sb = Sandbox::new().env("ECS_ENDPOINT", &url);
    let served = Served::start(&sb, &[]);
    let definition = json!({"StartAt": "Run", "States": {"Run": {"Type": "Task",
        "Resource": "arn:aws:states:::ecs:runTask", "Parameters": {"TaskDefinition": "t"}, "End": true}}});
    let arn = served.create("ecs", &definition);
    assert_eq!(served.execute(&arn, json!({}))["status"], "SUCCEEDED");
    let got = request.join().unwrap().to_ascii_lowercase();
    assert!(
        got.contains("x-amz-target: amazonec2containerservicev20141113.runtask"),
        "{got}"
    );
}

const RETRIED: &str = r#"{"StartAt": "Detect", "States": {"Detect": {"Type": "Task",
    "Resource": "arn:aws:states:::aws-sdk:comprehend:detectSentiment",
    "Parameters": {"LanguageCode": "en", "Text": "hi"},
    "Retry": [{"ErrorEquals": ["InternalServerException"], "IntervalSeconds": 0, "MaxAttempts": 2}],
    "End": true}}}"#;

const RETRIED_MOCKS: &str = r#"{"StateMachines": {"Retried": {"TestCases": {"Flaky": {"Detect": "Flaky"}}}},
    "MockedResponses": {"Flaky": {"0": {"Throw": {"Error": "InternalServerException", "Cause": "busy"}},
                                  "1": {"Return": {"Sentiment": "POSITIVE"}}}}}"#;

#[test]
fn aws_refuses_interval_seconds_zero_and_names_aws_sdk_resources_as_aws_does() {
    let sb = Sandbox::new();
    let mocks = sb.write("MockConfigFile.json", RETRIED_MOCKS);
    let served = Served::start(&sb, &["--mock-config", mocks.to_str().unwrap()]);
    let (status, body) = served.call(
        "CreateStateMachine",
        json!({"name": "Retried", "definition": RETRIED, "roleArn": "arn:aws:iam::123456789012:role/r"}),
    );
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["__type"], "InvalidDefinition", "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("IntervalSeconds"),
        "{body}"
    );
    // The same task without the zero interval: AWS's naming.
    let definition: Value =
        serde_json::from_str(&RETRIED.replace(r#""IntervalSeconds": 0, "#, "")).unwrap();
    let arn = served.create("Retried", &definition);
    let d = served.execute(&format!("{arn}#Flaky"), json!({}));
    assert_eq!(d["status"], "SUCCEEDED", "{d}");
    let events = served.history(d["executionArn"].as_str().unwrap());
    let succeeded = events
        .iter()
        .find(|e| e["type"] == "TaskSucceeded")
        .expect("TaskSucceeded");
    assert_eq!(
        succeeded["taskSucceededEventDetails"]["resourceType"],
        "aws-sdk:comprehend"
    );
    assert_eq!(
        succeeded["taskSucceededEventDetails"]["resource"],
        "detectSentiment"
    );
}

#[test]
fn compat_stepfunctions_local_accepts_interval_seconds_zero_and_names_aws_sdk_its_way() {
    let sb = Sandbox::new().env("SFN_LOCAL_COMPAT", "stepfunctions-local");
    let mocks = sb.write("MockConfigFile.json", RETRIED_MOCKS);
    let served = Served::start(&sb, &["--mock-config", mocks.to_str().unwrap()]);
    let arn = served.create("Retried", &serde_json::from_str(RETRIED).unwrap());
    let d = served.execute(&format!("{arn}#Flaky"), json!({}));
    assert_eq!(d["status"], "SUCCEEDED", "{d}");
    let events = served.history(d["executionArn"].as_str().unwrap());
    let kinds: Vec<(&str, &str)> = events
        .iter()
        .filter_map(|e| {
            let details = e["taskScheduledEventDetails"]
                .as_object()
                .or(e["taskFailedEventDetails"].as_object())
                .or(e["taskSucceededEventDetails"].as_object())?;
            Some((
                details["resourceType"].as_str()?,
                details["resource"].as_str()?,
            ))
        })
        .collect();
    assert_eq!(kinds.len(), 4, "{events:?}");
    assert!(
        kinds
            .iter()
            .all(|k| *k == ("aws-sdk", "comprehend:detectSentiment")),
        "{kinds:?}"
    );
    // The flag says the same as the variable.
    let sb = Sandbox::new();
    let served = Served::start(&sb, &["--compat", "stepfunctions-local"]);
    served.create("Retried", &serde_json::from_str(RETRIED).unwrap());
}

#[test]
fn machines_run_created_are_the_apis_and_a_name_holds_one_definition() {
    let sb = Sandbox::new();
    let pass = |result: &str| {
        json!({"StartAt": "P", "States": {"P": {"Type": "Pass", "Result": result, "End": true}}})
            .to_string()
    };
    let file = sb.write("orders.asl.json", &pass("one"));
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let served = Served::start(&sb, &[]);
    let arn = "arn:aws:states:us-east-1:123456789012:stateMachine:orders";
    let (_, listed) = served.call("ListStateMachines", json!({}));
    assert!(
        listed["stateMachines"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["stateMachineArn"] == arn),
        "{listed}"
    );
    let (status, described) = served.call("DescribeStateMachine", json!({"stateMachineArn": arn}));
    assert_eq!(status, 200, "{described}");
    assert_eq!(described["definition"], pass("one"));
    // Another definition under that name, through the API: refused as AWS refuses it.
    let (status, body) = served.call(
        "CreateStateMachine",
        json!({"name": "orders", "definition": pass("two"), "roleArn": "arn:aws:iam::123456789012:role/r"}),
    );
    assert_eq!(
        (status, body["__type"].as_str()),
        (400, Some("StateMachineAlreadyExists")),
        "{body}"
    );
    // Editing the file and running it again is the command line's loop: a new revision.
    std::fs::write(&file, pass("edited")).unwrap();
    let out = sb.run(&["run", file.to_str().unwrap()]);
    assert_eq!(
        (out.code, out.stdout.trim()),
        (0, "\"edited\""),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("a new revision"), "{}", out.stderr);
    let (_, described) = served.call("DescribeStateMachine", json!({"stateMachineArn": arn}));
    assert_eq!(described["definition"], pass("edited"));
    // A machine the API created is the API's: run refuses another definition under its name.
    served.create("ApiMade", &serde_json::from_str(&pass("api")).unwrap());
    let out = sb.run(&[
        "run",
        file.to_str().unwrap(),
        "--state-machine-name",
        "ApiMade",
    ]);
    out.assert_error(18, "An error occurred (StateMachineAlreadyExists)");
    assert!(out.stderr.contains("--state-machine-arn"), "{}", out.stderr);
    let (_, listed) = served.call(
        "ListExecutions",
        json!({"stateMachineArn": "arn:aws:states:us-east-1:123456789012:stateMachine:ApiMade"}),
    );
    assert_eq!(listed["executions"], json!([]), "nothing ran: {listed}");
}

// ---------------------------------------------------------------------------------------------
// The suites, against the binary and against the image.

/// moto's server with Lambda answering without Docker (an invocation returns its payload) and
/// the function `check-identity` the pytest suite's hybrid case calls through LAMBDA_ENDPOINT.
struct Moto {
    child: Child,
    url: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn moto() -> Moto {
    let port = free_port();
    let child = Command::new(deps_python_bin("moto_server"))
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start moto_server");
    let moto = Moto {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let setup = r#"
import boto3, io, json, sys, time, urllib.request, zipfile
url = sys.argv[1]
for _ in range(300):
    try:
        req = urllib.request.Request(url + "/moto-api/config", data=json.dumps({"lambda": {"use_docker": False}}).encode(), headers={"Content-Type": "application/json"}, method="POST")
        urllib.request.urlopen(req).read()
        break
    except OSError:
        time.sleep(0.2)
kw = dict(endpoint_url=url, region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test")
role = boto3.client("iam", **kw).create_role(RoleName="r", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w") as z:
    z.writestr("h.py", "def handler(e, c):\n    return e\n")
boto3.client("lambda", **kw).create_function(FunctionName="check-identity", Runtime="python3.11", Role=role, Handler="h.handler", Code={"ZipFile": buf.getvalue()})
"#;
    let out: Output = Command::new(deps_python_bin("python"))
        .args(["-c", setup, &moto.url])
        .output()
        .expect("python")
        .into();
    assert_eq!(out.code, 0, "moto setup: {}", out.stderr);
    moto
}

/// Runs a suite's command with the suite's environment; panics with its output if it fails.
fn run_suite(what: &str, mut command: Command, endpoint: &str, port: u16) {
    let path = format!(
        "{}:{}",
        deps_python_bin("python").parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out: Output = command
        .current_dir(suite_dir())
        .env("PATH", path)
        .env("SFN_ENDPOINT", endpoint)
        .env("SUITE_DIR", suite_dir())
        .env("PORT", port.to_string())
        .env("NODE_PATH", deps_node_modules())
        .env("TESTCONTAINERS_RYUK_DISABLED", "true")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .stdin(Stdio::null())
        .output()
        .expect(what)
        .into();
    assert_eq!(
        out.code, 0,
        "{what} failed:\n{}\n{}",
        out.stdout, out.stderr
    );
    // Every case ran: a skipped case is not a pass.
    assert!(
        !out.stdout.contains("skipped") && !out.stdout.contains(" skip"),
        "{what} skipped cases:\n{}",
        out.stdout
    );
}

fn pytest(args: &[&str]) -> Command {
    let mut c = Command::new(deps_python_bin("python"));
    c.args([
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-W",
        "ignore::DeprecationWarning",
    ])
    .args(args);
    c
}

fn jest() -> Command {
    let mut c = Command::new("node");
    let config = json!({
        "rootDir": suite_dir(),
        "testMatch": ["**/*.test.js"],
        "modulePaths": [deps_node_modules()],
        "testEnvironment": "node",
    });
    c.arg(deps_node_modules().join("jest/bin/jest.js")).args([
        "--ci",
        "--runInBand",
        "--config",
        &config.to_string(),
    ]);
    c
}

/// The three suites against an emulator listening on `endpoint`, and testcontainers' wait on
/// a fresh one (`ready_test` picks the binary's or the image's).
fn suites(endpoint: &str, ready_test: &str, extra_env: &[(&str, &str)]) {
    let mut sample = pytest(&["test_local_testing.py"]);
    sample.env("HYBRID_LAMBDA", "1");
    run_suite("the pytest suite", sample, endpoint, 0);
    run_suite("the Jest suite", jest(), endpoint, 0);
    let mut waits = pytest(&["test_testcontainers.py", "-k", ready_test]);
    for (k, v) in extra_env {
        waits.env(k, v);
    }
    run_suite("testcontainers' wait", waits, endpoint, free_port());
}

#[test]
fn suites_written_for_step_functions_local_pass_against_the_binary() {
    let moto = moto();
    let sb = Sandbox::new()
        .env("SFN_MOCK_CONFIG", suite_dir().join("MockConfigFile.json"))
        .env("LAMBDA_ENDPOINT", &moto.url)
        .env("WAIT_TIME_SCALE", "0")
        .env("SFN_LOCAL_COMPAT", "stepfunctions-local")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test");
    let stamp = format!("Stamp={}", suite_dir().join("stamp.sh").display());
    let served = Served::start(&sb, &["--task", &stamp]);
    let bin = bin().display().to_string();
    suites(
        &served.endpoint(),
        "binary",
        &[
            ("SFN_LOCAL_BIN", bin.as_str()),
            ("SFN_LOCAL_COMPAT", "stepfunctions-local"),
        ],
    );
}

/// `docker` with the legacy builder (the one Debian's docker.io has without buildx).
fn docker(args: &[&str]) -> Output {
    Command::new("docker")
        .args(args)
        .env("DOCKER_BUILDKIT", "0")
        .stdin(Stdio::null())
        .output()
        .expect("docker")
        .into()
}

/// Whether a Docker daemon answers. CI must have one (`.ci/deps` installs and starts it); a
/// developer's machine without Docker skips the image tests with a note.
fn docker_available() -> bool {
    if Command::new("docker")
        .arg("info")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
    {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "no Docker daemon: CI needs one for the image tests (.ci/deps installs docker.io and starts dockerd)"
    );
    eprintln!("note: no Docker daemon; the image tests are skipped");
    false
}

/// The image built from the binary under test (`--target prebuilt`), after seeding its base
/// from Debian's packages when no registry can be reached. Removed when dropped.
struct Image(String);

impl Image {
    fn build() -> Image {
        let seed = Command::new("bash")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/docker/seed-bases.sh"))
            .output()
            .expect("seed-bases.sh");
        assert!(
            seed.status.success(),
            "seeding debian:bookworm-slim failed: {}",
            String::from_utf8_lossy(&seed.stderr)
        );
        let context = tempfile::tempdir().expect("context");
        let binary = context.path().join("sfn-local");
        // Stripped: the debug build's line tables would make the image ten times larger.
        let stripped = Command::new("strip")
            .args(["-o", binary.to_str().unwrap(), bin().to_str().unwrap()])
            .status()
            .is_ok_and(|s| s.success());
        if !stripped {
            std::fs::copy(bin(), &binary).expect("copy the binary");
        }
        let tag = format!("sfn-local-test:{}", std::process::id());
        let dockerfile = Path::new(env!("CARGO_MANIFEST_DIR")).join("docker/Dockerfile");
        let out = docker(&[
            "build",
            "-q",
            "-f",
            dockerfile.to_str().unwrap(),
            "--target",
            "prebuilt",
            "-t",
            &tag,
            context.path().to_str().unwrap(),
        ]);
        assert_eq!(out.code, 0, "docker build: {}", out.stderr);
        let image = Image(tag);
        image.holds_the_binary_once(&binary);
        image
    }

    /// The image is its base plus one binary (#39: a COPY then a RUN install stored it twice).
    /// Prints the sizes.
    fn holds_the_binary_once(&self, binary: &Path) {
        let size = |image: &str| -> u64 {
            let out = docker(&["image", "inspect", "-f", "{{.Size}}", image]);
            assert_eq!(out.code, 0, "{}", out.stderr);
            out.stdout.trim().parse().expect("a size")
        };
        let (image, base) = (size(&self.0), size("debian:bookworm-slim"));
        let binary = std::fs::metadata(binary).expect("the binary").len();
        eprintln!(
            "image {:.1} MB = base {:.1} MB + {:.1} MB (the binary: {:.1} MB)",
            image as f64 / 1e6,
            base as f64 / 1e6,
            (image - base) as f64 / 1e6,
            binary as f64 / 1e6
        );
        // The runtime's own layer (a user, a folder) is a few kilobytes.
        assert!(
            image - base < binary + 1_000_000,
            "the binary is stored more than once"
        );
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        let _ = docker(&["rmi", "-f", &self.0]);
    }
}

/// A container of the image, removed when dropped.
struct Container(String);

impl Container {
    /// `docker run -d ARGS IMAGE COMMAND`, then waits for the ready line in its logs.
    fn run(args: &[&str], image: &Image, command: &[&str], port: u16) -> Container {
        let mut all = vec!["run", "-d", "--network", "host"];
        all.extend_from_slice(args);
        all.push(&image.0);
        all.extend_from_slice(command);
        let out = docker(&all);
        assert_eq!(out.code, 0, "docker run: {}", out.stderr);
        let container = Container(out.stdout.trim().to_owned());
        let ready = format!("Starting server on port {port} ");
        let until = Instant::now() + Duration::from_secs(60);
        loop {
            let logs = docker(&["logs", &container.0]);
            if logs.stdout.contains(&ready) {
                return container;
            }
            assert!(
                Instant::now() < until,
                "the container never got ready: {}{}",
                logs.stdout,
                logs.stderr
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = docker(&["rm", "-f", &self.0]);
    }
}

#[test]
fn suites_written_for_step_functions_local_pass_against_the_image() {
    if !docker_available() {
        return;
    }
    let image = Image::build();
    let moto = moto();
    let work = tempfile::tempdir().expect("temp dir");
    // Step Functions Local's way: settings in an --env-file, the mock config mounted.
    let env_file = work.path().join("aws-stepfunctions-local-credentials.txt");
    std::fs::write(
        &env_file,
        format!(
            "AWS_DEFAULT_REGION=us-east-1\nAWS_ACCESS_KEY_ID=test\nAWS_SECRET_ACCESS_KEY=test\nWAIT_TIME_SCALE=0\nLAMBDA_ENDPOINT={}\nSFN_MOCK_CONFIG=/home/StepFunctionsLocal/MockConfigFile.json\nSFN_LOCAL_COMPAT=stepfunctions-local\n",
            moto.url
        ),
    )
    .unwrap();
    let volume = Volume(format!("sfn-local-test-{}", std::process::id()));
    let mock = format!(
        "type=bind,readonly,source={},destination=/home/StepFunctionsLocal/MockConfigFile.json",
        suite_dir().join("MockConfigFile.json").display()
    );
    let suite = format!(
        "type=bind,readonly,source={},destination=/suite",
        suite_dir().display()
    );
    let data = format!("type=volume,source={},destination=/data", volume.0);
    let port = free_port();
    let port_text = port.to_string();
    let args = [
        "--env-file",
        env_file.to_str().unwrap(),
        "--mount",
        &mock,
        "--mount",
        &suite,
        "--mount",
        &data,
    ];
    let command = ["--port", &port_text, "--task", "Stamp=/suite/stamp.sh"];
    let endpoint = format!("http://127.0.0.1:{port}");
    {
        let _container = Container::run(&args, &image, &command, port);
        suites(&endpoint, "image", &[("SFN_IMAGE", image.0.as_str())]);
    }
    // The database lives on the volume: a new container knows what the suites created.
    {
        let _container = Container::run(&args, &image, &command, port);
        let out = Command::new(deps_python_bin("aws"))
            .args([
                "stepfunctions",
                "--endpoint-url",
                &endpoint,
                "--region",
                "us-east-1",
                "list-state-machines",
                "--query",
                "stateMachines[?name=='LocalTesting'].name",
                "--output",
                "text",
            ])
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .output()
            .expect("aws");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "LocalTesting");
        the_image_answers_only_names_a_rebinding_page_cannot_use(port);
    }
}

/// The image's default Host rule (#38): localhost, an IP address and a dotless name (a
/// compose service's) are answered; a name with a dot, which a rebinding page needs, is not.
fn the_image_answers_only_names_a_rebinding_page_cannot_use(port: u16) {
    let status = |host: &str| {
        let out = Command::new("curl")
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H"])
            .arg(format!("Host: {host}"))
            .arg(format!("http://127.0.0.1:{port}/"))
            .output()
            .expect("curl");
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    for host in ["localhost", "127.0.0.1", "stepfunctions"] {
        assert_eq!(status(&format!("{host}:{port}")), "200", "{host}");
    }
    assert_eq!(status(&format!("evil.example:{port}")), "403");
}

/// A named Docker volume, removed when dropped (after the containers using it).
struct Volume(String);

impl Drop for Volume {
    fn drop(&mut self) {
        let _ = docker(&["volume", "rm", "-f", &self.0]);
    }
}
