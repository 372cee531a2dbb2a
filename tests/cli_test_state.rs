//! `sfn-local test-state` through the real binary: the README's three examples, AWS's error
//! output and exit statuses, `file://` options, `--task`, and `"state"` cases in `sfn-local test`.

mod common;

use common::Sandbox;
use serde_json::{json, Value};

/// The response with its JSON texts parsed, for readable assertions.
fn parsed(mut v: Value) -> Value {
    fn parse(v: &mut Value) {
        if let Value::String(t) = v {
            if let Ok(p) = serde_json::from_str(t) {
                *v = p;
            }
        }
    }
    if let Some(o) = v.as_object_mut() {
        o.get_mut("output").map(parse);
        if let Some(Value::Object(d)) = o.get_mut("inspectionData") {
            d.values_mut().for_each(parse);
        }
    }
    v
}

#[test]
fn a_jsonpath_data_flow_is_inspected_step_by_step_at_debug() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "test-state",
        "--definition",
        r#"{"Type":"Pass","InputPath":"$.order","Parameters":{"id.$":"$.id","total.$":"States.MathAdd($.price, $.shipping)"},"ResultPath":"$.summary","OutputPath":"$.summary","Next":"Charge"}"#,
        "--input",
        r#"{"order":{"id":"o-1","price":40,"shipping":2},"customer":"c-9"}"#,
        "--inspection-level",
        "DEBUG",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        parsed(out.json()),
        json!({
            "output": {"id": "o-1", "total": 42},
            "inspectionData": {
                "input": {"order": {"id": "o-1", "price": 40, "shipping": 2}, "customer": "c-9"},
                "afterInputPath": {"id": "o-1", "price": 40, "shipping": 2},
                "afterParameters": {"id": "o-1", "total": 42},
                "afterResultSelector": {"id": "o-1", "total": 42},
                "afterResultPath": {"order": {"id": "o-1", "price": 40, "shipping": 2}, "customer": "c-9", "summary": {"id": "o-1", "total": 42}}
            },
            "nextState": "Charge",
            "status": "SUCCEEDED"
        })
    );
}

#[test]
fn a_retry_decision_reports_the_retrier_and_the_backoff_aws_would_wait() {
    let sb = Sandbox::new();
    let definition = sb.write(
        "charge.json",
        r#"{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke",
            "Arguments":{"FunctionName":"charge","Payload":"{% $states.input %}"},
            "QueryLanguage":"JSONata",
            "Retry":[{"ErrorEquals":["Throttled"],"IntervalSeconds":2,"BackoffRate":3,"MaxAttempts":3}],
            "Catch":[{"ErrorEquals":["States.ALL"],"Next":"Refund"}],
            "End":true}"#,
    );
    let def_arg = format!("file://{}", definition.display());
    let retry = |count: u64| {
        sb.run(&[
            "test-state",
            "--definition",
            &def_arg,
            "--mock",
            r#"{"errorOutput":{"error":"Throttled","cause":"slow down"}}"#,
            "--state-configuration",
            &format!(r#"{{"retrierRetryCount":{count}}}"#),
            "--inspection-level",
            "DEBUG",
        ])
    };
    let out = retry(2);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = out.json();
    assert_eq!(v["status"], "RETRIABLE");
    assert_eq!(
        v["inspectionData"]["errorDetails"],
        json!({"retryIndex": 0, "retryBackoffIntervalSeconds": 18})
    );
    // Retries spent: the catcher takes the error.
    let v = retry(3).json();
    assert_eq!(v["status"], "CAUGHT_ERROR");
    assert_eq!(v["nextState"], "Refund");
    assert_eq!(
        v["inspectionData"]["errorDetails"],
        json!({"retryIndex": 0, "catchIndex": 0})
    );
    assert_eq!(
        parsed(v)["output"],
        json!({"Error": "Throttled", "Cause": "slow down"})
    );
}

#[test]
fn a_map_with_a_tolerated_failure_count_fails_only_past_it() {
    let sb = Sandbox::new();
    let definition = r#"{"Type":"Map","ItemsPath":"$.items","ToleratedFailureCount":1,
        "ItemProcessor":{"StartAt":"Ship","States":{"Ship":{"Type":"Pass","End":true}}},
        "Catch":[{"ErrorEquals":["States.ExceedToleratedFailureThreshold"],"Next":"Alert"}],
        "End":true}"#;
    let run = |failures: u64| {
        sb.run(&[
            "test-state",
            "--definition",
            definition,
            "--input",
            r#"{"items":[1,2,3]}"#,
            "--mock",
            r#"{"result":"[\"a\",\"b\",\"c\"]"}"#,
            "--state-configuration",
            &format!(r#"{{"mapIterationFailureCount":{failures}}}"#),
            "--inspection-level",
            "DEBUG",
        ])
        .json()
    };
    let v = run(1);
    assert_eq!(v["status"], "SUCCEEDED");
    assert_eq!(v["inspectionData"]["toleratedFailureCount"], 1);
    assert_eq!(v["inspectionData"]["afterItemsPath"], "[1,2,3]");
    let v = run(2);
    assert_eq!(v["status"], "CAUGHT_ERROR");
    assert_eq!(v["error"], "States.ExceedToleratedFailureThreshold");
    assert_eq!(v["nextState"], "Alert");
}

