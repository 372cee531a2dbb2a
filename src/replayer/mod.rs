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
//! The two sides are built on two threads ([`replay_file`]): the recording is read on one
//! while the definition runs again on the other from the recording's first event, read alone.
//! They meet to be compared, side by side when the re-run wrote the recording's events in
//! its order ([`compare::in_order`]), else by place: only then, or when a Task asks for its
//! answer, are places found.
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
mod one_pass;
pub mod places;
pub mod test_case;

use crate::asl::StateMachine;
use crate::clock::{Timekeeping, VirtualClock};
use crate::engine::context::ExecutionInfo;
use crate::engine::history::MemorySink;
use crate::engine::{EngineOptions, Outcome};
use compare::{ByPlace, Divergence, Side};
use history::RecordedEvent;
use places::Places;
use serde_json::Value;
use std::panic::resume_unwind;
use std::rc::Rc;
use std::sync::Arc;

/// Why a replay could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The history file cannot be read.
    #[error("cannot read {path}: {why}")]
    Unreadable {
        /// The file.
        path: String,
        /// What the system says.
        why: String,
    },
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
/// `machine`: the recording's places, if needed, are found on a thread of their own while the
/// definition runs again on this one.
pub fn replay(
    recorded: &[RecordedEvent],
    machine: Arc<StateMachine>,
) -> Result<Replay, ReplayError> {
    let started = recorded.first().ok_or_else(|| ReplayError::History {
        at: "the file".into(),
        why: "it holds no events".into(),
    })?;
    let from = Recording::Read(recorded);
    overlapped(
        from,
        &mut Vec::new(),
        Some(started.clone()),
        recorded.len(),
        machine,
    )?
}

/// Reads the history file at `path` ([`history::read_history`]) and replays it against
/// `machine`, the two overlapped: the file is read (and its places found, if needed) on a
/// thread of its own while the definition runs again on this one from the file's first
/// event, read alone (when it is the execution's start, as in most files; otherwise once the
/// file is read).
/// Returns the recorded events and the replay; the outer error is the file's, told first, as
/// the file was read before the replay began.
pub fn replay_file(
    path: &std::path::Path,
    machine: Arc<StateMachine>,
) -> Result<(Vec<RecordedEvent>, Result<Replay, ReplayError>), ReplayError> {
    let mut recorded = Vec::new();
    let started = history::execution_started_in(path);
    let size = std::fs::metadata(path).map_or(0, |m| m.len() as usize);
    let expected = history::events_in(size);
    let replay = overlapped(
        Recording::File(path),
        &mut recorded,
        started,
        expected,
        machine,
    )?;
    Ok((recorded, replay))
}

