//! The outside world as the recording saw it: a [`TaskRunner`] that answers each Task attempt
//! of the re-run with what the recording says that attempt got, found by the attempt's place
//! (its `*Scheduled` event's, see [`super::places`]), never by call order: Map iterations and
//! Parallel branches run concurrently, on AWS and here.
//!
//! An answer takes as long on the virtual clock as it took in the recording (its `*Started`
//! to its end), so timeouts, Waits and back-off see the same time. A recorded timeout is left
//! to the state's own TimeoutSeconds; one the heartbeat caused (the attempt had
//! HeartbeatSeconds and ended before its TimeoutSeconds) goes silent for this definition's
//! HeartbeatSeconds and then reports the heartbeat's expiry, which the engine records as
//! `*TimedOut`. Should the definition no longer time out, the attempt fails with
//! `States.Timeout` at a far horizon. An
//! attempt the recording never made fails with [`NOT_RECORDED`], one whose answer the
//! recording masked with [`MASKED`]; the comparison then names the event.

use super::history::RecordedEvent;
use super::places::{visit_place, Places};
use crate::asl::error::StatesError;
use crate::clock::{Clock, Millis};
use crate::engine::history::HistoryEvent;
use crate::engine::visits::GrowingTree;
use crate::tasks::{JobContext, TaskFuture, TaskRequest, TaskRunner};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

/// The error of an attempt the recording never made.
pub const NOT_RECORDED: &str = "Replay.NotRecorded";
/// The error of an attempt whose recorded answer was masked (truncated by AWS).
pub const MASKED: &str = "Replay.Masked";
/// Where an answer the recording never gave is waited for: far past any Wait.
const OPEN_HORIZON_MS: Millis = 400 * 24 * 3600 * 1000;

/// How a recorded attempt ended.
#[derive(Debug, Clone)]
pub(crate) enum End {
    Succeeded(Value),
    Failed(StatesError),
    TimedOut {
        /// Whether HeartbeatSeconds ran out (rather than TimeoutSeconds).
        heartbeat: bool,
    },
    /// The recording truncated the result: it is named, never guessed.
    Masked(String),
    /// The recording ends before the attempt did.
    Open,
}

/// One recorded attempt.
#[derive(Debug, Clone)]
pub struct Answer {
    end: End,
    /// From its `*Started` (or `*Scheduled`) to its end, ms.
    took_ms: Millis,
    /// `TaskSubmitted`'s output (`.sync`, callbacks), if recorded.
    submitted: Option<Value>,
}

impl Answer {
    /// The attempt as an entry of a MockConfigFile response (`Return`, `Throw` or
    /// `NeverAnswers`, with its recorded `Delay`), or why it cannot be one.
    pub(crate) fn mock_entry(&self) -> Result<Value, String> {
        let delay = self.took_ms as f64 / 1000.0;
        let mut entry = match &self.end {
            End::Succeeded(v) => json!({ "Return": v }),
            End::Failed(e) => json!({ "Throw": { "Error": e.error, "Cause": e.cause } }),
            End::TimedOut { .. } => return Ok(json!({ "NeverAnswers": true })),
            End::Masked(why) => return Err(why.clone()),
            End::Open => return Err("the recording ends before this attempt did".into()),
        };
        if delay > 0.0 {
            entry["Delay"] = json!(delay);
        }
        Ok(entry)
    }
}

/// Every recorded attempt by the place of its `*Scheduled` event.
pub type AnswersByPlace = HashMap<String, Answer>;

/// The answers of `recorded` (with its places).
pub fn by_place(recorded: &[RecordedEvent], places: &Places) -> AnswersByPlace {
    let mut by_place = HashMap::new();
    for (i, e) in recorded.iter().enumerate() {
        if e.event_type.ends_with("Scheduled") {
            by_place.insert(places.event(i).to_string(), answer(recorded, places, i));
        }
    }
    by_place
}

/// The recording's answers as the re-run gets them: at once, or from the thread that reads
/// the recording while the re-run starts, asked for and waited for when the first Task asks
/// (a run without Tasks never asks, and the recording's places may then never be needed).
pub struct Coming {
    answers: std::sync::mpsc::Receiver<AnswersByPlace>,
    /// Told, once, that the answers are wanted; `None` when they were given at once.
    ask: Option<std::sync::mpsc::Sender<Wanted>>,
    got: std::cell::OnceCell<AnswersByPlace>,
}

/// Whether the recording's places are wanted: for the re-run's answers, or for a comparison
/// that cannot go in order (see [`super::compare::in_order`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wanted {
    /// Find them (and give the answers).
    Yes,
    /// Nothing needs them.
    No,
}

