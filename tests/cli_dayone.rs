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

/// Writes an executable script into the sandbox.
fn script(sb: &Sandbox, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let p = sb.write(name, &format!("#!/bin/sh\n{body}\n"));
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p.display().to_string()
}

const CALLBACK_MACHINE: &str = r#"{
  "StartAt": "Wait",
  "States": {
    "Wait": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
             "Parameters": {"FunctionName": "f", "Payload": {"token.$": "$$.Task.Token"}},
             "TimeoutSeconds": 30, "End": true}
  }
}"#;

#[test]
fn workers_answer_the_database_given_with_db_and_see_the_region() {
    let sb = Sandbox::with_workers();
    let def = sb.write("cb.asl.json", CALLBACK_MACHINE);
    // The worker calls sfn-local with no --db: only the environment tells it where to answer.
    let worker = script(
        &sb,
        "worker.sh",
        r#""$SFN_LOCAL" send-task-success --task-token "$SFN_TASK_TOKEN" --task-output "{\"db\":\"$SFN_LOCAL_DB\",\"region\":\"$AWS_REGION\",\"account\":\"$SFN_LOCAL_ACCOUNT_ID\"}""#,
    );
    let other = sb.path("other.db");
    let out = sb.run(&[
        "run",
        def.to_str().unwrap(),
        "--db",
        other.to_str().unwrap(),
        "--region",
        "eu-west-1",
        "--account-id",
        "111122223333",
        "--task",
        &format!("Wait={worker}"),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let got = out.json();
    assert_eq!(got["db"], other.display().to_string());
    assert_eq!(got["region"], "eu-west-1");
    assert_eq!(got["account"], "111122223333");
    // The sandbox's own database (SFN_LOCAL_DB of the caller) was never created.
    assert!(!sb.db().exists());
}

#[test]
fn an_unknown_token_names_the_database_it_looked_in() {
    let sb = Sandbox::new();
    let token = format!("T{}", "A".repeat(43));
    let out = sb.run(&[
        "send-task-success",
        "--task-token",
        &token,
        "--task-output",
        "{}",
    ]);
    out.assert_error(10, "TaskDoesNotExist");
    assert!(
        out.stderr.contains(&sb.db().display().to_string()),
        "{}",
        out.stderr
    );
    assert!(!sb.db().exists(), "answering must not create a database");
}

#[test]
fn misconfigured_bindings_are_refused_before_the_execution_starts() {
    let sb = Sandbox::new();
    let def = sb.write(
        "m.asl.json",
        r#"{"StartAt": "Charge", "States": {
            "Charge": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
                       "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Failed"}], "End": true},
            "Failed": {"Type": "Fail", "Error": "PaymentFailed"}}}"#,
    );
    let not_executable = sb.write("plain.sh", "#!/bin/sh\necho {}\n");
    for (binding, message) in [
        (
            "Charge=./missing.sh".to_owned(),
            "'./missing.sh' does not exist",
        ),
        (
            format!("Charge={}", not_executable.display()),
            "is not executable (chmod +x",
        ),
        (
            "Charge=no-such-program-anywhere".to_owned(),
            "is not a program on PATH",
        ),
        (
            "Chrage=true".to_owned(),
            "no Task state named 'Chrage' (did you mean \"Charge\"?)",
        ),
    ] {
        let out = sb.run(&["run", def.to_str().unwrap(), "--task", &binding]);
        out.assert_error(2, message);
        assert!(!sb.db().exists(), "nothing is stored: {binding}");
    }
}

#[test]
fn reads_never_create_a_database_and_share_exit_statuses() {
    let sb = Sandbox::new();
    let missing = sb.path("no/such/x.db");
    for args in [
        vec!["describe-execution", "--execution-arn", "x"],
        vec!["get-execution-history", "--execution-arn", "x"],
        vec!["stop-execution", "--execution-arn", "x"],
        vec!["list-tasks", "--execution-arn", "x"],
        vec!["resume", "--execution-arn", "x"],
    ] {
        let mut args = args.clone();
        args.extend(["--db", missing.to_str().unwrap()]);
        let out = sb.run(&args);
        out.assert_error(15, "(ExecutionDoesNotExist)");
        assert!(
            out.stderr.contains(missing.to_str().unwrap()),
            "{}",
            out.stderr
        );
    }
    let out = sb.run(&["list-executions", "--db", missing.to_str().unwrap()]);
    assert_eq!(out.code, 0);
    assert!(
        out.stderr.contains(missing.to_str().unwrap()),
        "{}",
        out.stderr
    );
    assert_eq!(out.json()["executions"], serde_json::json!([]));
    assert!(!sb.path("no").exists(), "a read created a folder");

    // With a database, an unknown execution is the same status everywhere.
    let def = sb.write(
        "p.asl.json",
        r#"{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}"#,
    );
    assert_eq!(sb.run(&["run", def.to_str().unwrap()]).code, 0);
    for cmd in [
        "describe-execution",
        "get-execution-history",
        "stop-execution",
        "list-tasks",
        "resume",
    ] {
        let out = sb.run(&[cmd, "--execution-arn", "nope"]);
        out.assert_error(15, "ExecutionDoesNotExist");
        assert!(
            out.stderr.contains(&sb.db().display().to_string()),
            "{cmd}: {}",
            out.stderr
        );
    }
}