/// Where the recorded events come from.
enum Recording<'a> {
    /// Read already.
    Read(&'a [RecordedEvent]),
    /// A history file, read into the slot [`overlapped`] is given.
    File(&'a std::path::Path),
}

/// A re-run's end and history.
struct Rerun {
    /// The execution's input, from the recording's `ExecutionStarted`.
    input: Value,
    outcome: Outcome,
    events: Vec<RecordedEvent>,
}

/// The recording's side as its thread gives it: its events, and their places if they were
/// wanted.
type RecordingRead<'a> = Result<(&'a [RecordedEvent], Option<Places<'a>>), ReplayError>;

/// The replay of `recording`: read (into `slot`) on a thread of its own while the re-run
/// starts here from `started` (sized for `expected` events), then compared in order
/// ([`compare::in_order`]). The recording's places are found on its thread only when wanted
/// ([`answers::Wanted`]): for the re-run's first Task answer, or when the comparison cannot go
/// in order, the re-run's own places then found here meanwhile. The outer error is the
/// recording's.
fn overlapped<'a>(
    recording: Recording<'a>,
    slot: &'a mut Vec<RecordedEvent>,
    started: Option<RecordedEvent>,
    expected: usize,
    machine: Arc<StateMachine>,
) -> Result<Result<Replay, ReplayError>, ReplayError> {
    std::thread::scope(|scope| {
        let (answering, wanted, answers) = answers::Coming::channel();
        let (events_to, events) = std::sync::mpsc::channel();
        let reader = std::thread::Builder::new()
            .name("replay-recording".into())
            .stack_size(crate::depth::THREAD_STACK_BYTES)
            .spawn_scoped(scope, move || {
                read_recording(recording, slot, events_to, answering)
            })
            .map_err(|e| ReplayError::Run(format!("cannot start a thread: {e}")))?;
        let mut answers = Some(answers);
        let early = started.and_then(|s| {
            let input = start_input(&s).ok()?;
            let answers = answers.take()?;
            Some((rerun(&s, input, answers, expected, machine.clone()), s))
        });
        // None when the recording could not be read: its thread tells why when joined.
        let recorded = events.recv().ok();
        // Kept only if the file's event 1 is the one the re-run started from (a file that
        // holds two is refused, but that is known only once it is read whole).
        let early = early.filter(|(_, s)| recorded.is_some_and(|r| same_event(s, &r[0])));
        let in_order = match (&early, recorded) {
            (Some((Ok(run), _)), Some(recorded)) => compare::in_order(recorded, &run.events),
            _ => None,
        };
        let _ = wanted.send(match in_order {
            Some(_) => answers::Wanted::No,
            None => answers::Wanted::Yes,
        });
        let joined = || reader.join().unwrap_or_else(|p| resume_unwind(p));
        Ok(match (early, in_order) {
            (Some((Ok(run), _)), Some(masked)) => {
                let (recorded, _) = joined()?;
                Ok(Judged::identical(masked).replay(recorded, run))
            }
            (Some((Ok(run), _)), None) => by_place(run, joined)?,
            (Some((Err(e), _)), _) => joined().and(Err(e)),
            (None, _) => {
                let (recorded, places) = joined()?;
                replay_read(recorded, places, answers, machine)
            }
        })
    })
}

/// The replay by `run` of the recording its thread gives when `joined`, compared by place:
/// the re-run's places are found here while the recording's are found there.
fn by_place<'a>(
    run: Rerun,
    joined: impl FnOnce() -> RecordingRead<'a>,
) -> Result<Result<Replay, ReplayError>, ReplayError> {
    let places = Places::of(run.events.as_slice());
    let rerun = Side {
        events: &run.events,
        places: &places,
    };
    let by_place = ByPlace::of(&rerun);
    let (recorded, recorded_places) = joined()?;
    let recorded_places = recorded_places.unwrap_or_else(|| Places::of(recorded));
    let recording = Side {
        events: recorded,
        places: &recorded_places,
    };
    let judged = judge(&recording, &rerun, &by_place);
    Ok(Ok(judged.replay(recorded, run)))
}

/// The recording's side, on its own thread: its events (read into `slot` from a file's
/// text), sent to the re-run's thread as soon as they are read, then, if wanted, their places
/// and the answers they give.
fn read_recording<'a>(
    recording: Recording<'a>,
    slot: &'a mut Vec<RecordedEvent>,
    events_to: std::sync::mpsc::Sender<&'a [RecordedEvent]>,
    answering: answers::Answering,
) -> RecordingRead<'a> {
    let recorded = match recording {
        Recording::Read(events) => events,
        Recording::File(path) => kept_in(slot, history::read_history(path)?),
    };
    let _ = events_to.send(recorded);
    if !answering.wanted() {
        return Ok((recorded, None));
    }
    let places = Places::of(recorded);
    let _ = answering.give.send(answers::by_place(recorded, &places));
    Ok((recorded, Some(places)))
}

/// `events`, kept in `slot` for as long as it is lent.
fn kept_in(slot: &mut Vec<RecordedEvent>, events: Vec<RecordedEvent>) -> &[RecordedEvent] {
    *slot = events;
    slot
}

