//! Day-one usability (issue #18): what a new user does from the README must not fail silently,
//! pass falsely or need a guess. Each test does what the user did, through the real binary.

mod common;

use common::Sandbox;

/// A machine whose one Task is a Lambda function, the most common first machine.
const LAMBDA_MACHINE: &str = r#"{
  "StartAt": "Fetch",
  "States": {
    "Fetch": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
              "Parameters": {"FunctionName": "fetch", "Payload.$": "$"},
              "OutputPath": "$.Payload", "Next": "Done"},
    "Done": {"Type": "Pass", "End": true}
  }
}"#;

fn last_line(s: &str) -> &str {
    s.lines().last().unwrap_or_default()
}

/// Runs a spec whose one case is `case` against [`LAMBDA_MACHINE`] with a mock config.
fn run_case(sb: &Sandbox, case: &str) -> common::Output {
    sb.write("m.asl.json", LAMBDA_MACHINE);
    sb.write(
        "m.mocks.json",
        r#"{"StateMachines": {"m": {"TestCases": {"Ok": {"Fetch": "R"}}}},
            "MockedResponses": {"R": {"0": {"Return": {"Payload": {"a": 1}}}}}}"#,
    );
    let spec = sb.write(
        "m.sfntest.json",
        &format!(
            r#"{{"definition": "m.asl.json", "mockConfig": "m.mocks.json", "cases": [{case}]}}"#
        ),
    );
    sb.run(&["test", spec.to_str().unwrap()])
}

#[test]
fn misspelled_spec_keys_fail_the_case_and_name_the_key() {
    let sb = Sandbox::new();
    // The execution SUCCEEDS: a case expecting FAILED under a misspelled key passed before.
    for (case, key, hint) in [
        (
            r#"{"name": "c", "testCase": "Ok", "expect": {"Status": "FAILED"}}"#,
            "Status",
            "status",
        ),
        (
            r#"{"name": "c", "testCase": "Ok", "expect": {"status": "SUCCEEDED", "outputcontains": {"a": 2}}}"#,
            "outputcontains",
            "outputContains",
        ),
        (
            r#"{"name": "c", "testcase": "Ok", "expect": {"status": "SUCCEEDED"}}"#,
            "testcase",
            "testCase",
        ),
    ] {
        let out = run_case(&sb, case);
        assert_eq!(out.code, 1, "{case}\n{}{}", out.stdout, out.stderr);
        assert_eq!(
            last_line(&out.stdout),
            "0 passed, 1 failed",
            "{}",
            out.stdout
        );
        assert!(
            out.stdout
                .contains(&format!("unknown key \"{key}\" (did you mean \"{hint}\"?)")),
            "{}",
            out.stdout
        );
    }
}

#[test]
fn statuses_are_checked_and_empty_expectations_refused() {
    let sb = Sandbox::new();
    let out = run_case(
        &sb,
        r#"{"name": "c", "testCase": "Ok", "expect": {"status": "FAILD"}}"#,
    );
    assert_eq!(out.code, 1);
    assert!(
        out.stdout.contains("\"FAILD\" (did you mean \"FAILED\"?); it must be one of SUCCEEDED, FAILED, TIMED_OUT, ABORTED"),
        "{}",
        out.stdout
    );
    let out = run_case(&sb, r#"{"name": "c", "testCase": "Ok", "expect": {}}"#);
    assert_eq!(out.code, 1);
    assert!(out.stdout.contains("\"expect\" is empty"), "{}", out.stdout);
    let out = run_case(&sb, r#"{"name": "c", "testCase": "Ok"}"#);
    assert_eq!(out.code, 1);
    assert!(
        out.stdout.contains("\"expect\" (an object"),
        "{}",
        out.stdout
    );
    // The well-spelled case passes.
    let out = run_case(
        &sb,
        r#"{"name": "c", "testCase": "Ok", "expect": {"status": "SUCCEEDED", "output": {"a": 1}}}"#,
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
}

#[test]
fn misspelled_spec_and_mock_config_keys_are_errors() {
    let sb = Sandbox::new();
    sb.write("m.asl.json", LAMBDA_MACHINE);
    let spec = sb.write(
        "top.sfntest.json",
        r#"{"definition": "m.asl.json", "mockconfig": "m.mocks.json", "cases": []}"#,
    );
    let out = sb.run(&["test", spec.to_str().unwrap()]);
    assert_eq!(out.code, 1);
    assert!(
        out.stdout
            .contains("unknown key \"mockconfig\" (did you mean \"mockConfig\"?)"),
        "{}",
        out.stdout
    );

    for (config, key) in [
        (
            r#"{"StateMachines": {"m": {"TestCase": {}}}, "MockedResponses": {}}"#,
            "TestCase",
        ),
        (
            r#"{"StateMachine": {}, "MockedResponses": {}}"#,
            "StateMachine",
        ),
        (
            r#"{"MockedResponses": {"R": {"0": {"Retrun": 1}}}}"#,
            "Retrun",
        ),
        (
            r#"{"MockedResponses": {"R": {"0": {"Throw": {"Error": "E", "cause": "c"}}}}}"#,
            "cause",
        ),
    ] {
        sb.write("bad.mocks.json", config);
        let spec = sb.write(
            "bad.sfntest.json",
            r#"{"definition": "m.asl.json", "mockConfig": "bad.mocks.json", "cases": [
                {"name": "c", "expect": {"status": "SUCCEEDED"}}]}"#,
        );
        let out = sb.run(&["test", spec.to_str().unwrap()]);
        assert_eq!(out.code, 1, "{config}");
        assert!(
            out.stdout.contains(&format!("unknown key \"{key}\"")),
            "{config}\n{}",
            out.stdout
        );
        assert!(out.stdout.contains("did you mean"), "{}", out.stdout);
        // `run --mock-config` reads the same files just as strictly.
        let out = sb.run(&[
            "run",
            sb.path("m.asl.json").to_str().unwrap(),
            "--mock-config",
            sb.path("bad.mocks.json").to_str().unwrap(),
            "--test-case",
            "Ok",
        ]);
        out.assert_error(2, &format!("unknown key \"{key}\""));
    }
}
