//! One door, one verdict (#48): every command that takes a state machine reads it through the
//! one loader, so every form (a definition file, a template, `template#LogicalId`, a CDK
//! `cdk.out`, `cdk.out#LogicalId`, `cdk.out#Stack/LogicalId`) works on every command, and a
//! name that is wrong gets the same error that names the forms. Before, `cdk.out` worked in
//! `validate` alone (`Is a directory (os error 21)` elsewhere).

mod common;

use common::{Output, Sandbox};
use std::path::Path;

const ID: &str = "OrdersStateMachine6A3C2B1D";
const INPUT: &str = r#"{"orderId":"o-1","amount":5}"#;

/// The CDK app's synthesized assembly (its Lambda code runs natively) and a definition file.
fn project() -> Sandbox {
    let sb = Sandbox::new().env("PYTHONDONTWRITEBYTECODE", "1");
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cdk_app/cdk.out");
    common::copy_dir(&from, &sb.path("cdk.out"));
    sb.write(
        "plain.asl.json",
        r#"{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}"#,
    );
    sb
}

/// Every form that names the CDK app's one state machine.
fn forms() -> Vec<String> {
    vec![
        "cdk.out".into(),
        format!("cdk.out#{ID}"),
        format!("cdk.out#OrdersStack/{ID}"),
        "cdk.out/OrdersStack.template.json".into(),
        format!("cdk.out/OrdersStack.template.json#{ID}"),
    ]
}

fn ok(out: &Output, what: &str) {
    assert_eq!(out.code, 0, "{what}: {}\n{}", out.stdout, out.stderr);
}

#[test]
fn every_form_works_on_every_command() {
    let sb = project();
    for (i, form) in forms().iter().enumerate() {
        let what = |command: &str| format!("{command} {form}");
        ok(&sb.run_in_sandbox(&["validate", form]), &what("validate"));
        let name = format!("run-{i}");
        let run = sb.run_in_sandbox(&["run", form, "--input", INPUT, "--name", &name]);
        ok(&run, &what("run"));
        assert!(run.stdout.contains("\"carrier\":\"ups\""), "{}", run.stdout);
        let history = sb.run_in_sandbox(&["get-execution-history", "--execution-arn", &name]);
        ok(&history, &what("get-execution-history"));
        sb.write(&format!("history-{i}.json"), &history.stdout);
        let history_file = format!("history-{i}.json");
        let replay = sb.run_in_sandbox(&["replay", &history_file, "--definition", form]);
        ok(&replay, &what("replay"));
        assert_eq!(replay.stdout.trim(), "identical", "{}", replay.stderr);
        let graph = sb.run_in_sandbox(&["graph", form, "--format", "mermaid"]);
        ok(&graph, &what("graph"));
        assert!(graph.stdout.contains("Charge"), "{}", graph.stdout);
        let coverage = sb.run_in_sandbox(&["coverage", form, "--format", "json"]);
        ok(&coverage, &what("coverage"));
        assert_eq!(coverage.json()["machines"][0]["executions"], i as u64 + 1);
        let spec = serde_json::json!({
            "definition": form,
            "cases": [{"name": "ships", "input": {"orderId": "o-1", "amount": 5},
                       "expect": {"status": "SUCCEEDED", "states": ["Charge", "Ship"]}}]
        });
        sb.write(&format!("t{i}.sfntest.json"), &spec.to_string());
        ok(
            &sb.run_in_sandbox(&["test", &format!("t{i}.sfntest.json")]),
            &what("test"),
        );
        assert_serves(&sb, form);
    }
}

/// `serve --template FORM` creates the machine before it listens.
fn assert_serves(sb: &Sandbox, form: &str) {
    use std::io::{BufRead, BufReader};
    let mut server = sb
        .command()
        .current_dir(sb.dir.path())
        .args(["serve", "--port", "0", "--template", form])
        .spawn()
        .expect("spawn serve");
    let stderr = BufReader::new(server.stderr.take().unwrap());
    let mut log = String::new();
    for line in stderr.lines().map_while(Result::ok) {
        log.push_str(&line);
        log.push('\n');
        if line.contains("listening on") {
            break;
        }
    }
    common::kill(&mut server);
    // Created, or updated when `run` created it before under the same name.
    let machine = format!("stateMachine:{ID}: ");
    assert!(
        log.contains(&machine) && log.contains("listening on"),
        "serve --template {form}: {log}"
    );
}