/// The other end of a [`Coming`], on the thread that reads the recording: told whether the
/// recording's places are wanted, and gives the answers.
pub struct Answering {
    /// Whether the places are wanted (the first word told counts; no one left to tell is a
    /// no).
    pub wanted: std::sync::mpsc::Receiver<Wanted>,
    /// Where the answers go.
    pub give: std::sync::mpsc::Sender<AnswersByPlace>,
}

impl Answering {
    /// Waits to be told whether the recording's places are wanted.
    pub fn wanted(&self) -> bool {
        self.wanted.recv() == Ok(Wanted::Yes)
    }
}

impl Coming {
    /// Answers given now.
    pub fn ready(answers: AnswersByPlace) -> Self {
        let (sender, given) = std::sync::mpsc::channel();
        let _ = sender.send(answers);
        Coming {
            answers: given,
            ask: None,
            got: std::cell::OnceCell::new(),
        }
    }

    /// Answers the returned [`Answering`] gives once asked; none if it is dropped first (the
    /// recording could not be read, and the re-run is then discarded). The returned sender
    /// asks too, for whoever else wants the recording's places.
    pub fn channel() -> (Answering, std::sync::mpsc::Sender<Wanted>, Self) {
        let (give, answers) = std::sync::mpsc::channel();
        let (ask, wanted) = std::sync::mpsc::channel();
        let coming = Coming {
            answers,
            ask: Some(ask.clone()),
            got: std::cell::OnceCell::new(),
        };
        (Answering { wanted, give }, ask, coming)
    }

    fn get(&self) -> &AnswersByPlace {
        self.got.get_or_init(|| {
            if let Some(ask) = &self.ask {
                let _ = ask.send(Wanted::Yes);
            }
            self.answers.recv().unwrap_or_default()
        })
    }
}

/// A [`TaskRunner`] that answers each Task attempt with its recorded answer.
pub struct RecordedAnswers {
    by_place: Coming,
    clock: Arc<dyn Clock>,
    /// The re-run's events so far (the engine commits them before a Task's effects).
    rerun: Rc<RefCell<Vec<HistoryEvent>>>,
    /// The re-run's visits, read as its events come.
    tree: RefCell<GrowingTree>,
}

impl RecordedAnswers {
    /// The answers `by_place`, for a re-run writing to `rerun`.
    pub fn new(
        by_place: Coming,
        clock: Arc<dyn Clock>,
        rerun: Rc<RefCell<Vec<HistoryEvent>>>,
    ) -> Self {
        RecordedAnswers {
            by_place,
            clock,
            rerun,
            tree: RefCell::default(),
        }
    }

    /// The place of the re-run's `*Scheduled` event with replay key `key`, read from the
    /// re-run's events so far (each read once, see [`GrowingTree`]), and the attempt's
    /// HeartbeatSeconds in this definition, in ms.
    fn place_of(&self, key: &str) -> Option<(String, Option<Millis>)> {
        let events = self.rerun.borrow();
        let index = events
            .iter()
            .rposition(|e| e.replay_key.as_deref() == Some(key))?;
        let mut growing = self.tree.borrow_mut();
        let tree = growing.extend(&events[..]);
        let visit = tree.owner_id(index)?;
        let attempt = tree.visits[visit].attempts.len().saturating_sub(1);
        let place = format!(
            "{} {}#{attempt}",
            visit_place(tree, visit),
            events[index].event_type.as_str()
        );
        Some((place, heartbeat_ms(events[index].details.as_deref())))
    }
}

/// The attempt whose `*Scheduled` event is at `scheduled`: the events of its visit after it,
/// up to its end.
pub(crate) fn answer(recorded: &[RecordedEvent], places: &Places, scheduled: usize) -> Answer {
    let owner = places.tree.owner_id(scheduled);
    let mut start = recorded[scheduled].timestamp_ms;
    let mut submitted = None;
    for (i, e) in recorded.iter().enumerate().skip(scheduled + 1) {
        if places.tree.owner_id(i) != owner {
            continue;
        }
        let ty = &*e.event_type;
        let d = e.details_value();
        let took_ms = (e.timestamp_ms - start).max(0);
        let end = if ty.ends_with("Started") {
            start = e.timestamp_ms;
            continue;
        } else if ty == "TaskSubmitted" {
            submitted = payload(d, "output").ok();
            continue;
        } else if ty.ends_with("Succeeded") {
            match payload(d, "output") {
                Ok(v) => End::Succeeded(v),
                Err(why) => End::Masked(format!("the result of event {} ({ty}) {why}", e.id)),
            }
        } else if ty.ends_with("TimedOut") {
            End::TimedOut {
                heartbeat: heartbeat_ran_out(&recorded[scheduled], took_ms),
            }
        } else if ty.ends_with("Failed") {
            End::Failed(StatesError {
                error: d["error"].as_str().map(str::to_owned),
                cause: d["cause"].as_str().map(str::to_owned),
                heartbeat: false,
            })
        } else {
            break;
        };
        return Answer {
            end,
            took_ms,
            submitted,
        };
    }
    Answer {
        end: End::Open,
        took_ms: 0,
        submitted,
    }
}

