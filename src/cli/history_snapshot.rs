//! History snapshots for `sfn-local test`: a case names a golden file (`"historySnapshot":
//! "snapshots/paid.json"`, relative to its spec) holding the execution's whole history as
//! GetExecutionHistory prints it; `--update-snapshots` writes it, and any difference fails the
//! case with a diff of events.
//!
//! A history is only worth keeping byte for byte if it repeats: a snapshot case runs on its own
//! virtual clock from a fixed instant ([`SNAPSHOT_START`] unless `--clock-start` says
//! otherwise) with names and tokens drawn from a fixed seed, so nothing in it depends on when or
//! where it ran.

use crate::engine::history::HistoryEvent;
use serde_json::{json, Value};
use std::path::Path;

/// Where a snapshot case's clock starts unless `--clock-start` says otherwise.
pub const SNAPSHOT_START: &str = "2024-01-01T00:00:00Z";

/// The seed of a snapshot case's names and tokens unless `--seed` says otherwise.
pub const SNAPSHOT_SEED: u64 = 0;

/// Most differing events a failure lists.
const SHOWN: usize = 5;

/// The history as the golden file holds it: `{"events": [...]}`, pretty-printed.
pub fn render(events: &[HistoryEvent]) -> String {
    let events: Vec<Value> = events.iter().map(HistoryEvent::to_aws_json).collect();
    let mut text = serde_json::to_string_pretty(&json!({ "events": events })).unwrap_or_default();
    text.push('\n');
    text
}

/// Compares a run's history with the golden file, or (`update`) writes it. Returns the
/// failures, none when they match or the file was written.
pub fn check(path: &Path, events: &[HistoryEvent], update: bool) -> Vec<String> {
    let got = render(events);
    if update {
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(path, &got));
        return match written {
            Ok(()) => Vec::new(),
            Err(e) => vec![format!("cannot write the snapshot {}: {e}", path.display())],
        };
    }
    let expected = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            return vec![format!(
                "history snapshot {}: {e} (write it with --update-snapshots)",
                path.display()
            )]
        }
    };
    if expected == got {
        return Vec::new();
    }
    let parsed = |text: &str| -> Vec<Value> {
        serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|v| v["events"].as_array().cloned())
            .unwrap_or_default()
    };
    vec![diff(path, &parsed(&expected), &parsed(&got))]
}

/// The events that differ, one line each for the expected and the actual one.
fn diff(path: &Path, expected: &[Value], got: &[Value]) -> String {
    let mut lines = vec![format!(
        "history differs from the snapshot {} ({} events expected, {} written; --update-snapshots accepts it):",
        path.display(),
        expected.len(),
        got.len()
    )];
    let differing: Vec<usize> = (0..expected.len().max(got.len()))
        .filter(|&i| expected.get(i) != got.get(i))
        .collect();
    for &i in differing.iter().take(SHOWN) {
        let show = |e: Option<&Value>| e.map_or_else(|| "(none)".to_owned(), Value::to_string);
        lines.push(format!("      event {}:", i + 1));
        lines.push(format!("        - {}", show(expected.get(i))));
        lines.push(format!("        + {}", show(got.get(i))));
    }
    if differing.len() > SHOWN {
        lines.push(format!("      ... and {} more", differing.len() - SHOWN));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_difference_names_the_events_that_differ() {
        let a = vec![
            json!({"id": 1, "type": "ExecutionStarted"}),
            json!({"id": 2, "type": "PassStateEntered"}),
        ];
        let b = vec![
            json!({"id": 1, "type": "ExecutionStarted"}),
            json!({"id": 2, "type": "TaskStateEntered"}),
        ];
        let text = diff(Path::new("s.json"), &a, &b);
        assert!(text.contains("event 2:"), "{text}");
        assert!(
            text.contains("- {\"id\":2,\"type\":\"PassStateEntered\"}"),
            "{text}"
        );
        assert!(
            text.contains("+ {\"id\":2,\"type\":\"TaskStateEntered\"}"),
            "{text}"
        );
        assert!(!text.contains("event 1:"), "{text}");
    }
}
