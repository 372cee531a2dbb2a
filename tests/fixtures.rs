//! One small definition per rule in `fixtures/invalid/`, with snapshots of the diagnostics
//! (severity, code, line:column, location, message), and tricky valid ones in `fixtures/valid/`
//! that must stay free of errors. Files named `express-*` are validated as EXPRESS machines.

mod common;

use sfn_local::asl::source::SpanIndex;
use sfn_local::asl::{validate_text, MachineType, Severity};
use std::fmt::Write;
use std::path::Path;

fn machine_type(file: &Path) -> MachineType {
    let name = file.file_name().unwrap().to_string_lossy();
    if name.starts_with("express-") {
        MachineType::Express
    } else {
        MachineType::Standard
    }
}

/// The diagnostics of one file, one line each.
fn describe(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    let diags = validate_text(&text, machine_type(file));
    let index = SpanIndex::new(&text);
    let mut out = String::new();
    for d in diags.iter() {
        let (line, col) = index.location_line_col(&d.location);
        let severity = match d.severity {
            Severity::Error => "ERROR",
            Severity::Warning => "WARNING",
        };
        let _ = writeln!(
            out,
            "{severity} {} {line}:{col} {} — {}",
            d.code,
            d.location_text().unwrap_or_else(|| "-".into()),
            d.message
        );
    }
    out
}

#[test]
fn every_invalid_fixture_reports_its_rule() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/invalid");
    let files = common::json_files(&dir);
    assert!(files.len() >= 70, "one fixture per rule");
    for file in files {
        let name = file.file_stem().unwrap().to_string_lossy().into_owned();
        let report = describe(&file);
        assert!(!report.is_empty(), "{name} reports nothing");
        insta::with_settings!({ snapshot_path => "snapshots/fixtures", prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!(name, report);
        });
    }
}

#[test]
fn valid_fixtures_and_definitions_have_no_errors() {
    for dir in ["fixtures/valid", "definitions"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        for file in common::json_files(&dir) {
            // Test specs and mock configs live beside the definitions; `validate` skips them too.
            let name = file.to_string_lossy();
            if name.ends_with(".sfntest.json") || name.ends_with(".mocks.json") {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            let diags = validate_text(&text, MachineType::Standard);
            assert!(diags.is_empty(), "{}: {}", file.display(), describe(&file));
        }
    }
}
