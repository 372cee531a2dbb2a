//! The JSONata engine sfn-local is built on, against the official jsonata-js test suite at
//! `tests/corpora/jsonata-test-suite` (see its `TESTSUITE.md` and `PROVENANCE.md`): every case of every group is
//! compiled and evaluated, and the result compared with the expected `result`,
//! `undefinedResult` or error `code`.
//!
//! The pass rate is printed (`cargo test --test jsonata_suite -- --nocapture`) and the test
//! fails when it drops below [`FLOOR`], the count passing when the engine was pinned. Raise the
//! floor when an engine upgrade passes more; never lower it.

use jlens_core::{Bindings, Expression, Options};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Cases passing with jlens-core 0.26.0 (of 1,686). The three others: two `$encodeUrl` cases
/// whose data is a lone UTF-16 surrogate, which no Rust string (nor serde_json) can hold, and
/// `$string(1/0)`, where jlens raises D1001 (number out of range) before `$string` can raise
/// D3001.
const FLOOR: usize = 1683;

fn read(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// Numbers compare as doubles with a little tolerance (the suite's own runner does the same);
/// `unordered` compares arrays as multisets.
fn same(expected: &Value, actual: &Value, unordered: bool) -> bool {
    match (expected, actual) {
        (Value::Number(a), Value::Number(b)) => {
            let (a, b) = (
                a.as_f64().unwrap_or(f64::NAN),
                b.as_f64().unwrap_or(f64::NAN),
            );
            a == b || (a - b).abs() <= 1e-13 * a.abs().max(b.abs())
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            if unordered {
                let mut rest: Vec<&Value> = b.iter().collect();
                a.iter()
                    .all(|x| match rest.iter().position(|y| same(x, y, true)) {
                        Some(i) => {
                            rest.swap_remove(i);
                            true
                        }
                        None => false,
                    })
            } else {
                a.iter().zip(b).all(|(x, y)| same(x, y, false))
            }
        }
        (Value::Object(a), Value::Object(b)) if a.len() == b.len() => a
            .iter()
            .all(|(k, v)| b.get(k).is_some_and(|w| same(v, w, unordered))),
        (a, b) => a == b,
    }
}

/// U1001 is what the suite's own runner (jsonata-js `timeboxExpression`) throws when its
/// depth or time guard trips; jlens-core's built-in guards for the same limits raise D1011
/// (depth) and D1012 (time).
fn same_guard(expected: &Value, got: &str) -> bool {
    expected == "U1001" && (got == "D1011" || got == "D1012")
}

/// Runs one case; `None` when it passes, else why not.
fn run_case(dir: &Path, group: &Path, case: &Value) -> Option<String> {
    let expr = match (case.get("expr"), case.get("expr-file")) {
        (Some(Value::String(e)), _) => e.clone(),
        (_, Some(Value::String(f))) => std::fs::read_to_string(group.join(f)).ok()?,
        _ => return Some("no expression".into()),
    };
    let input = match (case.get("data"), case.get("dataset")) {
        (Some(d), _) => Some(d.clone()),
        (None, Some(Value::String(name))) => {
            read(&dir.join("datasets").join(format!("{name}.json")))
        }
        _ => None,
    };
    let mut bindings = Bindings::new();
    if let Some(Value::Object(b)) = case.get("bindings") {
        for (k, v) in b {
            bindings = bindings.var(k.clone(), v.clone());
        }
    }
    let mut options = Options::new();
    if let Some(ms) = case.get("timelimit").and_then(Value::as_u64) {
        options = options.timeout(Duration::from_millis(ms.max(1000)));
    }
    if let Some(depth) = case.get("depth").and_then(Value::as_u64) {
        options = options.max_depth(depth as usize);
    }
    let result = Expression::compile(&expr)
        .and_then(|e| e.evaluate_with(input.as_ref(), &bindings, &options));
    let unordered = case.get("unordered") == Some(&Value::Bool(true));
    // The expected error code: `code`, or `error.code`.
    let code = case
        .get("code")
        .or_else(|| case.get("error").and_then(|e| e.get("code")));
    match (result, case) {
        (Err(e), _) if code.is_some() => code
            .filter(|c| *c != e.code() && !same_guard(c, e.code()))
            .map(|c| format!("code {} instead of {c}", e.code())),
        (Err(e), _) => Some(format!("error {}: {}", e.code(), e.message())),
        (Ok(_), _) if code.is_some() => Some(format!("no error, expected {code:?}")),
        (Ok(None), c) if c.get("undefinedResult") == Some(&Value::Bool(true)) => None,
        (Ok(Some(v)), c) if c.get("undefinedResult") == Some(&Value::Bool(true)) => {
            Some(format!("{v} instead of undefined"))
        }
        (Ok(got), c) => match c.get("result") {
            Some(want) if got.as_ref().is_some_and(|g| same(want, g, unordered)) => None,
            Some(want) => Some(format!("{got:?} instead of {want}")),
            None => Some(format!("{got:?} with nothing expected")),
        },
    }
}

#[test]
fn jsonata_engine_passes_the_official_suite() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpora/jsonata-test-suite");
    let mut groups: Vec<PathBuf> = std::fs::read_dir(dir.join("groups"))
        .expect("groups")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    groups.sort();
    let (mut total, mut passed) = (0usize, 0usize);
    let mut failures = Vec::new();
    for group in &groups {
        let mut files: Vec<PathBuf> = std::fs::read_dir(group)
            .expect("group")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        for file in files {
            let cases = match read(&file) {
                Some(Value::Array(cases)) => cases,
                Some(case) => vec![case],
                None => {
                    total += 1;
                    failures.push(format!("{}: not readable as JSON", file.display()));
                    continue;
                }
            };
            for (i, case) in cases.iter().enumerate() {
                total += 1;
                let outcome = std::panic::catch_unwind(|| run_case(&dir, group, case))
                    .unwrap_or_else(|_| Some("panicked".into()));
                match outcome {
                    None => passed += 1,
                    Some(why) => failures.push(format!("{}#{i}: {why}", file.display())),
                }
            }
        }
    }
    eprintln!(
        "JSONata suite (jlens-core): {passed}/{total} = {:.2}% (floor {FLOOR})",
        passed as f64 * 100.0 / total.max(1) as f64
    );
    for f in &failures {
        eprintln!("  failing: {f}");
    }
    assert!(
        passed >= FLOOR,
        "the JSONata suite pass count dropped to {passed}, below the floor of {FLOOR}"
    );
}
