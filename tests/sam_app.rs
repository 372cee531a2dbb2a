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
    Sandbox::of_app(name)
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
    // Without --mock, the template's own function runs, as the real one would for TestState.
    let out = sb.run_in_sandbox(&[
        "test-state",
        "--template",
        "template.yaml",
        "--state-name",
        "Ship",
        "--role-arn",
        "arn:aws:iam::123456789012:role/OrderStateMachineRole",
        "--input",
        r#"{"orderId": "o-3"}"#,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.json()["output"],
        r#"{"orderId":"o-3","shipment":{"tracking":"ups-o-3"}}"#
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
    let (passed, said) = pytest(&sb, &[]);
    assert!(passed && said.contains("2 passed"), "{said}");
    let (passed, said) = jest(&sb, &[], &[]);
    assert!(
        passed && said.contains("Tests:       2 passed, 2 total"),
        "{said}"
    );
}

/// Runs the app's pytest suite through the plugin (from the repository's `python/`) with
/// `extra` arguments; returns whether it passed and what it printed.
fn pytest(sb: &Sandbox, extra: &[&str]) -> (bool, String) {
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
        .args(extra)
        .current_dir(sb.dir.path())
        .env("PYTHONPATH", root.join("python"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("SFN_LOCAL_BIN", common::bin())
        .output()
        .expect("run pytest");
    let said = common::said(&pytest);
    (pytest.status.success(), said)
}

/// Runs the app's Jest suite through the global setup (the repository's `npm/sfn-local`
/// stands in for node_modules/sfn-local; Jest and the AWS SDK come from .deps, as a project's
/// dev dependencies) with `extra` arguments and `env`; returns whether it passed and what it
/// printed.
fn jest(sb: &Sandbox, extra: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let node_path = std::env::join_paths([root.join("npm"), deps_node_modules()]).unwrap();
    let jest = Command::new("node")
        .arg(deps_node_modules().join("jest/bin/jest.js"))
        .args(["--ci", "--colors=false"])
        .args(extra)
        .current_dir(sb.dir.path())
        .env("NODE_PATH", node_path)
        .env("SFN_LOCAL_BIN", common::bin())
        .envs(env.iter().copied())
        .output()
        .expect("run jest");
    let said = common::said(&jest);
    (jest.status.success(), said)
}

// Regression: `--sfn-local-lcov out/sfn.lcov` into a folder that did not exist ended the
// session with INTERNALERROR after a green run, and wrote nothing. (The Jest/Vitest setups'
// `lcov` option, or SFN_LOCAL_LCOV, already created its folder; checked here too.)
#[test]
fn the_lcov_options_create_the_folder_they_write_into() {
    let sb = app("sam_app");
    let (passed, said) = pytest(&sb, &["--sfn-local-lcov", "out/pytest/sfn.lcov"]);
    assert!(passed && !said.contains("INTERNALERROR"), "{said}");
    let (passed, said) = jest(&sb, &[], &[("SFN_LOCAL_LCOV", "out/jest/sfn.lcov")]);
    assert!(passed, "{said}");
    for file in ["out/pytest/sfn.lcov", "out/jest/sfn.lcov"] {
        let lcov = std::fs::read_to_string(sb.path(file)).unwrap_or_default();
        assert!(
            lcov.contains("order.asl.json") && lcov.contains("end_of_record"),
            "{file}: {lcov}"
        );
    }
}

// Regression (#49): a failing pytest test showed `assert 'FAILED' == 'SUCCEEDED'` and nothing of
// why: not the execution's why line, not the handler's KeyError and its traceback; and a
// `States.ALL`-like Catch hid the handler's error behind the name the test expected.
#[test]
fn a_failing_pytest_test_shows_why_its_executions_failed_with_the_handlers_traceback() {
    let sb = broken_app();
    sb.write(
        "tests/test_broken.py",
        r#"from sfn_local import start_and_wait

ORDERS = "arn:aws:states:us-east-1:123456789012:stateMachine:orders"


def test_a_paid_order_succeeds(sfn_client):
    done = start_and_wait(sfn_client, ORDERS, {"orderId": "o-9", "amount": 3, "card": "4111111111111111"})
    assert done["status"] == "SUCCEEDED"


def test_a_declined_card_is_not_what_fails(sfn_client):
    done = start_and_wait(sfn_client, ORDERS, {"orderId": "o-8", "amount": 3, "card": "4000000000000000"})
    assert done["error"] == "SomethingElse"
"#,
    );
    let (passed, said) = pytest(&sb, &["tests/test_broken.py"]);
    assert!(!passed, "{said}");
    assert_explained(&said);
}

/// The SAM app with a typo in its charge function: a KeyError on every paid order.
fn broken_app() -> Sandbox {
    let sb = app("sam_app");
    let handler = sb.path("functions/charge/app.py");
    let code = std::fs::read_to_string(&handler).unwrap();
    std::fs::write(
        &handler,
        code.replace("event[\"amount\"]", "event[\"amount_in_cents\"]"),
    )
    .unwrap();
    sb
}

/// What a failed test's report must show of [`broken_app`]'s two executions: why each failed
/// or took its Catch, and the handler's error with its file and line.
fn assert_explained(said: &str) {
    for shown in [
        "sfn-local executions that failed or took a Catch",
        "why        failed at state 'Charge': KeyError",
        "handler    KeyError: 'amount_in_cents'",
        "app.py\", line 11, in lambda_handler",
        "(caught; went on to 'Declined')",
        "handler    CardDeclined: card 4000000000000000 was declined",
        "app.py\", line 10, in lambda_handler",
    ] {
        assert!(said.contains(shown), "{shown}:\n{said}");
    }
}

// The same through Jest, with sfn-local's test environment (#49 item 4).
#[test]
fn a_failing_jest_test_shows_why_its_executions_failed_with_the_handlers_traceback() {
    let sb = broken_app();
    sb.write(
        "broken.test.js",
        r#"const { connect, startAndWait } = require("sfn-local");

const ORDERS = "arn:aws:states:us-east-1:123456789012:stateMachine:orders";
const sfn = connect().client();

test("a paid order succeeds", async () => {
  const done = await startAndWait(sfn, ORDERS, { orderId: "o-9", amount: 3, card: "4111111111111111" });
  expect(done.status).toBe("SUCCEEDED");
});

test("a declined card is not what fails", async () => {
  const done = await startAndWait(sfn, ORDERS, { orderId: "o-8", amount: 3, card: "4000000000000000" });
  expect(done.error).toBe("SomethingElse");
});
"#,
    );
    let (passed, said) = jest(&sb, &["broken.test.js"], &[]);
    assert!(!passed, "{said}");
    assert_explained(&said);
    // Each test's report holds its own execution only.
    let paid = said.find("a paid order succeeds").unwrap();
    let declined = said.rfind("a declined card is not what fails").unwrap();
    assert!(said[paid..declined].contains("KeyError"), "{said}");
    assert!(!said[paid..declined].contains("CardDeclined"), "{said}");
}

// The same through Vitest, with sfn-local's setup file (#49 item 4).
#[test]
fn a_failing_vitest_test_shows_why_its_executions_failed_with_the_handlers_traceback() {
    let sb = broken_app();
    // The project's node_modules: the repository's package, and Vitest from .deps.
    let modules = sb.path("node_modules");
    std::fs::create_dir_all(&modules).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::os::unix::fs::symlink(root.join("npm/sfn-local"), modules.join("sfn-local")).unwrap();
    std::os::unix::fs::symlink(deps_node_modules().join("vitest"), modules.join("vitest")).unwrap();
    sb.write(
        "vitest.config.mjs",
        r#"process.env.SFN_LOCAL_OPTIONS = JSON.stringify({ templates: ["template.yaml"] });
export default { test: { globals: true, include: ["broken.test.js"],
  globalSetup: ["sfn-local/vitest-global-setup"], setupFiles: ["sfn-local/vitest-setup"] } };
"#,
    );
    sb.write(
        "broken.test.js",
        r#"const { connect, startAndWait } = require("sfn-local");

const ORDERS = "arn:aws:states:us-east-1:123456789012:stateMachine:orders";

test("a paid order succeeds", async () => {
  const done = await startAndWait(connect().client(), ORDERS, { orderId: "o-9", amount: 3, card: "4111111111111111" });
  expect(done.status).toBe("SUCCEEDED");
});

test("a declined card is not what fails", async () => {
  const done = await startAndWait(connect().client(), ORDERS, { orderId: "o-8", amount: 3, card: "4000000000000000" });
  expect(done.error).toBe("SomethingElse");
});
"#,
    );
    let vitest = Command::new("node")
        .arg(modules.join("vitest/vitest.mjs"))
        .args(["run", "--color=false"])
        .current_dir(sb.dir.path())
        // sfn-local's own requires (the AWS SDK) resolve from .deps, as a project's would.
        .env("NODE_PATH", deps_node_modules())
        .env("SFN_LOCAL_BIN", common::bin())
        .env("NO_COLOR", "1")
        .output()
        .expect("run vitest");
    let said = common::said(&vitest);
    assert!(!vitest.status.success(), "{said}");
    assert_explained(&said);
}

/// `sfn-local serve ARGS` from the sandbox's folder on a free port, once it is ready: the
/// server (its stderr piped) and its endpoint.
fn serve(sb: &Sandbox, args: &[&str]) -> (std::process::Child, String) {
    let ready = sb.path("ready.json");
    let mut server = sb
        .command()
        .current_dir(sb.dir.path())
        .args(["serve", "--port", "0", "--ready-file"])
        .arg(&ready)
        .args(args)
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
    let ready: Value = serde_json::from_str(&std::fs::read_to_string(&ready).unwrap()).unwrap();
    (server, ready["endpoint"].as_str().unwrap().to_owned())
}

/// `serve --template` creates the app's machine at start, named by the template's `Name`, its
/// `${Carrier}` substituted and its functions' local ARNs in; boto3 lists, describes and
/// starts it, and the template's Python and Node.js functions run natively (#37).
#[test]
fn serve_creates_a_templates_machines_for_boto3() {
    let sb = app("sam_app");
    let (mut server, endpoint) = serve(&sb, &["--template", "template.yaml"]);
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

/// Regression (#37): `run --task 'orders:Charge=...'` was refused though serve and the plugin
/// take that form, and a binding naming another machine said nothing; now MACHINE is the
/// machine's name or its logical ID everywhere, and another machine's binding is a warning.
#[test]
fn run_takes_machine_state_bindings_by_name_or_logical_id() {
    let sb = app("sam_app");
    let charge7 = |machine: &str| format!(r#"{machine}:Charge=sh -c 'echo "{{\"charged\": 7}}"'"#);
    for machine in ["orders", "OrderStateMachine"] {
        let task = charge7(machine);
        let out = sb.run_in_sandbox(&[
            "run",
            "--template",
            "template.yaml",
            "--task",
            &task,
            "--input-file",
            "events/order.json",
        ]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(out.json()["charge"], serde_json::json!({"charged": 7}));
    }
    let other = charge7("payments");
    let out = sb.run_in_sandbox(&[
        "run",
        "--template",
        "template.yaml",
        "--task",
        &other,
        "--input-file",
        "events/order.json",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "binds nothing: this run's state machine is orders / OrderStateMachine, not 'payments'"
        ),
        "{}",
        out.stderr
    );
    assert_eq!(out.json()["charge"], serde_json::json!({"charged": 42}));
}

/// Regression (#37): `serve --task 'OrderStateMachine:Charge=...'` (the template's logical ID)
/// silently bound nothing, since serve names the machine by its `Name`; a binding or mock
/// matching no machine or state said nothing either.
#[test]
fn serve_binds_a_templates_machine_by_logical_id_and_warns_of_bindings_matching_nothing() {
    let sb = app("sam_app");
    let charge = r#"OrderStateMachine:Charge=sh -c 'echo "{\"charged\": 7}"'"#;
    sb.write(
        "mocks.json",
        r#"{"StateMachines": {"orders": {"TestCases": {"t": {"Shipp": "r"}}},
                              "payments": {"TestCases": {"t": {"Charge": "r"}}}},
            "MockedResponses": {"r": {"0": {"Return": {}}}}}"#,
    );
    let (mut server, endpoint) = serve(
        &sb,
        &[
            "--mock-config",
            "mocks.json",
            "--template",
            "template.yaml",
            "--task",
            charge,
            "--task",
            "Chrage=true",
            "--task",
            "payments:Charge=true",
        ],
    );
    let authority = endpoint.trim_start_matches("http://").to_owned();
    let until = Instant::now() + Duration::from_secs(60);
    let arn = "arn:aws:states:us-east-1:123456789012:stateMachine:orders";
    let input =
        serde_json::to_string(&std::fs::read_to_string(sb.path("events/order.json")).unwrap())
            .unwrap();
    let started = common::http_api::sfn_call(
        &authority,
        "StartExecution",
        &format!(r#"{{"stateMachineArn": "{arn}", "input": {input}}}"#),
    );
    let started = common::http_api::status_and_json(&started).1;
    let execution = started["executionArn"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let described = loop {
        let d = common::http_api::sfn_call(
            &authority,
            "DescribeExecution",
            &format!(r#"{{"executionArn": "{execution}"}}"#),
        );
        let d = common::http_api::status_and_json(&d).1;
        if d["status"] != "RUNNING" || Instant::now() > until {
            break d;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    common::kill(&mut server);
    let stderr = common::Output::of(server).stderr;
    assert_eq!(described["status"], "SUCCEEDED", "{described}{stderr}");
    let output: Value = serde_json::from_str(described["output"].as_str().unwrap()).unwrap();
    assert_eq!(
        output["charge"],
        serde_json::json!({"charged": 7}),
        "{output}"
    );
    assert!(
        stderr.contains("--task 'Chrage=true' binds nothing: no Task state 'Chrage' in orders (did you mean \"Charge\"?)"),
        "{stderr}"
    );
    for said in [
        "the mock config mocks.json mocks state 'Shipp' of orders, which has no such Task state (did you mean \"Ship\"?)",
        "the mock config mocks.json mocks 'payments', none of the templates' state machines (orders)",
    ] {
        assert!(stderr.contains(said), "{stderr}");
    }
    assert!(
        stderr.contains("--task 'payments:Charge=true' binds no state machine of the templates (they are orders)"),
        "{stderr}"
    );
}

/// Regression (#37): `run --template` demanded `--sub` for a placeholder of a Task a binding
/// already runs; it asks only where a Task still needs the value.
#[test]
fn run_asks_for_a_sub_only_where_a_task_still_needs_it() {
    let sb = Sandbox::new();
    sb.write(
        "template.yaml",
        r#"Resources:
  Queue:
    Type: AWS::SQS::Queue
  Orders:
    Type: AWS::Serverless::StateMachine
    Properties:
      DefinitionSubstitutions:
        QueueUrl: !Ref Queue
      Definition:
        StartAt: Enqueue
        States:
          Enqueue:
            Type: Task
            Resource: arn:aws:states:::sqs:sendMessage
            Parameters: {QueueUrl: "${QueueUrl}", MessageBody.$: "$"}
            End: true
"#,
    );
    let out = sb.run_in_sandbox(&["run", "--template", "template.yaml", "--input", "{}"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("--sub QueueUrl=VALUE"),
        "{}",
        out.stderr
    );
    let out = sb.run_in_sandbox(&[
        "run",
        "--template",
        "template.yaml",
        "--task",
        "Enqueue=true",
        "--input",
        "{}",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("QueueUrl"), "{}", out.stderr);
    // ... nor a Task its mock test case answers.
    sb.write(
        "mocks.json",
        r#"{"StateMachines": {"Orders": {"TestCases": {"happy": {"Enqueue": "sent"}}}},
            "MockedResponses": {"sent": {"0": {"Return": {"MessageId": "m-1"}}}}}"#,
    );
    let out = sb.run_in_sandbox(&[
        "run",
        "--template",
        "template.yaml",
        "--mock-config",
        "mocks.json",
        "--test-case",
        "happy",
        "--input",
        "{}",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), serde_json::json!({"MessageId": "m-1"}));
}

/// A CDK stack as `cdk synth` writes it for `DefinitionBody.fromFile` and
/// `LambdaInvoke(payloadResponseOnly: true)`: `DefinitionS3Location` naming a file asset
/// listed in `FilesStack.assets.json`, the Task a plain function ARN through a substitution,
/// and the function's code an asset folder.
fn cdk_from_file_app(definition: &str) -> Sandbox {
    let sb = Sandbox::new();
    let bucket =
        serde_json::json!({"Fn::Sub": "cdk-hnb659fds-assets-${AWS::AccountId}-${AWS::Region}"});
    let template = serde_json::json!({"Resources": {
        "ChargeFunction0F9A7B5C": {"Type": "AWS::Lambda::Function",
            "Metadata": {"aws:cdk:path": "FilesStack/Charge/Resource", "aws:asset:path": "asset.c0de",
                         "aws:asset:property": "Code"},
            "Properties": {"Code": {"S3Bucket": bucket, "S3Key": "c0de.zip"}, "Handler": "index.handler",
                           "Runtime": "nodejs20.x", "Role": {"Fn::GetAtt": ["ChargeRole", "Arn"]}}},
        "ChargeRole": {"Type": "AWS::IAM::Role", "Properties": {}},
        "OrdersRole": {"Type": "AWS::IAM::Role", "Properties": {}},
        "Orders0A1B2C3D": {"Type": "AWS::StepFunctions::StateMachine",
            "Metadata": {"aws:cdk:path": "FilesStack/Orders/Resource"},
            "Properties": {"DefinitionS3Location": {"Bucket": bucket, "Key": "def0.json"},
                "DefinitionSubstitutions": {"ChargeArn": {"Fn::GetAtt": ["ChargeFunction0F9A7B5C", "Arn"]}},
                "RoleArn": {"Fn::GetAtt": ["OrdersRole", "Arn"]}}}}});
    let destination = |key: &str| {
        serde_json::json!({"current_account-current_region":
        {"bucketName": "cdk-hnb659fds-assets-${AWS::AccountId}-${AWS::Region}", "objectKey": key}})
    };
    let assets = serde_json::json!({"version": "36.0.0", "files": {
        "def0": {"source": {"path": "asset.def0.json", "packaging": "file"}, "destinations": destination("def0.json")},
        "c0de": {"source": {"path": "asset.c0de", "packaging": "zip"}, "destinations": destination("c0de.zip")}}});
    std::fs::create_dir_all(sb.path("cdk.out/asset.c0de")).unwrap();
    sb.write("cdk.out/FilesStack.template.json", &template.to_string());
    sb.write("cdk.out/FilesStack.assets.json", &assets.to_string());
    sb.write("cdk.out/asset.def0.json", definition);
    sb.write(
        "cdk.out/asset.c0de/index.js",
        "class CardDeclined extends Error { constructor(m) { super(m); this.name = 'CardDeclined'; } }\n\
         exports.handler = async (e) => { if (e.card === '0000') throw new CardDeclined('declined'); return { charged: e.amount }; };\n",
    );
    sb
}

const FROM_FILE: &str = r#"{
  "StartAt": "Charge",
  "States": {
    "Charge": {"Type": "Task", "Resource": "${ChargeArn}",
      "Catch": [{"ErrorEquals": ["CardDeclined"], "Next": "Declined"}], "End": true},
    "Declined": {"Type": "Fail", "Error": "OrderDeclined"}
  }
}"#;

/// Regression (#37): CDK's `DefinitionBody.fromFile` writes `DefinitionS3Location` and an
/// asset; `validate cdk.out` reported a false ERROR, checked the asset alone with false
/// warnings, and `serve --template` refused the template. The asset is now read through the
/// stack's `*.assets.json`, substituted, and reported under its own path; the function's
/// code asset runs natively.
#[test]
fn a_cdk_from_file_definition_validates_and_runs_with_its_code_asset() {
    let sb = cdk_from_file_app(FROM_FILE);
    let out = sb.run_in_sandbox(&["validate", "--format", "json", "cdk.out"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let report = out.json();
    let reports = report.as_array().unwrap();
    assert_eq!(
        reports.len(),
        1,
        "checked once, through the template: {report}"
    );
    assert_eq!(reports[0]["file"], "cdk.out/asset.def0.json", "{report}");
    assert_eq!(reports[0]["logicalId"], "Orders0A1B2C3D", "{report}");
    assert_eq!(reports[0]["diagnostics"], serde_json::json!([]), "{report}");
    let template = "cdk.out/FilesStack.template.json";
    let out = sb.run_in_sandbox(&["run", "--template", template, "--input", r#"{"amount": 3}"#]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), serde_json::json!({"charged": 3}));
    // coverage and graph read the asset through the template too.
    let out = sb.run_in_sandbox(&["coverage", template]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("cdk.out/asset.def0.json#Orders0A1B2C3D"),
        "{}",
        out.stdout
    );
    let out = sb.run_in_sandbox(&["graph", "--format", "mermaid", template]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("Charge"), "{}", out.stdout);
    let declined = r#"{"amount": 3, "card": "0000"}"#;
    let out = sb.run_in_sandbox(&["run", "--template", template, "--input", declined]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("OrderDeclined"), "{}", out.stderr);
    assert!(out.stderr.contains("CardDeclined"), "{}", out.stderr);
    // A mistake in the asset is shown at the asset's own line.
    let broken = FROM_FILE.replace("\"Next\": \"Declined\"", "\"Next\": \"Nowhere\"");
    let sb = cdk_from_file_app(&broken);
    let out = sb.run_in_sandbox(&["validate", "cdk.out"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("cdk.out/asset.def0.json:5:"),
        "{}",
        out.stdout
    );
}

/// `tests/cdk_from_file`: a CDK app whose `cdk synth` (aws-cdk-lib 2.150.0, offline) output is
/// kept as written: `DefinitionBody.fromFile` (a `DefinitionS3Location` and an asset) and a
/// `LambdaInvoke` with `payloadResponseOnly` (a plain function ARN), the function's Node.js code
/// an asset too. It validates with no error, and both machines run with the asset's code
/// natively; `CardDeclined` keeps its name (caught in one, the error of the other).
#[test]
fn a_synthesized_cdk_app_with_from_file_and_payload_response_only_validates_and_runs() {
    let sb = app("cdk_from_file");
    let out = sb.run_in_sandbox(&["validate", "cdk.out"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("2 state machines: ok"),
        "{}",
        out.stdout
    );
    let template = "cdk.out/FilesStack.template.json";
    let run = |machine: &str, input: &str| {
        sb.run_in_sandbox(&[
            "run",
            "--template",
            template,
            "--state-machine",
            machine,
            "--input",
            input,
        ])
    };
    let paid = run("OrdersA9B65338", r#"{"amount": 3}"#);
    assert_eq!(paid.code, 0, "{}", paid.stderr);
    assert_eq!(paid.json(), serde_json::json!({"charged": 3}));
    let caught = run("OrdersA9B65338", r#"{"amount": 3, "card": "0000"}"#);
    assert_eq!(
        caught.json(),
        serde_json::json!("declined"),
        "{}",
        caught.stderr
    );
    let direct = run("Direct897B135C", r#"{"amount": 5}"#);
    assert_eq!(
        direct.json(),
        serde_json::json!({"charged": 5}),
        "{}",
        direct.stderr
    );
    let declined = run("Direct897B135C", r#"{"amount": 5, "card": "0000"}"#);
    assert_eq!(declined.code, 1);
    assert!(
        declined.stderr.contains("CardDeclined"),
        "{}",
        declined.stderr
    );
}

/// Regression (#48 item 7): the why line printed a Lambda error's whole payload, stack trace
/// included, on its one line. It says `errorType: errorMessage`; the handler's trace (file and
/// line) is below it in `describe-execution --format text`, under `handler`.
#[test]
fn why_names_a_lambda_error_on_one_line_and_its_trace_below() {
    let sb = app("sam_app");
    let out = sb.run_in_sandbox(&[
        "run",
        "template.yaml",
        "--input",
        r#"{"orderId":"o"}"#,
        "--name",
        "k",
    ]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let why = out
        .stderr
        .lines()
        .find(|l| l.contains("failed at state"))
        .unwrap();
    assert_eq!(why.trim(), "failed at state 'Charge': KeyError: 'amount'");
    let text = sb.run(&[
        "describe-execution",
        "--execution-arn",
        "k",
        "--format",
        "text",
    ]);
    let below: Vec<&str> = text
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("why"))
        .collect();
    assert!(
        below[1].starts_with("handler") && below[1].ends_with("KeyError: 'amount'"),
        "{}",
        text.stdout
    );
    assert!(
        below[2].contains("functions/charge/app.py\", line 11"),
        "{}",
        text.stdout
    );
}
