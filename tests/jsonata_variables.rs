//! JSONata states and variables end to end: the engine on small machines (outputs, events,
//! `assignedVariables`, scoping, Catch), `validate` on bad expressions and scopes, and the
//! bundled JSONata example through the real binary.

mod common;

use serde_json::{json, Value};
use sfn_local::asl::{compile_text, validate_text, MachineType, Severity};
use sfn_local::clock::SystemClock;
use sfn_local::engine::context::ExecutionInfo;
use sfn_local::engine::history::HistoryEvent;
use sfn_local::engine::{run_in_memory, EngineOptions, Outcome, Status};
use sfn_local::tasks::{command::parse_binding, LocalTasks};
use std::process::Command;
use std::rc::Rc;
use std::sync::Arc;

async fn run_with(def: Value, input: Value, bindings: &[&str]) -> (Outcome, Vec<HistoryEvent>) {
    let (m, diags) = compile_text(&def.to_string(), MachineType::Standard);
    let machine = Arc::new(m.unwrap_or_else(|| panic!("invalid test machine: {diags:#?}")));
    let mut tasks = LocalTasks::default();
    for b in bindings {
        let (state, cmd) = parse_binding(b).unwrap();
        tasks.commands.insert(state, cmd);
    }
    let info = ExecutionInfo::new(
        "us-east-1",
        "123456789012",
        "M",
        "e",
        None,
        1_700_000_000_000,
    );
    run_in_memory(
        machine,
        info,
        input,
        Arc::new(SystemClock::new(0.001)),
        Rc::new(tasks),
        EngineOptions::default(),
    )
    .await
}

async fn run(def: Value, input: Value) -> (Outcome, Vec<HistoryEvent>) {
    run_with(def, input, &[]).await
}

fn details(e: &HistoryEvent) -> Value {
    let v = e.to_aws_json();
    let key = e.event_type.details_key().unwrap_or_default();
    v[key].clone()
}

fn types(events: &[HistoryEvent]) -> Vec<&'static str> {
    events.iter().map(|e| e.event_type.as_str()).collect()
}

#[tokio::test]
async fn assign_is_visible_from_the_next_state_and_listed_in_the_exit_event() {
    let (outcome, events) = run(
        json!({"QueryLanguage":"JSONata","StartAt":"A","States":{
            "A":{"Type":"Pass","Assign":{"x":"{% $states.input.n + 1 %}","y":[1,"{% 'two' %}"]},
                 "Output":"{% $exists($x) %}","Next":"B"},
            "B":{"Type":"Pass","Output":{"x":"{% $x %}","y":"{% $y %}","in":"{% $states.input %}"},"End":true}}}),
        json!({"n": 1}),
    )
    .await;
    assert_eq!(outcome.status, Status::Succeeded, "{outcome:?}");
    // A's own Output does not see x yet: assignments take effect in the next state.
    assert_eq!(
        outcome.output,
        Some(json!({"x": 2, "y": [1, "two"], "in": false}))
    );
    assert_eq!(
        details(&events[2])["assignedVariables"],
        json!({"x": "2", "y": "[1,\"two\"]"})
    );
}

#[tokio::test]
async fn reads_in_a_state_see_the_values_from_its_entry() {
    let (outcome, events) = run(
        json!({"QueryLanguage":"JSONata","StartAt":"A","States":{
            "A":{"Type":"Pass","Assign":{"x":1},"Next":"B"},
            "B":{"Type":"Pass","Assign":{"x":"{% $x + 1 %}","old":"{% $x %}"},"Output":"{% $x %}","Next":"C"},
            "C":{"Type":"Pass","Output":{"x":"{% $x %}","old":"{% $old %}"},"End":true}}}),
        json!({}),
    )
    .await;
    assert_eq!(
        outcome.output,
        Some(json!({"x": 2, "old": 1})),
        "{outcome:?}"
    );
    let b_exit = events
        .iter()
        .find(|e| e.event_type.as_str() == "PassStateExited" && details(e)["name"] == "B")
        .unwrap();
    assert_eq!(details(b_exit)["output"], "1");
    assert_eq!(
        details(b_exit)["assignedVariables"],
        json!({"x": "2", "old": "1"})
    );
}

