//! Distributed Maps through the binary: callbacks inside child executions, answered by
//! `--task` workers from other processes.

mod common;

use common::Sandbox;
use serde_json::{json, Value};

/// A distributed Map's processor whose only state is `state`, named `name`.
fn processor(name: &str, state: Value) -> Value {
    json!({
        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
        "StartAt": name,
        "States": {name: state}
    })
}

// Regression: the children of a distributed Map nested in another's children were keyed
// alike in every outer child, so the second grandchild found the first one's token and took
// its answer.
#[test]
fn nested_distributed_maps_give_every_grandchild_its_own_token() {
    let sb = Sandbox::new();
    let worker = sb.write(
        "answer.sh",
        "#!/bin/sh\nn=$(jq .MessageBody.n)\n\
         \"$SFN_LOCAL\" send-task-success --task-token \"$SFN_TASK_TOKEN\" --task-output \"{\\\"n\\\": $n}\"\n",
    );
    let _ = std::process::Command::new("chmod")
        .arg("+x")
        .arg(&worker)
        .status();
    let ask = json!({"Type": "Task",
        "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
        "Parameters": {"MessageBody": {"token.$": "$$.Task.Token", "n.$": "$.n"}},
        "TimeoutSeconds": 30, "End": true});
    let inner_map = json!({"Type": "Map", "ItemsPath": "$.inner", "End": true,
        "ItemProcessor": processor("Ask", ask)});
    let machine = json!({"StartAt": "Outer", "States": {"Outer": {
        "Type": "Map", "ItemsPath": "$.outer", "End": true,
        "ItemProcessor": processor("Inner", inner_map)}}});
    let def = sb.write("nested.asl.json", &machine.to_string());
    let input = json!({"outer": [{"inner": [{"n": 1}]}, {"inner": [{"n": 2}]}]}).to_string();
    let bin = common::bin().display().to_string();
    let out = sb.run_env(
        &[
            "run",
            def.to_str().expect("path"),
            "--input",
            &input,
            "--task",
            &format!("Ask={}", worker.display()),
        ],
        &[("SFN_LOCAL", &bin)],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), json!([[{"n": 1}], [{"n": 2}]]));
    let issued = out.stderr.matches("issued task token").count();
    assert_eq!(issued, 2, "{}", out.stderr);
}
