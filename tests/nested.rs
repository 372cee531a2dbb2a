//! Nested state machines: `states:startExecution*` tasks run machines known with `--machine`
//! / `--machines` as real child executions in the same database, through the binary.

mod common;

use common::{kill, types, worker, Output, Sandbox};
use serde_json::Value;
use std::time::{Duration, Instant};

const CHILD: &str = r#"{"StartAt":"P","States":{"P":{"Type":"Pass","Parameters":{"got.$":"$","Arg1":"argument1"},"End":true}}}"#;

fn executions(sb: &Sandbox) -> Vec<Value> {
    let out = sb.run(&["list-executions"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.json()["executions"].as_array().cloned().unwrap()
}

fn wait_for_running_child(sb: &Sandbox, machine: &str) -> Value {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let running = executions(sb).into_iter().find(|e| {
            e["stateMachineArn"]
                .as_str()
                .unwrap()
                .ends_with(&format!(":{machine}"))
                && e["status"] == "RUNNING"
        });
        if let Some(e) = running {
            return e;
        }
        assert!(Instant::now() < until, "no running child of {machine}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn sync2_runs_the_child_as_an_execution_with_its_own_history() {
    let sb = Sandbox::new();
    let child = sb.write("child.asl.json", CHILD);
    let parent = sb.write(
        "parent.asl.json",
        r#"{"StartAt":"Run","States":{"Run":{"Type":"Task","Resource":"arn:aws:states:::states:startExecution.sync:2",
            "Parameters":{"StateMachineArn":"arn:aws:states:us-east-1:123456789012:stateMachine:child","Name":"kid",
                          "Input":{"n.$":"$.n","AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID.$":"$$.Execution.Id"}},
            "End":true}}}"#,
    );
    let machine = format!("child={}", child.display());
    let out = sb.run(&[
        "run",
        parent.to_str().unwrap(),
        "--name",
        "mom",
        "--machine",
        &machine,
        "--input",
        r#"{"n":7}"#,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let output = out.json();
    assert_eq!(output["Status"], "SUCCEEDED");
    assert_eq!(output["Output"]["got"]["n"], 7);
    assert_eq!(output["Output"]["Arg1"], "argument1");
    assert_eq!(
        output["Input"]["AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID"],
        "arn:aws:states:us-east-1:123456789012:execution:parent:mom"
    );
    assert_eq!(output["RedriveStatus"], "NOT_REDRIVABLE");
    assert_eq!(
        output["ExecutionArn"],
        "arn:aws:states:us-east-1:123456789012:execution:child:kid"
    );
    let parent_types = types(&sb.history("mom"));
    assert_eq!(
        parent_types,
        [
            "ExecutionStarted",
            "TaskStateEntered",
            "TaskScheduled",
            "TaskStarted",
            "TaskSubmitted",
            "TaskSucceeded",
            "TaskStateExited",
            "ExecutionSucceeded"
        ]
    );
    let submitted = &sb.history("mom")[4]["taskSubmittedEventDetails"]["output"];
    let submitted: Value = serde_json::from_str(submitted.as_str().unwrap()).unwrap();
    assert_eq!(submitted["SdkHttpMetadata"]["HttpStatusCode"], 200);
    // The child is an execution like any other.
    let d = sb
        .run(&["describe-execution", "--execution-arn", "kid"])
        .json();
    assert_eq!(d["status"], "SUCCEEDED");
    assert_eq!(
        types(&sb.history("kid")).last().unwrap(),
        "ExecutionSucceeded"
    );
    assert_eq!(executions(&sb).len(), 2);
}

#[test]
fn a_failing_child_fails_the_sync_task_and_an_unknown_machine_is_aws_error() {
    let sb = Sandbox::new();
    sb.write(
        "failing.asl.json",
        r#"{"StartAt":"F","States":{"F":{"Type":"Fail","Error":"SomeFailure","Cause":"because"}}}"#,
    );
    let parent = sb.write(
        "parent.asl.json",
        r#"{"StartAt":"Run","States":{
            "Run":{"Type":"Task","Resource":"arn:aws:states:::states:startExecution.sync","Parameters":{"StateMachineArn":"arn:aws:states:us-east-1:123456789012:stateMachine:failing"},
                   "Catch":[{"ErrorEquals":["States.TaskFailed"],"ResultPath":"$.caught","Next":"Unknown"}],"End":true},
            "Unknown":{"Type":"Task","Resource":"arn:aws:states:::states:startExecution","Parameters":{"StateMachineArn":"arn:aws:states:us-east-1:123456789012:stateMachine:nope"},"End":true}}}"#,
    );
    let dir = sb.dir.path().to_str().unwrap();
    let out = sb.run(&[
        "run",
        parent.to_str().unwrap(),
        "--name",
        "p",
        "--machines",
        dir,
    ]);
    out.assert_error(1, "StepFunctions.StateMachineDoesNotExistException");
    assert!(out.stderr.contains("State Machine Does Not Exist: 'arn:aws:states:us-east-1:123456789012:stateMachine:nope' (Service: AWSStepFunctions; Status Code: 400; Error Code: StateMachineDoesNotExist"), "{}", out.stderr);
    let history = sb.history("p");
    let failed = history
        .iter()
        .find(|e| e["type"] == "TaskFailed")
        .expect("TaskFailed");
    let details = &failed["taskFailedEventDetails"];
    assert_eq!(details["error"], "States.TaskFailed");
    let cause: Value = serde_json::from_str(details["cause"].as_str().unwrap()).unwrap();
    assert_eq!(cause["Error"], "SomeFailure");
    assert_eq!(cause["Cause"], "because");
    assert_eq!(cause["Status"], "FAILED");
    assert_eq!(cause["Input"], "{}");
}

