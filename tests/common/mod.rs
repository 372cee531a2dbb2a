//! Helpers shared by the integration tests: the conformance corpus beside the repository, the
//! real binary, temporary databases.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// `../shared/conformance/cases`, beside the repository. Missing in CI is a failure (the corpus
/// is how we prove conformance); missing on a developer's machine skips with a note.
pub fn conformance_cases() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/cases");
    if dir.is_dir() {
        return Some(dir);
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "the conformance corpus is missing at {}: CI must run with ../shared beside the repository",
            dir.display()
        );
    }
    eprintln!(
        "note: {} is missing; conformance test skipped",
        dir.display()
    );
    None
}

/// Every `*.json` file in a folder, sorted by name.
pub fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

/// Reads and parses a JSON file.
pub fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// The `sfn-local` binary built for this test run.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_sfn-local"))
}

/// The case's definition as text, with the corpus's placeholders for AWS resources (an activity
/// created by the test, for instance) replaced by ARNs of the right shape, as the test did on AWS.
pub fn definition_text(case: &serde_json::Value) -> Option<String> {
    if let Some(raw) = case.get("definition_raw").and_then(|v| v.as_str()) {
        return Some(raw.to_owned());
    }
    let def = case.get("definition")?;
    let text = serde_json::to_string_pretty(def).ok()?;
    Some(text.replace(
        "\"activity_arn\"",
        "\"arn:aws:states:us-east-1:111111111111:activity:activity_arn\"",
    ))
}