#[test]
fn a_failing_state_exits_0_and_a_rejected_request_prints_awss_error() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "test-state",
        "--definition",
        r#"{"Type":"Fail","Error":"Boom","Cause":"because"}"#,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.json(),
        json!({"error": "Boom", "cause": "because", "status": "FAILED"})
    );
    let out = sb.run(&[
        "test-state",
        "--definition",
        r#"{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}"#,
        "--state-name",
        "B",
    ]);
    out.assert_error(
        254,
        "An error occurred (ValidationException) when calling the TestState operation: State not found in definition",
    );
    assert!(out.stdout.is_empty());
    let out = sb.run(&[
        "test-state",
        "--definition",
        r#"{"Type":"Pass","End":true}"#,
        "--mock",
        r#"{"result":"{}"}"#,
    ]);
    out.assert_error(
        254,
        "(ValidationException) when calling the TestState operation: State type 'Pass' is not supported when a mock is specified",
    );
    // A mocked result is checked against the integration's API (STRICT by default).
    let out = sb.run(&[
        "test-state",
        "--definition",
        r#"{"Type":"Task","Resource":"arn:aws:states:::sqs:sendMessage","Parameters":{"QueueUrl":"q","MessageBody":"m"},"End":true}"#,
        "--mock",
        r#"{"result":"{\"MessageId\":7}"}"#,
    ]);
    out.assert_error(
        254,
        "Mock result schema validation error: Field 'MessageId' must be a string",
    );
}

#[test]
fn every_json_option_reads_file_urls_and_a_task_runs_its_bound_command() {
    let sb = Sandbox::new();
    let machine = sb.write(
        "machine.json",
        r#"{"StartAt":"Price","States":{"Price":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","ResultSelector":{"price.$":"$.Payload.price","who.$":"$$.Execution.Name"},"End":true}}}"#,
    );
    let input = sb.write("input.json", r#"{"sku":"x"}"#);
    let context = sb.write("context.json", r#"{"Execution":{"Name":"e-1"}}"#);
    let out = sb.run(&[
        "test-state",
        "--definition",
        &format!("file://{}", machine.display()),
        "--state-name",
        "Price",
        "--input",
        &format!("file://{}", input.display()),
        "--context",
        &format!("file://{}", context.display()),
        "--role-arn",
        "arn:aws:iam::123456789012:role/r",
        "--task",
        r#"sh -c 'echo "{\"price\": 9}"'"#,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        parsed(out.json()),
        json!({"output": {"price": 9, "who": "e-1"}, "status": "SUCCEEDED"})
    );
}

#[test]
fn a_test_spec_case_can_test_one_state() {
    let sb = Sandbox::new();
    sb.write(
        "orders.asl.json",
        r#"{"StartAt":"Charge","States":{
            "Charge":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke",
              "Parameters":{"FunctionName":"charge","Payload.$":"$"},
              "ResultSelector":{"receipt.$":"$.Payload.id"},"ResultPath":"$.charge","Next":"Ship"},
            "Ship":{"Type":"Succeed"}}}"#,
    );
    let spec = sb.write(
        "orders.sfntest.json",
        r#"{"definition":"orders.asl.json","cases":[
            {"name":"the receipt is picked out","state":"Charge","input":{"id":1},
             "mock":{"result":{"Payload":{"id":"r-1"},"StatusCode":200}},
             "expect":{"status":"SUCCEEDED","output":{"id":1,"charge":{"receipt":"r-1"}},
                       "nextState":"Ship","inspectionData":{"afterResultSelector":{"receipt":"r-1"}}}},
            {"name":"a wrong expectation fails","state":"Charge","input":{"id":1},
             "mock":{"result":{"Payload":{"id":"r-2"}}},
             "expect":{"outputContains":{"charge":{"receipt":"r-1"}}}}]}"#,
    );
    let out = sb.run(&["test", spec.to_str().unwrap()]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("1 passed, 1 failed"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("a wrong expectation fails: output differs"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains(r#"$.charge.receipt: expected "r-1", got "r-2""#),
        "{}",
        out.stdout
    );
}

#[test]
fn a_maps_item_selector_and_jsonata_variables_are_inspected() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "test-state",
        "--definition",
        r#"{"Type":"Map","ItemsPath":"$.items","ItemSelector":{"n.$":"$$.Map.Item.Value","i.$":"$$.Map.Item.Index","tag.$":"$.tag"},
            "ItemProcessor":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"End":true}"#,
        "--input",
        r#"{"items":[5,6],"tag":"t"}"#,
        "--mock",
        r#"{"result":"[1,2]"}"#,
        "--inspection-level",
        "TRACE",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = parsed(out.json());
    assert_eq!(
        v["inspectionData"]["afterItemSelector"],
        json!([{"n": 5, "i": 0, "tag": "t"}, {"n": 6, "i": 1, "tag": "t"}])
    );
    assert_eq!(v["output"], json!([1, 2]));
    let out = sb.run(&[
        "test-state",
        "--definition",
        r#"{"Type":"Pass","QueryLanguage":"JSONata","Output":"{% $states.input.a + $bonus %}","Assign":{"seen":true},"Next":"N"}"#,
        "--input",
        r#"{"a":1}"#,
        "--variables",
        r#"{"bonus":41}"#,
        "--inspection-level",
        "TRACE",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        parsed(out.json()),
        json!({"output": 42, "inspectionData": {"input": {"a": 1}, "variables": {"bonus": 41, "seen": true}}, "nextState": "N", "status": "SUCCEEDED"})
    );
}

#[test]
fn a_bound_command_is_bounded_by_the_states_timeout() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "test-state",
        "--definition",
        r#"{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","TimeoutSeconds":1,
            "Catch":[{"ErrorEquals":["States.Timeout"],"Next":"Late"}],"End":true}"#,
        "--role-arn",
        "arn:aws:iam::123456789012:role/r",
        "--task",
        "sleep 30",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = out.json();
    assert_eq!(v["status"], "CAUGHT_ERROR", "{v}");
    assert_eq!(v["error"], "States.Timeout");
    assert_eq!(v["nextState"], "Late");
}

