//! `validate` against AWS's own verdicts: every case in `tests/corpora/conformance/cases/validation`
//! gets AWS's verdict (and, where AWS recorded diagnostics, the same codes and locations), and
//! every definition that ran on AWS (`cases/pure`, `cases/aws_task`) validates with no ERROR.

mod common;

use sfn_local::asl::{self, MachineType, Severity};

fn machine_type(case: &serde_json::Value) -> MachineType {
    match case["state_machine_type"].as_str() {
        Some("EXPRESS") => MachineType::Express,
        _ => MachineType::Standard,
    }
}

/// `(code, location)` pairs AWS recorded for a case: from a ValidateStateMachineDefinition
/// response, or parsed out of a CreateStateMachine `InvalidDefinition` message
/// (`'CODE: message at /location, CODE: ...'`).
fn expected_diagnostics(expected: &serde_json::Value) -> Vec<(String, Option<String>)> {
    if let Some(diags) = expected["diagnostics"].as_array() {
        return diags
            .iter()
            .map(|d| {
                (
                    d["code"].as_str().unwrap_or_default().to_owned(),
                    d["location"].as_str().map(str::to_owned),
                )
            })
            .collect();
    }
    let Some(message) = expected["message"].as_str() else {
        return Vec::new();
    };
    let Some(start) = message.find("Definition: '") else {
        return Vec::new();
    };
    let body = message[start + 13..].trim_end_matches('\'');
    let mut out = Vec::new();
    for part in body.split(", ") {
        let Some((code, rest)) = part.split_once(": ") else {
            continue;
        };
        if !code.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
            continue;
        }
        let location = rest.rsplit_once(" at ").map(|(_, l)| l.trim().to_owned());
        out.push((code.to_owned(), location));
    }
    out
}

#[test]
fn validation_cases_get_aws_verdicts() {
    let cases = common::conformance_cases();
    let mut failures = Vec::new();
    let files = common::json_files(&cases.join("validation"));
    for file in &files {
        let case = common::read_json(file);
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let text = common::definition_text(&case).unwrap_or_default();
        let diags = asl::validate_text(&text, machine_type(&case));
        let valid = !diags.has_errors();
        let expected_valid = case["expected"]["valid"].as_bool().unwrap_or(true);
        if valid != expected_valid {
            failures.push(format!(
                "{name}: AWS says valid={expected_valid}, we say valid={valid}: {:#?}",
                diags.0
            ));
            continue;
        }
        for (code, location) in expected_diagnostics(&case["expected"]) {
            let found = diags.iter().any(|d| {
                d.code.as_str() == code
                    && match (&location, d.pointer()) {
                        (Some(l), Some(p)) => *l == p.to_string(),
                        (Some(_), None) => code == "INVALID_JSON_DESCRIPTION",
                        (None, _) => true,
                    }
            });
            if !found {
                failures.push(format!(
                    "{name}: AWS reported {code} at {location:?}; we reported {:#?}",
                    diags.0
                ));
            }
        }
    }
    println!(
        "validation cases: {} of {} match AWS",
        files.len() - failures.len(),
        files.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn definitions_that_ran_on_aws_have_no_errors() {
    let cases = common::conformance_cases();
    let mut failures = Vec::new();
    let mut count = 0;
    for bucket in ["pure", "aws_task"] {
        for file in common::json_files(&cases.join(bucket)) {
            let case = common::read_json(&file);
            let Some(text) = common::definition_text(&case) else {
                continue;
            };
            count += 1;
            let diags = asl::validate_text(&text, machine_type(&case));
            let errors: Vec<_> = diags
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .map(|d| format!("  {} at {:?}: {}", d.code, d.location_text(), d.message))
                .collect();
            if !errors.is_empty() {
                failures.push(format!(
                    "{}:\n{}",
                    file.file_name().unwrap().to_string_lossy(),
                    errors.join("\n")
                ));
            }
        }
    }
    println!(
        "definitions that ran on AWS: {} of {count} validate with no ERROR",
        count - failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} false positives:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
