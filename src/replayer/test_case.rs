//! `replay --write-test DIR`: an execution that replayed `identical` kept as a regression
//! test. Writes a MockConfigFile (`recorded.mocks.json`: test case `Recorded`, each Task
//! state's recorded answers in the order the replay asked for them, with their recorded
//! durations as `Delay`) and a `sfn-local test` spec (`recorded.sfntest.json`: the
//! definition, the input, the expected status, output or error and cause, and, for a run
//! without Map or Parallel, the states entered), which `sfn-local test DIR` runs.

use super::answers::{answer, Answer};
use super::history::RecordedEvent;
use super::places::{EventPlace, Places};
use super::{Replay, Verdict};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Why a test could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteTestError {
    /// Only an identical replay is worth keeping.
    #[error("no test written: the replay is not identical")]
    NotIdentical,
    /// A recorded answer cannot be a mock (masked, or missing).
    #[error("no test written: {0}")]
    Unanswerable(String),
    /// The folder or a file in it could not be written.
    #[error("cannot write {path}: {why}")]
    Io {
        /// The file.
        path: String,
        /// What went wrong.
        why: String,
    },
}

/// Where the written files point at the definition: `definition`, or `template` with
/// `stateMachine` for a template's (or cloud assembly's) state machine.
#[derive(Debug, Clone)]
pub struct DefinitionRef {
    /// The file the spec names (absolute).
    pub path: PathBuf,
    /// The template's logical ID, when `path` is a template.
    pub logical_id: Option<String>,
    /// The state machine's name, which the MockConfigFile is keyed by.
    pub machine_name: String,
}

/// Writes the test into `dir` (created if need be); returns the spec's path.
pub fn write(
    dir: &Path,
    definition: &DefinitionRef,
    recorded: &[RecordedEvent],
    replay: &Replay,
) -> Result<PathBuf, WriteTestError> {
    if replay.verdict != Verdict::Identical {
        return Err(WriteTestError::NotIdentical);
    }
    let responses = mocked_responses(recorded, &replay.rerun)?;
    let mut test_case = Map::new();
    for state in responses.keys() {
        test_case.insert(state.clone(), json!(response_name(state)));
    }
    let mocks = json!({
        "StateMachines": { &definition.machine_name: { "TestCases": { "Recorded": test_case } } },
        "MockedResponses": responses
            .into_iter()
            .map(|(state, entries)| (response_name(&state), Value::Object(entries)))
            .collect::<Map<String, Value>>(),
    });
    let spec = spec(definition, replay);
    create(dir)?;
    save(&dir.join("recorded.mocks.json"), &mocks)?;
    let spec_path = dir.join("recorded.sfntest.json");
    save(&spec_path, &spec)?;
    Ok(spec_path)
}

fn response_name(state: &str) -> String {
    format!("{state} (recorded)")
}

/// Per Task state, its answers in the order the replay's attempts were scheduled.
fn mocked_responses(
    recorded: &[RecordedEvent],
    rerun: &[RecordedEvent],
) -> Result<std::collections::BTreeMap<String, Map<String, Value>>, WriteTestError> {
    let places = Places::of(recorded);
    let by_place: HashMap<EventPlace<'_>, Answer> = (0..recorded.len())
        .filter(|&i| recorded[i].event_type.ends_with("Scheduled"))
        .map(|i| (places.event(i), answer(recorded, &places, i)))
        .collect();
    let rerun_places = Places::of(rerun);
    let mut out: std::collections::BTreeMap<String, Map<String, Value>> = Default::default();
    for (j, e) in rerun.iter().enumerate() {
        if !e.event_type.ends_with("Scheduled") {
            continue;
        }
        let Some(visit) = rerun_places.tree.owner_id(j) else {
            continue;
        };
        let state = rerun_places.tree.visits[visit].state.clone();
        let entry = by_place
            .get(&rerun_places.event(j))
            .ok_or_else(|| {
                WriteTestError::Unanswerable(format!("no recorded answer for event {}", e.id))
            })?
            .mock_entry()
            .map_err(|why| {
                WriteTestError::Unanswerable(format!("{state} (event {}): {why}", e.id))
            })?;
        let entries = out.entry(state).or_default();
        entries.insert(entries.len().to_string(), entry);
    }
    Ok(out)
}

/// The `sfn-local test` spec of the recorded execution.
fn spec(definition: &DefinitionRef, replay: &Replay) -> Value {
    let path = definition.path.to_string_lossy().into_owned();
    let mut expect = Map::new();
    expect.insert("status".into(), json!(replay.outcome.status.as_str()));
    if let Some(output) = &replay.outcome.output {
        expect.insert("output".into(), output.clone());
    }
    if let Some(e) = &replay.outcome.error {
        expect.insert("error".into(), json!(e.error));
        expect.insert("cause".into(), json!(e.cause));
    }
    let concurrent = replay.rerun.iter().any(|e| {
        matches!(
            &*e.event_type,
            "MapIterationStarted" | "ParallelStateStarted" | "MapRunStarted"
        )
    });
    if !concurrent {
        let states: Vec<Value> = replay
            .rerun
            .iter()
            .filter(|e| e.event_type.ends_with("StateEntered"))
            .map(|e| e.details_value()["name"].clone())
            .collect();
        expect.insert("states".into(), Value::Array(states));
    }
    let mut spec = Map::new();
    match &definition.logical_id {
        Some(id) => {
            spec.insert("template".into(), json!(path));
            spec.insert("stateMachine".into(), json!(id));
        }
        None => {
            spec.insert("definition".into(), json!(path));
        }
    }
    spec.insert("stateMachineName".into(), json!(definition.machine_name));
    spec.insert("mockConfig".into(), json!("recorded.mocks.json"));
    spec.insert(
        "cases".into(),
        json!([{
            "name": "the recorded execution",
            "input": replay.input,
            "testCase": "Recorded",
            "expect": expect,
        }]),
    );
    Value::Object(spec)
}

fn create(dir: &Path) -> Result<(), WriteTestError> {
    std::fs::create_dir_all(dir).map_err(|e| WriteTestError::Io {
        path: dir.display().to_string(),
        why: e.to_string(),
    })
}

fn save(path: &Path, value: &Value) -> Result<(), WriteTestError> {
    let text = serde_json::to_string_pretty(value).unwrap_or_default() + "\n";
    std::fs::write(path, text).map_err(|e| WriteTestError::Io {
        path: path.display().to_string(),
        why: e.to_string(),
    })
}
