//! `redrive-execution` through the binary, with shell workers that fail until they are
//! "fixed": the states that succeeded are not run again (their side effects are counted), only
//! the failed Map iterations and Parallel branches run again, a distributed Map run keeps its
//! children that succeeded, a SUCCEEDED or RUNNING execution is refused, and a redrive killed
//! with SIGKILL half-way is finished by `resume`.

mod common;

use common::{kill, types, Output, Sandbox};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A worker that records each call (its input, one line) in `DIR/NAME.calls`, and fails with
/// `Broken` when its input is listed in `DIR/broken` (after `DELAY` seconds), else echoes it.
const WORKER: &str = r#"#!/bin/sh
dir="$1"; name="$2"; delay="${3:-0}"
input=$(cat)
echo "$input" >> "$dir/$name.calls"
if [ -e "$dir/broken" ] && grep -qxF -- "$name $input" "$dir/broken"; then
  sleep "$delay"
  echo '{"Error":"Broken","Cause":"not fixed yet"}' >&2
  exit 1
fi
[ -n "$4" ] && sleep "$4"
echo "$input"
"#;

struct Case {
    sb: Sandbox,
    worker: PathBuf,
}

impl Case {
    fn new() -> Case {
        let sb = Sandbox::with_workers().lease_ms(300);
        let worker = sb.write("worker.sh", WORKER);
        let _ = std::process::Command::new("chmod")
            .arg("+x")
            .arg(&worker)
            .status();
        Case { sb, worker }
    }

    /// `--task STATE=worker.sh DIR STATE DELAY [SLEEP]`.
    fn binding(&self, state: &str, extra: &str) -> String {
        format!(
            "{state}={} {} {state} {extra}",
            self.worker.display(),
            self.sb.dir.path().display()
        )
    }

    fn break_for(&self, state: &str, inputs: &[&str]) {
        let lines: Vec<String> = inputs.iter().map(|i| format!("{state} {i}\n")).collect();
        self.sb.write("broken", &lines.concat());
    }

    fn fix(&self) {
        let _ = std::fs::remove_file(self.sb.path("broken"));
    }

