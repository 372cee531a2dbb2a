//! The engine on small machines: outcomes, outputs and the event sequences AWS writes.

use serde_json::{json, Value};
use sfn_local::asl::{compile_text, MachineType};
use sfn_local::clock::{Clock, ManualClock, SystemClock};
use sfn_local::engine::context::ExecutionInfo;
use sfn_local::engine::history::HistoryEvent;
use sfn_local::engine::{run_in_memory, EngineOptions, Outcome, Status};
use sfn_local::tasks::{command::parse_binding, LocalTasks};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

fn info() -> ExecutionInfo {
    ExecutionInfo::new(
        "us-east-1",
        "123456789012",
        "Machine",
        "exec-1",
        None,
        1_700_000_000_000,
    )
}

fn machine(def: Value) -> Arc<sfn_local::asl::StateMachine> {
    let (m, diags) = compile_text(&def.to_string(), MachineType::Standard);
    Arc::new(m.unwrap_or_else(|| panic!("invalid test machine: {diags:#?}")))
}

async fn run_with(
    def: Value,
    input: Value,
    tasks: LocalTasks,
    clock: Arc<dyn Clock>,
) -> (Outcome, Vec<HistoryEvent>) {
    run_in_memory(
        machine(def),
        info(),
        input,
        clock,
        Rc::new(tasks),
        EngineOptions::default(),
    )
    .await
}

async fn run(def: Value, input: Value) -> (Outcome, Vec<HistoryEvent>) {
    run_with(
        def,
        input,
        LocalTasks::default(),
        Arc::new(SystemClock::new(1.0)),
    )
    .await
}

fn types(events: &[HistoryEvent]) -> Vec<&'static str> {
    events.iter().map(|e| e.event_type.as_str()).collect()
}

fn tasks(bindings: &[&str]) -> LocalTasks {
    let mut t = LocalTasks::default();
    for b in bindings {
        let (state, cmd) = parse_binding(b).unwrap();
        t.commands.insert(state, cmd);
    }
    t
}

#[tokio::test]
async fn pass_chain_succeeds_with_contiguous_ids() {
    let (outcome, events) = run(
        json!({"StartAt":"A","States":{"A":{"Type":"Pass","Result":{"x":1},"Next":"B"},"B":{"Type":"Pass","End":true}}}),
        json!({"in": true}),
    )
    .await;
    assert_eq!(outcome.status, Status::Succeeded);
    assert_eq!(outcome.output, Some(json!({"x": 1})));
    assert_eq!(
        types(&events),
        [
            "ExecutionStarted",
            "PassStateEntered",
            "PassStateExited",
            "PassStateEntered",
            "PassStateExited",
            "ExecutionSucceeded"
        ]
    );
    let ids: Vec<i64> = events.iter().map(|e| e.id).collect();
    assert_eq!(ids, [1, 2, 3, 4, 5, 6]);
    let prev: Vec<i64> = events.iter().map(|e| e.previous_event_id).collect();
    assert_eq!(prev, [0, 0, 2, 3, 4, 5]);
}

#[tokio::test]
async fn fail_state_fails_the_execution_with_its_error() {
    let (outcome, events) = run(
        json!({"StartAt":"F","States":{"F":{"Type":"Fail","Error":"Boom","Cause":"because"}}}),
        json!({}),
    )
    .await;
    assert_eq!(outcome.status, Status::Failed);
    let e = outcome.error.unwrap();
    assert_eq!(
        (e.error.as_deref(), e.cause.as_deref()),
        (Some("Boom"), Some("because"))
    );
    assert_eq!(
        types(&events),
        ["ExecutionStarted", "FailStateEntered", "ExecutionFailed"]
    );
}

#[tokio::test]
async fn wait_sleeps_on_the_injected_clock() {
    let clock = ManualClock::new(1_700_000_000_000);
    let def = json!({"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":3600,"End":true}}});
    let c: Arc<dyn Clock> = Arc::new(clock.clone());
    let local = tokio::task::LocalSet::new();
    let handle = local.spawn_local(run_with(def, json!({"a":1}), LocalTasks::default(), c));
    local
        .run_until(async move {
            tokio::task::yield_now().await;
            assert!(!handle.is_finished());
            clock.advance(Duration::from_secs(3599));
            tokio::task::yield_now().await;
            assert!(!handle.is_finished());
            clock.advance(Duration::from_secs(1));
            let (outcome, events) = handle.await.unwrap();
            assert_eq!(outcome.output, Some(json!({"a":1})));
            assert_eq!(
                types(&events),
                [
                    "ExecutionStarted",
                    "WaitStateEntered",
                    "WaitStateExited",
                    "ExecutionSucceeded"
                ]
            );
        })
        .await;
}

