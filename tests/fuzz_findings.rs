//! One regression test per finding of the fuzz targets in `fuzz/` (run with `fuzz/run.sh`),
//! each through the binary, as a user would hit it.

mod common;

use common::Sandbox;

/// Runs a one-state JSONata machine whose Pass `Output` is `expression`; returns stderr after
/// checking that the execution failed (exit 1) with `States.QueryEvaluationError`.
fn failing_output(expression: &str) -> String {
    let sb = Sandbox::new();
    let definition = serde_json::json!({
        "QueryLanguage": "JSONata",
        "StartAt": "P",
        "States": {"P": {"Type": "Pass", "Output": format!("{{% {expression} %}}"), "End": true}}
    });
    let def = sb.write("big.json", &definition.to_string());
    let out = sb.run(&["run", def.to_str().unwrap()]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("States.QueryEvaluationError"),
        "{}",
        out.stderr
    );
    out.stderr
}

/// Fuzzing (jsonata target): an expression building a huge value took more than 1 GB before
/// it failed or finished. Evaluations now stop at 1,000,000 items and 4 MiB of text.
#[test]
fn a_jsonata_expression_cannot_exhaust_memory() {
    let stderr = failing_output(r#"$join([1..10000000].("aaaaaaaaaaaaaaaaaaaaaaaa"))"#);
    assert!(stderr.contains("1000000"), "{stderr}");
    failing_output(r#"$join([1..100000].($pad("x", 100)))"#);
}

/// Fuzzing (jsonata target): many arrays, each within the engine's limits, together took
/// gigabytes. One evaluation now holds at most 128 MiB (the binary meters its allocations).
#[test]
fn a_jsonata_evaluation_holds_bounded_memory() {
    let stderr = failing_output(r#"[1..1000].{"a": [1..500000]}"#);
    assert!(stderr.contains("more than 128 MiB"), "{stderr}");
}

/// Fuzzing (jsonata target): a recursive expression ran for minutes (a naive Fibonacci).
/// Evaluations now stop after 10,000,000 steps.
#[test]
fn a_jsonata_expression_cannot_run_forever() {
    let stderr =
        failing_output(r#"($f := function($n){$n <= 1 ? $n : $f($n-1) + $f($n-2)}; $f(40))"#);
    assert!(stderr.contains("10000000 steps"), "{stderr}");
}

/// Fuzzing (path target): filters nested 3,000 deep (`$[?($[?( ... @.a)])]`) took minutes to
/// validate, the parser rescanning the text at each level. Nesting now stops at 16 levels.
#[test]
fn deeply_nested_filters_are_refused_at_once() {
    let sb = Sandbox::new();
    let n = 3000;
    let path = format!("$[?({}@.a{}", "$[?(".repeat(n - 1), ")]".repeat(n));
    let definition = serde_json::json!({
        "StartAt": "P",
        "States": {"P": {"Type": "Pass", "InputPath": path, "End": true}}
    });
    let def = sb.write("deep.json", &definition.to_string());
    let out = sb.run(&["validate", def.to_str().unwrap()]);
    assert_ne!(out.code, 0, "{}", out.stdout);
    let report = format!("{}{}", out.stdout, out.stderr);
    assert!(report.contains("nest more than 16 deep"), "{report}");

    // Sixteen levels are still a path.
    let path = format!("$[?({}@.a{}", "$[?(".repeat(15), ")]".repeat(16));
    let definition = serde_json::json!({
        "StartAt": "P",
        "States": {"P": {"Type": "Pass", "InputPath": path, "End": true}}
    });
    let def = sb.write("ok.json", &definition.to_string());
    let out = sb.run(&["validate", def.to_str().unwrap()]);
    assert!(
        !format!("{}{}", out.stdout, out.stderr).contains("nest more than"),
        "{}",
        out.stderr
    );
}

/// Fuzzing (intrinsic target): `States.ArrayRange` with a step near i64's limits overflowed
/// (a panic in a debug build, wrong items in a release build) though every item fits.
#[test]
fn array_range_with_extreme_steps_does_not_overflow() {
    let sb = Sandbox::new();
    let def = sb.write(
        "range.json",
        r#"{"StartAt":"P","States":{"P":{"Type":"Pass","Parameters":{
            "r.$":"States.ArrayRange(-9223372036854775808, 9223372036854775807, 9223372036854775807)"},
            "End":true}}}"#,
    );
    let out = sb.run(&["run", def.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.json(),
        serde_json::json!({"r": [i64::MIN, -1, i64::MAX - 1]})
    );
}

/// Fuzzing (choice target, by a hand-written input): `StringMatches` tried every split point
/// of every `*`, exponential time on `*a*a*a…*b` against a run of `a`s (a Choice state, or
/// `validate`'s own evaluation of nothing, never finished).
#[test]
fn string_matches_takes_linear_time() {
    let sb = Sandbox::new();
    let pattern = format!("{}*b", "*a".repeat(2000));
    let definition = serde_json::json!({
        "StartAt": "C",
        "States": {
            "C": {"Type": "Choice", "Choices": [
                {"Variable": "$.s", "StringMatches": pattern, "Next": "Yes"},
                {"Variable": "$.s", "StringMatches": "a*a*a", "Next": "Also"}],
                "Default": "No"},
            "Yes": {"Type": "Pass", "Result": "yes", "End": true},
            "Also": {"Type": "Pass", "Result": "also", "End": true},
            "No": {"Type": "Pass", "Result": "no", "End": true}
        }
    });
    let def = sb.write("glob.json", &definition.to_string());
    let input = serde_json::json!({"s": "a".repeat(20000)}).to_string();
    let out = sb.run(&["run", def.to_str().unwrap(), "--input", &input]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), serde_json::json!("also"));
}

/// Hostile input: a huge `--time-scale` made the scaled duration of a Wait overflow
/// `Duration` (a panic). A scaled wait is now at most a century: the Wait simply waits.
#[test]
fn a_huge_time_scale_waits_instead_of_panicking() {
    let sb = Sandbox::new();
    let def = sb.write(
        "wait.json",
        r#"{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":5,"End":true}}}"#,
    );
    let mut child = sb.spawn(&["run", def.to_str().unwrap(), "--time-scale", "1e308"]);
    // Still waiting after a moment, where it used to panic at once: stop it (Ctrl-C's
    // signal) and check that it ended cleanly, not by a panic.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(child.try_wait().unwrap().is_none(), "run ended early");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = common::Output::of(child);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
}

/// Fuzzing (definition target, by a hand-written input): `validate` panicked inside miette
/// on a one-line (minified) definition whose error lies past column 65,535. A line that long
/// is now reported without a snippet: the message, the file, line and column.
#[test]
fn an_error_far_along_a_long_line_is_reported() {
    let sb = Sandbox::new();
    let states: serde_json::Map<String, serde_json::Value> = (0..400)
        .map(|i| {
            (
                format!("S{i}{}", "x".repeat(200)),
                serde_json::json!({"Type": "Pass", "End": true}),
            )
        })
        .chain([(
            "Last".to_owned(),
            serde_json::json!({"Type": "Pass", "Next": "Nowhere"}),
        )])
        .collect();
    let definition = serde_json::json!({"StartAt": "Last", "States": states});
    let text = definition.to_string();
    assert!(!text.contains('\n') && text.len() > 70_000);
    let def = sb.write("minified.json", &text);
    let out = sb.run(&["validate", def.to_str().unwrap()]);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    let report = format!("{}{}", out.stdout, out.stderr);
    assert!(report.contains("MISSING_TRANSITION_TARGET"), "{report}");
    assert!(report.contains("minified.json:1:"), "{report}");
}