    /// The inputs `state`'s worker was called with, one per call.
    fn calls(&self, state: &str) -> Vec<String> {
        std::fs::read_to_string(self.sb.path(&format!("{state}.calls")))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn run(&self, machine: &Value, name: &str, input: &str, tasks: &[String]) -> Output {
        let def = self.sb.write("m.asl.json", &machine.to_string());
        let def = def.display().to_string();
        let mut args = vec!["run", def.as_str(), "--name", name, "--input", input];
        for t in tasks {
            args.extend(["--task", t.as_str()]);
        }
        self.sb.run(&args)
    }

    fn redrive(&self, name: &str) -> Output {
        self.sb.run(&["redrive-execution", "--execution-arn", name])
    }

    fn describe(&self, name: &str) -> Value {
        let out = self
            .sb
            .run(&["describe-execution", "--execution-arn", name]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.json()
    }

    /// The history's event types, checking its ids are contiguous.
    fn history_types(&self, name: &str) -> Vec<String> {
        let events = self.sb.history(name);
        for (i, e) in events.iter().enumerate() {
            assert_eq!(e["id"], json!(i + 1), "ids must be contiguous");
        }
        types(&events)
    }
}

fn count(calls: &[String], input: &str) -> usize {
    calls.iter().filter(|c| c.as_str() == input).count()
}

#[test]
fn a_task_fixed_after_the_failure_is_redriven_without_rerunning_what_succeeded() {
    let c = Case::new();
    let machine = json!({"StartAt": "Prepare", "States": {
        "Prepare": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:work", "Next": "Work"},
        "Work": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:work",
                 "Retry": [{"ErrorEquals": ["Broken"], "MaxAttempts": 1, "IntervalSeconds": 1}],
                 "Next": "Report"},
        "Report": {"Type": "Pass", "Parameters": {
            "work.$": "$", "redriveCount.$": "$$.Execution.RedriveCount",
            "redriveTime.$": "$$.Execution.RedriveTime"}, "End": true}}});
    let tasks = [c.binding("Prepare", "0"), c.binding("Work", "0")];
    c.break_for("Work", &["{\"n\":1}"]);
    let first = c.run(&machine, "job", "{\"n\":1}", &tasks);
    first.assert_error(1, "Broken");
    assert_eq!(c.calls("Work").len(), 2, "the first attempt and its retry");
    let failed = c.describe("job");
    assert_eq!(failed["redriveCount"], json!(0));
    assert_eq!(failed["redriveStatus"], json!("REDRIVABLE"));

    c.fix();
    let out = c.redrive("job");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let output = out.json();
    assert_eq!(output["work"], json!({"n": 1}));
    assert_eq!(output["redriveCount"], json!(1));
    assert!(output["redriveTime"].is_string(), "{output}");
    assert_eq!(
        c.calls("Prepare").len(),
        1,
        "Prepare succeeded: not run again"
    );
    assert_eq!(
        c.calls("Work").len(),
        3,
        "Work runs once more (its retries start over)"
    );

    let history = c.sb.history("job");
    let redriven = history
        .iter()
        .position(|e| e["type"] == "ExecutionRedriven")
        .expect("ExecutionRedriven");
    assert_eq!(
        history[redriven]["executionRedrivenEventDetails"],
        json!({"redriveCount": 1})
    );
    assert_eq!(history[redriven - 1]["type"], "ExecutionFailed");
    let after = types(&history[redriven + 1..]);
    assert_eq!(
        after,
        [
            "TaskStateEntered",
            "LambdaFunctionScheduled",
            "LambdaFunctionStarted",
            "LambdaFunctionSucceeded",
            "TaskStateExited",
            "PassStateEntered",
            "PassStateExited",
            "ExecutionSucceeded"
        ]
    );
    assert_eq!(
        history[redriven + 1]["stateEnteredEventDetails"]["name"],
        "Work"
    );
    c.history_types("job");

    let done = c.describe("job");
    assert_eq!(done["status"], json!("SUCCEEDED"));
    assert_eq!(done["redriveCount"], json!(1));
    assert!(done["redriveDate"].is_string(), "{done}");
    assert_eq!(done["redriveStatus"], json!("NOT_REDRIVABLE"));
    assert_eq!(
        done["redriveStatusReason"],
        json!("Execution is SUCCEEDED and cannot be redriven")
    );
    let listed = c.sb.run(&["list-executions"]).json();
    assert_eq!(listed["executions"][0]["redriveCount"], json!(1));

    // A SUCCEEDED execution is not redrivable; nothing changes.
    let again = c.redrive("job");
    again.assert_error(
        2,
        "ExecutionNotRedrivable: Execution is SUCCEEDED and cannot be redriven",
    );
    assert_eq!(c.sb.history("job").len(), history.len());
    let missing = c.redrive("nope");
    missing.assert_error(2, "ExecutionDoesNotExist");
}

#[test]
fn a_map_redrive_runs_only_the_iterations_that_did_not_succeed() {
    let c = Case::new();
    let machine = json!({"StartAt": "Each", "States": {"Each": {
        "Type": "Map", "End": true,
        "ItemProcessor": {"StartAt": "Item", "States": {"Item": {
            "Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:work", "End": true}}}}}});
    // The broken items fail after the others are done, so 7 succeed and 3 do not.
    c.break_for("Item", &["2", "5", "8"]);
    let tasks = [c.binding("Item", "3")];
    let first = c.run(&machine, "map", "[0,1,2,3,4,5,6,7,8,9]", &tasks);
    first.assert_error(1, "Broken");
    assert_eq!(c.calls("Item").len(), 10);

    c.fix();
    let out = c.redrive("map");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), json!([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]));
    let calls = c.calls("Item");
    assert_eq!(calls.len(), 13, "{calls:?}");
    for item in ["2", "5", "8"] {
        assert_eq!(count(&calls, item), 2, "item {item} ran again");
    }
    let history = c.history_types("map");
    let redriven = history
        .iter()
        .position(|t| t == "ExecutionRedriven")
        .expect("redriven");
    let after = &history[redriven + 1..];
    assert_eq!(
        after.iter().filter(|t| *t == "MapIterationStarted").count(),
        3
    );
    assert_eq!(
        after
            .iter()
            .filter(|t| *t == "MapIterationSucceeded")
            .count(),
        3
    );
    assert_eq!(after.first().map(String::as_str), Some("MapStateEntered"));
}

#[test]
fn a_parallel_redrive_runs_only_the_failed_branch() {
    let c = Case::new();
    c.break_for("Right", &["{\"side\":\"right\"}"]);
    let machine = json!({"StartAt": "Both", "States": {"Both": {
        "Type": "Parallel", "End": true, "Branches": [
            {"StartAt": "Left", "States": {"Left": {"Type": "Task",
                "Resource": "arn:aws:lambda:us-east-1:123456789012:function:work",
                "Parameters": {"side": "left"}, "End": true}}},
            {"StartAt": "Right", "States": {"Right": {"Type": "Task",
                "Resource": "arn:aws:lambda:us-east-1:123456789012:function:work",
                "Parameters": {"side": "right"}, "End": true}}}]}}});
    let tasks = [c.binding("Left", "0"), c.binding("Right", "1")];
    c.run(&machine, "par", "{}", &tasks)
        .assert_error(1, "Broken");
    c.fix();
    let out = c.redrive("par");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), json!([{"side": "left"}, {"side": "right"}]));
    assert_eq!(
        c.calls("Left").len(),
        1,
        "the branch that succeeded is kept"
    );
    assert_eq!(c.calls("Right").len(), 2);
}