fn chain(events: &[HistoryEvent]) -> Vec<(&'static str, i64)> {
    events
        .iter()
        .map(|e| (e.event_type.as_str(), e.previous_event_id))
        .collect()
}

#[tokio::test]
async fn parallel_branches_start_together_and_interleave_as_aws_records_them() {
    let (outcome, events) = run(
        json!({"StartAt":"P","States":{"P":{"Type":"Parallel","End":true,"Branches":[
            {"StartAt":"A","States":{"A":{"Type":"Pass","Result":1,"End":true}}},
            {"StartAt":"B","States":{"B":{"Type":"Pass","Result":2,"End":true}}}]}}}),
        json!({}),
    )
    .await;
    assert_eq!(outcome.output, Some(json!([1, 2])));
    // Both branches enter before either exits; each branch's events point at the one before
    // them in the branch; ParallelStateSucceeded and ParallelStateExited both point at the
    // last branch event (as AWS links ParallelStateExited in its recordings).
    assert_eq!(
        chain(&events),
        [
            ("ExecutionStarted", 0),
            ("ParallelStateEntered", 0),
            ("ParallelStateStarted", 2),
            ("PassStateEntered", 3),
            ("PassStateEntered", 3),
            ("PassStateExited", 4),
            ("PassStateExited", 5),
            ("ParallelStateSucceeded", 7),
            ("ParallelStateExited", 7),
            ("ExecutionSucceeded", 9),
        ]
    );
}

#[tokio::test]
async fn map_iterations_all_start_before_the_first_runs() {
    let (outcome, events) = run(
        json!({"StartAt":"M","States":{"M":{"Type":"Map","End":true,"ItemProcessor":
            {"StartAt":"I","States":{"I":{"Type":"Pass","End":true}}}}}}),
        json!([10, 20]),
    )
    .await;
    assert_eq!(outcome.output, Some(json!([10, 20])));
    // As AWS recorded an inline Map without MaxConcurrency: every MapIterationStarted (all
    // pointing at MapStateStarted) before the iterations' first states.
    assert_eq!(
        chain(&events),
        [
            ("ExecutionStarted", 0),
            ("MapStateEntered", 0),
            ("MapStateStarted", 2),
            ("MapIterationStarted", 3),
            ("MapIterationStarted", 3),
            ("PassStateEntered", 4),
            ("PassStateEntered", 5),
            ("PassStateExited", 6),
            ("MapIterationSucceeded", 8),
            ("PassStateExited", 7),
            ("MapIterationSucceeded", 10),
            ("MapStateSucceeded", 11),
            ("MapStateExited", 11),
            ("ExecutionSucceeded", 13),
        ]
    );
}

#[tokio::test]
async fn map_with_max_concurrency_one_runs_each_item_in_order() {
    let (outcome, events) = run(
        json!({"StartAt":"M","States":{"M":{"Type":"Map","End":true,"MaxConcurrency":1,
            "ItemProcessor":{"StartAt":"I","States":{"I":{"Type":"Pass","End":true}}}}}}),
        json!([10, 20]),
    )
    .await;
    assert_eq!(outcome.output, Some(json!([10, 20])));
    assert_eq!(
        types(&events),
        [
            "ExecutionStarted",
            "MapStateEntered",
            "MapStateStarted",
            "MapIterationStarted",
            "PassStateEntered",
            "PassStateExited",
            "MapIterationSucceeded",
            "MapIterationStarted",
            "PassStateEntered",
            "PassStateExited",
            "MapIterationSucceeded",
            "MapStateSucceeded",
            "MapStateExited",
            "ExecutionSucceeded"
        ]
    );
}

#[tokio::test]
async fn task_runs_a_local_command() {
    let (outcome, events) = run_with(
        json!({"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::sns:publish","End":true}}}),
        json!({"n": 1}),
        tasks(&["T=sh -c 'cat; echo'"]),
        Arc::new(SystemClock::new(1.0)),
    )
    .await;
    assert_eq!(outcome.status, Status::Succeeded, "{outcome:?}");
    // The command stands in for SNS: what it printed, in Publish's response.
    let output = outcome.output.unwrap();
    assert_eq!(output["n"], 1, "{output}");
    assert!(output["MessageId"].is_string(), "{output}");
    assert_eq!(
        types(&events),
        [
            "ExecutionStarted",
            "TaskStateEntered",
            "TaskScheduled",
            "TaskStarted",
            "TaskSucceeded",
            "TaskStateExited",
            "ExecutionSucceeded"
        ]
    );
}

