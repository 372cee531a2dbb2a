//! Depth budgets (`src/depth.rs`): inputs nested past every limit get an error naming the limit,
//! through the real binary, `serve` over HTTP and the language server, never a stack overflow
//! (which would abort the process with every execution in it, and again at each restart).

mod common;

use common::{served::Served, Sandbox};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// `"$.a[?((((...@.b == 1...))))]"` with `levels` parentheses.
fn deep_filter(levels: usize) -> String {
    format!(
        "$.a[?({}@.b == 1{})]",
        "(".repeat(levels),
        ")".repeat(levels)
    )
}

fn filter_machine(levels: usize) -> Value {
    json!({"StartAt": "P", "States": {"P": {"Type": "Pass",
        "Parameters": {"x.$": deep_filter(levels)}, "End": true}}})
}

/// A Pass that nests its input 60 levels deeper, looped forever through a Choice: each turn
/// builds a deeper value than the last.
fn nesting_loop() -> Value {
    let mut parameters = json!({"v.$": "$"});
    for _ in 0..60 {
        parameters = json!({ "a": parameters });
    }
    json!({"StartAt": "Nest", "States": {
        "Nest": {"Type": "Pass", "Parameters": parameters, "Next": "Loop"},
        "Loop": {"Type": "Choice",
            "Choices": [{"Variable": "$.never", "IsPresent": true, "Next": "Done"}],
            "Default": "Nest"},
        "Done": {"Type": "Succeed"}}})
}

const NESTED_TOO_DEEP: &str = "a value is nested more than 127 levels deep (sfn-local's limit)";