#[test]
fn a_distributed_map_run_is_redriven_with_its_parent_keeping_the_children_that_succeeded() {
    let c = Case::new();
    let machine = json!({"StartAt": "Each", "States": {"Each": {
        "Type": "Map", "End": true,
        "ItemProcessor": {
            "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
            "StartAt": "Item", "States": {"Item": {
                "Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:work", "End": true}}}}}});
    c.break_for("Item", &["1", "4", "7"]);
    let tasks = [c.binding("Item", "3")];
    c.run(&machine, "dmap", "[0,1,2,3,4,5,6,7,8,9]", &tasks)
        .assert_error(1, "States.ExceedToleratedFailureThreshold");
    assert_eq!(c.calls("Item").len(), 10);
    let first_history = c.sb.history("dmap");
    let run_arn = first_history
        .iter()
        .find(|e| e["type"] == "MapRunStarted")
        .map(|e| e["mapRunStartedEventDetails"]["mapRunArn"].clone())
        .expect("MapRunStarted");

    c.fix();
    let out = c.redrive("dmap");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), json!([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]));
    let calls = c.calls("Item");
    assert_eq!(calls.len(), 13, "{calls:?}");
    for item in ["1", "4", "7"] {
        assert_eq!(count(&calls, item), 2, "item {item} ran again");
    }
    let history = c.sb.history("dmap");
    let redriven = history
        .iter()
        .find(|e| e["type"] == "MapRunRedriven")
        .expect("MapRunRedriven");
    assert_eq!(
        redriven["mapRunRedrivenEventDetails"],
        json!({"mapRunArn": run_arn, "redriveCount": 1})
    );
    c.history_types("dmap");
}

// Regression (#38): a ResultWriter reads its run's children back from the store, a page at a
// time. The children a redrive takes from the run it cut away were kept only under that run,
// so the redriven run's result files would have lacked them.
#[test]
fn a_redriven_map_runs_result_files_list_the_children_it_kept() {
    let c = Case::new();
    let s3 = c.sb.path("s3").display().to_string();
    let machine = json!({"StartAt": "Each", "States": {"Each": {
        "Type": "Map", "End": true,
        "ResultWriter": {"Resource": "arn:aws:states:::s3:putObject",
            "Parameters": {"Bucket": "out", "Prefix": "runs"}},
        "ItemProcessor": {
            "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
            "StartAt": "Item", "States": {"Item": {
                "Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:work", "End": true}}}}}});
    c.break_for("Item", &["1"]);
    let def = c.sb.write("m.asl.json", &machine.to_string());
    // Item 1 fails after 2 s, once the others have succeeded (a child still running when the
    // run fails is aborted, and runs again on the redrive).
    let binding = c.binding("Item", "2");
    let run = [
        "run",
        def.to_str().expect("path"),
        "--name",
        "written",
        "--input",
        "[0,1,2,3,4]",
        "--task",
        &binding,
        "--s3-dir",
        &s3,
    ];
    c.sb.run(&run)
        .assert_error(1, "States.ExceedToleratedFailureThreshold");
    c.fix();
    let out = c.redrive("written");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(count(&c.calls("Item"), "1"), 2, "item 1 ran again");
    assert_eq!(c.calls("Item").len(), 6, "only item 1 ran again");
    let key = out.json()["ResultWriterDetails"]["Key"]
        .as_str()
        .expect("the manifest's key")
        .to_owned();
    let read = |key: &str| -> Value {
        let path = c.sb.path("s3").join("out").join(key);
        serde_json::from_slice(&std::fs::read(path).expect("written")).expect("JSON")
    };
    let manifest = read(&key);
    assert_eq!(manifest["ResultFiles"]["FAILED"], json!([]));
    let succeeded = read(
        manifest["ResultFiles"]["SUCCEEDED"][0]["Key"]
            .as_str()
            .expect("key"),
    );
    let outputs: Vec<Value> = succeeded
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["Output"].clone())
        .collect();
    assert_eq!(outputs, ["0", "1", "2", "3", "4"].map(|o| json!(o)));
}

