//! A SAM app and a CDK app end to end (#30): the template is the unit everywhere a definition
//! is. `tests/sam_app` is a `sam init`-shaped project (`template.yaml` with an
//! `AWS::Serverless::StateMachine`, `DefinitionUri`, `DefinitionSubstitutions`, two Python
//! Lambdas and a Node.js one, which sfn-local runs natively with no binding (#37));
//! `tests/cdk_app` is a CDK app with its `cdk synth` output
//! (`cdk.out/OrdersStack.template.json`, `DefinitionString` as `Fn::Join`, the function's code
//! as an asset). Each test copies its app into a sandbox and runs there, as a user in their
//! repository does.

mod common;

use common::{deps_node_modules, deps_python_bin, Sandbox};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What the Node.js function answers for order `o-1`.
fn notification() -> Value {
    serde_json::json!({"sent": true, "from": "orders@example.com", "stage": "local",
        "by": "NotifyFunction", "withinTimeout": true})
}

/// A sandbox holding a copy of `tests/APP`.
fn app(name: &str) -> Sandbox {
    let sb = Sandbox::new().env("PYTHONDONTWRITEBYTECODE", "1");
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(name);
    copy_dir(&from, sb.dir.path());
    sb
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn a_sam_app_validates_tests_runs_and_draws_from_its_template() {
    let sb = app("sam_app");
    // validate: one state machine, reported under its DefinitionUri file with its logical ID
    // (the spec, the event and the functions are passed over).
    let out = sb.run_in_sandbox(&["validate", "--format", "json", "."]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let report = out.json();
    let files = report.as_array().expect("one report per machine");
    assert_eq!(files.len(), 1, "{report}");
    assert_eq!(
        files[0]["file"], "./statemachine/order.asl.json",
        "{report}"
    );
    assert_eq!(files[0]["logicalId"], "OrderStateMachine", "{report}");
    assert_eq!(files[0]["template"], "./template.yaml", "{report}");

    // test: the template finds the spec beside it, which names the template's machine.
    let out = sb.run_in_sandbox(&["test", "template.yaml"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("3 passed, 0 failed"), "{}", out.stdout);

    // run: the template's Python and Node.js functions run natively, with no binding and no
    // --sub (#37); the template's Carrier is substituted; the handlers' logs come with their
    // state's name.
    let mut args = vec![
        "run",
        "--template",
        "template.yaml",
        "--input-file",
        "events/order.json",
    ];
    let out = sb.run_in_sandbox(&args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let output: Value = serde_json::from_str(out.stdout.trim()).expect("output");
    assert_eq!(output["charge"], serde_json::json!({"charged": 42}));
    assert_eq!(output["shipment"]["tracking"], "ups-o-1");
    assert_eq!(output["notification"], notification());
    for log in [
        "[Ship] shipping o-1 by ShipFunction (time left: True)",
        "[Notify] notifying about o-1",
    ] {
        assert!(out.stderr.contains(log), "{}", out.stderr);
    }
    // A Lambda's exception is its error: the template's Catch on CardDeclined ends the order.
    let declined = r#"{"orderId": "o-2", "amount": 1, "card": "4000000000000000"}"#;
    args.splice(3.., ["--input", declined]);
    let out = sb.run_in_sandbox(&args);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("OrderDeclined"), "{}", out.stderr);
    // A --task binding still wins over the template's function.
    args.extend(["--task", r#"Charge=sh -c 'echo "{\"charged\": 7}"'"#]);
    let out = sb.run_in_sandbox(&args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json()["charge"], serde_json::json!({"charged": 7}));

    // graph: the template's machine, drawn.
    let out = sb.run_in_sandbox(&["graph", "--format", "mermaid", "template.yaml"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for state in ["Charge", "Ship", "Declined"] {
        assert!(out.stdout.contains(state), "{}", out.stdout);
    }
}

#[test]
fn test_state_and_start_execution_take_a_template() {
    let sb = app("sam_app");
    let out = sb.run_in_sandbox(&[
        "test-state",
        "--template",
        "template.yaml",
        "--state-name",
        "Ship",
        "--input",
        r#"{"orderId": "o-3"}"#,
        "--mock",
        r#"{"result": "{\"tracking\": \"t\"}"}"#,
        "--inspection-level",
        "DEBUG",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let answer = out.json();
    let parameters: Value = serde_json::from_str(
        answer["inspectionData"]["afterParameters"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        parameters,
        serde_json::json!({"orderId": "o-3", "carrier": "ups"})
    );
    // Without --state-name, the states to choose from are named.
    let out = sb.run_in_sandbox(&["test-state", "--template", "template.yaml"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("--state-name (Charge, Ship, Notify, Declined)"),
        "{}",
        out.stderr
    );

    let out = sb.run_in_sandbox(&[
        "start-execution",
        "--template",
        "template.yaml",
        "--input-file",
        "events/order.json",
        "--name",
        "first-order",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.json()["executionArn"]
            .as_str()
            .unwrap()
            .ends_with(":execution:orders:first-order"),
        "{}",
        out.stdout
    );
    let until = Instant::now() + Duration::from_secs(60);
    let described = loop {
        let out = sb.run_in_sandbox(&["describe-execution", "--execution-arn", "first-order"]);
        let d = out.json();
        if d["status"] != "RUNNING" || Instant::now() > until {
            break d;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(described["status"], "SUCCEEDED", "{described}");
}

/// A spec names its template, machine and substitutions; a misspelt key gets a suggestion, and
/// a template no spec names says how to write one.
#[test]
fn a_spec_names_a_template_and_mistakes_are_explained() {
    let sb = app("sam_app");
    let spec: Value =
        serde_json::from_str(&std::fs::read_to_string(sb.path("orders.sfntest.json")).unwrap())
            .unwrap();
    let mut typo = spec.clone();
    let machine = typo
        .as_object_mut()
        .unwrap()
        .remove("stateMachine")
        .unwrap();
    typo["stateMachin"] = machine;
    sb.write("typo.sfntest.json", &typo.to_string());
    let out = sb.run_in_sandbox(&["test", "typo.sfntest.json"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stdout.contains("stateMachin") && out.stdout.contains("did you mean"),
        "{}",
        out.stdout
    );
    // No substitutions: the template's own functions have local ARNs (#37), so the spec's
    // machine runs as it is.
    let mut bare = spec.clone();
    bare.as_object_mut().unwrap().remove("substitutions");
    sb.write("bare.sfntest.json", &bare.to_string());
    let out = sb.run_in_sandbox(&["test", "bare.sfntest.json"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    std::fs::create_dir(sb.path("other")).unwrap();
    std::fs::copy(sb.path("template.yaml"), sb.path("other/template.yaml")).unwrap();
    let out = sb.run_in_sandbox(&["test", "other/template.yaml"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("\"template\": \"template.yaml\""),
        "{}",
        out.stderr
    );
}

/// The app's own pytest and Jest suites (`tests/sam_app/tests/`, `orders.test.js`) drive it
/// through the helpers, as its team runs them: the plugin and the global setup serve the
/// template, and its functions run natively (#37).
#[test]
fn the_apps_pytest_and_jest_suites_drive_it_through_the_helpers() {
    let sb = app("sam_app");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let pytest = Command::new(deps_python_bin("python"))
        .args([
            "-m",
            "pytest",
            "-p",
            "sfn_local.pytest_plugin",
            "-p",
            "no:cacheprovider",
        ])
        .current_dir(sb.dir.path())
        .env("PYTHONPATH", root.join("python"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("SFN_LOCAL_BIN", common::bin())
        .output()
        .expect("run pytest");
    let said = String::from_utf8_lossy(&pytest.stdout);
    assert!(
        pytest.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&pytest.stderr)
    );
    assert!(said.contains("2 passed"), "{said}");
    // The package's folder stands in for node_modules/sfn-local; Jest and the AWS SDK come
    // from .deps, as a project's dev dependencies.
    let node_path = std::env::join_paths([root.join("npm"), deps_node_modules()]).unwrap();
    let jest = Command::new("node")
        .arg(deps_node_modules().join("jest/bin/jest.js"))
        .args(["--ci", "--colors=false"])
        .current_dir(sb.dir.path())
        .env("NODE_PATH", node_path)
        .env("SFN_LOCAL_BIN", common::bin())
        .output()
        .expect("run jest");
    let said = String::from_utf8_lossy(&jest.stderr);
    assert!(
        jest.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&jest.stdout)
    );
    assert!(said.contains("Tests:       2 passed, 2 total"), "{said}");
}

/// `serve --template` creates the app's machine at start, named by the template's `Name`, its
/// `${Carrier}` substituted and its functions' local ARNs in; boto3 lists, describes and
/// starts it, and the template's Python and Node.js functions run natively (#37).
#[test]
fn serve_creates_a_templates_machines_for_boto3() {
    let sb = app("sam_app");
    let ready = sb.path("ready.json");
    let mut server = sb
        .command()
        .current_dir(sb.dir.path())
        .args(["serve", "--port", "0", "--ready-file"])
        .arg(&ready)
        .args(["--template", "template.yaml"])
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn serve");
    let until = Instant::now() + Duration::from_secs(60);
    while !ready.exists() {
        assert!(Instant::now() < until, "serve did not start");
        if let Ok(Some(status)) = server.try_wait() {
            panic!("serve exited: {status}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let endpoint = serde_json::from_str::<Value>(&std::fs::read_to_string(&ready).unwrap())
        .unwrap()["endpoint"]
        .as_str()
        .unwrap()
        .to_owned();
    let client = sb.write("client.py", BOTO3_CLIENT);
    let out = Command::new(deps_python_bin("python"))
        .arg(&client)
        .arg(&endpoint)
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .output()
        .expect("run python");
    common::kill(&mut server);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

const BOTO3_CLIENT: &str = r#"
import json, sys, time
import boto3

sfn = boto3.client("stepfunctions", endpoint_url=sys.argv[1], region_name="us-east-1")
machines = sfn.list_state_machines()["stateMachines"]
assert [m["name"] for m in machines] == ["orders"], machines
arn = machines[0]["stateMachineArn"]
assert arn == "arn:aws:states:us-east-1:123456789012:stateMachine:orders", arn
described = sfn.describe_state_machine(stateMachineArn=arn)
assert described["type"] == "STANDARD", described
definition = json.loads(described["definition"])
assert definition["States"]["Ship"]["Parameters"]["carrier"] == "ups", definition
assert "${" not in described["definition"], described["definition"]

def finish(order):
    started = sfn.start_execution(stateMachineArn=arn, input=json.dumps(order))
    for _ in range(600):
        execution = sfn.describe_execution(executionArn=started["executionArn"])
        if execution["status"] != "RUNNING":
            return execution
        time.sleep(0.05)
    raise AssertionError("still running")

paid = finish({"orderId": "o-1", "amount": 42, "card": "4111"})
assert paid["status"] == "SUCCEEDED", paid
assert json.loads(paid["output"])["shipment"] == {"tracking": "ups-o-1"}, paid
assert json.loads(paid["output"])["notification"]["by"] == "NotifyFunction", paid
declined = finish({"orderId": "o-2", "amount": 1, "card": "4000000000000000"})
assert declined["status"] == "FAILED", declined
assert declined["error"] == "OrderDeclined", declined
"#;

/// CDK's synthesized template (`DefinitionString` as `Fn::Join` with `Ref AWS::Partition` and
/// `Fn::GetAtt`) validates and runs, its function's code asset run natively.
#[test]
fn a_cdk_synth_template_validates_and_runs() {
    let sb = app("cdk_app");
    let template = "cdk.out/OrdersStack.template.json";
    let out = sb.run_in_sandbox(&["validate", template]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("(OrdersStateMachine6A3C2B1D): ok"),
        "{}",
        out.stdout
    );
    // The template's function has a local ARN and its code asset runs natively (#37): no
    // --sub and no --task are needed.
    let mut args = vec!["run", "--template", template];
    args.extend(["--input", r#"{"amount": 3}"#]);
    let out = sb.run_in_sandbox(&args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // No warning but, on a machine whose Python is not the template's 3.12, that one.
    let warnings = out.stderr.lines().filter(|l| l.contains("warning"));
    assert!(
        warnings
            .clone()
            .all(|l| l.contains("ChargeFunction0F9A7B5C says Runtime python3.12; it runs on the")),
        "{}",
        out.stderr
    );
    let output: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(
        output,
        serde_json::json!({"amount": 3, "charge": {"charged": 3}, "shipment": {"carrier": "ups"}})
    );
}

/// A walk of a CDK app reads `cdk.out` and never enters `node_modules` (whose broken
/// definition would fail the walk).
#[test]
fn a_walk_of_a_cdk_app_reads_cdk_out_but_not_node_modules() {
    let sb = app("cdk_app");
    std::fs::create_dir_all(sb.path("node_modules/some-lib")).unwrap();
    sb.write(
        "node_modules/some-lib/broken.asl.json",
        r#"{"StartAt": "X", "States": {"X": {"Type": "Nope"}}}"#,
    );
    let out = sb.run_in_sandbox(&["validate", "--verbose", "--format", "json", "."]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let report = out.json();
    let files: Vec<&str> = report
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["./cdk.out/OrdersStack.template.json"], "{report}");
    assert!(
        out.stderr
            .contains("skipped ./node_modules: dependencies (node_modules)"),
        "{}",
        out.stderr
    );
}