#[tokio::test]
async fn retries_then_catches_a_failing_task() {
    let (outcome, events) = run_with(
        json!({"StartAt":"T","States":{
            "T":{"Type":"Task","Resource":"arn:aws:states:::sns:publish",
                 "Retry":[{"ErrorEquals":["Oops"],"IntervalSeconds":1,"MaxAttempts":1}],
                 "Catch":[{"ErrorEquals":["States.ALL"],"Next":"H"}],"End":true},
            "H":{"Type":"Pass","End":true}}}),
        json!({}),
        tasks(&[r#"T=sh -c 'echo "{\"Error\":\"Oops\",\"Cause\":\"no\"}" >&2; exit 1'"#]),
        Arc::new(SystemClock::new(0.001)),
    )
    .await;
    assert_eq!(outcome.status, Status::Succeeded, "{outcome:?}");
    assert_eq!(
        outcome.output,
        Some(json!({"Error": "Oops", "Cause": "no"}))
    );
    assert_eq!(
        types(&events),
        [
            "ExecutionStarted",
            "TaskStateEntered",
            "TaskScheduled",
            "TaskStarted",
            "TaskFailed",
            "TaskScheduled",
            "TaskStarted",
            "TaskFailed",
            "TaskStateExited",
            "PassStateEntered",
            "PassStateExited",
            "ExecutionSucceeded"
        ]
    );
    // As AWS links them: the retry's TaskScheduled follows the TaskFailed before it.
    let prev: Vec<i64> = events.iter().map(|e| e.previous_event_id).collect();
    assert_eq!(prev, [0, 0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
}

#[tokio::test]
async fn output_path_failure_after_a_task_follows_the_task_s_last_event() {
    let (outcome, events) = run_with(
        json!({"StartAt":"T","States":{
            "T":{"Type":"Task","Resource":"arn:aws:states:::sns:publish",
                 "OutputPath":"$.no.such.path","End":true}}}),
        json!({}),
        tasks(&["T=cat"]),
        Arc::new(SystemClock::new(1.0)),
    )
    .await;
    let outcome = (outcome.status, outcome.error.and_then(|e| e.error));
    assert_eq!(outcome, (Status::Failed, Some("States.Runtime".into())));
    let chain: Vec<(&str, i64)> = events
        .iter()
        .map(|e| (e.event_type.as_str(), e.previous_event_id))
        .collect();
    // As AWS recorded it (test_catch_states_runtime): ExecutionFailed follows TaskSucceeded.
    assert_eq!(
        chain,
        [
            ("ExecutionStarted", 0),
            ("TaskStateEntered", 0),
            ("TaskScheduled", 2),
            ("TaskStarted", 3),
            ("TaskSucceeded", 4),
            ("ExecutionFailed", 5)
        ]
    );
}

#[tokio::test]
async fn unbound_task_fails_saying_how_to_bind_it() {
    let (outcome, _) = run(
        json!({"StartAt":"Charge","States":{"Charge":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","End":true}}}),
        json!({}),
    )
    .await;
    assert_eq!(outcome.status, Status::Failed);
    let cause = outcome.error.unwrap().cause.unwrap();
    assert!(cause.contains("--task 'Charge=COMMAND'"), "{cause}");
}

#[tokio::test]
async fn task_timeout_raises_states_timeout() {
    let (outcome, events) = run_with(
        json!({"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::sns:publish","TimeoutSeconds":5,"End":true}}}),
        json!({}),
        tasks(&["T=sleep 30"]),
        Arc::new(SystemClock::new(0.01)),
    )
    .await;
    assert_eq!(outcome.status, Status::Failed);
    assert_eq!(outcome.error.unwrap().name(), "States.Timeout");
    assert_eq!(types(&events)[4], "TaskTimedOut");
}

#[tokio::test]
async fn execution_timeout_ends_timed_out() {
    let (outcome, events) = run_with(
        json!({"StartAt":"W","TimeoutSeconds":1,"States":{"W":{"Type":"Wait","Seconds":100,"End":true}}}),
        json!({}),
        LocalTasks::default(),
        Arc::new(SystemClock::new(0.01)),
    )
    .await;
    assert_eq!(outcome.status, Status::TimedOut);
    assert_eq!(
        types(&events),
        // As AWS recorded it: no WaitStateAborted when the execution itself times out.
        ["ExecutionStarted", "WaitStateEntered", "ExecutionTimedOut"]
    );
    assert_eq!(events.last().unwrap().previous_event_id, 0);
}

#[tokio::test]
async fn history_cap_fails_with_states_runtime_at_the_last_event() {
    let def = json!({"StartAt":"A","States":{"A":{"Type":"Pass","Next":"A2"},"A2":{"Type":"Pass","Next":"A"}}});
    let (outcome, events) = run_in_memory(
        machine_unchecked(def),
        info(),
        json!({}),
        Arc::new(SystemClock::new(1.0)),
        Rc::new(LocalTasks::default()),
        EngineOptions {
            max_history_events: 50,
            ..EngineOptions::default()
        },
    )
    .await;
    assert_eq!(outcome.status, Status::Failed);
    let e = outcome.error.unwrap();
    assert_eq!(e.name(), "States.Runtime");
    assert_eq!(
        e.cause.as_deref(),
        Some("The execution reached the maximum number of history events (50).")
    );
    assert_eq!(events.len(), 50);
    assert_eq!(
        events.last().unwrap().event_type.as_str(),
        "ExecutionFailed"
    );
}

/// A machine that never ends is not valid (no terminal state), but the engine must still bound
/// it: build it past validation to test the history cap.
fn machine_unchecked(def: Value) -> Arc<sfn_local::asl::StateMachine> {
    let mut diags = sfn_local::asl::Diagnostics::default();
    let mut def = def;
    // Add an unreachable terminal state so the machine validates, then loop forever.
    def["States"]["End"] = json!({"Type":"Succeed"});
    def["States"]["A2"] = json!({"Type":"Choice","Choices":[{"Variable":"$.never","IsPresent":true,"Next":"End"}],"Default":"A"});
    let m = sfn_local::asl::parse::parse_machine(&def, MachineType::Standard, &mut diags);
    Arc::new(m.unwrap_or_else(|| panic!("{diags:#?}")))
}

#[tokio::test]
async fn a_negative_tolerated_failure_count_path_fails_as_aws_words_it() {
    // The definition of AWS's recorded test_map_state_tolerated_failure_count_path, with -1.
    let def = json!({"StartAt":"MapState","States":{"MapState":{"Type":"Map","ItemsPath":"$.Items",
        "MaxConcurrency":1,"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},
        "StartAt":"HandleItem","States":{"HandleItem":{"Type":"Pass","End":true}}},
        "ToleratedFailureCountPath":"$.ToleratedFailureCount","End":true}}});
    for count in [json!(-1), json!("-1")] {
        let (outcome, _) = run(
            def.clone(),
            json!({"Items": [0], "ToleratedFailureCount": count}),
        )
        .await;
        let e = outcome.error.expect("a failure");
        assert_eq!(e.error.as_deref(), Some("States.Runtime"));
        assert_eq!(
            e.cause.as_deref(),
            Some("An error occurred while executing the state 'MapState' (entered at the event id #2). ToleratedFailureCount cannot be negative.")
        );
    }
}

#[tokio::test]
async fn a_bracketed_name_holding_backslash_escaped_double_quotes_reads_the_field_as_aws_does() {
    // LocalStack's escape_sequences_jsonpath template: the definition's text holds
    // `"$['Test\\\"\"Name\"']"`, the path `$['Test\""Name"']`, which AWS reads as the member
    // `Test\""Name"` (sfn-local failed it with States.Runtime, reading `Test""Name"`).
    let def = r#"{"StartAt": "JsonPathEscapeTest", "States": {"JsonPathEscapeTest": {
        "Type": "Pass", "Parameters": {"value.$": "$['Test\\\"\"Name\"']"}, "End": true}}}"#;
    let (m, diags) = compile_text(def, MachineType::Standard);
    let m = Arc::new(m.unwrap_or_else(|| panic!("{diags:#?}")));
    let input: Value = serde_json::from_str(r#"{"Test\\\"\"Name\"": "Value\"\\"}"#).unwrap();
    let (outcome, _) = run_in_memory(
        m,
        info(),
        input,
        Arc::new(SystemClock::new(1.0)),
        Rc::new(LocalTasks::default()),
        EngineOptions::default(),
    )
    .await;
    assert_eq!(outcome.status, Status::Succeeded, "{:?}", outcome.error);
    assert_eq!(outcome.output, Some(json!({"value": "Value\"\\"})));
}

#[tokio::test]
async fn a_parallel_whose_first_branch_fails_at_once_still_starts_and_aborts_the_second() {
    // Branch A's Task fails at once, twice (a mocked error, retried after a moment); branch
    // B's Task is still running (its mock never answers). AWS starts every branch before any
    // can fail the Parallel, so B's TaskStateEntered is recorded, and B is aborted when A
    // fails it. (sfn-local failed the Parallel before B had entered its first state.)
    // Retried after a second (AWS), and with `IntervalSeconds: 0`, which Step Functions Local
    // accepts (`--compat stepfunctions-local`): the same events.
    for (interval, compat) in [
        (1, sfn_local::asl::Compat::Aws),
        (0, sfn_local::asl::Compat::StepFunctionsLocal),
    ] {
        let def = json!({"StartAt":"P","States":{"P":{"Type":"Parallel","End":true,"Branches":[
            {"StartAt":"A","States":{"A":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke",
                "Parameters":{"FunctionName":"a"},
                "Retry":[{"ErrorEquals":["Boom"],"IntervalSeconds":interval,"MaxAttempts":1}],
                "End":true}}},
            {"StartAt":"B","States":{"B":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke",
                "Parameters":{"FunctionName":"b"},"End":true}}}]}}});
        let (m, diags) =
            sfn_local::asl::compile_text_as(&def.to_string(), MachineType::Standard, compat);
        let m = Arc::new(m.unwrap_or_else(|| panic!("{diags:#?}")));
        let config = sfn_local::tasks::mock::MockConfig::from_value(&json!({
            "StateMachines": {}, "MockedResponses": {
                "Fails": {"0-1": {"Throw": {"Error": "Boom", "Cause": "at once"}}},
                "Later": {"0": {"NeverAnswers": true}}}}))
        .unwrap();
        let t = LocalTasks {
            mocks: config.inline(&json!({"A": "Fails", "B": "Later"})).unwrap(),
            ..LocalTasks::default()
        };
        let options = EngineOptions {
            compat,
            ..EngineOptions::default()
        };
        let (outcome, events) = run_in_memory(
            m,
            info(),
            json!({}),
            Arc::new(SystemClock::new(0.001)),
            Rc::new(t),
            options,
        )
        .await;
        check_first_branch_fails_at_once(outcome, events);
    }
}