#[test]
fn a_wrong_name_gets_one_error_on_every_command() {
    let sb = project();
    ok(&sb.run_in_sandbox(&["run", "plain.asl.json"]), "run");
    let commands: [&[&str]; 5] = [
        &["validate"],
        &["run", "--input", "{}"],
        &["graph"],
        &["coverage"],
        &["serve", "--port", "0", "--template"],
    ];
    for command in commands {
        let with = |form: &str| {
            let mut args = command.to_vec();
            args.push(form);
            sb.run_in_sandbox(&args)
        };
        let out = with("cdk.out#Nope");
        out.assert_error(
            2,
            "cdk.out has no state machine 'Nope': it has OrdersStack/",
        );
        let out = with("nothing.json");
        assert_ne!(out.code, 0, "{command:?}");
        if command[0] != "validate" {
            assert!(
                out.stderr.contains("cdk.out#Stack/LogicalId"),
                "{command:?}: {}",
                out.stderr
            );
        }
        // `#` after a definition names a machine it does not have: the mock case is spelt
        // otherwise, and the error says how.
        let out = with("plain.asl.json#Case");
        out.assert_error(2, "--test-case Case");
    }
}

/// Regression (#48 item 4): every state of a `DefinitionString` sat on one line, so LCOV said
/// `LF:1 LH:1`, 100%, for a machine whose `AllGood` never ran. Now LCOV reports on a formatted
/// copy written beside the report, one state per line, and `AllGood`'s line counts 0.
#[test]
fn lcov_never_covers_a_line_of_a_state_no_execution_entered() {
    let sb = Sandbox::new();
    let template = serde_json::json!({"Resources": {"M": {
        "Type": "AWS::StepFunctions::StateMachine",
        "Properties": {"DefinitionString": {"Fn::Join": ["", [
            "{\"StartAt\":\"C\",\"States\":{\"C\":{\"Type\":\"Choice\",\"Choices\":[{\"Variable\":\"$.ok\",",
            "\"BooleanEquals\":true,\"Next\":\"AllGood\"}],\"Default\":\"Bad\"},",
            "\"AllGood\":{\"Type\":\"Succeed\"},\"Bad\":{\"Type\":\"Fail\",\"Error\":\"E\"}}}"
        ]]}}
    }}});
    sb.write("template.json", &template.to_string());
    sb.run_in_sandbox(&["run", "template.json", "--input", r#"{"ok":false}"#]);
    let out = sb.run_in_sandbox(&[
        "coverage",
        "template.json",
        "--format",
        "lcov",
        "-o",
        "out/sfn.lcov",
    ]);
    ok(&out, "coverage");
    let lcov = std::fs::read_to_string(sb.path("out/sfn.lcov")).unwrap();
    let file = lcov.lines().find_map(|l| l.strip_prefix("SF:")).unwrap();
    let copy = std::fs::read_to_string(sb.path(file)).expect("the file SF: names exists");
    let line_of = |state: &str| {
        1 + copy
            .lines()
            .position(|l| l.trim_start().starts_with(&format!("\"{state}\": {{")))
            .unwrap()
    };
    let count = |line: usize| {
        lcov.lines()
            .find_map(|l| l.strip_prefix(&format!("DA:{line},")))
            .unwrap_or_else(|| panic!("no DA for line {line}:\n{lcov}"))
            .to_owned()
    };
    assert_eq!(count(line_of("AllGood")), "0", "{lcov}");
    assert_eq!(count(line_of("Bad")), "1", "{lcov}");
    assert_eq!(count(line_of("C")), "1", "{lcov}");
    assert!(lcov.contains("LF:3\nLH:2"), "{lcov}");
}

/// Regression (#48 item 5): a template whose definition is in S3 got an UNUSED_SUBSTITUTION
/// warning for each of its substitutions (a definition never read uses nothing anyone can
/// tell), so `validate --strict` failed valid input once per substitution.
#[test]
fn a_definition_in_s3_is_one_not_checked_warning() {
    let sb = Sandbox::new();
    sb.write(
        "template.yaml",
        "Transform: AWS::Serverless-2016-10-31\nResources:\n  M:\n    Type: AWS::Serverless::StateMachine\n    Properties:\n      DefinitionUri: s3://bucket/machine.asl.json\n      DefinitionSubstitutions:\n        A: a\n        B: b\n",
    );
    let out = sb.run_in_sandbox(&["validate", "template.yaml", "--format", "json"]);
    let codes: Vec<String> = out.json()["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(codes, ["NOT_CHECKED"], "{}", out.stdout);
}

/// Regression (#48 item 5): a template-level mistake around a `DefinitionUri` machine (an
/// intrinsic naming a resource the template does not declare) was placed at the definition
/// file's `1:1`. It is reported in the template, at the line that holds it.
#[test]
fn a_template_mistake_is_placed_at_the_templates_line() {
    let sb = Sandbox::new();
    sb.write(
        "machine.asl.json",
        r#"{"StartAt":"P","States":{"P":{"Type":"Pass","Result":"${FnArn}","End":true}}}"#,
    );
    sb.write(
        "template.yaml",
        "Transform: AWS::Serverless-2016-10-31\nResources:\n  M:\n    Type: AWS::Serverless::StateMachine\n    Properties:\n      DefinitionUri: machine.asl.json\n      DefinitionSubstitutions:\n        FnArn: !GetAtt ChargeFuncton.Arn\n",
    );
    let human = sb.run_in_sandbox(&["validate", "template.yaml"]);
    assert!(
        human.stdout.contains("╭─[template.yaml:8:9]"),
        "{}",
        human.stdout
    );
    assert!(
        human.stdout.contains("2 files, 1 state machine: 1 error"),
        "{}",
        human.stdout
    );
    let out = sb.run_in_sandbox(&["validate", "template.yaml", "--format", "json"]);
    let reports = out.json();
    let in_template = reports
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["file"] == "template.yaml")
        .unwrap_or_else(|| panic!("no report in the template: {reports}"));
    let d = &in_template["diagnostics"][0];
    assert_eq!(d["code"], "UNRESOLVED_REFERENCE", "{reports}");
    assert_eq!(
        d["location"],
        "/Resources/M/Properties/DefinitionSubstitutions/FnArn"
    );
    assert_eq!(in_template["logicalId"], "M");
}

/// The pytest plugin and Jest's global setup take `cdk.out` as a template (they failed with
/// `Is a directory (os error 21)`): the CDK app's machine is served and runs its Lambda code.
#[test]
fn the_pytest_and_jest_helpers_serve_a_cdk_out() {
    use std::process::Command;
    let sb = project();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let arn = format!("arn:aws:states:us-east-1:123456789012:stateMachine:{ID}");
    sb.write(
        "pytest.ini",
        "[pytest]\nsfn_local_templates = cdk.out\nsfn_local_time_scale = 0\n",
    );
    sb.write(
        "test_cdk.py",
        &format!(
            "from sfn_local import start_and_wait\n\ndef test_ships(sfn_client):\n    done = start_and_wait(sfn_client, {arn:?}, {INPUT})\n    assert done['status'] == 'SUCCEEDED', done\n"
        ),
    );
    let pytest = Command::new(common::deps_python_bin("python"))
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
        pytest.status.success() && said.contains("1 passed"),
        "{said}"
    );
    sb.write(
        "jest.config.js",
        "module.exports = { testEnvironment: 'node', globalSetup: 'sfn-local/jest-global-setup', globalTeardown: 'sfn-local/jest-global-teardown', globals: { sfnLocal: { timeScale: 0, templates: ['cdk.out'] } } };\n",
    );
    sb.write(
        "cdk.test.js",
        &format!(
            "const {{ connect, startAndWait }} = require('sfn-local');\ntest('ships', async () => {{\n  const done = await startAndWait(connect().client(), {arn:?}, {INPUT});\n  expect(done.status).toBe('SUCCEEDED');\n}});\n"
        ),
    );
    let node_path = std::env::join_paths([root.join("npm"), common::deps_node_modules()]).unwrap();
    let jest = Command::new("node")
        .arg(common::deps_node_modules().join("jest/bin/jest.js"))
        .args(["--ci", "--colors=false"])
        .current_dir(sb.dir.path())
        .env("NODE_PATH", node_path)
        .env("SFN_LOCAL_BIN", common::bin())
        .output()
        .expect("run jest");
    let said = String::from_utf8_lossy(&jest.stderr);
    assert!(jest.status.success() && said.contains("1 passed"), "{said}");
}
