//! `sfn-local validate` through the real binary: exit statuses, AWS's JSON shape, GitHub
//! annotations, directories.

mod common;

use common::Sandbox;
use serde_json::json;

#[test]
fn bundled_definitions_validate_clean() {
    let sb = Sandbox::new();
    let out = sb.run(&["validate", "definitions"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let out = sb.run(&[
        "validate",
        "--format",
        "json",
        "definitions/order-pipeline.asl.json",
    ]);
    assert_eq!(out.code, 0);
    assert_eq!(
        out.json(),
        json!({"result": "OK", "diagnostics": [], "truncated": false})
    );
}

#[test]
fn heartbeat_not_below_timeout_fails_with_aws_shape() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "validate",
        "--format",
        "json",
        "fixtures/invalid/heartbeat-not-below-timeout.json",
    ]);
    assert_eq!(out.code, 1);
    let v = out.json();
    assert_eq!(v["result"], "FAIL");
    assert_eq!(v["truncated"], false);
    let d = &v["diagnostics"][0];
    assert_eq!(d["severity"], "ERROR");
    assert_eq!(d["code"], "SCHEMA_VALIDATION_FAILED");
    assert_eq!(d["location"], "/States/ConvertVideo/HeartbeatSeconds");
    let keys: Vec<&String> = d.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["severity", "code", "message", "location"]);
}

#[test]
fn several_files_give_an_array_with_file_names() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "validate",
        "--format",
        "json",
        "definitions/order-pipeline.asl.json",
        "fixtures/invalid/unreachable-state.json",
    ]);
    assert_eq!(out.code, 1);
    let v = out.json();
    assert_eq!(v[0]["file"], "definitions/order-pipeline.asl.json");
    assert_eq!(v[0]["result"], "OK");
    assert_eq!(v[1]["result"], "FAIL");
    assert_eq!(v[1]["diagnostics"][0]["code"], "MISSING_TRANSITION_TARGET");
    assert_eq!(v[1]["diagnostics"][0]["location"], "/States/B");
}

#[test]
fn github_format_prints_annotations_at_line_and_column() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "validate",
        "--format",
        "github",
        "fixtures/invalid/next-missing-target.json",
    ]);
    assert_eq!(out.code, 1);
    let line = out.stdout.lines().next().unwrap_or_default();
    assert!(
        line.starts_with("::error file=fixtures/invalid/next-missing-target.json,line=6,col="),
        "{}",
        out.stdout
    );
    assert!(line.contains("title=MISSING_TRANSITION_TARGET::"), "{line}");
}

#[test]
fn human_format_names_file_line_code_and_message() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "validate",
        "fixtures/invalid/heartbeat-not-below-timeout.json",
    ]);
    assert_eq!(out.code, 1);
    let text = format!("{}{}", out.stdout, out.stderr);
    assert!(text.contains("SCHEMA_VALIDATION_FAILED"), "{text}");
    assert!(text.contains("heartbeat-not-below-timeout.json"), "{text}");
    assert!(
        text.contains("HeartbeatSeconds (3600) must be smaller than TimeoutSeconds (60)"),
        "{text}"
    );
}

#[test]
fn warnings_alone_exit_zero() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "validate",
        "--format",
        "json",
        "fixtures/invalid/wait-for-task-token-without-token.json",
    ]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let v = out.json();
    assert_eq!(v["result"], "OK");
    assert_eq!(v["diagnostics"][0]["severity"], "WARNING");
}

#[test]
fn syntax_errors_point_at_their_line_and_column() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "validate",
        "--format",
        "json",
        "fixtures/invalid/not-json.json",
    ]);
    assert_eq!(out.code, 1);
    let v = out.json();
    assert_eq!(v["diagnostics"][0]["code"], "INVALID_JSON_DESCRIPTION");
    let out = sb.run(&[
        "validate",
        "--format",
        "github",
        "fixtures/invalid/not-json.json",
    ]);
    assert!(out.stdout.contains("line=4"), "{}", out.stdout);
}

#[test]
fn express_rules_apply_with_type_express() {
    let sb = Sandbox::new();
    let f = "fixtures/invalid/express-wait-for-task-token.json";
    assert_eq!(sb.run(&["validate", f]).code, 0, "valid for STANDARD");
    let out = sb.run(&["validate", "--type", "EXPRESS", "--format", "json", f]);
    assert_eq!(out.code, 1);
    assert_eq!(
        out.json()["diagnostics"][0]["message"],
        "Express state machine does not support '.waitForTaskToken' service integration "
    );
}

#[test]
fn usage_errors_exit_2() {
    let sb = Sandbox::new();
    assert_eq!(sb.run(&["validate", "no/such/file.json"]).code, 2);
    assert_eq!(sb.run(&["validate"]).code, 2);
    assert_eq!(
        sb.run(&["validate", "--format", "xml", "definitions"]).code,
        2
    );
    let empty = sb.dir.path().to_str().unwrap().to_owned();
    assert_eq!(
        sb.run(&["validate", &empty]).code,
        2,
        "a folder with no definitions"
    );
}
