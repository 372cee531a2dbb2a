//! Where sfn-local must behave as AWS does and a user can tell the difference: which service
//! integrations exist (and with which patterns), what AWS checks in a Task's Parameters before
//! calling a service, JSONata results, Map and ItemReader details. Each case is built from AWS's
//! documentation or from messages AWS gave in public reports.

mod common;

use common::{types, Sandbox};
use serde_json::{json, Value};

fn task(resource: &str) -> Value {
    json!({"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": resource, "End": true}}})
}

#[test]
fn only_aws_optimized_integrations_with_their_patterns_validate() {
    let sb = Sandbox::new();
    for (resource, ok) in [
        ("arn:aws:states:::lambda:invoke", true),
        ("arn:aws:states:::sqs:sendMessage.waitForTaskToken", true),
        ("arn:aws:states:::states:startExecution.sync:2", true),
        ("arn:aws:states:::aws-sdk:s3:listBuckets", true),
        ("arn:aws:states:::lambda:invoke.sync", false),
        ("arn:aws:states:::dynamodb:query", false),
        ("arn:aws:states:::dynamodb:putItem.waitForTaskToken", false),
        ("arn:aws:states:::s3:getObject", false),
        ("arn:aws:states:::nosuchservice:doIt", false),
    ] {
        let f = sb.write("m.asl.json", &task(resource).to_string());
        let out = sb.run(&["validate", "--format", "json", f.to_str().expect("path")]);
        let v = out.json();
        if ok {
            assert_eq!(v["result"], "OK", "{resource}: {v}");
            continue;
        }
        assert_eq!(out.code, 1, "{resource}");
        let d = &v["diagnostics"][0];
        assert_eq!(d["code"], "SCHEMA_VALIDATION_FAILED", "{resource}");
        assert_eq!(d["location"], "/States/T/Resource");
        assert_eq!(
            d["message"],
            format!("The resource provided {resource} is not recognized. The value is not a valid resource ARN, or the resource is not available in this region.")
        );
    }
}

#[test]
fn api_gateway_headers_that_are_not_lists_of_strings_fail_before_the_call() {
    let sb = Sandbox::new();
    let machine = json!({"StartAt": "Call", "States": {"Call": {
        "Type": "Task", "Resource": "arn:aws:states:::apigateway:invoke",
        "Parameters": {"ApiEndpoint": "example.execute-api.us-east-1.amazonaws.com",
            "Method": "GET", "Headers": {"Accept": "application/json"}},
        "End": true}}});
    let f = sb.write("m.asl.json", &machine.to_string());
    let out = sb.run(&["run", f.to_str().expect("path"), "--name", "gw"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let history = sb.history("gw");
    let failed = history.last().expect("events");
    assert_eq!(failed["type"], "ExecutionFailed");
    let details = &failed["executionFailedEventDetails"];
    assert_eq!(details["error"], "States.Runtime");
    assert_eq!(
        details["cause"],
        "An error occurred while executing the state 'Call' (entered at the event id #2). The Parameters '{\"ApiEndpoint\":\"example.execute-api.us-east-1.amazonaws.com\",\"Method\":\"GET\",\"Headers\":{\"Accept\":\"application/json\"}}' could not be used to start the Task: [The value of the field 'Headers' has an invalid format]"
    );
    assert!(
        !types(&history).iter().any(|t| t == "TaskScheduled"),
        "nothing was scheduled"
    );
}

#[test]
fn a_distributed_map_reads_pipe_delimited_csv_and_previews_flattened_results() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path("s3/in")).expect("bucket");
    sb.write("s3/in/rows.csv", "name|tags\nann|\"a|b\"\nbob|c\n");
    let machine = json!({"StartAt": "Each", "States": {"Each": {
        "Type": "Map", "End": true,
        "ItemReader": {"Resource": "arn:aws:states:::s3:getObject",
            "ReaderConfig": {"InputType": "CSV", "CSVHeaderLocation": "FIRST_ROW",
                             "CSVDelimiter": "PIPE"},
            "Parameters": {"Bucket": "in", "Key": "rows.csv"}},
        "ItemProcessor": {
            "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
            "StartAt": "Split", "States": {"Split": {"Type": "Pass",
                "Parameters": {"pair.$": "States.Array($.name, $.tags)"},
                "OutputPath": "$.pair", "End": true}}},
        "ResultWriter": {"WriterConfig": {"Transformation": "FLATTEN", "OutputType": "JSON"}}}}});
    let f = sb.write("m.asl.json", &machine.to_string());
    let s3 = sb.path("s3");
    let out = sb.run(&[
        "run",
        f.to_str().expect("path"),
        "--s3-dir",
        s3.to_str().expect("path"),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), json!(["ann", "a|b", "bob", "c"]));
}