#[tokio::test]
async fn jsonpath_assign_and_variable_paths() {
    let (outcome, _) = run(
        json!({"StartAt":"A","States":{
            "A":{"Type":"Pass","Result":{"v":[10,20]},"Assign":{"first.$":"$.v[0]","all.$":"$","n":3},"Next":"B"},
            "B":{"Type":"Pass","Parameters":{"first.$":"$first","len.$":"States.ArrayLength($all.v)","n.$":"$n"},
                 "OutputPath":"$","End":true}}}),
        json!({}),
    )
    .await;
    assert_eq!(
        outcome.output,
        Some(json!({"first": 10, "len": 2, "n": 3})),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn inner_scopes_read_outer_variables_but_their_own_stay_inside() {
    let (outcome, _) = run(
        json!({"QueryLanguage":"JSONata","StartAt":"A","States":{
            "A":{"Type":"Pass","Assign":{"outer":"o"},"Next":"P"},
            "P":{"Type":"Parallel","Branches":[
                {"StartAt":"B1","States":{
                    "B1":{"Type":"Pass","Assign":{"inner":"{% $outer & '1' %}"},"Next":"B2"},
                    "B2":{"Type":"Pass","Output":"{% $inner %}","End":true}}},
                {"StartAt":"C1","States":{
                    "C1":{"Type":"Pass","Output":"{% $outer %}","End":true}}}],
             "Next":"M"},
            "M":{"Type":"Map","Items":"{% [1,2] %}","ItemProcessor":{"StartAt":"I","States":{
                    "I":{"Type":"Pass","Assign":{"item":"{% $states.input %}"},"Next":"J"},
                    "J":{"Type":"Pass","Output":"{% $item * 10 %}","End":true}}},
             "Next":"Z"},
            "Z":{"Type":"Pass","Output":{"map":"{% $states.input %}","inner":"{% $exists($inner) %}","item":"{% $exists($item) %}"},"End":true}}}),
        json!({}),
    )
    .await;
    assert_eq!(
        outcome.output,
        Some(json!({"map": [10, 20], "inner": false, "item": false})),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn task_arguments_output_assign_and_catch() {
    let (outcome, _) = run_with(
        json!({"QueryLanguage":"JSONata","StartAt":"T","States":{
            "T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:local",
                 "Arguments":{"n":"{% $states.input.n * 2 %}"},
                 "TimeoutSeconds":"{% 30 %}",
                 "Output":{"got":"{% $states.result.n %}","was":"{% $states.input.n %}"},
                 "Assign":{"r":"{% $states.result %}"},
                 "Next":"F"},
            "F":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke",
                 "Catch":[{"ErrorEquals":["States.ALL"],"Next":"Z",
                           "Output":"{% $merge([$states.errorOutput, {'r': $r}]) %}",
                           "Assign":{"e":"{% $states.errorOutput.Error %}"}}],
                 "End":true},
            "Z":{"Type":"Pass","Output":{"out":"{% $states.input %}","e":"{% $e %}"},"End":true}}}),
        json!({"n": 2}),
        &[
            "T=sh -c 'cat'",
            r#"F=sh -c 'echo "{\"Error\":\"Oops\",\"Cause\":\"no\"}" >&2; exit 1'"#,
        ],
    )
    .await;
    assert_eq!(
        outcome.output,
        Some(json!({"out": {"Error": "Oops", "Cause": "no", "r": {"n": 4}}, "e": "Oops"})),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn query_evaluation_errors_write_evaluation_failed_and_can_be_caught() {
    let (outcome, events) = run(
        json!({"QueryLanguage":"JSONata","StartAt":"A","States":{
            "A":{"Type":"Pass","Output":{"x":"{% $states.input.a + 'x' %}"},"End":true}}}),
        json!({"a": 1}),
    )
    .await;
    assert_eq!(outcome.status, Status::Failed);
    let e = outcome.error.unwrap();
    assert_eq!(e.name(), "States.QueryEvaluationError");
    assert!(
        e.cause.unwrap().contains(
            "The JSONata expression '$states.input.a + 'x'' specified for the field 'Output/x' threw an error during evaluation. T2002"
        )
    );
    assert_eq!(
        types(&events),
        [
            "ExecutionStarted",
            "PassStateEntered",
            "EvaluationFailed",
            "ExecutionFailed"
        ]
    );
    assert_eq!(details(&events[2])["location"], "Output/x");

    let (outcome, _) = run(
        json!({"QueryLanguage":"JSONata","StartAt":"P","States":{
            "P":{"Type":"Parallel","Branches":[{"StartAt":"X","States":{
                    "X":{"Type":"Pass","Output":"{% $nothing %}","End":true}}}],
                 "Catch":[{"ErrorEquals":["States.QueryEvaluationError"],"Next":"Z"}],"End":true},
            "Z":{"Type":"Pass","Output":"{% $states.input.Error %}","End":true}}}),
        json!({}),
    )
    .await;
    assert_eq!(outcome.output, Some(json!("States.QueryEvaluationError")));
}

#[tokio::test]
async fn aws_functions_and_choice_conditions() {
    let (outcome, _) = run(
        json!({"QueryLanguage":"JSONata","StartAt":"C","States":{
            "C":{"Type":"Choice","Choices":[
                    {"Condition":"{% $states.input.n > 5 %}","Next":"Big","Output":{"which":"big"}}],
                 "Default":"Small"},
            "Big":{"Type":"Pass","End":true},
            "Small":{"Type":"Pass","Output":{
                "partition":"{% $partition([1,2,3], 2) %}",
                "range":"{% $range(0, 10, 5) %}",
                "hash":"{% $hash('abc', 'SHA-256') %}",
                "random":"{% $random(42) = $random(42) %}",
                "uuid":"{% $length($uuid()) %}",
                "parse":"{% $parse('{\"a\":[1]}') %}"},"End":true}}}),
        json!({"n": 1}),
    )
    .await;
    assert_eq!(
        outcome.output,
        Some(json!({
            "partition": [[1, 2], [3]],
            "range": [0, 5, 10],
            "hash": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            "random": true,
            "uuid": 36,
            "parse": {"a": [1]}
        })),
        "{outcome:?}"
    );
    let (outcome, _) = run(
        json!({"QueryLanguage":"JSONata","StartAt":"C","States":{
            "C":{"Type":"Choice","Choices":[
                    {"Condition":"{% $states.input.n > 5 %}","Next":"Big","Output":{"which":"big"}}],
                 "Default":"Small"},
            "Big":{"Type":"Pass","End":true},
            "Small":{"Type":"Pass","End":true}}}),
        json!({"n": 9}),
    )
    .await;
    assert_eq!(outcome.output, Some(json!({"which": "big"})));
}

#[test]
fn validate_reports_bad_expressions_scopes_and_unassigned_variables() {
    let errors = |def: Value| -> Vec<String> {
        validate_text(&def.to_string(), MachineType::Standard)
            .iter()
            .map(|d| {
                format!(
                    "{:?} {} {}",
                    d.severity,
                    d.location_text().unwrap_or_default(),
                    d.message
                )
            })
            .collect()
    };
    let syntax = errors(json!({"QueryLanguage":"JSONata","StartAt":"A","States":{
        "A":{"Type":"Pass","Output":{"x":"{%\n  $states.input.(\n%}"},"End":true}}}));
    assert_eq!(syntax.len(), 1, "{syntax:?}");
    assert!(
        syntax[0].starts_with("Error /States/A/Output/x"),
        "{syntax:?}"
    );
    assert!(syntax[0].contains("line 2, column"), "{syntax:?}");

    let newer = errors(json!({"QueryLanguage":"JSONata","StartAt":"A","States":{
        "A":{"Type":"Pass","Output":"{% $states.input.a ?? 1 %}","End":true}}}));
    assert!(newer[0].contains("'??'"), "{newer:?}");

    let scope = errors(json!({"StartAt":"A","States":{
        "A":{"Type":"Pass","Assign":{"x":1},"Next":"P"},
        "P":{"Type":"Parallel","End":true,"Branches":[{"StartAt":"B","States":{
            "B":{"Type":"Pass","Assign":{"x":2},"End":true}}}]}}}));
    assert!(
        scope[0].starts_with("Error /States/P/Branches/0/States/B/Assign/x"),
        "{scope:?}"
    );

    let reserved = errors(json!({"StartAt":"A","States":{
        "A":{"Type":"Pass","Assign":{"states":1},"End":true}}}));
    assert!(reserved[0].contains("reserved"), "{reserved:?}");

    let unknown = validate_text(
        &json!({"QueryLanguage":"JSONata","StartAt":"A","States":{
            "A":{"Type":"Pass","Output":"{% $nope %}","End":true}}})
        .to_string(),
        MachineType::Standard,
    );
    let d = unknown.iter().next().unwrap();
    assert_eq!(d.severity, Severity::Warning);
    assert!(d.message.contains("'$nope'"));
}

#[test]
fn the_jsonata_example_runs_through_the_binary() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    // Its own database: the user's default one may belong to another sfn-local version.
    let sandbox = common::Sandbox::new();
    let out = Command::new(common::bin())
        .env("SFN_LOCAL_DB", sandbox.db())
        .arg("run")
        .arg(root.join("definitions/invoice-jsonata.asl.json"))
        .arg("--input-file")
        .arg(root.join("fixtures/invoice.json"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let output: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        output,
        json!({"customer":"ACME GmbH","lines":3,"total":49.98,
               "pickBatches":[["bolt-m6","nut-m6"],["washer-m6"]],
               "reference":"bdcc440e4215","approvedBy":"auto"})
    );
    let out = Command::new(common::bin())
        .arg("validate")
        .arg(root.join("definitions/invoice-jsonata.asl.json"))
        .output()
        .unwrap();
    assert!(out.status.success());
}