#[test]
fn validate_refuses_a_filter_nested_20000_deep_instead_of_aborting() {
    let sb = Sandbox::new();
    for levels in [3_000, 20_000] {
        let path = sb.write("deep.asl.json", &filter_machine(levels).to_string());
        let out = sb.run(&["validate", path.to_str().unwrap(), "--format", "json"]);
        assert_eq!(out.code, 1, "{}", out.stderr);
        let message = out.json()["diagnostics"][0]["message"].to_string();
        assert!(
            message.contains("parentheses and '!' nest more than 64 deep"),
            "{message}"
        );
    }
    // At the limit, it is a filter like any other.
    let path = sb.write("ok.asl.json", &filter_machine(63).to_string());
    let out = sb.run(&["validate", path.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn an_execution_that_nests_its_input_each_turn_fails_alone_with_states_runtime() {
    let sb = Sandbox::new();
    let out = sb.run_definition(&nesting_loop(), "deep", &[]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let history = sb.history("deep");
    let last = history.last().unwrap();
    assert_eq!(last["type"], "ExecutionFailed");
    let details = &last["executionFailedEventDetails"];
    assert_eq!(details["error"], "States.Runtime");
    assert!(
        details["cause"]
            .as_str()
            .unwrap()
            .contains(&format!("state 'Nest': {NESTED_TOO_DEEP}")),
        "{details}"
    );
}

#[test]
fn variables_and_result_paths_past_the_budget_fail_their_execution() {
    let sb = Sandbox::new();
    let mut wrap = json!({"v.$": "$v"});
    for _ in 0..60 {
        wrap = json!({ "a": wrap });
    }
    let assign_loop = json!({"StartAt": "Init", "States": {
        "Init": {"Type": "Pass", "Assign": {"v": 1}, "Next": "Grow"},
        "Grow": {"Type": "Pass", "Assign": {"v": wrap}, "Next": "Grow2"},
        "Grow2": {"Type": "Choice",
            "Choices": [{"Variable": "$.never", "IsPresent": true, "Next": "Done"}],
            "Default": "Grow"},
        "Done": {"Type": "Succeed"}}});
    let out = sb.run_definition(&assign_loop, "vars", &[]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("States.Runtime"), "{}", out.stderr);
    assert!(
        out.stderr
            .contains(&format!("The variable 'v': {NESTED_TOO_DEEP}")),
        "{}",
        out.stderr
    );
    let steps = vec!["a"; 200].join(".");
    let long_path = json!({"StartAt": "P", "States": {"P": {"Type": "Pass",
        "Result": 1, "ResultPath": format!("$.{steps}"), "End": true}}});
    let out = sb.run_definition(&long_path, "path", &[]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("has 200 steps"), "{}", out.stderr);
}

#[test]
fn serve_answers_a_6_kb_request_and_outlives_a_deepening_execution() {
    let sb = Sandbox::new();
    let server = Served::serve(&sb, &[]);
    let definition = filter_machine(3_000).to_string();
    let (status, answer) = server.call(
        "ValidateStateMachineDefinition",
        json!({ "definition": definition }),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"], "FAIL");
    let role = "arn:aws:iam::123456789012:role/r";
    let (status, answer) = server.call(
        "CreateStateMachine",
        json!({"name": "filter", "definition": definition, "roleArn": role}),
    );
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["__type"], "InvalidDefinition");
    let (status, created) = server.call(
        "CreateStateMachine",
        json!({"name": "deep", "definition": nesting_loop().to_string(), "roleArn": role}),
    );
    assert_eq!(status, 200, "{created}");
    let (_, started) = server.call(
        "StartExecution",
        json!({"stateMachineArn": created["stateMachineArn"], "input": "{}"}),
    );
    let until = Instant::now() + Duration::from_secs(30);
    let described = loop {
        let (status, described) = server.call(
            "DescribeExecution",
            json!({"executionArn": started["executionArn"]}),
        );
        assert_eq!(status, 200, "{described}: {}", server.log());
        if described["status"] != "RUNNING" || Instant::now() > until {
            break described;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(described["status"], "FAILED", "{described}");
    assert_eq!(described["error"], "States.Runtime");
    let (status, _) = server.call("ListStateMachines", json!({}));
    assert_eq!(status, 200, "the server is gone: {}", server.log());
}

/// One LSP message, framed.
fn frame(message: &Value) -> Vec<u8> {
    let body = message.to_string();
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

/// Reads framed messages until one satisfies `wanted`.
fn read_until(out: &mut impl BufRead, wanted: impl Fn(&Value) -> bool) -> Value {
    loop {
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            assert!(out.read_line(&mut line).unwrap() > 0, "the server ended");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(n) = line.strip_prefix("Content-Length: ") {
                length = n.parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        out.read_exact(&mut body).unwrap();
        let message: Value = serde_json::from_slice(&body).unwrap();
        if wanted(&message) {
            return message;
        }
    }
}

#[test]
fn the_language_server_diagnoses_a_filter_nested_20000_deep() {
    let sb = Sandbox::new();
    let mut lsp = sb
        .command()
        .arg("lsp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = lsp.stdin.take().unwrap();
    let mut output = BufReader::new(lsp.stdout.take().unwrap());
    let uri = format!("file://{}", sb.path("deep.asl.json").display());
    let text = serde_json::to_string_pretty(&filter_machine(20_000)).unwrap();
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"processId": null, "rootUri": null, "capabilities": {}}}),
        json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
        json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument":
            {"uri": uri, "languageId": "json", "version": 1, "text": text}}}),
    ] {
        input.write_all(&frame(&message)).unwrap();
    }
    input.flush().unwrap();
    let published = read_until(&mut output, |m| {
        m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri.as_str()
    });
    let diagnostics = published["params"]["diagnostics"].to_string();
    assert!(
        diagnostics.contains("nest more than 64 deep"),
        "{diagnostics}"
    );
    drop(input);
    let status = lsp.wait().unwrap();
    assert!(status.code().is_some(), "the server died by a signal");
}

#[test]
fn a_yaml_definition_deeper_than_what_is_stored_reads_back_is_too_deeply_nested() {
    let sb = Sandbox::new();
    // YAML's own reader allows 256 levels; what run stores must read back as JSON.
    let yaml = format!(
        "StartAt: P\nStates:\n  P:\n    Type: Pass\n    Result: {}1{}\n    End: true\n",
        "[".repeat(200),
        "]".repeat(200)
    );
    let path = sb.write("deep.asl.yaml", &yaml);
    let out = sb.run(&["validate", path.to_str().unwrap(), "--format", "json"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(out.json()["diagnostics"][0]["code"], "TOO_DEEPLY_NESTED");
    let run = sb.run(&["run", path.to_str().unwrap()]);
    assert_eq!(run.code, 2, "refused before running: {}", run.stderr);
}
