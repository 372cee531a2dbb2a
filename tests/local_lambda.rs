//! The template's own Lambda functions run natively (#37): warm between invocations as Lambda
//! keeps a container warm, Lambda's error payloads and names (`errorType`, `Runtime.*`,
//! `Sandbox.Timedout`), and a clear error naming the state and how to bind it when a function
//! cannot run here.

mod common;

use common::{Output, Sandbox};
use serde_json::{json, Value};

const TEMPLATE: &str = r#"Transform: AWS::Serverless-2016-10-31
Globals:
  Function:
    Runtime: python3.12
    Handler: app.handler
    Timeout: 5
Resources:
  Counter:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: counter/}
  Thrower:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: thrower/, Runtime: nodejs20.x, Handler: index.handler}
  Sleeper:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: sleeper/, Timeout: 1}
  Broken:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: broken/}
  Java:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: java/, Runtime: java21, Handler: x.Handler::handle}
  Moved:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: moved-away/}
  Which:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: which/}
  WhichNode:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: whichnode/, Runtime: nodejs20.x, Handler: index.handler}
  Future:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: future/, Runtime: python3.99}
  Machine:
    Type: AWS::Serverless::StateMachine
    Properties:
      DefinitionUri: machine.asl.json
      DefinitionSubstitutions:
        Counter: !GetAtt Counter.Arn
        Thrower: !Ref Thrower
        Sleeper: !GetAtt Sleeper.Arn
        Broken: !GetAtt Broken.Arn
        Java: !GetAtt Java.Arn
        Moved: !GetAtt Moved.Arn
        Which: !GetAtt Which.Arn
        WhichNode: !GetAtt WhichNode.Arn
        Future: !GetAtt Future.Arn
"#;

fn app() -> Sandbox {
    let sb = Sandbox::new().env("PYTHONDONTWRITEBYTECODE", "1");
    sb.write("template.yaml", TEMPLATE);
    for dir in [
        "counter",
        "thrower",
        "sleeper",
        "broken",
        "java",
        "which",
        "whichnode",
        "future",
        "bin",
    ] {
        std::fs::create_dir_all(sb.path(dir)).unwrap();
    }
    sb.write(
        "counter/app.py",
        "import os\ncalls = 0\n\ndef handler(event, context):\n    global calls\n    calls += 1\n    return {'pid': os.getpid(), 'calls': calls, 'request': context.aws_request_id}\n",
    );
    sb.write(
        "thrower/index.js",
        "class CardDeclined extends Error { constructor(m) { super(m); this.name = 'CardDeclined'; } }\nexports.handler = async () => { throw new CardDeclined('no funds'); };\n",
    );
    sb.write(
        "sleeper/app.py",
        "import time\n\ndef handler(event, context):\n    time.sleep(30)\n",
    );
    sb.write("broken/app.py", "import not_a_module_anywhere\n");
    sb.write(
        "which/app.py",
        "import os\n\ndef handler(event, context):\n    return os.environ.get('FAKE_INTERPRETER', 'python3')\n",
    );
    sb.write(
        "whichnode/index.js",
        "exports.handler = async () => process.env.FAKE_INTERPRETER || 'node';\n",
    );
    // A syntax error on any Python: with a Runtime newer than the interpreter, the message
    // must say the interpreter may be too old.
    sb.write("future/app.py", "def handler(event, context:\n    pass\n");
    sb
}

