//! Replaying a recorded execution against a definition: would this definition have done the
//! same with the same input and the same answers from the outside world?
//!
//! A recording (AWS's `get-execution-history`, or sfn-local's) is read whole
//! ([`history::parse_history`]); the definition runs again in memory on a virtual clock
//! starting at the recording's start, with the recorded input and, for every Task attempt,
//! the answer the recording holds for that attempt's place ([`answers`], [`places`]). The new
//! history is then compared with the recorded one ([`compare`]): `identical`, or the first
//! divergence with the path of states that led there. Parts the recording masked (an input
//! or a result AWS truncated) are named, never guessed.
//!
//! ```
//! use sfn_local::replayer::{history::parse_history, replay, Verdict};
//! let definition = r#"{"StartAt":"P","States":{"P":{"Type":"Pass","Result":1,"End":true}}}"#;
//! let (machine, _) = sfn_local::asl::compile_text(definition, Default::default());
//! let recorded = parse_history(r#"{"events":[
//!  {"id":1,"previousEventId":0,"type":"ExecutionStarted","timestamp":0,
//!   "executionStartedEventDetails":{"input":"{}"}},
//!  {"id":2,"previousEventId":0,"type":"PassStateEntered","timestamp":0,
//!   "stateEnteredEventDetails":{"name":"P","input":"{}"}},
//!  {"id":3,"previousEventId":2,"type":"PassStateExited","timestamp":0,
//!   "stateExitedEventDetails":{"name":"P","output":"2"}},
//!  {"id":4,"previousEventId":3,"type":"ExecutionSucceeded","timestamp":0,
//!   "executionSucceededEventDetails":{"output":"2"}}]}"#).unwrap();
//! let replay = replay(&recorded, std::sync::Arc::new(machine.unwrap())).unwrap();
//! let Verdict::Diverged(d) = replay.verdict else { panic!() };
//! assert_eq!((d.event, d.what.as_str()), (3, "its output differs"));
//! ```

pub mod answers;
pub mod compare;
pub mod history;
pub mod places;
pub mod test_case;

use crate::asl::StateMachine;
use crate::clock::{Timekeeping, VirtualClock};
use crate::engine::context::ExecutionInfo;
use crate::engine::history::MemorySink;
use crate::engine::{EngineOptions, Outcome};
use compare::{Divergence, Side};
use history::RecordedEvent;
use places::Places;
use serde_json::Value;
use std::rc::Rc;
use std::sync::Arc;

/// Why a replay could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The history file is not a readable history.
    #[error("the history, at {at}: {why}")]
    History {
        /// Where in the file.
        at: String,
        /// What is wrong.
        why: String,
    },
    /// The re-run could not be started.
    #[error("cannot run the definition: {0}")]
    Run(String),
}

/// What the replay found.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The definition did what the recording holds.
    Identical,
    /// The first place where it did not.
    Diverged(Divergence),
    /// The replay needed a part of the recording that AWS masked.
    Masked(String),
}

/// A replay's verdict and what a test written from it needs.
#[derive(Debug)]
pub struct Replay {
    /// The verdict.
    pub verdict: Verdict,
    /// How the re-run ended.
    pub outcome: Outcome,
    /// The execution's input, from `ExecutionStarted`.
    pub input: Value,
    /// How many events the recording holds.
    pub recorded_events: usize,
    /// Whether the recording ends with the execution's end (a history fetched while the
    /// execution ran is compared as far as it goes).
    pub recording_complete: bool,
    /// How many the re-run wrote.
    pub replayed_events: usize,
    /// Masked parts of the recording the comparison skipped.
    pub masked: Vec<String>,
    /// The re-run's history, in the recording's shape.
    pub rerun: Vec<RecordedEvent>,
}

