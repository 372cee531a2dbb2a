//! Lambda as AWS names it (#37): a function's failure is its `errorType` for every Lambda form
//! (the plain function ARN, `lambda:invoke`, `lambda:invoke.waitForTaskToken`), whether a
//! `--task` command or a local endpoint stands in for it; and a local Lambda endpoint is asked
//! for the function by name, as local emulators (and Step Functions Local) know them.

mod common;

use common::Sandbox;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// A fake Lambda endpoint: records each request's path in `paths.txt`, fails the function
/// `declined` with Lambda's unhandled-error answer, and echoes the payload of any other.
const FAKE_LAMBDA: &str = r#"
import http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(sys.argv[1], "a") as f:
            f.write(self.path + "\n")
        name = self.path.split("/")[3]
        if name == "declined":
            out = json.dumps({"errorType": "CardDeclined", "errorMessage": "no funds"}).encode()
            self.send_response(200)
            self.send_header("X-Amz-Function-Error", "Unhandled")
        else:
            out = body
            self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
    def log_message(self, *a):
        pass
server = http.server.HTTPServer(("127.0.0.1", 0), H)
print(server.server_port, flush=True)
server.serve_forever()
"#;

struct FakeLambda {
    child: Child,
    url: String,
}

impl Drop for FakeLambda {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn fake_lambda(sb: &Sandbox) -> FakeLambda {
    let script = sb.write("fake_lambda.py", FAKE_LAMBDA);
    let mut child = Command::new("python3")
        .arg(script)
        .arg(sb.path("paths.txt"))
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs the fake Lambda");
    let mut port = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut port)
        .unwrap();
    FakeLambda {
        child,
        url: format!("http://127.0.0.1:{}", port.trim()),
    }
}

const ARN: &str = "arn:aws:lambda:us-east-1:123456789012:function";

fn machine() -> String {
    serde_json::json!({
        "StartAt": "Legacy",
        "States": {
            "Legacy": {"Type": "Task", "Resource": format!("{ARN}:echo"), "ResultPath": "$.legacy", "Next": "Invoke"},
            "Invoke": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": format!("{ARN}:echo:live"), "Payload": {"x": 1}},
                "ResultSelector": {"x.$": "$.Payload.x"}, "ResultPath": "$.invoked", "Next": "PlainDeclined"},
            "PlainDeclined": {"Type": "Task", "Resource": format!("{ARN}:declined"),
                "Catch": [{"ErrorEquals": ["CardDeclined"], "ResultPath": "$.plain", "Next": "InvokeDeclined"}], "End": true},
            "InvokeDeclined": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": "declined", "Payload": {}},
                "Catch": [{"ErrorEquals": ["CardDeclined"], "ResultPath": "$.invoke", "Next": "TokenDeclined"}], "End": true},
            "TokenDeclined": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
                "Parameters": {"FunctionName": format!("{ARN}:declined"), "Payload": {"token.$": "$$.Task.Token"}},
                "Catch": [{"ErrorEquals": ["CardDeclined"], "ResultPath": "$.token", "Next": "Done"}], "End": true},
            "Done": {"Type": "Succeed"}
        }
    })
    .to_string()
}

/// Regression (#37): at a local Lambda endpoint sfn-local called
/// `/2015-03-31/functions/<URL-encoded full ARN>/invocations`; emulators match the name.
/// And each Lambda form's failure is named by the function's `errorType`.
#[test]
fn a_local_lambda_endpoint_receives_the_function_name_and_errors_keep_their_type() {
    let sb = Sandbox::new();
    let lambda = fake_lambda(&sb);
    let def = sb.write("m.asl.json", &machine());
    let endpoint = format!("lambda={}", lambda.url);
    let out = sb.run(&[
        "run",
        def.to_str().unwrap(),
        "--endpoint",
        &endpoint,
        "--input",
        r#"{"order": 1}"#,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let output = out.json();
    assert_eq!(output["legacy"], serde_json::json!({"order": 1}));
    assert_eq!(output["invoked"], serde_json::json!({"x": 1}));
    for caught in ["plain", "invoke", "token"] {
        assert_eq!(output[caught]["Error"], "CardDeclined", "{output}");
    }
    let paths = std::fs::read_to_string(sb.path("paths.txt")).unwrap();
    assert_eq!(
        paths.lines().collect::<Vec<_>>(),
        [
            "/2015-03-31/functions/echo/invocations",
            "/2015-03-31/functions/echo/invocations?Qualifier=live",
            "/2015-03-31/functions/declined/invocations",
            "/2015-03-31/functions/declined/invocations",
            "/2015-03-31/functions/declined/invocations",
        ]
    );
}

/// Regression (#37): a Task written as a plain function ARN (CDK's `LambdaInvoke` with
/// `payloadResponseOnly`) whose command failed with `{"errorType": "CardDeclined", ...}` was
/// recorded as `States.TaskFailed`, so a Catch on `CardDeclined` never matched.
#[test]
fn a_plain_function_arn_failing_is_named_by_its_error_type() {
    let sb = Sandbox::new();
    let def = sb.write(
        "m.asl.json",
        &serde_json::json!({"StartAt": "Charge", "States": {
            "Charge": {"Type": "Task", "Resource": format!("{ARN}:charge"),
                "Catch": [{"ErrorEquals": ["CardDeclined"], "Next": "Declined"}], "End": true},
            "Declined": {"Type": "Pass", "End": true}}})
        .to_string(),
    );
    let fail = r#"Charge=sh -c 'echo "{\"errorType\": \"CardDeclined\", \"errorMessage\": \"no funds\"}" >&2; exit 1'"#;
    let out = sb.run(&[
        "run",
        def.to_str().unwrap(),
        "--task",
        fail,
        "--input",
        "{}",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let output = out.json();
    assert_eq!(output["Error"], "CardDeclined", "{output}");
    let cause: serde_json::Value = serde_json::from_str(output["Cause"].as_str().unwrap()).unwrap();
    assert_eq!(cause["errorMessage"], "no funds");
}