/// The replay of a recording read whole (with its places, if found): the re-run from its
/// first event, with `answers` if no re-run took them yet (the recording's thread gave them
/// when it found the places).
fn replay_read(
    recorded: &[RecordedEvent],
    places: Option<Places<'_>>,
    answers: Option<answers::Coming>,
    machine: Arc<StateMachine>,
) -> Result<Replay, ReplayError> {
    // The recording's thread gave answers only if it found the places.
    let answers = answers.filter(|_| places.is_some());
    let places = places.unwrap_or_else(|| Places::of(recorded));
    let recording = Side {
        events: recorded,
        places: &places,
    };
    let input = match start_input(&recorded[0]) {
        Ok(input) => input,
        Err(why) => return Ok(masked_input(recorded, why)),
    };
    let answers =
        answers.unwrap_or_else(|| answers::Coming::ready(answers::by_place(recorded, &places)));
    let run = rerun(&recorded[0], input, answers, recorded.len(), machine)?;
    let places = Places::of(run.events.as_slice());
    let rerun = Side {
        events: &run.events,
        places: &places,
    };
    Ok(judge(&recording, &rerun, &ByPlace::of(&rerun)).replay(recorded, run))
}

/// The execution's input, from the recording's `ExecutionStarted`, or why it cannot be had.
fn start_input(started: &RecordedEvent) -> Result<Value, String> {
    answers::payload(started.details_value(), "input")
        .map_err(|why| format!("the execution's input (event 1) {why}"))
}

/// Whether two recorded events are the same event.
fn same_event(a: &RecordedEvent, b: &RecordedEvent) -> bool {
    (a.id, a.previous_event_id, a.timestamp_ms) == (b.id, b.previous_event_id, b.timestamp_ms)
        && a.event_type == b.event_type
        && a.details == b.details
}

/// What comparing a re-run with its recording found.
struct Judged {
    verdict: Verdict,
    /// Masked parts of the recording the comparison skipped.
    masked: Vec<String>,
}

/// Compares the re-run (its events `by_place`) with the recording.
fn judge(recording: &Side<'_>, rerun: &Side<'_>, by_place: &ByPlace<'_>) -> Judged {
    let mut masked = Vec::new();
    let verdict = match compare::first_divergence(recording, rerun, by_place, &mut masked) {
        Some(d) => match masked_answer(&d) {
            Some(why) => Verdict::Masked(why),
            None => Verdict::Diverged(d),
        },
        None => Verdict::Identical,
    };
    Judged { verdict, masked }
}

impl Judged {
    /// Nothing differs; `masked` was skipped.
    fn identical(masked: Vec<String>) -> Self {
        Judged {
            verdict: Verdict::Identical,
            masked,
        }
    }