#[test]
fn wait_for_task_token_waits_for_the_child_to_answer() {
    let sb = Sandbox::with_workers();
    sb.write(
        "answering.asl.json",
        r#"{"StartAt":"Answer","States":{"Answer":{"Type":"Task","Resource":"arn:aws:states:::sns:publish","End":true}}}"#,
    );
    let parent = sb.write(
        "parent.asl.json",
        r#"{"StartAt":"Ask","States":{"Ask":{"Type":"Task","Resource":"arn:aws:states:::states:startExecution.waitForTaskToken",
            "Parameters":{"StateMachineArn":"arn:aws:states:us-east-1:123456789012:stateMachine:answering","Input":{"token.$":"$$.Task.Token"}},
            "TimeoutSeconds":60,"End":true}}}"#,
    );
    let dir = sb.dir.path().to_str().unwrap();
    let task = format!("Answer={}", worker("answer-parent.sh"));
    let out = sb.run(&[
        "run",
        parent.to_str().unwrap(),
        "--name",
        "asker",
        "--machines",
        dir,
        "--task",
        &task,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), serde_json::json!({"answeredBy": "child"}));
    let history = sb.history("asker");
    assert_eq!(
        types(&history)[2..6],
        [
            "TaskScheduled",
            "TaskStarted",
            "TaskSubmitted",
            "TaskSucceeded"
        ]
    );
    let submitted = history[4]["taskSubmittedEventDetails"]["output"]
        .as_str()
        .unwrap();
    assert!(submitted.contains("execution:answering:"), "{submitted}");
}

/// `run` of a parent (execution `name`) whose `startExecution.sync:2` child waits 2 s, killed
/// with SIGKILL while the child waits; the child as `list-executions` shows it.
fn killed_while_its_child_waits(sb: &Sandbox, name: &str) -> Value {
    sb.write(
        "slow.asl.json",
        r#"{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":2,"Next":"P"},"P":{"Type":"Pass","Result":{"slow":"done"},"End":true}}}"#,
    );
    let parent = sb.write(
        "parent.asl.json",
        r#"{"StartAt":"S","States":{"S":{"Type":"Task","Resource":"arn:aws:states:::states:startExecution.sync:2",
            "Parameters":{"StateMachineArn":"arn:aws:states:us-east-1:123456789012:stateMachine:slow","Input":{}},"OutputPath":"$.Output","End":true}}}"#,
    );
    let dir = sb.dir.path().to_str().unwrap().to_owned();
    let args = [
        "run",
        parent.to_str().unwrap(),
        "--name",
        name,
        "--machines",
        &dir,
    ];
    let mut run = sb.spawn(&args);
    let child = wait_for_running_child(sb, "slow");
    kill(&mut run);
    child
}

#[test]
fn a_parent_killed_mid_child_resumes_with_the_same_child() {
    let sb = Sandbox::new().lease_ms(300);
    let child = killed_while_its_child_waits(&sb, "k");
    // resume --all takes the parent only; the parent finds its child again.
    let until = Instant::now() + Duration::from_secs(10);
    let out = loop {
        let out = sb.run(&["resume", "--all"]);
        if out.stderr.contains("nothing to resume") && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        }
        break out;
    };
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim(), r#"{"slow":"done"}"#);
    let all = executions(&sb);
    assert_eq!(all.len(), 2, "one parent, one child: {all:?}");
    let d = sb
        .run(&[
            "describe-execution",
            "--execution-arn",
            child["executionArn"].as_str().unwrap(),
        ])
        .json();
    assert_eq!(d["status"], "SUCCEEDED");
}