/// Replays `recorded` (in id order, as [`history::parse_history`] returns it) against
/// `machine`.
pub fn replay(
    recorded: &[RecordedEvent],
    machine: Arc<StateMachine>,
) -> Result<Replay, ReplayError> {
    let started = recorded.first().ok_or_else(|| ReplayError::History {
        at: "the file".into(),
        why: "it holds no events".into(),
    })?;
    let details = started.details_value();
    let input = match answers::payload(details, "input") {
        Ok(v) => v,
        Err(why) => {
            return Ok(masked_input(
                recorded,
                format!("the execution's input (event 1) {why}"),
            ))
        }
    };
    let recorded_places = Places::of(recorded);
    let (outcome, rerun) = rerun(recorded, &recorded_places, details, &input, machine)?;
    let rerun_places = Places::of(rerun.as_slice());
    let mut masked = Vec::new();
    let divergence = compare::first_divergence(
        &Side {
            events: recorded,
            places: &recorded_places,
        },
        &Side {
            events: &rerun,
            places: &rerun_places,
        },
        &mut masked,
    );
    let verdict = match divergence {
        Some(d) => match masked_answer(&d) {
            Some(why) => Verdict::Masked(why),
            None => Verdict::Diverged(d),
        },
        None => Verdict::Identical,
    };
    Ok(Replay {
        verdict,
        outcome,
        input,
        recorded_events: recorded.len(),
        recording_complete: recorded
            .last()
            .is_some_and(|e| compare::ends_execution(&e.event_type)),
        replayed_events: rerun.len(),
        masked,
        rerun,
    })
}

/// A divergence that comes from an answer the recording masked is not one: it is named.
fn masked_answer(d: &Divergence) -> Option<String> {
    d.replayed
        .contains(answers::MASKED)
        .then(|| format!("cannot replay past event {}: {}", d.event, d.replayed))
}

fn masked_input(recorded: &[RecordedEvent], why: String) -> Replay {
    Replay {
        verdict: Verdict::Masked(why),
        outcome: Outcome {
            status: crate::engine::Status::Failed,
            output: None,
            output_json: None,
            error: None,
            stop_time: recorded[0].timestamp_ms,
        },
        input: Value::Null,
        recorded_events: recorded.len(),
        recording_complete: false,
        replayed_events: 0,
        masked: Vec::new(),
        rerun: Vec::new(),
    }
}

/// Runs `machine` again on a virtual clock from the recording's start, its Tasks answered by
/// the recording.
fn rerun(
    recorded: &[RecordedEvent],
    places: &Places,
    started: &Value,
    input: &Value,
    machine: Arc<StateMachine>,
) -> Result<(Outcome, Vec<RecordedEvent>), ReplayError> {
    let start = recorded[0].timestamp_ms;
    let time = Timekeeping::Virtual(VirtualClock::automatic(start));
    let sink = MemorySink::default();
    // A re-run writes about as many events as it replays: sized once, not grown by copies.
    sink.events.borrow_mut().reserve(recorded.len());
    let tasks = answers::RecordedAnswers::new(recorded, places, time.clock(), sink.events.clone());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ReplayError::Run(format!("cannot start the runtime: {e}")))?;
    let run = crate::engine::run_into(
        &sink,
        machine,
        execution_info(started, start),
        input.clone(),
        time.clock(),
        Rc::new(tasks),
        EngineOptions::default(),
    );
    let local = tokio::task::LocalSet::new();
    let outcome = local.block_on(&runtime, time.track(run));
    let events = sink.events.take();
    Ok((
        outcome,
        events.into_iter().map(RecordedEvent::from).collect(),
    ))
}

/// The execution as the recording names it: region, account, machine and role from
/// `ExecutionStarted`'s ARNs (the execution's own name is not in a history).
fn execution_info(started: &Value, start: crate::clock::Millis) -> ExecutionInfo {
    let machine_arn = started["stateMachineArn"].as_str().unwrap_or("");
    let parts: Vec<&str> = machine_arn.split(':').collect();
    let part = |i: usize, default: &'static str| {
        parts
            .get(i)
            .copied()
            .filter(|p| !p.is_empty())
            .unwrap_or(default)
    };
    ExecutionInfo::new(
        part(3, "us-east-1"),
        part(4, "123456789012"),
        part(6, "replayed"),
        "replay",
        started["roleArn"].as_str(),
        start,
    )
}