    /// The replay of `recorded` by `run`.
    fn replay(self, recorded: &[RecordedEvent], run: Rerun) -> Replay {
        Replay {
            verdict: self.verdict,
            outcome: run.outcome,
            input: run.input,
            recorded_events: recorded.len(),
            recording_complete: recorded
                .last()
                .is_some_and(|e| compare::ends_execution(&e.event_type)),
            replayed_events: run.events.len(),
            masked: self.masked,
            rerun: run.events,
        }
    }
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

/// Runs `machine` again on a virtual clock from the recording's start (`started`, with its
/// `input`), its Tasks given the recording's `answers`; its history is sized for `expected`
/// events.
fn rerun(
    started: &RecordedEvent,
    input: Value,
    answers: answers::Coming,
    expected: usize,
    machine: Arc<StateMachine>,
) -> Result<Rerun, ReplayError> {
    let start = started.timestamp_ms;
    let time = Timekeeping::Virtual(VirtualClock::automatic(start));
    let sink = MemorySink::default();
    // Sized once, not grown by copies.
    sink.events.borrow_mut().reserve(expected);
    let tasks = answers::RecordedAnswers::new(answers, time.clock(), sink.events.clone());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ReplayError::Run(format!("cannot start the runtime: {e}")))?;
    let run = crate::engine::run_into(
        &sink,
        machine,
        execution_info(started.details_value(), start),
        input.clone(),
        time.clock(),
        Rc::new(tasks),
        EngineOptions::default(),
    );
    let local = tokio::task::LocalSet::new();
    let outcome = local.block_on(&runtime, time.track(run));
    let events = sink.events.take();
    Ok(Rerun {
        input,
        outcome,
        events: events.into_iter().map(RecordedEvent::from).collect(),
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A Task the recording answers, then a Pass.
    const MACHINE: &str = r#"{"StartAt":"Work","States":{
        "Work":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke",
          "Parameters":{"FunctionName":"work","Payload.$":"$"},
          "ResultSelector":{"v.$":"$.Payload.v"},"Next":"Done"},
        "Done":{"Type":"Pass","End":true}}}"#;

    /// The events of a run of [`MACHINE`] with input `{"n": n}`, as sfn-local records them.
    fn events(n: u32) -> Vec<String> {
        events_of(&format!(r#"{{"n":{n}}}"#))
    }

    /// The events of a run of [`MACHINE`] with `input` (compact JSON).
    fn events_of(input: &str) -> Vec<String> {
        let payload = input.replace('"', r#"\""#);
        let input = format!(r#""{payload}""#);
        let out = r#""{\"v\":7}""#;
        let details = [
            (0, "ExecutionStarted", format!(r#""executionStartedEventDetails":{{"input":{input}}}"#)),
            (0, "TaskStateEntered", format!(r#""stateEnteredEventDetails":{{"name":"Work","input":{input}}}"#)),
            (2, "TaskScheduled", format!(r#""taskScheduledEventDetails":{{"resourceType":"lambda","resource":"invoke","region":"us-east-1","parameters":"{{\"FunctionName\":\"work\",\"Payload\":{payload}}}"}}"#)),
            (3, "TaskStarted", r#""taskStartedEventDetails":{"resourceType":"lambda","resource":"invoke"}"#.into()),
            (4, "TaskSucceeded", r#""taskSucceededEventDetails":{"resourceType":"lambda","resource":"invoke","output":"{\"Payload\":{\"v\":7}}"}"#.into()),
            (5, "TaskStateExited", format!(r#""stateExitedEventDetails":{{"name":"Work","output":{out}}}"#)),
            (6, "PassStateEntered", format!(r#""stateEnteredEventDetails":{{"name":"Done","input":{out}}}"#)),
            (7, "PassStateExited", format!(r#""stateExitedEventDetails":{{"name":"Done","output":{out}}}"#)),
            (8, "ExecutionSucceeded", format!(r#""executionSucceededEventDetails":{{"output":{out}}}"#)),
        ];
        let at = r#""timestamp":"2026-12-05T13:26:19.320Z""#;
        (1..)
            .zip(details)
            .map(|(id, (previous, ty, d))| {
                format!(r#"{{{at},"type":"{ty}","id":{id},"previousEventId":{previous},{d}}}"#)
            })
            .collect()
    }

    fn page(events: &[String]) -> String {
        format!(r#"{{"events":[{}]}}"#, events.join(","))
    }

    /// [`replay_file`] of a file holding `text`.
    fn replay_text(
        text: &str,
        machine: Arc<StateMachine>,
    ) -> Result<(Vec<RecordedEvent>, Result<Replay, ReplayError>), ReplayError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.json");
        std::fs::write(&path, text).unwrap();
        replay_file(&path, machine)
    }

    fn machine(definition: &str) -> Arc<StateMachine> {
        Arc::new(
            crate::asl::compile_text(definition, Default::default())
                .0
                .unwrap(),
        )
    }

    /// The replay of `text` with nothing overlapped: the file read whole, then the re-run.
    fn read_whole(text: &str, definition: &str) -> Replay {
        let recorded = history::parse_history(text).unwrap();
        replay_read(&recorded, None, None, machine(definition)).unwrap()
    }

    /// The re-run started from the file's first event while the file is read (its Task
    /// waiting for the answers the other thread finds), and the re-run started once the file
    /// is read (its first page is not the first), say what a replay read whole says: the same
    /// verdict, identical or diverged.
    #[test]
    fn a_rerun_started_while_the_file_is_read_finds_what_a_replay_read_whole_finds() {
        let changed = MACHINE.replace(r#""Type":"Pass""#, r#""Type":"Pass","Result":1"#);
        let e = events(1);
        let reversed = format!("{}\n{}", page(&e[4..]), page(&e[..4]));
        // A first event longer than the head read alone: the re-run waits for the whole file.
        let long = page(&events_of(&format!(
            r#"{{"pad":"{}"}}"#,
            "x".repeat(70_000)
        )));
        for (text, definition) in [
            (page(&e), MACHINE),
            (page(&e), changed.as_str()),
            (reversed.clone(), MACHINE),
            (reversed, changed.as_str()),
            (long.clone(), MACHINE),
            (long, changed.as_str()),
        ] {
            let (recorded, replay) = replay_text(&text, machine(definition)).unwrap();
            let (replay, whole) = (replay.unwrap(), read_whole(&text, definition));
            assert_eq!(replay.verdict, whole.verdict, "{text}");
            assert_eq!(replay.input, whole.input);
            assert_eq!(replay.replayed_events, whole.replayed_events);
            assert_eq!(recorded.len(), 9);
        }
        let (_, diverged) = replay_text(&page(&e), machine(&changed)).unwrap();
        let Verdict::Diverged(d) = diverged.unwrap().verdict else {
            panic!("not diverged")
        };
        assert_eq!((d.event, d.what.as_str()), (8, "its output differs"));
    }

    /// The re-run starts early only from a first event, event 1, that ends within the head
    /// of the file read alone; a file that cannot be read says so.
    #[test]
    fn the_first_event_is_read_alone_from_the_head_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.json");
        let long = page(&events_of(&format!(
            r#"{{"pad":"{}"}}"#,
            "x".repeat(70_000)
        )));
        let e = events(1);
        for (text, read) in [(page(&e), true), (long, false), (page(&e[1..]), false)] {
            std::fs::write(&path, &text).unwrap();
            assert_eq!(history::execution_started_in(&path).is_some(), read);
        }
        let missing = replay_file(&dir.path().join("none.json"), machine(MACHINE)).unwrap_err();
        assert!(missing.to_string().starts_with("cannot read "), "{missing}");
    }

    /// A file whose first event starts the re-run and whose end is not JSON is refused with
    /// the message reading it whole gives, whatever the re-run did meanwhile.
    #[test]
    fn an_error_in_the_file_after_the_rerun_started_is_told_as_before() {
        let e = events(1);
        for text in [
            format!("{} {{\"events\":", page(&e)),
            format!("{} {}", page(&e), page(&e)),
            page(&[&e[..3], &e[4..]].concat()),
        ] {
            assert!(history::execution_started(&text).is_some());
            let told = replay_text(&text, machine(MACHINE))
                .unwrap_err()
                .to_string();
            let read = history::parse_history(&text).unwrap_err().to_string();
            assert_eq!(told, read);
        }
    }

    /// A page with two `events` lists is read by its last: the re-run started from the
    /// first list's event 1 is not kept, and the replay runs from the event 1 read.
    #[test]
    fn a_rerun_started_from_another_event_1_than_the_one_read_is_run_again() {
        let text = format!(
            r#"{{"events":[{}],"events":[{}]}}"#,
            events(2)[0],
            events(1).join(",")
        );
        assert!(history::execution_started(&text)
            .unwrap()
            .details
            .unwrap()
            .contains("2"));
        let (_, replay) = replay_text(&text, machine(MACHINE)).unwrap();
        let replay = replay.unwrap();
        assert_eq!(replay.input, serde_json::json!({"n": 1}));
        assert_eq!(replay.verdict, Verdict::Identical);
    }
}