/// Regression (#47, item 3): serve, now looking for orphans, took over a dead runner's child
/// as well as its parent, and the resumed parent then drove the same child a second time.
/// Now it leaves a child whose parent is running to that parent, as `resume --all` does.
#[test]
fn serve_takes_over_a_killed_parent_and_its_child_drives_the_child_once() {
    let sb = Sandbox::new().lease_ms(300);
    let child = killed_while_its_child_waits(&sb, "p");
    let child = child["executionArn"].as_str().unwrap().to_owned();
    let server = common::served::Served::serve(&sb, &[]);
    let until = Instant::now() + Duration::from_secs(30);
    let status = |arn: &str| {
        let out = sb.run(&["describe-execution", "--execution-arn", arn]);
        out.json()["status"].as_str().unwrap().to_owned()
    };
    while status("p") == "RUNNING" {
        assert!(Instant::now() < until, "not resumed: {}", server.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(status("p"), "SUCCEEDED", "{}", server.log());
    assert_eq!(status(&child), "SUCCEEDED");
    let out = sb.run(&["get-execution-history", "--execution-arn", &child]);
    let events = out.json()["events"].as_array().cloned().unwrap();
    let ids: Vec<i64> = events.iter().map(|e| e["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, (1..=ids.len() as i64).collect::<Vec<_>>());
    let ends = types(&events)
        .iter()
        .filter(|t| *t == "ExecutionSucceeded")
        .count();
    assert_eq!(ends, 1, "{:?}", types(&events));
    assert!(!server.log().contains("could not"), "{}", server.log());
}

#[test]
fn stopping_the_parent_stops_its_sync_child() {
    let sb = Sandbox::new();
    sb.write(
        "long.asl.json",
        r#"{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":300,"End":true}}}"#,
    );
    let parent = sb.write(
        "parent.asl.json",
        r#"{"StartAt":"S","States":{"S":{"Type":"Task","Resource":"arn:aws:states:::states:startExecution.sync","Parameters":{"StateMachineArn":"arn:aws:states:us-east-1:123456789012:stateMachine:long","Name":"the-child"},"End":true}}}"#,
    );
    let dir = sb.dir.path().to_str().unwrap().to_owned();
    let run = sb.spawn(&[
        "run",
        parent.to_str().unwrap(),
        "--name",
        "s",
        "--machines",
        &dir,
    ]);
    wait_for_running_child(&sb, "long");
    let stop = sb.run(&["stop-execution", "--execution-arn", "s"]);
    assert_eq!(stop.code, 0, "{}", stop.stderr);
    let out = Output::of(run);
    assert_eq!(out.code, 4, "{}", out.stderr);
    let d = sb
        .run(&["describe-execution", "--execution-arn", "the-child"])
        .json();
    assert_eq!(d["status"], "ABORTED");
    assert_eq!(
        types(&sb.history("the-child")).last().unwrap(),
        "ExecutionAborted"
    );
}

#[test]
fn test_specs_run_children_in_memory() {
    let sb = Sandbox::new();
    sb.write("child.asl.json", CHILD);
    sb.write(
        "parent.asl.json",
        r#"{"StartAt":"Run","States":{"Run":{"Type":"Task","Resource":"arn:aws:states:::states:startExecution.sync:2","Parameters":{"StateMachineArn":"arn:aws:states:us-east-1:123456789012:stateMachine:child","Input":{"x":1}},"OutputPath":"$.Output","End":true}}}"#,
    );
    let spec = sb.write(
        "parent.sfntest.json",
        r#"{"definition":"parent.asl.json","cases":[{"name":"child output","expect":{"status":"SUCCEEDED","output":{"got":{"x":1},"Arg1":"argument1"}}}]}"#,
    );
    let machine = format!("child={}", sb.path("child.asl.json").display());
    let out = sb.run(&["test", spec.to_str().unwrap(), "--machine", &machine]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("1 passed, 0 failed"), "{}", out.stdout);
}

#[test]
fn a_sync_child_answering_the_parents_token_ends_the_parents_task() {
    // As on AWS, a `.sync` task gets a task token: the child hands it to a worker, whose answer
    // ends the parent's task (and the still running child is stopped).
    let sb = Sandbox::with_workers();
    sb.write(
        "relay.asl.json",
        r#"{"StartAt":"Answer","States":{"Answer":{"Type":"Task","Resource":"arn:aws:states:::sns:publish","ResultPath":null,"Next":"Linger"},
            "Linger":{"Type":"Wait","Seconds":300,"End":true}}}"#,
    );
    let parent = sb.write(
        "parent.asl.json",
        r#"{"StartAt":"S","States":{"S":{"Type":"Task","Resource":"arn:aws:states:::states:startExecution.sync:2",
            "Parameters":{"StateMachineArn":"arn:aws:states:us-east-1:123456789012:stateMachine:relay","Name":"relay-child","Input":{"token.$":"$$.Task.Token"}},"End":true}}}"#,
    );
    let dir = sb.dir.path().to_str().unwrap();
    let task = format!("Answer={}", worker("answer-parent.sh"));
    let out = sb.run(&[
        "run",
        parent.to_str().unwrap(),
        "--name",
        "p",
        "--machines",
        dir,
        "--task",
        &task,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), serde_json::json!({"answeredBy": "child"}));
    let history = sb.history("p");
    assert_eq!(
        types(&history)[2..6],
        [
            "TaskScheduled",
            "TaskStarted",
            "TaskSubmitted",
            "TaskSucceeded"
        ]
    );
    let d = sb
        .run(&["describe-execution", "--execution-arn", "relay-child"])
        .json();
    assert_eq!(d["status"], "ABORTED");
    // The token is closed with the task: a second answer is TaskTimedOut.
    let parameters: Value = serde_json::from_str(
        history[2]["taskScheduledEventDetails"]["parameters"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    let token = parameters["Input"]["token"].as_str().unwrap();
    let late = sb.run(&["send-task-failure", "--task-token", token]);
    late.assert_error(12, "TaskTimedOut");
}
