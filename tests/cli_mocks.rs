//! `run --mock-config`: AWS Step Functions Local's MockConfigFile, read unchanged, through the
//! binary: Return/Throw per invocation (retries and ranges included), running out, mocked
//! callbacks and activities with AWS's events, `Delay` against heartbeats and timeouts, test
//! case selection (`--test-case`, `DEFINITION#CASE`, `NAME#CASE`, `SFN_MOCK_CONFIG`), and
//! `--task` bindings winning over mocks.

mod common;

use common::{types, Output, Sandbox};
use serde_json::{json, Value};

const MACHINE: &str = r#"{
  "StartAt": "Charge",
  "States": {
    "Charge": {
      "Type": "Task",
      "Resource": "arn:aws:states:::lambda:invoke",
      "Parameters": {"FunctionName": "charge", "Payload.$": "$"},
      "ResultSelector": {"charged.$": "$.Payload.charged"},
      "ResultPath": "$.charge",
      "Retry": [{"ErrorEquals": ["Lambda.TooManyRequestsException"], "IntervalSeconds": 1, "MaxAttempts": 3}],
      "Next": "Notify"
    },
    "Notify": {
      "Type": "Task",
      "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
      "Parameters": {"QueueUrl": "q", "MessageBody": {"token.$": "$$.Task.Token"}},
      "ResultPath": "$.ack",
      "HeartbeatSeconds": 5,
      "TimeoutSeconds": 60,
      "Next": "Work"
    },
    "Work": {
      "Type": "Task",
      "Resource": "arn:aws:states:us-east-1:123456789012:activity:packer",
      "ResultPath": "$.packed",
      "End": true
    }
  }
}"#;

const MOCKS: &str = r#"{
  "StateMachines": {
    "shop": {
      "TestCases": {
        "Happy": {"Charge": "Charged", "Notify": "Acked", "Work": "Packed"},
        "Throttled": {"Charge": "ThrottledTwice", "Notify": "Acked", "Work": "Packed"},
        "AlwaysThrottled": {"Charge": "ThrottledTwice"},
        "SlowWorker": {"Charge": "Charged", "Notify": "TooSlow"},
        "DeadWorker": {"Charge": "Charged", "Notify": "Dead"},
        "Declined": {"Charge": "Declined"},
        "BadState": {"Nope": "Charged"}
      }
    }
  },
  "MockedResponses": {
    "Charged": {"0": {"Return": {"StatusCode": 200, "Payload": {"charged": 42}}}},
    "ThrottledTwice": {
      "0-1": {"Throw": {"Error": "Lambda.TooManyRequestsException", "Cause": "slow down"}},
      "2": {"Return": {"Payload": {"charged": 7}}}
    },
    "Declined": {"0": {"Throw": {"Error": "Payment.Declined", "Cause": "card refused"}}},
    "Acked": {"0": {"Return": {"ack": true}}},
    "TooSlow": {"0": {"Return": {"ack": "late"}, "Delay": 6}},
    "Dead": {"0": {"NeverAnswers": true}},
    "Packed": {"0": {"Return": {"box": 3}}}
  }
}"#;

/// A sandbox with the shop machine and its mock config written into it.
struct Shop {
    sb: Sandbox,
    /// Path of `shop.asl.json` ([`MACHINE`]).
    def: String,
    /// Path of `MockConfigFile.json` ([`MOCKS`]).
    mocks: String,
}

impl Shop {
    fn new() -> Self {
        let sb = Sandbox::new();
        let def = sb.write("shop.asl.json", MACHINE).display().to_string();
        let mocks = sb.write("MockConfigFile.json", MOCKS).display().to_string();
        Shop { sb, def, mocks }
    }

    /// `run` of the shop machine as execution `name`, mocked by the test case `case`, with
    /// `extra` arguments.
    fn run_case(&self, case: &str, name: &str, extra: &[&str]) -> Output {
        let mut args = vec![
            "run",
            &self.def,
            "--mock-config",
            &self.mocks,
            "--test-case",
            case,
            "--name",
            name,
        ];
        args.extend(extra);
        self.sb.run(&args)
    }
}