fn check_first_branch_fails_at_once(outcome: Outcome, events: Vec<HistoryEvent>) {
    assert_eq!(outcome.status, Status::Failed);
    assert_eq!(outcome.error.unwrap().error.as_deref(), Some("Boom"));
    let names: Vec<Option<String>> = events
        .iter()
        .map(|e| {
            let d: Value = serde_json::from_str(e.details.as_deref().unwrap_or("{}")).unwrap();
            d["name"].as_str().map(String::from)
        })
        .collect();
    assert_eq!(names[3].as_deref(), Some("A"));
    assert_eq!(names[5].as_deref(), Some("B"));
    assert_eq!(
        chain(&events),
        [
            ("ExecutionStarted", 0),
            ("ParallelStateEntered", 0),
            ("ParallelStateStarted", 2),
            // Both branches enter and schedule their Task before either starts.
            ("TaskStateEntered", 3),
            ("TaskScheduled", 4),
            ("TaskStateEntered", 3),
            ("TaskScheduled", 6),
            ("TaskStarted", 5),
            ("TaskFailed", 8),
            ("TaskStarted", 7),
            // A's retry, while B's Task runs.
            ("TaskScheduled", 9),
            ("TaskStarted", 11),
            ("TaskFailed", 12),
            // B aborted, then A's own TaskStateAborted, all pointing at A's failure.
            ("TaskStateAborted", 13),
            ("TaskStateAborted", 13),
            ("ParallelStateFailed", 13),
            ("ExecutionFailed", 16),
        ]
    );
}

