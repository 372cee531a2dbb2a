//! A task's answer as the engine receives it: a `--task` command's stdout (read as the command
//! runner reads it: lossy UTF-8, empty is null, otherwise JSON text) or a `send-task-success
//! --task-output` / `send-task-failure --error --cause`, flowing through ResultSelector,
//! ResultPath, OutputPath, Catch, a Choice, a Map over the result, and JSONata's Output and
//! Assign, in a whole execution (in memory).
//!
//! The answer reaches the engine as a mocked response, the one way in without a process per
//! input; what follows the answer is the same code.
#![no_main]

use libfuzzer_sys::fuzz_target;

// As the binary does: one JSONata evaluation holds a bounded amount of memory.
#[global_allocator]
static ALLOCATOR: sfn_local::memory::Metered<std::alloc::System> =
    sfn_local::memory::Metered(std::alloc::System);
use serde_json::{json, Value};
use sfn_local::asl::{compile_text, MachineType, StateMachine};
use sfn_local::clock::SystemClock;
use sfn_local::engine::{run_in_memory, EngineOptions};
use sfn_local::tasks::mock::MockConfig;
use sfn_local::tasks::LocalTasks;
use std::rc::Rc;
use std::sync::{Arc, OnceLock};

const MACHINES: &[&str] = &[
    // JSONPath: selectors and paths over the result, a Choice on it, a Map over it.
    r#"{"StartAt":"T","States":{
        "T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke",
             "ResultSelector":{"all.$":"$","payload.$":"$.Payload"},
             "ResultPath":"$.r","OutputPath":"$",
             "Catch":[{"ErrorEquals":["States.ALL"],"ResultPath":"$.err","Next":"Caught"}],
             "Next":"C"},
        "C":{"Type":"Choice","Choices":[
               {"Variable":"$.r.payload","IsPresent":true,"Next":"Route"}],
             "Default":"Done"},
        "Route":{"Type":"Choice","Choices":[
               {"Variable":"$.r.payload","StringMatches":"*a*","Next":"Done"},
               {"Variable":"$.r.payload","NumericGreaterThan":10,"Next":"Done"}],
             "Default":"M"},
        "M":{"Type":"Map","ItemsPath":"$.r.payload","MaxConcurrency":2,
             "ItemProcessor":{"StartAt":"P","States":{"P":{"Type":"Pass","Parameters":{"v.$":"$","i.$":"$$.Map.Item.Index"},"End":true}}},
             "ResultPath":"$.mapped",
             "Catch":[{"ErrorEquals":["States.ALL"],"Next":"Done"}],"Next":"Done"},
        "Caught":{"Type":"Pass","Parameters":{"e.$":"$.err.Error","c.$":"States.StringToJson(States.JsonToString($.err.Cause))"},"Next":"Done"},
        "Done":{"Type":"Succeed"}}}"#,
    // The plain result, no selector: `$` is whatever came back.
    r#"{"StartAt":"T","States":{
        "T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","OutputPath":"$.Payload","Next":"F"},
        "F":{"Type":"Pass","Parameters":{"s.$":"States.Format('{}', $)","h.$":"States.Hash(States.JsonToString($), 'SHA-256')","l.$":"States.ArrayLength(States.Array($))"},"End":true}}}"#,
    // A callback task (the answer is a send-task-* call), result kept whole.
    r#"{"StartAt":"T","States":{
        "T":{"Type":"Task","Resource":"arn:aws:states:::sqs:sendMessage.waitForTaskToken",
             "Parameters":{"QueueUrl":"q","MessageBody":{"token.$":"$$.Task.Token"}},
             "ResultPath":"$.answer",
             "Catch":[{"ErrorEquals":["States.TaskFailed","Custom"],"Next":"Failed"}],
             "End":true},
        "Failed":{"Type":"Fail","ErrorPath":"$.Error","CausePath":"$.Cause"}}}"#,
    // JSONata: Output and Assign read `$states.result`.
    r#"{"QueryLanguage":"JSONata","StartAt":"T","States":{
        "T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke",
             "Assign":{"x":"{% $states.result %}"},
             "Output":"{% {'r': $states.result, 'keys': $keys($states.result), 't': $type($states.result)} %}",
             "Catch":[{"ErrorEquals":["States.ALL"],"Output":"{% $states.errorOutput %}","Next":"Done"}],
             "Next":"Done"},
        "Done":{"Type":"Pass","Output":"{% [$x, $string($x)] %}","End":true}}}"#,
];

fn machines() -> &'static Vec<Arc<StateMachine>> {
    static M: OnceLock<Vec<Arc<StateMachine>>> = OnceLock::new();
    M.get_or_init(|| {
        MACHINES
            .iter()
            .map(|t| {
                let (m, d) = compile_text(t, MachineType::Standard);
                Arc::new(m.unwrap_or_else(|| panic!("invalid fuzz machine: {d:?}")))
            })
            .collect()
    })
}

thread_local! {
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
}

/// The mocked response the engine receives for `T`: the output as the command runner reads it.
fn answer(failure: bool, rest: &[u8]) -> Value {
    if failure {
        // send-task-failure --error E --cause C
        let (error, cause) = match rest.iter().position(|&b| b == 0) {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, &[][..]),
        };
        return json!({"0": {"Throw": {
            "Error": String::from_utf8_lossy(error),
            "Cause": String::from_utf8_lossy(cause),
        }}});
    }
    let stdout = String::from_utf8_lossy(rest);
    let result = if stdout.trim().is_empty() {
        Ok(Value::Null)
    } else {
        serde_json::from_str::<Value>(&stdout)
    };
    match result {
        Ok(v) => json!({"0": {"Return": v}}),
        // What the command runner fails the task with.
        Err(e) => json!({"0": {"Throw": {
            "Error": "States.TaskFailed",
            "Cause": format!("the output of 'cmd' is not JSON ({e}): {}", stdout.chars().take(200).collect::<String>()),
        }}}),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let machine = machines()[(selector as usize >> 1) % MACHINES.len()].clone();
    let response = answer(selector & 1 == 1, rest);
    let Ok(mocks) = MockConfig::default().inline(&json!({ "T": response })) else {
        return;
    };
    let tasks = LocalTasks {
        mocks,
        mocks_only: true,
        ..LocalTasks::default()
    };
    let info = sfn_local_fuzz::execution_info();
    RUNTIME.with(|rt| {
        let local = tokio::task::LocalSet::new();
        rt.block_on(local.run_until(run_in_memory(
            machine,
            info,
            json!({"a": 1}),
            Arc::new(SystemClock::new(1.0)),
            Rc::new(tasks),
            EngineOptions::default(),
        )))
    });
});
