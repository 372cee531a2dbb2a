//! Inputs over AWS's limits, refused before anything parses them (an input file, stdin, a
//! definition, a mock config, a task output), and a long history printed a chunk at a time,
//! through the real binary.

mod common;

use common::Sandbox;
use serde_json::json;

/// One Pass state.
fn machine(sb: &Sandbox) -> String {
    let def = json!({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}});
    sb.write("m.asl.json", &def.to_string())
        .display()
        .to_string()
}

/// A sparse file of `len` bytes: refused by its size, never read.
fn sparse(sb: &Sandbox, name: &str, len: u64) -> String {
    let p = sb.path(name);
    std::fs::File::create(&p).unwrap().set_len(len).unwrap();
    p.display().to_string()
}

#[test]
fn an_input_file_over_256_kib_is_refused_before_parsing() {
    let sb = Sandbox::new();
    let def = machine(&sb);
    let input = sparse(&sb, "big.json", 10 << 30);
    let out = sb.run(&["run", &def, "--input-file", &input]);
    out.assert_error(
        2,
        "Value at 'input' failed to satisfy constraint: Member must have length less than or equal to 262144",
    );
    assert!(
        out.stderr.contains("is 10737418240 bytes"),
        "{}",
        out.stderr
    );
    assert!(!sb.db().exists() || sb.run(&["list-executions"]).json()["executions"] == json!([]));
}

#[test]
fn an_input_on_stdin_over_256_kib_is_refused() {
    let sb = Sandbox::new();
    let def = machine(&sb);
    let big = format!("\"{}\"", "a".repeat(300_000));
    let out = sb.run_with_stdin(&["run", &def, "--input-file", "-"], &big);
    out.assert_error(2, "Member must have length less than or equal to 262144");
}

#[test]
fn a_definition_over_1_mb_is_refused_before_parsing() {
    let sb = Sandbox::new();
    let comment = "x".repeat(1_100_000);
    let def =
        json!({"Comment": comment, "StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}});
    let path = sb.write("huge.asl.json", &def.to_string());
    let out = sb.run(&["run", &path.display().to_string()]);
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.contains("Value at 'definition' failed to satisfy constraint: Member must have length less than or equal to 1048576"),
        "{}",
        out.stderr
    );
    let out = sb.run(&["validate", &path.display().to_string()]);
    assert_ne!(out.code, 0, "{}", out.stdout);
    let huge = sparse(&sb, "sparse.asl.json", 10 << 30);
    let out = sb.run(&["run", &huge]);
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.contains("is 10737418240 bytes"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_mock_config_over_16_mib_is_refused_unread() {
    let sb = Sandbox::new();
    let def = machine(&sb);
    let mocks = sparse(&sb, "mocks.json", 10 << 30);
    let out = sb.run(&["run", &def, "--mock-config", &mocks, "--test-case", "Happy"]);
    assert_ne!(out.code, 0);
    assert!(
        out.stderr
            .contains("is 10737418240 bytes; the most sfn-local reads is 16777216 bytes"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_task_output_file_over_the_limits_is_refused_unread() {
    let sb = Sandbox::new();
    let output = sparse(&sb, "out.json", 10 << 30);
    let out = sb.run(&[
        "send-task-success",
        "--task-token",
        "AAAA",
        "--task-output",
        &format!("file://{output}"),
    ]);
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.contains("is 10737418240 bytes"),
        "{}",
        out.stderr
    );
    let big = sb.write("big.json", &format!("\"{}\"", "a".repeat(300_000)));
    let out = sb.run(&[
        "send-task-success",
        "--task-token",
        &format!("T{}", "A".repeat(43)),
        "--task-output",
        &format!("file://{}", big.display()),
    ]);
    assert!(out.stderr.contains("InvalidOutput"), "{}", out.stderr);
}

/// A Map of `n` items whose iterations each carry a 4 KiB payload through two Pass states:
/// 6 events per item, 6 more around them.
fn long_history(sb: &Sandbox, name: &str, n: usize) {
    let big = "x".repeat(4096);
    let def = json!({"StartAt": "M", "States": {"M": {
        "Type": "Map", "ItemsPath": "$.items", "End": true,
        "ItemProcessor": {"StartAt": "Big", "States": {
            "Big": {"Type": "Pass", "Result": big, "Next": "Small"},
            "Small": {"Type": "Pass", "Result": 1, "End": true}}}}}});
    let path = sb.write("long.asl.json", &def.to_string());
    let input = json!({"items": (0..n).collect::<Vec<_>>()}).to_string();
    let out = sb.run(&[
        "run",
        &path.display().to_string(),
        "--name",
        name,
        "--input",
        &input,
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn a_streamed_history_prints_what_the_whole_response_would() {
    let sb = Sandbox::new();
    long_history(&sb, "short", 3);
    for reverse in [false, true] {
        let mut args = vec!["get-execution-history", "--execution-arn", "short"];
        if reverse {
            args.push("--reverse-order");
        }
        let streamed = sb.run(&args);
        assert_eq!(streamed.code, 0, "{}", streamed.stderr);
        // Printed as the whole response would be (pretty, AWS's key order)...
        let value = streamed.json();
        assert!(
            streamed.stdout == serde_json::to_string_pretty(&value).unwrap() + "\n",
            "not pretty-printed as a whole response"
        );
        // ... with the same events (`--query @` builds the whole response, keys sorted).
        args.extend(["--query", "@"]);
        let whole = sb.run(&args);
        assert_eq!(whole.code, 0, "{}", whole.stderr);
        assert!(value == whole.json(), "the streamed history differs");
        assert_eq!(value["events"].as_array().unwrap().len(), 24);
    }
}

#[test]
fn a_history_of_24006_events_is_printed_in_bounded_memory() {
    let sb = Sandbox::new();
    long_history(&sb, "long", 4000);
    let (out, peak_mib) = sb.run_measured(&["get-execution-history", "--execution-arn", "long"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let size_mib = out.stdout.len() / (1024 * 1024);
    let events: serde_json::Value = out.json();
    assert_eq!(events["events"].as_array().unwrap().len(), 24_006);
    eprintln!("history of {size_mib} MiB printed with a peak of {peak_mib} MiB");
    assert!(
        peak_mib < 60,
        "get-execution-history peaked at {peak_mib} MiB for {size_mib} MiB of output"
    );
}
