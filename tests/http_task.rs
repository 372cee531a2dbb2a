//! The HTTP Task (`arn:aws:states:::http:invoke`) in `run`: the Task calls its `ApiEndpoint`
//! (an HTTP API on localhost here), its result has AWS's shape, and a status outside 2xx is
//! `States.Http.StatusCode.NNN`, which Catch handles like any error.

mod common;

use common::http_api::one_shot;
use common::Sandbox;
use serde_json::json;

fn machine(url: &str) -> String {
    json!({
        "StartAt": "Call",
        "States": {
            "Call": {
                "Type": "Task",
                "Resource": "arn:aws:states:::http:invoke",
                "Parameters": {
                    "ApiEndpoint": format!("{url}/orders"),
                    "Method": "GET",
                    "Authentication": {"ConnectionArn": "arn:aws:events:us-east-1:123456789012:connection/Api/1"},
                    "QueryParameters": {"id.$": "$.id"}
                },
                "ResultSelector": {"body.$": "$.ResponseBody", "code.$": "$.StatusCode", "text.$": "$.StatusText"},
                "Catch": [{"ErrorEquals": ["States.Http.StatusCode.500"], "ResultPath": "$.error", "Next": "Failed"}],
                "End": true
            },
            "Failed": {"Type": "Pass", "End": true}
        }
    })
    .to_string()
}

#[test]
fn run_calls_the_api_and_catches_an_error_status() {
    let sb = Sandbox::new();
    let (url, api) = one_shot("200 OK", r#"{"total":42}"#);
    let file = sb.write("m.asl.json", &machine(&url));
    let out = sb.run(&["run", file.to_str().unwrap(), "--input", r#"{"id":"o-1"}"#]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(api
        .join()
        .unwrap()
        .starts_with("GET /orders?id=o-1 HTTP/1.1"));
    assert_eq!(
        out.json(),
        json!({"body": {"total": 42}, "code": 200, "text": "OK"})
    );

    let (url, api) = one_shot("500 Internal Server Error", "boom");
    let file = sb.write("m.asl.json", &machine(&url));
    let out = sb.run(&["run", file.to_str().unwrap(), "--input", r#"{"id":"o-2"}"#]);
    api.join().unwrap();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let o = out.json();
    assert_eq!(o["error"]["Error"], "States.Http.StatusCode.500");
    let cause: serde_json::Value =
        serde_json::from_str(o["error"]["Cause"].as_str().unwrap()).unwrap();
    assert_eq!(cause["ResponseBody"], "boom");
    assert_eq!(cause["StatusCode"], 500);
}