/// Whether a recorded timeout `took_ms` after its attempt started was the heartbeat's: the
/// attempt had HeartbeatSeconds and ended before its TimeoutSeconds.
fn heartbeat_ran_out(scheduled: &RecordedEvent, took_ms: Millis) -> bool {
    let d = scheduled.details_value();
    let timeout_ms = d["timeoutInSeconds"].as_i64().map(|s| s * 1000);
    d["heartbeatInSeconds"].is_i64() && timeout_ms.is_none_or(|t| took_ms < t)
}

/// `heartbeatInSeconds` of a `*Scheduled` event's details text, in ms.
fn heartbeat_ms(details: Option<&str>) -> Option<Millis> {
    let d: Value = serde_json::from_str(details?).ok()?;
    d["heartbeatInSeconds"].as_i64().map(|s| s * 1000)
}

/// A payload field (`input`, `output`) of recorded details as JSON: an error when AWS
/// truncated it or it is not JSON.
pub fn payload(details: &Value, field: &str) -> Result<Value, String> {
    if details[format!("{field}Details")]["truncated"] == Value::Bool(true) {
        return Err("was truncated by AWS (over 256 KiB)".into());
    }
    match &details[field] {
        Value::String(text) => serde_json::from_str(text).map_err(|e| format!("is not JSON ({e})")),
        Value::Null => Ok(Value::Null),
        other => Ok(other.clone()),
    }
}

impl TaskRunner for RecordedAnswers {
    fn run(&self, request: TaskRequest) -> TaskFuture {
        let state = request.state_name;
        Box::pin(async move {
            Err(StatesError::new(
                NOT_RECORDED,
                format!("the Task {state} ran without its place in the execution"),
            ))
        })
    }

    fn answers_callbacks(&self) -> bool {
        true
    }

    fn run_job(&self, request: TaskRequest, job: JobContext) -> TaskFuture {
        let (place, heartbeat) = self.place_of(&job.task_key).unwrap_or_default();
        let Some(answer) = self.by_place.get().get(&place).cloned() else {
            let why = format!(
                "the recording has no attempt {} of {} here ({place})",
                request.retry_count + 1,
                request.state_name
            );
            return Box::pin(async move { Err(StatesError::new(NOT_RECORDED, why)) });
        };
        if let (Some(tx), Some(response)) = (job.submitted, answer.submitted.clone()) {
            let _ = tx.send(response);
        }
        let clock = self.clock.clone();
        Box::pin(async move {
            let now = clock.now();
            // An answer that took no time needs no timer (a timer costs the clock a jump).
            let pause = |ms: Millis| {
                let clock = clock.clone();
                async move {
                    if ms > 0 {
                        clock.sleep_until(now + ms).await;
                    }
                }
            };
            match answer.end {
                End::Succeeded(v) => {
                    pause(answer.took_ms).await;
                    Ok(v)
                }
                End::Failed(e) => {
                    pause(answer.took_ms).await;
                    Err(e)
                }
                End::TimedOut {
                    heartbeat: was_heartbeat,
                } => {
                    // The worker goes silent: this definition's heartbeat runs out, or its
                    // TimeoutSeconds ends the attempt, as they did.
                    if let (true, Some(ms)) = (was_heartbeat, heartbeat) {
                        pause(ms).await;
                        return Err(StatesError::heartbeat_timeout());
                    }
                    pause(OPEN_HORIZON_MS).await;
                    Err(StatesError::new(
                        crate::asl::error::names::TIMEOUT,
                        "the recording timed out here; this definition did not",
                    ))
                }
                End::Masked(why) => Err(StatesError::new(MASKED, why)),
                End::Open => {
                    pause(OPEN_HORIZON_MS).await;
                    Err(StatesError::new(NOT_RECORDED, "the recording ends here"))
                }
            }
        })
    }
}