#[tokio::test]
async fn step_functions_local_compat_records_task_results_after_the_selectors_and_resumes_from_them(
) {
    use sfn_local::engine::execution::Engine;
    use sfn_local::engine::history::{History, MemorySink};
    let def = json!({"StartAt":"T","States":{"T":{"Type":"Task",
        "Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"f"},
        "ResultSelector":{"n.$":"$.Payload.n"},"ResultPath":"$.r","OutputPath":"$.r",
        "Next":"Done"},"Done":{"Type":"Pass","End":true}}});
    // A command (its stdout is the Lambda's Payload), not a mock: a resume does not run it
    // again but reads its recorded result.
    let tasks = || tasks(&[r#"T=sh -c 'echo "{\"n\":0.5}"'"#]);
    let options = EngineOptions {
        compat: sfn_local::asl::Compat::StepFunctionsLocal,
        ..EngineOptions::default()
    };
    let (outcome, events) = run_in_memory(
        machine(def.clone()),
        info(),
        json!({"a": 1}),
        Arc::new(SystemClock::new(1.0)),
        Rc::new(tasks()),
        options.clone(),
    )
    .await;
    assert_eq!(
        outcome.output,
        Some(json!({"n": 0.5})),
        "{:?}",
        outcome.error
    );
    let succeeded = events
        .iter()
        .position(|e| e.event_type.as_str() == "TaskSucceeded")
        .unwrap();
    let d: Value = serde_json::from_str(events[succeeded].details.as_deref().unwrap()).unwrap();
    // After ResultSelector and ResultPath (before OutputPath), members in HashMap order.
    assert_eq!(d["output"], r#"{"a":1,"r":{"n":0.5}}"#);
    // A resume that finds TaskSucceeded recorded reads the state's output from it.
    let records: Vec<sfn_local::store::EventRecord> = events[..=succeeded]
        .iter()
        .map(|e| sfn_local::store::EventRecord {
            id: e.id,
            previous_event_id: e.previous_event_id,
            timestamp_ms: e.timestamp,
            event_type: e.event_type.as_str().to_owned(),
            details: e.details.clone(),
            replay_key: e.replay_key.as_ref().map(|k| k.to_string()),
        })
        .collect();
    let sink = MemorySink::default();
    let history = History::new(succeeded as i64 + 2, Box::new(sink.clone()), 25_000)
        .with_compat(options.compat);
    let engine = Engine::new(
        machine(def),
        info(),
        json!({"a": 1}),
        history,
        Arc::new(SystemClock::new(1.0)),
        Rc::new(tasks()),
    )
    .with_replay(records);
    let resumed = engine.run().await;
    assert_eq!(
        resumed.output,
        Some(json!({"n": 0.5})),
        "{:?}",
        resumed.error
    );
}

#[tokio::test]
async fn lanes_aborted_inside_an_aborted_branch_end_in_their_order() {
    // Branch 0 holds a Parallel of three waiting branches; branch 1 fails after a moment. The
    // inner branches are aborted in their order, every aborted event pointing at the failure.
    let wait = |n: &str| json!({"StartAt": n, "States": {n: {"Type": "Wait", "Seconds": 100000, "End": true}}});
    let def = json!({"StartAt":"P","States":{"P":{"Type":"Parallel","End":true,"Branches":[
        {"StartAt":"Inner","States":{"Inner":{"Type":"Parallel","End":true,
            "Branches":[wait("W0"), wait("W1"), wait("W2")]}}},
        {"StartAt":"Pause","States":{"Pause":{"Type":"Wait","Seconds":1,"Next":"Boom"},
            "Boom":{"Type":"Fail","Error":"Boom"}}}]}}});
    let (outcome, events) = run_with(
        def,
        json!({}),
        LocalTasks::default(),
        Arc::new(SystemClock::new(0.001)),
    )
    .await;
    assert_eq!(outcome.status, Status::Failed);
    let failing = events
        .iter()
        .find(|e| e.event_type.as_str() == "FailStateEntered")
        .unwrap()
        .id;
    let aborted: Vec<(&str, i64)> = events
        .iter()
        .filter(|e| e.event_type.as_str().ends_with("Aborted"))
        .map(|e| (e.event_type.as_str(), e.previous_event_id))
        .collect();
    assert_eq!(
        aborted,
        [
            ("WaitStateAborted", failing),
            ("WaitStateAborted", failing),
            ("WaitStateAborted", failing),
            ("ParallelStateAborted", failing),
        ]
    );
    // In the inner branches' order (their lanes end in /0, /1, /2).
    let lanes: Vec<String> = events
        .iter()
        .filter(|e| e.event_type.as_str() == "WaitStateAborted")
        .map(|e| {
            e.replay_key
                .as_ref()
                .map_or_else(String::new, |k| k.to_string())
        })
        .map(|k| {
            k.rsplit_once(':')
                .map(|(lane, _)| lane.to_owned())
                .unwrap_or(k)
        })
        .collect();
    assert!(
        lanes.len() == 3
            && lanes[0].ends_with("/0")
            && lanes[1].ends_with("/1")
            && lanes[2].ends_with("/2"),
        "{lanes:?}"
    );
}
