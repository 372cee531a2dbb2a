//! `sfn-local test`: the example suites beside the bundled machines pass (so CI runs them), and
//! failures are reported like a test runner: a line with a JSON diff, `N passed, M failed`,
//! exit 1, JUnit XML; cases run in parallel.

mod common;

use common::Sandbox;

fn last_line(s: &str) -> &str {
    s.lines().last().unwrap_or_default()
}

#[test]
fn every_example_suite_in_definitions_passes() {
    let sb = Sandbox::new();
    let specs: Vec<_> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/definitions"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".asl.json"))
        .collect();
    // One suite per machine.
    for def in &specs {
        let name = def
            .file_name()
            .to_string_lossy()
            .replace(".asl.json", ".sfntest.json");
        assert!(
            def.path().with_file_name(&name).exists(),
            "definitions/{name} is missing: every bundled machine has an example suite"
        );
    }
    let junit = sb.dir.path().join("junit.xml");
    let out = sb.run(&["test", "definitions", "--junit", junit.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        last_line(&out.stdout).ends_with(" passed, 0 failed"),
        "{}",
        out.stdout
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("failures=\"0\"") && xml.contains("<testcase"),
        "{xml}"
    );
    // The companions are not mistaken for definitions.
    let out = sb.run(&["validate", "definitions"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(!out.stdout.contains("sfntest") && !out.stdout.contains("mocks.json"));
}

const MACHINE: &str = r#"{
  "StartAt": "Fetch",
  "States": {
    "Fetch": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
              "OutputPath": "$.Payload", "Next": "Done"},
    "Done": {"Type": "Pass", "End": true}
  }
}"#;

#[test]
fn failures_print_a_diff_and_the_run_exits_1() {
    let sb = Sandbox::new();
    sb.write("m.asl.json", MACHINE);
    sb.write(
        "m.mocks.json",
        r#"{"StateMachines": {"m": {"TestCases": {"Ok": {"Fetch": "R"}}}},
            "MockedResponses": {"R": {"0": {"Return": {"Payload": {"a": 1, "b": {"c": 2}}}}}}}"#,
    );
    let spec = sb.write(
        "m.sfntest.json",
        r#"{"definition": "m.asl.json", "mockConfig": "m.mocks.json", "cases": [
            {"name": "exact", "testCase": "Ok", "expect": {"status": "SUCCEEDED", "output": {"a": 1, "b": {"c": 2}}}},
            {"name": "subset", "testCase": "Ok", "expect": {"status": "SUCCEEDED", "outputContains": {"b": {"c": 2}}, "states": ["Fetch", "Done"]}},
            {"name": "wrong value", "testCase": "Ok", "expect": {"status": "SUCCEEDED", "outputContains": {"b": {"c": 3}}}},
            {"name": "wrong status", "mocks": {"Fetch": {"0": {"Throw": {"Error": "Boom", "Cause": "no"}}}}, "expect": {"status": "SUCCEEDED"}},
            {"name": "unknown case", "testCase": "Nope", "expect": {"status": "SUCCEEDED"}}
        ]}"#,
    );
    let junit = sb.dir.path().join("j.xml");
    let out = sb.run(&[
        "test",
        spec.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        last_line(&out.stdout),
        "2 passed, 3 failed",
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("wrong value: output does not contain"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("$.b.c: expected 3, got 2"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains(
            "wrong status: status: expected SUCCEEDED, got FAILED (error Boom, cause no)"
        ),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("no test case named 'Nope'"),
        "{}",
        out.stdout
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("tests=\"5\" failures=\"3\""), "{xml}");
}

#[test]
fn cases_run_in_parallel() {
    let sb = Sandbox::new();
    sb.write("m.asl.json", MACHINE);
    let case = r#"{"name": "slow", "mocks": {"Fetch": {"0": {"Return": {"Payload": 1}, "Delay": 1}}}, "expect": {"status": "SUCCEEDED", "output": 1}}"#;
    let spec = sb.write(
        "slow.sfntest.json",
        &format!(
            r#"{{"definition": "m.asl.json", "timeScale": 1, "cases": [{}]}}"#,
            [case; 4].join(",")
        ),
    );
    let started = std::time::Instant::now();
    let out = sb.run(&["test", spec.to_str().unwrap(), "--jobs", "4"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(last_line(&out.stdout), "4 passed, 0 failed");
    // Four one-second cases at once: well under the four seconds one after another takes.
    assert!(started.elapsed() < std::time::Duration::from_millis(3000));
}

#[test]
fn a_case_that_never_ends_fails_at_the_case_timeout() {
    let sb = Sandbox::new();
    sb.write("m.asl.json", MACHINE);
    let spec = sb.write(
        "hang.sfntest.json",
        r#"{"definition": "m.asl.json", "cases": [
            {"name": "hangs", "mocks": {"Fetch": {"0": {"NeverAnswers": true}}}, "expect": {"status": "SUCCEEDED"}}]}"#,
    );
    let out = sb.run(&["test", spec.to_str().unwrap(), "--case-timeout", "1"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stdout.contains("still running after 1 s"),
        "{}",
        out.stdout
    );
    assert_eq!(last_line(&out.stdout), "0 passed, 1 failed");
}

/// A case names a golden history: missing, it fails with the way to write it; written with
/// `--update-snapshots`, it passes run after run (the case's virtual clock starts at a fixed
/// instant, its tokens come from a fixed seed); changed, it fails with the differing events.
#[test]
fn history_snapshots_are_written_compared_and_diffed_by_event() {
    let sb = Sandbox::new();
    sb.write("m.asl.json", MACHINE);
    let spec = sb.write(
        "m.sfntest.json",
        r#"{"definition": "m.asl.json", "cases": [
            {"name": "golden", "historySnapshot": "snaps/golden.json",
             "mocks": {"Fetch": {"0": {"Return": {"Payload": {"a": 1}}}}},
             "expect": {"status": "SUCCEEDED"}}
        ]}"#,
    );
    let spec = spec.to_str().unwrap();
    let missing = sb.run(&["test", spec]);
    assert_eq!(missing.code, 1);
    assert!(
        missing.stdout.contains("--update-snapshots"),
        "{}",
        missing.stdout
    );
    let written = sb.run(&["test", spec, "--update-snapshots"]);
    assert_eq!(written.code, 0, "{}", written.stdout);
    let golden = sb.path("snaps/golden.json");
    let text = std::fs::read_to_string(&golden).unwrap();
    assert!(
        text.contains("\"timestamp\": \"2024-01-01T00:00:00.000Z\""),
        "{text}"
    );
    for _ in 0..2 {
        let again = sb.run(&["test", spec]);
        assert_eq!(again.code, 0, "the history repeats: {}", again.stdout);
    }
    std::fs::write(&golden, text.replace("PassStateExited", "PassStateAborted")).unwrap();
    let changed = sb.run(&["test", spec]);
    assert_eq!(changed.code, 1);
    assert!(
        changed.stdout.contains("history differs from the snapshot"),
        "{}",
        changed.stdout
    );
    assert!(
        changed.stdout.contains("- {") && changed.stdout.contains("+ {"),
        "{}",
        changed.stdout
    );
}