#[test]
fn a_redrive_killed_half_way_is_finished_by_resume() {
    let c = Case::new();
    let machine = json!({"StartAt": "Prepare", "States": {
        "Prepare": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:work", "Next": "Work"},
        "Work": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:work", "Next": "Slow"},
        "Slow": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:work", "End": true}}});
    let tasks = [
        c.binding("Prepare", "0"),
        c.binding("Work", "0"),
        c.binding("Slow", "0 2"),
    ];
    c.break_for("Work", &["{}"]);
    c.run(&machine, "killed", "{}", &tasks)
        .assert_error(1, "Broken");
    c.fix();

    let def_args = ["redrive-execution", "--execution-arn", "killed"];
    let mut child = c.sb.spawn(&def_args);
    let until = Instant::now() + Duration::from_secs(20);
    while c.calls("Slow").is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(c.calls("Slow").len(), 1, "the redrive reached Slow");
    kill(&mut child);

    // Running again: a second redrive is refused until the first one ends.
    c.redrive("killed")
        .assert_error(2, "Execution is RUNNING and cannot be redriven");
    let out = c.sb.resume("killed");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), json!({}));
    assert_eq!(c.calls("Prepare").len(), 1);
    assert_eq!(c.calls("Work").len(), 2);
    assert_eq!(
        c.calls("Slow").len(),
        2,
        "killed mid-task: run again (at least once)"
    );
    let history = c.history_types("killed");
    assert_eq!(
        history.iter().filter(|t| *t == "ExecutionRedriven").count(),
        1
    );
    assert_eq!(
        history.last().map(String::as_str),
        Some("ExecutionSucceeded")
    );
    assert_eq!(c.describe("killed")["redriveCount"], json!(1));
}

#[test]
fn a_timed_out_execution_is_redriven_and_its_timeout_counts_from_the_redrive() {
    let c = Case::new();
    let machine = json!({"TimeoutSeconds": 2, "StartAt": "Prepare", "States": {
        "Prepare": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:work", "Next": "Slow"},
        "Slow": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:work", "End": true}}});
    // Slow sleeps past the execution's timeout the first time only.
    let slow = c.sb.write(
        "slow.sh",
        &format!(
            "#!/bin/sh\ncat >/dev/null\necho x >> {dir}/Slow.calls\nif [ -e {dir}/slow ]; then sleep 4; fi\necho '\"done\"'\n",
            dir = c.sb.dir.path().display()
        ),
    );
    let _ = std::process::Command::new("chmod")
        .arg("+x")
        .arg(&slow)
        .status();
    c.sb.write("slow", "");
    let tasks = [
        c.binding("Prepare", "0"),
        format!("Slow={}", slow.display()),
    ];
    let first = c.run(&machine, "late", "{}", &tasks);
    assert_eq!(first.code, 3, "TIMED_OUT: {}", first.stderr);
    assert_eq!(c.describe("late")["redriveStatus"], json!("REDRIVABLE"));
    std::fs::remove_file(c.sb.path("slow")).expect("fix");
    // The first start is more than TimeoutSeconds ago: counted from the start, the redrive
    // would time out at once.
    std::thread::sleep(Duration::from_millis(500));
    let out = c.redrive("late");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), json!("done"));
    assert_eq!(c.calls("Prepare").len(), 1);
    assert_eq!(c.calls("Slow").len(), 2);
    let history = c.history_types("late");
    let redriven = history
        .iter()
        .position(|t| t == "ExecutionRedriven")
        .expect("redriven");
    assert_eq!(history[redriven - 1], "ExecutionTimedOut");
}

#[test]
fn an_execution_that_reached_its_history_cap_is_not_redrivable() {
    let c = Case::new();
    let machine = json!({"StartAt": "Loop", "States": {
        "Loop": {"Type": "Pass", "Next": "Again"},
        "Again": {"Type": "Choice", "Default": "Loop",
            "Choices": [{"Variable": "$.stop", "IsPresent": true, "Next": "Done"}]},
        "Done": {"Type": "Succeed"}}});
    let def = c.sb.write("m.asl.json", &machine.to_string());
    let out = c.sb.run(&[
        "run",
        def.to_str().expect("path"),
        "--name",
        "capped",
        "--max-history-events",
        "20",
    ]);
    out.assert_error(1, "maximum number of history events");
    let described = c.describe("capped");
    assert_eq!(described["redriveStatus"], json!("NOT_REDRIVABLE"));
    assert_eq!(
        described["redriveStatusReason"],
        json!("Execution history event limit exceeded.")
    );
    c.redrive("capped").assert_error(
        2,
        "ExecutionNotRedrivable: Execution history event limit exceeded.",
    );
    assert_eq!(c.sb.history("capped").len(), 20, "nothing written");
}

impl Case {
    /// The open task tokens, waiting until there is one (or 10 s pass).
    fn open_token(&self) -> Option<String> {
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            let out = self.sb.run(&["list-tasks", "--format", "json"]);
            let v: Value = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
            let token = v["tasks"][0]["taskToken"].as_str().map(str::to_owned);
            if token.is_some() || Instant::now() > until {
                return token;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[test]
fn an_aborted_callback_is_redriven_with_a_new_token_and_a_client_token_redrives_once() {
    let c = Case::new();
    let machine = json!({"StartAt": "Ask", "States": {"Ask": {"Type": "Task",
        "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
        "Parameters": {"QueueUrl": "q", "MessageBody": {"token.$": "$$.Task.Token"}},
        "End": true}}});
    let def = c.sb.write("m.asl.json", &machine.to_string());
    let running =
        c.sb.spawn(&["run", def.to_str().expect("path"), "--name", "ask"]);
    let first = c.open_token().expect("first token");
    c.sb.run(&["stop-execution", "--execution-arn", "ask"]);
    let stopped = Output::of(running);
    assert_eq!(stopped.code, 4, "ABORTED: {}", stopped.stderr);

    let redrive = c.sb.spawn(&[
        "redrive-execution",
        "--execution-arn",
        "ask",
        "--client-token",
        "once",
    ]);
    let second = c.open_token().expect("a new token");
    assert_ne!(first, second, "the aborted attempt's token stays closed");
    let late = c.sb.send_success(&first, "\"late\"");
    late.assert_error(12, "TaskTimedOut");
    assert_eq!(c.sb.send_success(&second, "\"answer\"").code, 0);
    let out = Output::of(redrive);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), json!("answer"));

    // The same client token again is the same request: nothing is redriven.
    let again = c.sb.run(&[
        "redrive-execution",
        "--execution-arn",
        "ask",
        "--client-token",
        "once",
    ]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stderr.contains("already"), "{}", again.stderr);
    assert_eq!(c.describe("ask")["redriveCount"], json!(1));
}

/// AWS's developer guide, "Retry behavior of redriven executions": a rerun Task, Parallel or
/// Inline Map state with retries has its retry attempt count reset to 0, so it gets its full
/// `MaxAttempts` on redrive.
#[test]
fn a_redriven_task_parallel_or_inline_map_gets_its_retries_again() {
    let c = Case::new();
    let retry = json!([{"ErrorEquals": ["Broken"], "MaxAttempts": 1, "IntervalSeconds": 1}]);
    let task = |state: &str| {
        json!({"StartAt": state, "States": {state: {"Type": "Task",
            "Resource": "arn:aws:lambda:us-east-1:123456789012:function:work",
            "Parameters": {"state": state}, "End": true}}})
    };
    // The Task: its worker sees $$.State.RetryCount start at 0 again.
    let machines = [
        (
            "task",
            "Work",
            json!({"StartAt": "Work", "States": {"Work": {"Type": "Task",
                "Resource": "arn:aws:lambda:us-east-1:123456789012:function:work",
                "Parameters": {"retry.$": "$$.State.RetryCount"},
                "Retry": retry, "End": true}}}),
            vec!["{\"retry\":0}", "{\"retry\":1}"],
        ),
        (
            "parallel",
            "Branch",
            json!({"StartAt": "Both", "States": {"Both": {"Type": "Parallel",
                "Branches": [task("Branch")], "Retry": retry, "End": true}}}),
            vec!["{\"state\":\"Branch\"}"; 2],
        ),
        (
            "map",
            "Item",
            json!({"StartAt": "Each", "States": {"Each": {"Type": "Map", "ItemsPath": "$.items",
                "ItemProcessor": task("Item"), "Retry": retry, "End": true}}}),
            vec!["{\"state\":\"Item\"}"; 2],
        ),
    ];
    for (name, state, machine, attempts) in machines {
        c.break_for(state, &attempts);
        let tasks = [c.binding(state, "0")];
        c.run(&machine, name, "{\"items\":[1]}", &tasks)
            .assert_error(1, "Broken");
        assert_eq!(
            c.calls(state),
            attempts,
            "{name}: the attempt and its retry"
        );
        // Still broken: the redrive makes the first attempt and the retry again.
        c.redrive(name).assert_error(1, "Broken");
        let again = [attempts.clone(), attempts.clone()].concat();
        assert_eq!(
            c.calls(state),
            again,
            "{name}: all retries again on redrive"
        );
        assert_eq!(c.describe(name)["redriveCount"], json!(1));
    }
}