/// Puts a fake interpreter `name` into the sandbox's `bin/`: it runs `real`, saying through
/// `FAKE_INTERPRETER` that it was the one started.
fn fake_interpreter(sb: &Sandbox, name: &str, real: &str) {
    let path = sb.write(
        &format!("bin/{name}"),
        &format!("#!/bin/sh\nFAKE_INTERPRETER={name} exec {real} \"$@\"\n"),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// PATH with the sandbox's `bin/` in front.
fn path_with_fakes(sb: &Sandbox) -> String {
    format!(
        "{}:{}",
        sb.path("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Runs a machine whose one Task calls `resource` (a substitution of the template).
fn run_task(sb: &Sandbox, task: Value, env: &[(&str, &str)]) -> Output {
    let machine = json!({"StartAt": "T", "States": {"T": task}});
    sb.write("machine.asl.json", &machine.to_string());
    let mut command = sb.command();
    command
        .current_dir(sb.dir.path())
        .args(["run", "--template", "template.yaml", "--input", "{}"])
        .envs(env.iter().copied());
    Output::of(command.spawn().unwrap())
}

#[test]
fn a_function_stays_warm_between_invocations() {
    let sb = app();
    let task = json!({"Type": "Map", "ItemsPath": "$.items", "MaxConcurrency": 1,
        "ItemProcessor": {"StartAt": "Count", "States": {"Count": {"Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": "${Counter}", "Payload.$": "$"},
            "ResultSelector": {"r.$": "$.Payload"}, "End": true}}},
        "End": true});
    let machine = json!({"StartAt": "Items", "States": {
        "Items": {"Type": "Pass", "Result": {"items": [1, 2, 3]}, "Next": "T"}, "T": task}});
    sb.write("machine.asl.json", &machine.to_string());
    let out = sb.run_in_sandbox(&["run", "--template", "template.yaml", "--input", "{}"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = out.json();
    let calls: Vec<&Value> = results
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["r"])
        .collect();
    assert_eq!(calls.len(), 3);
    for (i, call) in calls.iter().enumerate() {
        assert_eq!(call["calls"], i + 1, "one warm process: {results}");
        assert_eq!(call["pid"], calls[0]["pid"], "{results}");
    }
    assert_ne!(calls[0]["request"], calls[1]["request"]);
}

#[test]
fn a_node_error_is_named_by_its_type_with_lambdas_payload() {
    let sb = app();
    let machine = json!({"StartAt": "T", "States": {
        "T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": "${Thrower}"},
            "Catch": [{"ErrorEquals": ["CardDeclined"], "Next": "Caught"}], "End": true},
        "Caught": {"Type": "Pass", "End": true}}});
    sb.write("machine.asl.json", &machine.to_string());
    let out = sb.run_in_sandbox(&["run", "--template", "template.yaml", "--input", "{}"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let output = out.json();
    assert_eq!(output["Error"], "CardDeclined", "{output}");
    let cause: Value = serde_json::from_str(output["Cause"].as_str().unwrap()).unwrap();
    assert_eq!(cause["errorMessage"], "no funds");
    assert_eq!(cause["errorType"], "CardDeclined");
    let trace = cause["trace"]
        .as_array()
        .expect("Node's runtime gives a trace");
    assert!(
        trace[0]
            .as_str()
            .unwrap()
            .starts_with("CardDeclined: no funds"),
        "{cause}"
    );
}

#[test]
fn a_function_past_its_timeout_is_sandbox_timedout() {
    let sb = app();
    let out = run_task(
        &sb,
        json!({"Type": "Task", "Resource": "${Sleeper}", "End": true}),
        &[],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("Sandbox.Timedout"), "{}", out.stderr);
    assert!(
        out.stderr.contains("Task timed out after 1.00 seconds"),
        "{}",
        out.stderr
    );
}

#[test]
fn an_import_error_is_lambdas_runtime_import_module_error() {
    let sb = app();
    let out = run_task(
        &sb,
        json!({"Type": "Task", "Resource": "${Broken}", "End": true}),
        &[],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("Runtime.ImportModuleError"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("Unable to import module 'app'"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_function_that_cannot_run_here_names_the_state_and_how_to_bind_it() {
    let sb = app();
    let out = run_task(
        &sb,
        json!({"Type": "Task", "Resource": "${Java}", "End": true}),
        &[],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    for said in [
        "Task state 'T' calls the template's function Java",
        "Runtime java21 is neither Python nor Node.js",
        "--task 'T=COMMAND'",
    ] {
        assert!(out.stderr.contains(said), "{}", out.stderr);
    }
    let out = run_task(
        &sb,
        json!({"Type": "Task", "Resource": "${Counter}", "End": true}),
        &[("SFN_LOCAL_PYTHON", "/no/such/python3")],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    for said in [
        "'/no/such/python3' cannot start",
        "SFN_LOCAL_PYTHON",
        "--task 'T=COMMAND'",
    ] {
        assert!(out.stderr.contains(said), "{}", out.stderr);
    }
    // A code folder that is not there is said so, not blamed on the interpreter.
    let out = run_task(
        &sb,
        json!({"Type": "Task", "Resource": "${Moved}", "End": true}),
        &[],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("moved-away/ is not there"),
        "{}",
        out.stderr
    );
}

// Regression: every Python function ran on `python3`, even with `python3.12` on PATH for a
// `Runtime: python3.12` function (and every Node.js one on `node`, with `node20` there).
#[test]
fn the_interpreter_follows_the_runtime_and_the_variables_override_it() {
    let sb = app();
    fake_interpreter(&sb, "python3.12", "python3");
    fake_interpreter(&sb, "node20", "node");
    fake_interpreter(&sb, "my-python", "python3");
    let path = path_with_fakes(&sb);
    let ran = |resource: &str, env: &[(&str, &str)]| {
        let out = run_task(
            &sb,
            json!({"Type": "Task", "Resource": resource, "End": true}),
            env,
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.json()
    };
    assert_eq!(ran("${Which}", &[("PATH", &path)]), "python3.12");
    assert_eq!(ran("${WhichNode}", &[("PATH", &path)]), "node20");
    // Not on PATH: the plain interpreter.
    assert_eq!(ran("${Which}", &[]), "python3");
    assert_eq!(ran("${WhichNode}", &[]), "node");
    // The variable wins over the Runtime's interpreter.
    let mine = sb.path("bin/my-python");
    let mine = mine.to_str().unwrap();
    assert_eq!(
        ran("${Which}", &[("PATH", &path), ("SFN_LOCAL_PYTHON", mine)]),
        "my-python"
    );
}

// Regression: code that needs a newer Python than the one it ran on failed with
// `Runtime.ImportModuleError` and no word about the version.
#[test]
fn a_syntax_error_on_an_older_interpreter_names_both_versions() {
    let sb = app();
    let out = run_task(
        &sb,
        json!({"Type": "Task", "Resource": "${Future}", "End": true}),
        &[],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    for said in [
        "Runtime.ImportModuleError",
        "the function's Runtime is python3.99, but it ran on 3.",
        "found as python3",
        "put python3.99 on PATH or name an interpreter with SFN_LOCAL_PYTHON",
    ] {
        assert!(out.stderr.contains(said), "{said}: {}", out.stderr);
    }
    // The version warning came first.
    assert!(
        out.stderr
            .contains("Future says Runtime python3.99; it runs on the 3."),
        "{}",
        out.stderr
    );
}
