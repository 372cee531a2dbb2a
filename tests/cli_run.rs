//! `sfn-local run` and the AWS-spelled reads, through the real binary and a real SQLite file.

mod common;

use common::{Output, Sandbox};
use serde_json::json;

/// `run` of the bundled order pipeline on `fixtures/order.json`, with `extra` arguments.
fn run_order(sb: &Sandbox, extra: &[&str]) -> Output {
    let mut args = vec![
        "run",
        "definitions/order-pipeline.asl.json",
        "--input-file",
        "fixtures/order.json",
    ];
    args.extend_from_slice(extra);
    sb.run(&args)
}

#[test]
fn runs_the_bundled_order_pipeline() {
    let sb = Sandbox::new();
    let out = run_order(&sb, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), json!({"invoice": "INV-42", "lineCount": 2}));
}

#[test]
fn json_format_prints_describe_execution_and_history_is_stored() {
    let sb = Sandbox::new();
    let out = run_order(
        &sb,
        &[
            "--name",
            "first",
            "--region",
            "eu-west-1",
            "--account-id",
            "111122223333",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let d = out.json();
    assert_eq!(
        d["executionArn"],
        "arn:aws:states:eu-west-1:111122223333:execution:order-pipeline:first"
    );
    assert_eq!(
        d["stateMachineArn"],
        "arn:aws:states:eu-west-1:111122223333:stateMachine:order-pipeline"
    );
    assert_eq!(d["status"], "SUCCEEDED");
    assert_eq!(d["output"], r#"{"invoice":"INV-42","lineCount":2}"#);
    assert!(d["startDate"].is_string() && d["stopDate"].is_string());

    let described = sb
        .run(&["describe-execution", "--execution-arn", "first"])
        .json();
    assert_eq!(described, d);

    let history = sb
        .run(&["get-execution-history", "--execution-arn", "first"])
        .json();
    let events = history["events"].as_array().unwrap();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"ExecutionStarted"));
    assert_eq!(types.last(), Some(&"ExecutionSucceeded"));
    assert!(types.contains(&"MapIterationStarted") && types.contains(&"ParallelStateStarted"));
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["id"], json!(i + 1), "ids are contiguous");
    }
    assert_eq!(events[1]["stateEnteredEventDetails"]["name"], "Validate");

    let reversed = sb
        .run(&[
            "get-execution-history",
            "--execution-arn",
            "first",
            "--reverse-order",
        ])
        .json();
    assert_eq!(reversed["events"][0]["type"], "ExecutionSucceeded");

    let listed = sb
        .run(&["list-executions", "--status-filter", "SUCCEEDED"])
        .json();
    assert_eq!(listed["executions"][0]["name"], "first");
    let none = sb
        .run(&["list-executions", "--status-filter", "FAILED"])
        .json();
    assert_eq!(none["executions"], json!([]));
}

#[test]
fn a_failed_execution_exits_1_with_error_and_cause_on_stderr() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "run",
        "definitions/order-pipeline.asl.json",
        "--input",
        r#"{"orderId":"7","items":[]}"#,
    ]);
    assert_eq!(out.code, 1);
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr.contains("EmptyOrder") && out.stderr.contains("The order has no items"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_timed_out_execution_exits_3() {
    let sb = Sandbox::new();
    let def = sb.write(
        "slow.json",
        r#"{"StartAt":"W","TimeoutSeconds":2,"States":{"W":{"Type":"Wait","Seconds":60,"End":true}}}"#,
    );
    let out = sb.run(&[
        "run",
        def.to_str().unwrap(),
        "--time-scale",
        "0.01",
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 3, "{}", out.stderr);
    let d = out.json();
    assert_eq!(d["status"], "TIMED_OUT");
    assert!(
        d.get("error").is_none(),
        "AWS shows no error for a timed-out execution"
    );
}

#[test]
fn an_invalid_definition_is_not_run() {
    let sb = Sandbox::new();
    let def = sb.write(
        "bad.json",
        r#"{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"Nowhere"}}}"#,
    );
    let out = sb.run(&["run", def.to_str().unwrap()]);
    out.assert_error(2, "MISSING_TRANSITION_TARGET");
    let listed = sb.run(&["list-executions"]).json();
    assert_eq!(listed["executions"], json!([]), "nothing is stored");
}

#[test]
fn bad_input_is_refused_before_anything_is_stored() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "run",
        "definitions/order-pipeline.asl.json",
        "--input",
        "{not json",
    ]);
    out.assert_error(2, "the input is not JSON");
    let big = format!("{{\"x\":\"{}\"}}", "a".repeat(262_144));
    let path = sb.write("big.json", &big);
    let out = sb.run(&[
        "run",
        "definitions/order-pipeline.asl.json",
        "--input-file",
        path.to_str().unwrap(),
    ]);
    out.assert_error(2, "256 KiB");
    assert_eq!(sb.run(&["list-executions"]).json()["executions"], json!([]));
}