#[test]
fn a_lambda_function_bound_with_task_gets_its_event_and_returns_its_result() {
    let sb = Sandbox::new();
    let def = sb.write(
        "order.asl.json",
        r#"{"StartAt": "Price", "States": {
            "Price": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
                      "Parameters": {"FunctionName": "arn:aws:lambda:us-east-1:123456789012:function:price", "Payload": {"qty.$": "$.qty"}},
                      "ResultSelector": {"total.$": "$.Payload.total", "status.$": "$.StatusCode"},
                      "Next": "Legacy"},
            "Legacy": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:echo", "End": true}}}"#,
    );
    // The function as a user writes it: the event in, the result out, a log line on stderr.
    let price = script(
        &sb,
        "price.sh",
        r#"read event; echo "pricing $event for $AWS_LAMBDA_FUNCTION_NAME" >&2; echo "{\"total\": 42, \"event\": $event}""#,
    );
    let echo = script(&sb, "echo.sh", "cat");
    let out = sb.run(&[
        "run",
        def.to_str().unwrap(),
        "--name",
        "priced",
        "--input",
        r#"{"qty": 3}"#,
        "--task",
        &format!("Price={price}"),
        "--task",
        &format!("Legacy={echo}"),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // ResultSelector written for AWS works; the legacy resource passes it on unchanged.
    assert_eq!(out.json(), serde_json::json!({"total": 42, "status": 200}));
    // The function's stderr is forwarded, prefixed with the state.
    assert!(
        out.stderr.contains("[Price] pricing {\"qty\":3} for price"),
        "{}",
        out.stderr
    );
    let events = sb.history("priced");
    let succeeded = events
        .iter()
        .find(|e| e["type"] == "TaskSucceeded")
        .unwrap();
    let output: serde_json::Value = serde_json::from_str(
        succeeded["taskSucceededEventDetails"]["output"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    let keys: Vec<&str> = output
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "ExecutedVersion",
            "Payload",
            "SdkHttpMetadata",
            "SdkResponseMetadata",
            "StatusCode"
        ]
    );
    assert_eq!(
        output["Payload"],
        serde_json::json!({"total": 42, "event": {"qty": 3}})
    );
}

#[test]
fn a_lambda_error_fails_as_aws_reports_a_function_error() {
    let sb = Sandbox::new();
    let def = sb.write(
        "charge.asl.json",
        r#"{"StartAt": "Charge", "States": {
            "Charge": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
                       "Parameters": {"FunctionName": "charge", "Payload.$": "$"},
                       "Catch": [{"ErrorEquals": ["CardDeclined"], "Next": "Declined"}], "End": true},
            "Declined": {"Type": "Pass", "End": true}}}"#,
    );
    let charge = script(
        &sb,
        "charge.sh",
        r#"echo 'charging' >&2; echo '{"errorType": "CardDeclined", "errorMessage": "insufficient funds"}' >&2; exit 1"#,
    );
    let out = sb.run(&[
        "run",
        def.to_str().unwrap(),
        "--task",
        &format!("Charge={charge}"),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let got = out.json();
    assert_eq!(got["Error"], "CardDeclined");
    let cause: serde_json::Value = serde_json::from_str(got["Cause"].as_str().unwrap()).unwrap();
    assert_eq!(cause["errorMessage"], "insufficient funds");
    assert_eq!(cause["errorType"], "CardDeclined");
    // Its stderr is forwarded on failure too.
    assert!(out.stderr.contains("[Charge] charging"), "{}", out.stderr);
}

#[test]
fn inside_test_an_unmocked_task_is_advised_a_mock_not_a_flag_test_lacks() {
    let sb = Sandbox::new();
    let out = run_case(&sb, r#"{"name": "c", "expect": {"status": "SUCCEEDED"}}"#);
    assert_eq!(out.code, 1);
    assert!(
        out.stdout.contains("'Fetch' is not mocked"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("--task"), "{}", out.stdout);
}

#[test]
fn resume_takes_task_to_supply_or_replace_a_binding() {
    let sb = Sandbox::new().lease_ms(300);
    let def = sb.write(
        "slow.asl.json",
        r#"{"StartAt": "Publish", "States": {"Publish": {"Type": "Task", "Resource": "arn:aws:states:::sns:publish", "End": true}}}"#,
    );
    let mut run = sb.spawn(&[
        "run",
        def.to_str().unwrap(),
        "--name",
        "r",
        "--task",
        "Publish=sleep 20",
    ]);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let out = sb.run(&["get-execution-history", "--execution-arn", "r"]);
        if out.code == 0 && out.stdout.contains("TaskStarted") {
            break;
        }
        assert!(std::time::Instant::now() < until, "the task never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    common::kill(&mut run);
    let fixed = script(&sb, "fixed.sh", r#"echo '{"fixed": true}'"#);
    let binding = format!("Publish={fixed}");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let resume = |binding: &str| loop {
        let out = sb.run(&["resume", "--execution-arn", "r", "--task", binding]);
        if out.code == 2 && out.stderr.contains("lease") && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(100));
            continue;
        }
        break out;
    };
    resume("Pubish=true").assert_error(
        2,
        "no Task state named 'Pubish' (did you mean \"Publish\"?)",
    );
    let out = resume(&binding);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // The command stands in for SNS: what it printed, in Publish's response.
    let got = out.json();
    assert_eq!(got["fixed"], true, "{got}");
    assert!(got["MessageId"].is_string(), "{got}");
}

#[test]
fn the_default_database_is_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let def = sb.write(
        "p.asl.json",
        r#"{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}"#,
    );
    let state_home = sb.path("state");
    let out = sb.run_env(
        &["run", def.to_str().unwrap()],
        &[
            ("SFN_LOCAL_DB", ""),
            ("XDG_STATE_HOME", state_home.to_str().unwrap()),
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&state_home.join("sfn-local")), 0o700);
    assert_eq!(mode(&state_home.join("sfn-local/sfn-local.db")), 0o600);
    // A database named with --db is private too.
    let out = sb.run(&[
        "run",
        def.to_str().unwrap(),
        "--db",
        sb.path("mine.db").to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(mode(&sb.path("mine.db")), 0o600);
}

/// Regression (#38 item 4): a `--db` that is a symbolic link to a file not there yet got a
/// database, WAL and SHM with mode 0644 (the owner-only rule was skipped because the link
/// existed; SQLite followed it and created the file with the default mode).
#[test]
fn a_db_through_a_dangling_symlink_creates_owner_only_files() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let def = sb.write(
        "p.asl.json",
        r#"{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":1,"End":true}}}"#,
    );
    std::fs::create_dir(sb.path("data")).unwrap();
    std::os::unix::fs::symlink("data/real.db", sb.path("link.db")).unwrap();
    let out = sb.run(&[
        "run",
        def.to_str().unwrap(),
        "--clock",
        "virtual",
        "--db",
        sb.path("link.db").to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    for file in ["data/real.db", "data/real.db-wal", "data/real.db-shm"] {
        let path = sb.path(file);
        if path.exists() {
            assert_eq!(mode(&path), 0o600, "{file}");
        }
    }
    assert!(sb.path("data/real.db").exists());
}

#[test]
fn why_an_execution_failed_is_shown_behind_the_catch() {
    let sb = Sandbox::new();
    let def = sb.write(
        "pay.asl.json",
        r#"{"StartAt": "Charge", "States": {
            "Charge": {"Type": "Task", "Resource": "arn:aws:states:::sns:publish",
                       "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "PaymentFailed"}], "End": true},
            "PaymentFailed": {"Type": "Fail", "Error": "PaymentFailed", "Cause": "see the logs"}}}"#,
    );
    let charge = script(
        &sb,
        "charge.sh",
        r#"echo '{"Error": "CardDeclined", "Cause": "insufficient funds"}' >&2; exit 1"#,
    );
    let out = sb.run(&[
        "run",
        def.to_str().unwrap(),
        "--name",
        "pay-1",
        "--task",
        &format!("Charge={charge}"),
    ]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains(
            "failed at state 'Charge': CardDeclined: insufficient funds (caught; went on to 'PaymentFailed')"
        ),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("sfn-local: execution pay-1 FAILED"),
        "{}",
        out.stderr
    );

    let text = sb.run(&[
        "describe-execution",
        "--execution-arn",
        "pay-1",
        "--format",
        "text",
    ]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(
        text.stdout.contains("execution  pay-1 (FAILED)"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .contains("why        failed at state 'Charge': CardDeclined"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.contains("states     Charge → PaymentFailed"),
        "{}",
        text.stdout
    );
    // The default stays AWS's JSON.
    assert_eq!(
        sb.run(&["describe-execution", "--execution-arn", "pay-1"])
            .json()["status"],
        "FAILED"
    );

    let table = sb.run(&[
        "get-execution-history",
        "--execution-arn",
        "pay-1",
        "--format",
        "table",
    ]);
    assert_eq!(table.code, 0, "{}", table.stderr);
    let failed = table
        .stdout
        .lines()
        .find(|l| l.contains("TaskFailed"))
        .unwrap();
    assert!(
        failed.contains("Charge") && failed.contains("CardDeclined: insufficient funds"),
        "{failed}"
    );
    assert!(table.stdout.starts_with("ID"), "{}", table.stdout);
}

#[test]
fn reads_take_the_aws_cli_output_and_query_options() {
    let sb = Sandbox::new();
    let def = sb.write(
        "p.asl.json",
        r#"{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}"#,
    );
    for name in ["one", "two"] {
        assert_eq!(
            sb.run(&["run", def.to_str().unwrap(), "--name", name]).code,
            0
        );
    }
    let out = sb.run(&[
        "list-executions",
        "--query",
        "executions[].name",
        "--output",
        "text",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "two\tone");
    let out = sb.run(&[
        "describe-execution",
        "--execution-arn",
        "one",
        "--query",
        "status",
    ]);
    assert_eq!(out.stdout.trim(), "\"SUCCEEDED\"");
    let out = sb.run(&[
        "get-execution-history",
        "--execution-arn",
        "one",
        "--query",
        "length(events)",
    ]);
    assert_eq!(out.stdout.trim(), "4");
    let out = sb.run(&["list-executions", "--query", "executions[?"]);
    out.assert_error(14, "not JMESPath");
    let out = sb.run(&["list-executions", "--format", "table"]);
    assert!(out.stdout.starts_with("executionArn"), "{}", out.stdout);
}

#[test]
fn start_execution_runs_in_the_background_and_files_work_as_in_the_aws_cli() {
    let sb = Sandbox::new();
    let def = sb.write(
        "wait.asl.json",
        r#"{"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 1, "Next": "P"}, "P": {"Type": "Pass", "End": true}}}"#,
    );
    let input = sb.write("input.json", r#"{"from": "a file"}"#);
    let out = sb.run(&[
        "start-execution",
        &format!("file://{}", def.display()),
        "--name",
        "bg",
        "--input",
        &format!("file://{}", input.display()),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let started = out.json();
    assert!(
        started["executionArn"]
            .as_str()
            .unwrap()
            .ends_with(":execution:wait:bg"),
        "{started}"
    );
    assert!(started["startDate"].is_string());
    // It runs on after start-execution returned.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let described = loop {
        let d = sb
            .run(&["describe-execution", "--execution-arn", "bg"])
            .json();
        if d["status"] != "RUNNING" || std::time::Instant::now() > until {
            break d;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(described["status"], "SUCCEEDED", "{described}");
    assert_eq!(described["output"], r#"{"from":"a file"}"#);
    // A refusal of the runner is start-execution's.
    let again = sb.run(&["start-execution", def.to_str().unwrap(), "--name", "bg"]);
    again.assert_error(2, "ExecutionAlreadyExists");
    // send-task-failure takes its cause from a file too.
    let cause = sb.write("cause.txt", "from a file");
    let out = sb.run(&[
        "send-task-failure",
        "--task-token",
        &format!("T{}", "A".repeat(43)),
        "--cause",
        &format!("file://{}", cause.display()),
    ]);
    out.assert_error(10, "TaskDoesNotExist");
    let out = sb.run(&[
        "send-task-failure",
        "--task-token",
        &format!("T{}", "A".repeat(43)),
        "--cause",
        "file:///no/such/file",
    ]);
    out.assert_error(2, "/no/such/file");
}

#[test]
fn completions_are_printed_for_the_common_shells() {
    let sb = Sandbox::new();
    for shell in ["bash", "zsh", "fish"] {
        let out = sb.run(&["completions", shell]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(out.stdout.contains("describe-execution"), "{shell}");
    }
}

#[test]
fn commands_standing_in_for_services_get_aws_response_shapes() {
    let sb = Sandbox::new();
    let def = sb.write(
        "order.asl.json",
        r#"{"StartAt": "Notify", "States": {
            "Notify": {"Type": "Task", "Resource": "arn:aws:states:::sns:publish",
                       "Parameters": {"TopicArn": "arn:aws:sns:us-east-1:123456789012:orders", "Message.$": "$.order"},
                       "ResultSelector": {"id.$": "$.MessageId", "status.$": "$.SdkHttpMetadata.HttpStatusCode"},
                       "ResultPath": "$.sns", "Next": "Queue"},
            "Queue": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage",
                      "Parameters": {"QueueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/q", "MessageBody": "hello"},
                      "ResultSelector": {"md5.$": "$.MD5OfMessageBody", "id.$": "$.MessageId"},
                      "ResultPath": "$.sqs", "Next": "Load"},
            "Load": {"Type": "Task", "Resource": "arn:aws:states:::dynamodb:getItem",
                     "Parameters": {"TableName": "orders", "Key": {"id": {"S.$": "$.order"}}},
                     "ResultSelector": {"status.$": "$.Item.status.S", "request.$": "$.SdkResponseMetadata.RequestId"},
                     "ResultPath": "$.ddb", "Next": "Announce"},
            "Announce": {"Type": "Task", "Resource": "arn:aws:states:::events:putEvents",
                         "Parameters": {"Entries": [{"Source": "shop", "DetailType": "paid", "Detail": {}}, {"Source": "shop", "DetailType": "sent", "Detail": {}}]},
                         "ResultPath": "$.events", "Next": "Sdk"},
            "Sdk": {"Type": "Task", "Resource": "arn:aws:states:::aws-sdk:s3:listBuckets",
                    "Parameters": {}, "ResultPath": "$.s3", "End": true}}}"#,
    );
    // The services as a user writes them: SNS and SQS append to an outbox and print nothing,
    // DynamoDB answers GetItem from its request, EventBridge prints nothing, S3 its buckets.
    let outbox = sb.path("outbox.jsonl");
    let append = format!("cat >> {}; echo >> {}", outbox.display(), outbox.display());
    let sns = script(&sb, "sns.sh", &append);
    let sqs = script(&sb, "sqs.sh", &append);
    let ddb = script(
        &sb,
        "ddb.sh",
        r#"read req; echo "{\"Item\": {\"id\": $(echo "$req" | sed 's/.*"Key":{"id":\(.*\)}}/\1/'), \"status\": {\"S\": \"PAID\"}}}""#,
    );
    let events = script(&sb, "events.sh", "cat > /dev/null");
    let s3 = script(&sb, "s3.sh", r#"echo '{"Buckets": [{"Name": "b"}]}'"#);
    let out = sb.run(&[
        "run",
        def.to_str().unwrap(),
        "--name",
        "services",
        "--input",
        r#"{"order": "o-1"}"#,
        "--task",
        &format!("Notify={sns}"),
        "--task",
        &format!("Queue={sqs}"),
        "--task",
        &format!("Load={ddb}"),
        "--task",
        &format!("Announce={events}"),
        "--task",
        &format!("Sdk={s3}"),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let got = out.json();
    // SNS: a generated MessageId and the SDK metadata AWS adds.
    assert!(got["sns"]["id"].as_str().unwrap().len() >= 32, "{got}");
    assert_eq!(got["sns"]["status"], 200);
    // SQS: the body's MD5, as SQS computes it.
    assert_eq!(got["sqs"]["md5"], "5d41402abc4b2a76b9719d911017c592");
    // DynamoDB: the printed response with AWS's metadata around it.
    assert_eq!(got["ddb"]["status"], "PAID");
    assert!(got["ddb"]["request"].is_string(), "{got}");
    // EventBridge: one EventId per entry, no failures, and no SDK metadata (as on AWS).
    assert_eq!(got["events"]["Entries"].as_array().unwrap().len(), 2);
    assert_eq!(got["events"]["FailedEntryCount"], 0);
    assert!(got["events"].get("SdkHttpMetadata").is_none());
    // aws-sdk: exactly what the command printed.
    assert_eq!(got["s3"], serde_json::json!({"Buckets": [{"Name": "b"}]}));
    // The commands got the request parameters on stdin.
    let sent = std::fs::read_to_string(&outbox).unwrap();
    let sent: Vec<serde_json::Value> = sent
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(sent[0]["Message"], "o-1");
    assert_eq!(sent[1]["MessageBody"], "hello");
}

#[test]
fn start_execution_answers_with_its_own_execution_when_two_machines_share_the_name() {
    let sb = Sandbox::new();
    let wait = r#"{"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 2, "End": true}}}"#;
    let first = sb.write("first.asl.json", wait);
    let second = sb.write("second.asl.json", wait);
    // The same execution name under two machines, within the same second.
    for (def, machine) in [(&first, "first"), (&second, "second")] {
        let out = sb.run(&["start-execution", def.to_str().unwrap(), "--name", "same"]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let arn = out.json()["executionArn"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            arn.ends_with(&format!(":execution:{machine}:same")),
            "{arn}"
        );
    }
}

#[test]
fn start_execution_takes_a_state_machine_arn_the_database_knows() {
    let sb = Sandbox::new();
    let def = sb.write(
        "greet.asl.json",
        r#"{"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 1, "Next": "P"}, "P": {"Type": "Pass", "Parameters": {"hello.$": "$.who"}, "End": true}}}"#,
    );
    let first = sb.run(&[
        "run",
        def.to_str().unwrap(),
        "--name",
        "first",
        "--input",
        r#"{"who": "a"}"#,
    ]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let machine_arn = sb
        .run(&["describe-execution", "--execution-arn", "first"])
        .json()["stateMachineArn"]
        .as_str()
        .unwrap()
        .to_owned();
    // As the AWS CLI spells it.
    let out = sb.run(&[
        "start-execution",
        "--state-machine-arn",
        &machine_arn,
        "--name",
        "second",
        "--input",
        r#"{"who": "b"}"#,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let started = out.json();
    assert!(
        started["executionArn"]
            .as_str()
            .unwrap()
            .ends_with(":execution:greet:second"),
        "{started}"
    );
    assert!(started["startDate"].is_string());
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let described = loop {
        let d = sb
            .run(&["describe-execution", "--execution-arn", "second"])
            .json();
        if d["status"] != "RUNNING" || std::time::Instant::now() > until {
            break d;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(described["status"], "SUCCEEDED", "{described}");
    assert_eq!(described["output"], r#"{"hello":"b"}"#);
    assert_eq!(described["stateMachineArn"], machine_arn.as_str());
    // A machine the database does not know is AWS's error, and nothing starts.
    let out = sb.run(&[
        "start-execution",
        "--state-machine-arn",
        "arn:aws:states:us-east-1:123456789012:stateMachine:nope",
    ]);
    out.assert_error(17, "StateMachineDoesNotExist");
}

#[test]
fn resume_takes_run_binding_options() {
    let sb = Sandbox::new().lease_ms(300);
    let def = sb.write(
        "two.asl.json",
        r#"{"StartAt": "First", "States": {
            "First": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:first", "Next": "Second"},
            "Second": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:second", "End": true}}}"#,
    );
    let mocks = sb.write(
        "two.mocks.json",
        r#"{"StateMachines": {"two": {"TestCases": {"Ok": {"Second": "R"}}}},
            "MockedResponses": {"R": {"0": {"Return": {"mocked": true}}}}}"#,
    );
    let mut run = sb.spawn(&[
        "run",
        def.to_str().unwrap(),
        "--name",
        "m",
        "--task",
        "First=sleep 20",
    ]);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let out = sb.run(&["get-execution-history", "--execution-arn", "m"]);
        if out.code == 0 && out.stdout.contains("LambdaFunctionStarted") {
            break;
        }
        assert!(std::time::Instant::now() < until, "the task never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    common::kill(&mut run);
    let first = script(&sb, "first.sh", "cat");
    let task = format!("First={first}");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let out = loop {
        let out = sb.run(&[
            "resume",
            "--execution-arn",
            "m",
            "--task",
            &task,
            "--mock-config",
            mocks.to_str().unwrap(),
            "--test-case",
            "Ok",
        ]);
        if out.code == 2 && out.stderr.contains("lease") && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(100));
            continue;
        }
        break out;
    };
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), serde_json::json!({"mocked": true}));
    // The other options are resume's too.
    let help = sb.run(&["resume", "--help"]);
    for option in [
        "--worker",
        "--endpoint",
        "--mock-config",
        "--test-case",
        "--s3-dir",
        "--heartbeat",
    ] {
        assert!(help.stdout.contains(option), "{option}: {}", help.stdout);
    }
}

#[test]
fn every_command_takes_quiet_verbose_and_color() {
    let sb = Sandbox::new();
    let bad = sb.write(
        "bad.asl.json",
        r#"{"StartAt": "A", "States": {"A": {"Type": "Pass", "Nxt": "B"}, "B": {"Type": "Pass", "End": true}}}"#,
    );
    let always = sb.run(&["--color", "always", "validate", bad.to_str().unwrap()]);
    assert_eq!(always.code, 1);
    assert!(always.stdout.contains('\u{1b}'), "{}", always.stdout);
    let never = sb.run(&["validate", bad.to_str().unwrap(), "--color", "never"]);
    assert!(!never.stdout.contains('\u{1b}'), "{}", never.stdout);
    // An unknown field gets "did you mean".
    assert!(
        never.stdout.contains("did you mean \"Next\""),
        "{}",
        never.stdout
    );
    let no_color = sb.run_env(&["validate", bad.to_str().unwrap()], &[("NO_COLOR", "1")]);
    assert!(!no_color.stdout.contains('\u{1b}'));
    for command in [
        vec!["list-executions"],
        vec!["list-tasks"],
        vec!["completions", "bash"],
    ] {
        for flag in ["-q", "-v", "--color=never"] {
            let mut args = command.clone();
            args.push(flag);
            let out = sb.run(&args);
            assert_ne!(out.code, 2, "{args:?}: {}", out.stderr);
        }
    }
    // `test -v` lists the cases that passed too.
    let listed = sb.run(&["test", "-v", "definitions/order-pipeline.sfntest.json"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(listed.stdout.contains("ok   "), "{}", listed.stdout);
    // Warnings of a definition are shown on its first run, then once more only with -v.
    let warned = sb.write(
        "warned.asl.json",
        r#"{"StartAt": "A", "States": {"A": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken", "Parameters": {"FunctionName": "f"}, "TimeoutSeconds": 1, "End": true}}}"#,
    )
    .to_str()
    .unwrap()
    .to_owned();
    let first = sb.run(&["run", &warned, "--time-scale", "0.01"]);
    assert!(
        first.stderr.contains("MISSING_TASK_TOKEN"),
        "{}",
        first.stderr
    );
    let second = sb.run(&["run", &warned, "--time-scale", "0.01"]);
    assert!(
        !second.stderr.contains("MISSING_TASK_TOKEN"),
        "{}",
        second.stderr
    );
    assert!(
        second.stderr.contains("shown on its first run"),
        "{}",
        second.stderr
    );
    let verbose = sb.run(&["run", &warned, "--time-scale", "0.01", "-v"]);
    assert!(
        verbose.stderr.contains("MISSING_TASK_TOKEN"),
        "{}",
        verbose.stderr
    );
    let quiet = sb.run(&["-q", "run", &warned, "--time-scale", "0.01"]);
    assert!(!quiet.stderr.contains("warning"), "{}", quiet.stderr);
    assert!(!quiet.stderr.contains("why and how"), "{}", quiet.stderr);
}

#[test]
fn a_misspelled_transition_gets_did_you_mean_and_no_cascade() {
    let sb = Sandbox::new();
    let def = sb.write(
        "typo.asl.json",
        r#"{"StartAt": "Chrge", "States": {
            "Charge": {"Type": "Pass", "Next": "Shp"},
            "Ship": {"Type": "Choice", "Choices": [{"Variable": "$.x", "IsPresent": true, "Next": "Done"}], "Default": "Dne"},
            "Done": {"Type": "Succeed"}}}"#,
    );
    let out = sb.run(&["validate", def.to_str().unwrap(), "--format", "json"]);
    assert_eq!(out.code, 1);
    let messages: Vec<String> = out.json()["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["message"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        messages.contains(&"Missing 'StartAt' target: Chrge (did you mean \"Charge\"?)".to_owned()),
        "{messages:?}"
    );
    let fixed = sb.write(
        "typo2.asl.json",
        r#"{"StartAt": "Charge", "States": {
            "Charge": {"Type": "Pass", "Next": "Shp"},
            "Ship": {"Type": "Choice", "Choices": [{"Variable": "$.x", "IsPresent": true, "Next": "Done"}], "Default": "Dne"},
            "Done": {"Type": "Succeed"}}}"#,
    );
    let out = sb.run(&["validate", fixed.to_str().unwrap(), "--format", "json"]);
    let messages: Vec<String> = out.json()["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["message"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        messages,
        [
            "Missing 'Next' target: Shp (did you mean \"Ship\"?)",
            "Missing 'Default' target: Dne (did you mean \"Done\"?)"
        ],
        "no 'not reachable' for Ship, which the typo meant"
    );
    // A variable read under a name close to one assigned.
    let vars = sb.write(
        "vars.asl.json",
        r#"{"QueryLanguage": "JSONata", "StartAt": "A", "States": {
            "A": {"Type": "Pass", "Assign": {"total": 1}, "Next": "B"},
            "B": {"Type": "Pass", "Output": "{% $totl %}", "End": true}}}"#,
    );
    let out = sb.run(&["validate", vars.to_str().unwrap(), "--format", "json"]);
    assert!(
        out.stdout.contains("(did you mean '$total'?)"),
        "{}",
        out.stdout
    );
}

#[test]
fn validate_json_has_one_shape_per_command_and_list_tasks_numbers_attempts_alike() {
    let sb = Sandbox::with_workers();
    let dir = sb.path("machines");
    std::fs::create_dir(&dir).unwrap();
    let one = dir.join("one.asl.json");
    std::fs::write(
        &one,
        r#"{"StartAt": "A", "States": {"A": {"Type": "Pass", "End": true}}}"#,
    )
    .unwrap();
    // A folder gives an array even when it holds one definition.
    let out = sb.run(&["validate", "--format", "json", dir.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.json().is_array(), "{}", out.stdout);
    // One file gives AWS's object; json-array always an array.
    let out = sb.run(&["validate", "--format", "json", one.to_str().unwrap()]);
    assert_eq!(out.json()["result"], "OK");
    let out = sb.run(&["validate", "--format", "json-array", one.to_str().unwrap()]);
    assert_eq!(out.json()[0]["result"], "OK");
    // list-tasks: attempt 1 is the first in text and JSON, under a header.
    let def = sb.write("cb.asl.json", CALLBACK_MACHINE);
    let mut run = sb.spawn(&["run", def.to_str().unwrap(), "--name", "waiting"]);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let listed = loop {
        let out = sb.run(&["list-tasks", "--format", "json"]);
        if out.code == 0 && out.json()["tasks"][0]["taskToken"].is_string() {
            break out.json();
        }
        assert!(std::time::Instant::now() < until, "no task appeared");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(listed["tasks"][0]["attempt"], 1);
    assert_eq!(listed["tasks"][0]["retryCount"], 0);
    let text = sb.run(&["list-tasks"]);
    let mut lines = text.stdout.lines();
    assert!(
        lines.next().unwrap().starts_with("TASK TOKEN\t"),
        "{}",
        text.stdout
    );
    assert!(
        lines.next().unwrap().contains("Wait (attempt 1)"),
        "{}",
        text.stdout
    );
    let quiet = sb.run(&["list-tasks", "-q"]);
    assert!(!quiet.stdout.contains("TASK TOKEN"), "{}", quiet.stdout);
    common::kill(&mut run);
}

#[test]
fn sigterm_gets_the_same_resume_hint_as_ctrl_c() {
    let sb = Sandbox::new();
    let def = sb.write("cb.asl.json", CALLBACK_MACHINE);
    let run = sb.spawn(&["run", def.to_str().unwrap(), "--name", "termed"]);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let out = sb.run(&["list-tasks", "--format", "json"]);
        if out.code == 0 && out.json()["tasks"][0]["taskToken"].is_string() {
            break;
        }
        assert!(std::time::Instant::now() < until, "no task appeared");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // What `kill` (or a CI runner cancelling a job) sends.
    let pid = run.id().to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    let out = common::Output::of(run);
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("stays RUNNING"), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("resume it:  sfn-local resume --execution-arn"),
        "{}",
        out.stderr
    );
    let described = sb
        .run(&["describe-execution", "--execution-arn", "termed"])
        .json();
    assert_eq!(described["status"], "RUNNING");
}

#[test]
fn start_execution_starts_a_machine_created_through_serves_api_with_the_aws_cli() {
    // The real AWS CLI (.ci/deps installs it; missing is a failure, as for every client test).
    let aws = common::deps_python_bin("aws");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let sb = Sandbox::new();
    let mut serve = sb.spawn(&["serve", "--port", &port.to_string()]);
    let endpoint = format!("http://127.0.0.1:{port}");
    let aws_cli = |args: &[&str]| {
        std::process::Command::new(&aws)
            .args([
                "--endpoint-url",
                &endpoint,
                "--output",
                "json",
                "stepfunctions",
            ])
            .args(args)
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_DEFAULT_REGION", "eu-west-1")
            .env("AWS_PAGER", "")
            .output()
            .unwrap()
    };
    let definition = r#"{"StartAt": "P", "States": {"P": {"Type": "Pass", "Parameters": {"made.$": "$.by"}, "End": true}}}"#;
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let created = loop {
        let out = aws_cli(&[
            "create-state-machine",
            "--name",
            "made-by-api",
            "--definition",
            definition,
            "--role-arn",
            "arn:aws:iam::123456789012:role/r",
        ]);
        if out.status.success() {
            break serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap();
        }
        assert!(
            std::time::Instant::now() < until,
            "serve never answered: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    let arn = created["stateMachineArn"].as_str().unwrap().to_owned();
    assert!(arn.contains(":eu-west-1:"), "{arn}");
    let out = sb.run(&[
        "start-execution",
        "--state-machine-arn",
        &arn,
        "--name",
        "from-cli",
        "--input",
        r#"{"by": "the api"}"#,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let started = out.json();
    assert_eq!(
        started["executionArn"],
        arn.replace(":stateMachine:", ":execution:") + ":from-cli"
    );
    // The AWS CLI sees it through serve: one world.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let described = loop {
        let out = aws_cli(&[
            "describe-execution",
            "--execution-arn",
            started["executionArn"].as_str().unwrap(),
        ]);
        let d: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if d["status"] == "SUCCEEDED" || std::time::Instant::now() > until {
            break d;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(described["status"], "SUCCEEDED", "{described}");
    assert_eq!(described["output"], r#"{"made":"the api"}"#);
    // A published version's ARN starts that version's definition.
    let published = aws_cli(&["publish-state-machine-version", "--state-machine-arn", &arn]);
    assert!(published.status.success(), "{published:?}");
    let version: serde_json::Value = serde_json::from_slice(&published.stdout).unwrap();
    let out = sb.run(&[
        "run",
        "--state-machine-arn",
        version["stateMachineVersionArn"].as_str().unwrap(),
        "--input",
        r#"{"by": "a version"}"#,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), serde_json::json!({"made": "a version"}));
    common::kill(&mut serve);
}

#[test]
fn a_binding_given_to_resume_is_kept_for_the_next_resume() {
    let sb = Sandbox::new().lease_ms(300);
    let def = sb.write(
        "slow.asl.json",
        r#"{"StartAt": "Work", "States": {"Work": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:work", "End": true}}}"#,
    );
    let started = |child: &mut std::process::Child| {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let out = sb.run(&["get-execution-history", "--execution-arn", "k"]);
            let starts = out.stdout.matches("LambdaFunctionStarted").count();
            if out.code == 0 && starts > 0 && sb.path("marker").exists() == (starts > 1) {
                break;
            }
            assert!(std::time::Instant::now() < until, "the task never started");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        common::kill(child);
    };
    let mut run = sb.spawn(&[
        "run",
        def.to_str().unwrap(),
        "--name",
        "k",
        "--task",
        "Work=sleep 30",
    ]);
    started(&mut run);
    // The fixed command hangs once (the runner dies again), then answers.
    let marker = sb.path("marker");
    let fixed = script(
        &sb,
        "fixed.sh",
        &format!(
            r#"if [ -e {m} ]; then echo '{{"second": true}}'; else touch {m}; sleep 30; fi"#,
            m = marker.display()
        ),
    );
    let binding = format!("Work={fixed}");
    let resume = |args: &[&str]| {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let mut all = vec!["resume", "--execution-arn", "k"];
            all.extend_from_slice(args);
            let mut child = sb.spawn(&all);
            std::thread::sleep(std::time::Duration::from_millis(300));
            match child.try_wait().unwrap() {
                Some(_) => {
                    let out = common::Output::of(child);
                    if out.stderr.contains("lease") && std::time::Instant::now() < until {
                        continue;
                    }
                    break (None, Some(out));
                }
                None => break (Some(child), None),
            }
        }
    };
    let (child, _) = resume(&["--task", &binding]);
    let mut child = child.expect("the resumed task runs");
    started(&mut child);
    // No --task now: the binding given to the last resume is the execution's.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let out = loop {
        let out = sb.run(&["resume", "--execution-arn", "k"]);
        if out.code == 2 && out.stderr.contains("lease") && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(100));
            continue;
        }
        break out;
    };
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), serde_json::json!({"second": true}));
}

#[test]
fn a_distributed_maps_children_are_executions_the_reads_describe_list_and_page() {
    let sb = Sandbox::new();
    let def = sb.write(
        "fan.asl.json",
        r#"{"StartAt": "Fan", "States": {"Fan": {"Type": "Map", "Label": "Each", "End": true,
            "ItemProcessor": {"ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
              "StartAt": "Double", "States": {"Double": {"Type": "Pass",
                "Parameters": {"twice.$": "States.MathAdd($.n, $.n)"}, "End": true}}}}}}"#,
    );
    let out = sb.run(&[
        "run",
        def.to_str().unwrap(),
        "--name",
        "parent",
        "--input",
        r#"[{"n": 1}, {"n": 2}]"#,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // The parent's history names the run; the run lists its children.
    let parent = sb.run(&["get-execution-history", "--execution-arn", "parent"]);
    let events = parent.json()["events"].as_array().unwrap().clone();
    let run = events
        .iter()
        .find_map(|e| e["mapRunStartedEventDetails"]["mapRunArn"].as_str())
        .expect("a MapRunStarted")
        .to_owned();
    let listed = sb.run(&["list-executions", "--map-run-arn", &run]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let children = listed.json()["executions"].as_array().unwrap().clone();
    assert_eq!(children.len(), 2, "{children:?}");
    assert!(children
        .iter()
        .all(|c| c["mapRunArn"] == run.as_str() && c["status"] == "SUCCEEDED"));
    for child in &children {
        let arn = child["executionArn"].as_str().unwrap();
        assert!(arn.contains(":execution:fan/Each:"), "{arn}");
        let described = sb.run(&[
            "describe-execution",
            "--execution-arn",
            arn,
            "--output",
            "json",
        ]);
        assert_eq!(described.code, 0, "{}", described.stderr);
        let d = described.json();
        assert_eq!(d["mapRunArn"], run.as_str(), "{d}");
        let input: serde_json::Value = serde_json::from_str(d["input"].as_str().unwrap()).unwrap();
        let output: serde_json::Value =
            serde_json::from_str(d["output"].as_str().unwrap()).unwrap();
        assert_eq!(output["twice"], input["n"].as_i64().unwrap() * 2, "{d}");
        // Its own history, paged and reversed as the AWS CLI pages a history.
        let history = sb.run(&["get-execution-history", "--execution-arn", arn]);
        let types: Vec<String> = history.json()["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["type"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            types,
            [
                "ExecutionStarted",
                "PassStateEntered",
                "PassStateExited",
                "ExecutionSucceeded"
            ]
        );
        let newest = sb.run(&[
            "get-execution-history",
            "--execution-arn",
            arn,
            "--reverse-order",
            "--max-items",
            "1",
        ]);
        let page = newest.json();
        assert_eq!(page["events"][0]["type"], "ExecutionSucceeded", "{page}");
        assert!(page["NextToken"].is_string(), "{page}");
    }
    let unknown = format!("{run}0");
    sb.run(&["list-executions", "--map-run-arn", &unknown])
        .assert_error(19, "(ResourceNotFound)");
    sb.run(&[
        "get-execution-history",
        "--execution-arn",
        &format!("{}x", children[0]["executionArn"].as_str().unwrap()),
    ])
    .assert_error(15, "(ExecutionDoesNotExist)");
}

/// Regression (#36): the "why" line said `States.Timeout` without saying which clock ran out.
/// A command that never answers meets its HeartbeatSeconds (5 s) before its TimeoutSeconds
/// (100 s), and in the other machine its TimeoutSeconds; at --time-scale 0.01 both are short
/// (run waits for TimeoutSeconds before it ends: the command is not stopped at the heartbeat).
#[test]
fn the_why_line_names_the_clock_that_ran_out() {
    let sb = Sandbox::new();
    for (name, clocks, line) in [
        (
            "heartbeat",
            r#""HeartbeatSeconds": 5, "TimeoutSeconds": 100"#,
            "failed at state 'Work': States.Timeout: HeartbeatSeconds of 'Work' ran out after 5 s",
        ),
        (
            "timeout",
            r#""TimeoutSeconds": 5"#,
            "failed at state 'Work': States.Timeout: TimeoutSeconds of 'Work' ran out after 5 s",
        ),
    ] {
        let def = sb.write(
            &format!("{name}.asl.json"),
            &format!(
                r#"{{"StartAt": "Work", "States": {{"Work": {{"Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke", {clocks}, "End": true}}}}}}"#
            ),
        );
        let out = sb.run(&[
            "run",
            def.to_str().unwrap(),
            "--name",
            name,
            "--task",
            "Work=sleep 600",
            "--time-scale",
            "0.01",
        ]);
        assert_eq!(out.code, 1, "{}", out.stderr);
        assert!(out.stderr.contains(line), "{}", out.stderr);
        let text = sb.run(&[
            "describe-execution",
            "--execution-arn",
            name,
            "--format",
            "text",
        ]);
        assert!(text.stdout.contains(line), "{}", text.stdout);
    }
}