#[test]
fn a_distributed_maps_batches_are_inspected() {
    let sb = Sandbox::new();
    let out = sb.run(&[
        "test-state",
        "--definition",
        r#"{"Type":"Map","ItemBatcher":{"MaxItemsPerBatch":2,"BatchInput":{"run":"r1"}},
            "ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},
              "StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"End":true}"#,
        "--input",
        "[1,2,3]",
        "--mock",
        r#"{"result":"[{},{}]"}"#,
        "--inspection-level",
        "DEBUG",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        parsed(out.json())["inspectionData"]["afterItemBatcher"],
        json!([{"BatchInput": {"run": "r1"}, "Items": [1, 2]}, {"BatchInput": {"run": "r1"}, "Items": [3]}])
    );
}

#[test]
fn an_http_task_calls_its_api_and_trace_shows_the_request_and_response() {
    let sb = Sandbox::new();
    let (url, api) = common::http_api::one_shot("200 OK", r#"{"id":"c-1"}"#);
    let definition = json!({
        "Type": "Task",
        "Resource": "arn:aws:states:::http:invoke",
        "Parameters": {
            "ApiEndpoint": format!("{url}/customers"),
            "Method": "POST",
            "Authentication": {"ConnectionArn": "arn:aws:events:us-east-1:123456789012:connection/Api/1"},
            "Headers": {"Authorization": "Bearer s3cret"},
            "QueryParameters": {"limit": 1},
            "RequestBody": {"name.$": "$.name"}
        },
        "ResultSelector": {"id.$": "$.ResponseBody.id", "status.$": "$.StatusCode"},
        "End": true
    })
    .to_string();
    let out = sb.run(&[
        "test-state",
        "--definition",
        &definition,
        "--input",
        r#"{"name":"Ada"}"#,
        "--role-arn",
        "arn:aws:iam::123456789012:role/r",
        "--inspection-level",
        "TRACE",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let got = api.join().unwrap();
    assert!(got.starts_with("POST /customers?limit=1 HTTP/1.1"), "{got}");
    assert!(got.ends_with(r#"{"name":"Ada"}"#), "{got}");
    assert!(
        got.to_ascii_lowercase()
            .contains("authorization: bearer s3cret"),
        "{got}"
    );
    let v = out.json();
    assert_eq!(v["status"], "SUCCEEDED");
    assert_eq!(
        parsed(v.clone())["output"],
        json!({"id": "c-1", "status": 200})
    );
    let data = &v["inspectionData"];
    let result: Value = serde_json::from_str(data["result"].as_str().unwrap()).unwrap();
    assert_eq!(result["ResponseBody"], json!({"id": "c-1"}));
    assert_eq!(result["StatusText"], "OK");
    assert_eq!(result["Headers"]["x-trace"], json!(["t-1"]));
    let request = &data["request"];
    assert_eq!(request["protocol"], "http");
    assert_eq!(request["method"], "POST");
    assert_eq!(request["url"], format!("{url}/customers?limit=1"));
    assert_eq!(request["body"], r#"{"name":"Ada"}"#);
    let headers = request["headers"].as_str().unwrap();
    assert!(headers.contains("Authorization: (redacted)"), "{headers}");
    assert!(!headers.contains("s3cret"), "{headers}");
    let response = &data["response"];
    assert_eq!(response["statusCode"], "200");
    assert_eq!(response["statusMessage"], "OK");
    assert_eq!(response["body"], r#"{"id":"c-1"}"#);
    assert!(response["headers"]
        .as_str()
        .unwrap()
        .contains("x-trace: t-1"));

    // A status outside 2xx is AWS's States.Http.StatusCode.NNN; --reveal-secrets shows the
    // credentials; DEBUG shows no HTTP data.
    let (url, api) =
        common::http_api::one_shot("404 Not Found", r#"{"message":"no such customer"}"#);
    let definition = definition.replace(
        &format!("{}/customers", url_of(&definition)),
        &format!("{url}/customers"),
    );
    let out = sb.run(&[
        "test-state",
        "--definition",
        &definition,
        "--input",
        r#"{"name":"Ada"}"#,
        "--role-arn",
        "arn:aws:iam::123456789012:role/r",
        "--inspection-level",
        "TRACE",
        "--reveal-secrets",
    ]);
    api.join().unwrap();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = out.json();
    assert_eq!(v["status"], "FAILED");
    assert_eq!(v["error"], "States.Http.StatusCode.404");
    let cause: Value = serde_json::from_str(v["cause"].as_str().unwrap()).unwrap();
    assert_eq!(
        cause["ResponseBody"],
        json!({"message": "no such customer"})
    );
    let headers = v["inspectionData"]["request"]["headers"].as_str().unwrap();
    assert!(
        headers.contains("Authorization: Bearer s3cret"),
        "{headers}"
    );
    assert_eq!(v["inspectionData"]["response"]["statusCode"], "404");
}

/// The scheme and authority of the first `http://` URL in `text`.
fn url_of(text: &str) -> String {
    let start = text.find("http://").unwrap();
    let rest = &text[start + 7..];
    let end = rest.find('/').unwrap();
    format!("http://{}", &rest[..end])
}

/// A Task with no mock reaches a local endpoint as `run --endpoint` does: an SQS queue of
/// moto's server, created with boto3.
#[test]
fn a_task_without_a_mock_calls_its_service_at_a_local_endpoint() {
    use std::process::{Command, Stdio};
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let mut moto = Command::new(common::deps_python_bin("moto_server"))
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start moto_server");
    let create = format!(
        "import boto3\nprint(boto3.client('sqs', endpoint_url={url:?}, region_name='us-east-1', aws_access_key_id='test', aws_secret_access_key='test').create_queue(QueueName='orders')['QueueUrl'])"
    );
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let queue = loop {
        let out = Command::new(common::deps_python_bin("python"))
            .args(["-c", &create])
            .output()
            .expect("python");
        if out.status.success() {
            break String::from_utf8_lossy(&out.stdout).trim().to_owned();
        }
        if std::time::Instant::now() > until {
            let _ = moto.kill();
            panic!("moto did not start");
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    let sb = Sandbox::new()
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test");
    let definition = json!({
        "Type": "Task",
        "Resource": "arn:aws:states:::sqs:sendMessage",
        "Parameters": {"QueueUrl": queue, "MessageBody.$": "$.order"},
        "ResultSelector": {"id.$": "$.MessageId"},
        "End": true
    })
    .to_string();
    let out = sb.run(&[
        "test-state",
        "--definition",
        &definition,
        "--input",
        r#"{"order":"o-1"}"#,
        "--role-arn",
        "arn:aws:iam::123456789012:role/r",
        "--endpoint",
        &format!("all={url}"),
    ]);
    let _ = moto.kill();
    let _ = moto.wait();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = parsed(out.json());
    assert_eq!(v["status"], "SUCCEEDED", "{v}");
    assert!(
        v["output"]["id"].as_str().is_some_and(|s| !s.is_empty()),
        "{v}"
    );
}