#[test]
fn input_can_come_from_stdin() {
    let sb = Sandbox::new();
    let def = sb.write(
        "echo.json",
        r#"{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}"#,
    );
    let out = sb.run_with_stdin(
        &["run", def.to_str().unwrap(), "--input-file", "-"],
        r#"[1,"two"]"#,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), json!([1, "two"]));
}

#[test]
fn duplicate_execution_names_are_refused() {
    let sb = Sandbox::new();
    let def = sb.write(
        "echo.json",
        r#"{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}"#,
    );
    let d = def.to_str().unwrap();
    assert_eq!(sb.run(&["run", d, "--name", "once"]).code, 0);
    let again = sb.run(&["run", d, "--name", "once"]);
    again.assert_error(2, "ExecutionAlreadyExists");
    let bad = sb.run(&["run", d, "--name", "has space"]);
    assert_eq!(bad.code, 2);
}

#[test]
fn task_states_run_bound_commands() {
    let sb = Sandbox::new();
    let def = sb.write(
        "task.json",
        r#"{"StartAt":"Double","States":{"Double":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke",
            "Parameters":{"FunctionName":"double","Payload":{"n.$":"$.n"}},"ResultSelector":{"doubled.$":"$.Payload.n"},"ResultPath":"$.result","End":true}}}"#,
    );
    let script = sb.write("double.sh", "#!/bin/sh\nread input\necho \"$input\"\n");
    let binding = format!("Double=sh {}", script.display());
    let out = sb.run(&[
        "run",
        def.to_str().unwrap(),
        "--input",
        r#"{"n":21}"#,
        "--task",
        &binding,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), json!({"n": 21, "result": {"doubled": 21}}));

    let unbound = sb.run(&["run", def.to_str().unwrap(), "--input", r#"{"n":1}"#]);
    unbound.assert_error(1, "--task 'Double=COMMAND'");

    let wrong = sb.run(&["run", def.to_str().unwrap(), "--task", "Nope=true"]);
    wrong.assert_error(2, "no Task state named 'Nope'");
}

#[test]
fn a_failing_command_names_its_error_from_stderr() {
    let sb = Sandbox::new();
    let def = sb.write(
        "task.json",
        r#"{"StartAt":"Charge","States":{"Charge":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke",
            "Catch":[{"ErrorEquals":["CardDeclined"],"ResultPath":"$.error","Next":"Declined"}],"End":true},
            "Declined":{"Type":"Pass","End":true}}}"#,
    );
    let script = sb.write(
        "charge.sh",
        "#!/bin/sh\necho 'charging...' >&2\necho '{\"Error\":\"CardDeclined\",\"Cause\":\"insufficient funds\"}' >&2\nexit 1\n",
    );
    let binding = format!("Charge=sh {}", script.display());
    let out = sb.run(&["run", def.to_str().unwrap(), "--task", &binding]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.json(),
        json!({"error": {"Error": "CardDeclined", "Cause": "insufficient funds"}})
    );
}

#[test]
fn unknown_executions_are_reported() {
    let sb = Sandbox::new();
    let out = sb.run(&["describe-execution", "--execution-arn", "nope"]);
    out.assert_error(15, "ExecutionDoesNotExist");
}

#[test]
fn an_unreadable_database_is_a_clear_error() {
    let sb = Sandbox::new();
    let bogus = sb.write("not-a-db.db", "this is not sqlite, just text that is long enough to have a header...................................................");
    let out = sb.run(&["list-executions", "--db", bogus.to_str().unwrap()]);
    out.assert_error(1, "not an sfn-local database");
}

#[test]
fn listings_page_like_the_aws_cli_and_filter_by_state_machine() {
    let sb = Sandbox::new();
    for name in ["a", "b", "c"] {
        let out = run_order(&sb, &["--name", name]);
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    // Pages of two, newest first, until no NextToken.
    let mut names = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut args = vec!["list-executions", "--max-items", "2"];
        if let Some(t) = &token {
            args.extend(["--starting-token", t.as_str()]);
        }
        let page = sb.run(&args);
        assert_eq!(page.code, 0, "{}", page.stderr);
        let page = page.json();
        names.extend(
            page["executions"]
                .as_array()
                .expect("executions")
                .iter()
                .map(|e| e["name"].clone()),
        );
        match page["NextToken"].as_str() {
            Some(t) => token = Some(t.to_owned()),
            None => break,
        }
    }
    assert_eq!(names, [json!("c"), json!("b"), json!("a")]);

    let all = sb.run(&["list-executions"]).json();
    let arn = all["executions"][0]["stateMachineArn"]
        .as_str()
        .expect("arn")
        .to_owned();
    let name = arn.rsplit(':').next().expect("name").to_owned();
    let by_name = sb
        .run(&["list-executions", "--state-machine-arn", &name])
        .json();
    assert_eq!(by_name, all);
    let by_arn = sb
        .run(&["list-executions", "--state-machine-arn", &arn])
        .json();
    assert_eq!(by_arn, by_name);
    let other = sb
        .run(&["list-executions", "--state-machine-arn", "other"])
        .json();
    assert_eq!(other, json!({"executions": []}));

    let first = sb.run(&[
        "get-execution-history",
        "--execution-arn",
        "a",
        "--max-items",
        "1",
    ]);
    let first = first.json();
    assert_eq!(first["events"][0]["type"], "ExecutionStarted");
    let token = first["NextToken"].as_str().expect("more events").to_owned();
    let rest = sb.run(&[
        "get-execution-history",
        "--execution-arn",
        "a",
        "--starting-token",
        &token,
    ]);
    let all = sb
        .run(&["get-execution-history", "--execution-arn", "a"])
        .json();
    let rest = rest.json();
    assert_eq!(
        rest["events"].as_array().map(Vec::len),
        all["events"].as_array().map(|e| e.len() - 1)
    );
    assert!(rest.get("NextToken").is_none());

    let bad = sb.run(&["list-executions", "--starting-token", "forged"]);
    bad.assert_error(11, "--starting-token");
}