#[test]
fn the_happy_path_returns_mocked_results_with_aws_events() {
    let shop = Shop::new();
    let out = shop.run_case("Happy", "happy", &["--input", r#"{"order": 1}"#]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.json(),
        json!({"order": 1, "charge": {"charged": 42}, "ack": {"ack": true}, "packed": {"box": 3}})
    );
    assert_eq!(
        types(&shop.sb.history("happy")),
        [
            "ExecutionStarted",
            "TaskStateEntered",
            "TaskScheduled",
            "TaskStarted",
            "TaskSucceeded",
            "TaskStateExited",
            "TaskStateEntered",
            "TaskScheduled",
            "TaskStarted",
            "TaskSubmitted",
            "TaskSucceeded",
            "TaskStateExited",
            "TaskStateEntered",
            "ActivityScheduled",
            "ActivityStarted",
            "ActivitySucceeded",
            "TaskStateExited",
            "ExecutionSucceeded",
        ]
    );
    let events = shop.sb.history("happy");
    // The callback got a real token in its parameters; the scheduled event shows the clocks.
    let scheduled = &events[7]["taskScheduledEventDetails"];
    let params: Value = serde_json::from_str(scheduled["parameters"].as_str().unwrap()).unwrap();
    assert!(params["MessageBody"]["token"].as_str().unwrap().len() > 20);
    assert_eq!(scheduled["heartbeatInSeconds"], 5);
    assert_eq!(scheduled["timeoutInSeconds"], 60);
    assert_eq!(
        events[14]["activityStartedEventDetails"]["workerName"],
        "sfn-local-mock"
    );
}

#[test]
fn each_invocation_takes_the_next_answer_retries_included() {
    let shop = Shop::new();
    let out = shop.run_case("Throttled", "t", &["--time-scale", "0.001"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json()["charge"], json!({"charged": 7}));
    let types = types(&shop.sb.history("t"));
    assert_eq!(types.iter().filter(|t| *t == "TaskFailed").count(), 2);
    assert_eq!(types.iter().filter(|t| *t == "TaskScheduled").count(), 4);
}

#[test]
fn running_out_of_answers_names_the_state_and_the_count() {
    let Shop { sb, mocks, .. } = Shop::new();
    // Retry allows 3 retries (4 invocations); the response covers 0-2.
    let def_text = MACHINE.replace("\"MaxAttempts\": 3", "\"MaxAttempts\": 5");
    let def2 = sb.write("shop2.asl.json", &def_text);
    let out = sb.run(&[
        "run",
        def2.to_str().unwrap(),
        "--state-machine-name",
        "shop",
        "--mock-config",
        &mocks,
        "--test-case",
        "Declined",
        "--name",
        "d",
    ]);
    out.assert_error(1, "Payment.Declined");

    let mocks2 = sb.write(
        "m2.json",
        &MOCKS.replace(
            r#""2": {"Return": {"Payload": {"charged": 7}}}"#,
            r#""2": {"Throw": {"Error": "Lambda.TooManyRequestsException", "Cause": "again"}}"#,
        ),
    );
    let out = sb.run(&[
        "run",
        def2.to_str().unwrap(),
        "--state-machine-name",
        "shop",
        "--mock-config",
        mocks2.to_str().unwrap(),
        "--test-case",
        "AlwaysThrottled",
        "--name",
        "out",
        "--time-scale",
        "0.001",
    ]);
    out.assert_error(1, "States.Runtime");
    assert!(
        out.stderr.contains("'Charge'") && out.stderr.contains("invocation 3"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_delay_beyond_the_heartbeat_times_out_like_a_dead_worker() {
    let shop = Shop::new();
    let started = std::time::Instant::now();
    let out = shop.run_case("SlowWorker", "slow", &["--time-scale", "0.01"]);
    out.assert_error(1, "States.Timeout");
    // 5 s heartbeat at 1/100: about 50 ms, not 6 s.
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    let types = types(&shop.sb.history("slow"));
    assert_eq!(
        &types[types.len() - 3..],
        ["TaskSubmitted", "TaskTimedOut", "ExecutionFailed"]
    );

    let out = shop.run_case("DeadWorker", "dead", &["--time-scale", "0.01"]);
    out.assert_error(1, "States.Timeout");
}

#[test]
fn test_cases_are_chosen_like_step_functions_local() {
    let Shop { sb, def, mocks } = Shop::new();
    // SFN_MOCK_CONFIG and --test-case.
    let out = sb.run_env(
        &["run", &def, "--test-case", "Declined", "--name", "a"],
        &[("SFN_MOCK_CONFIG", &mocks)],
    );
    out.assert_error(1, "Payment.Declined");
    // `#` names a template's state machine on every door; after a definition it is an error
    // that names the mock case's own spelling (it once chose the case in `run` alone).
    let out = sb.run_env(
        &["run", &format!("{def}#Declined"), "--name", "a2"],
        &[("SFN_MOCK_CONFIG", &mocks)],
    );
    out.assert_error(2, "--test-case Declined");
    // An ARN with #CASE as the state machine name.
    let out = sb.run(&[
        "run",
        &def,
        "--mock-config",
        &mocks,
        "--name",
        "b",
        "--state-machine-name",
        "arn:aws:states:us-east-1:123456789012:stateMachine:shop#Declined",
    ]);
    out.assert_error(1, "Payment.Declined");
    // Unknown case, unknown state, no config: usage errors that say why.
    let out = sb.run(&["run", &def, "--mock-config", &mocks, "--test-case", "Nope"]);
    out.assert_error(2, "Happy");
    let out = sb.run(&[
        "run",
        &def,
        "--mock-config",
        &mocks,
        "--test-case",
        "BadState",
    ]);
    out.assert_error(2, "'Nope'");
    let out = sb.run(&["run", &def, "--test-case", "Happy"]);
    out.assert_error(2, "--mock-config");
    // A config without a test case chosen mocks nothing.
    let out = sb.run_env(&["run", &def], &[("SFN_MOCK_CONFIG", &mocks)]);
    out.assert_error(1, "no local binding");
    // ...and says so, naming the option that chooses one.
    out.assert_error(1, "no test case is chosen (--test-case NAME");
}

#[test]
fn a_binding_wins_over_a_mock_for_its_state() {
    let shop = Shop::new();
    let out = shop.run_case(
        "Happy",
        "bound",
        &["--task", r#"Charge=sh -c 'echo "{\"charged\": 99}"'"#],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json()["charge"], json!({"charged": 99}));
}