#[test]
fn a_definition_nested_too_deeply_is_too_deeply_nested() {
    let sb = Sandbox::new();
    // Parallel states inside Parallel states, 40 deep: 160 levels of objects and arrays.
    let mut machine = json!({"StartAt": "X", "States": {"X": {"Type": "Pass", "End": true}}});
    for i in 0..40 {
        let name = format!("P{i}");
        machine = json!({"StartAt": name, "States": {name: {
            "Type": "Parallel", "Branches": [machine], "End": true}}});
    }
    let f = sb.write("deep.asl.json", &machine.to_string());
    let out = sb.run(&["validate", "--format", "json", f.to_str().expect("path")]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let v = out.json();
    assert_eq!(v["diagnostics"][0]["code"], "TOO_DEEPLY_NESTED", "{v}");
    let run = sb.run(&["run", f.to_str().expect("path")]);
    assert_eq!(run.code, 2, "refused before running: {}", run.stderr);
    assert!(run.stderr.contains("TOO_DEEPLY_NESTED"), "{}", run.stderr);
}

/// JSONata results as AWS (whose JSONata is jsonata-js's) returns them: a sequence of one value
/// is that value (a path through a one-element array, a filter with one match, `$map`,
/// `$filter`, `$keys`, `$each`, `$lookup`, `$match`, and AWS's `$range`, measured on AWS for
/// floci: https://github.com/floci-io/floci/pull/2676), while arrays that functions build or
/// that the expression constructs stay arrays (`$sort`, `$split`, `$append`, `$distinct` of an
/// array, `[...]`, the `[]` modifier, AWS's `$partition` chunks as AWS recorded them).
#[test]
fn jsonata_single_value_sequences_are_their_value_and_arrays_stay_arrays() {
    let sb = Sandbox::new();
    let machine = json!({"QueryLanguage": "JSONata", "StartAt": "P", "States": {"P": {
    "Type": "Pass", "End": true, "Output": {
        "path": "{% $states.input.a.b %}",
        "filter": "{% $states.input.list[$ > 1] %}",
        "map": "{% $map([1], function($v){$v}) %}",
        "filterFn": "{% $filter([1,2], function($v){$v>1}) %}",
        "keys": "{% $keys({'a':1}) %}",
        "each": "{% $each({'a':1}, function($v){$v}) %}",
        "lookup": "{% $lookup([{'x':1}], 'x') %}",
        "match": "{% $match('ab', /a/).match %}",
        "variable": "{% ($x := $states.input.list[$>1]; $x) %}",
        "sort": "{% $sort([1]) %}",
        "split": "{% $split('a', ',') %}",
        "append": "{% $append([], 1) %}",
        "distinct": "{% $distinct([1,1]) %}",
        "constructed": "{% [$states.input.a.b] %}",
        "kept": "{% $states.input.a.b[] %}",
        "range": "{% $range(3, 3, 1) %}",
        "partition": "{% $partition([0], 1) %}"
    }}}});
    let f = sb.write("j.asl.json", &machine.to_string());
    let out = sb.run(&[
        "run",
        f.to_str().expect("path"),
        "--input",
        r#"{"a":[{"b":1}],"list":[1,2]}"#,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.json(),
        json!({"path": 1, "filter": 2, "map": 1, "filterFn": 2, "keys": "a", "each": 1,
               "lookup": 1, "match": "a", "variable": 2, "sort": [1], "split": ["a"],
               "append": [1], "distinct": [1], "constructed": [1], "kept": [1],
               "range": 3, "partition": [[0]]})
    );
}
