//! What happened to each state in one execution, read from its stored history: the colours and
//! hover titles of [`super::Graph`]'s nodes.
//!
//! Events other than `*StateEntered`/`*StateExited` carry no state name, so each is attributed to
//! the state open in its *lane* (the top level, one branch, one Map iteration), which the engine
//! writes into every event's replay key (`engine::replay`). A lane runs one state at a time.

use super::{Cluster, Edge, EdgeSlot};
use crate::store::{EventRecord, TokenRecord};
use serde_json::Value;
use std::collections::HashMap;

/// What happened to a state, the colour it gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StateStatus {
    /// Never entered.
    NotEntered,
    /// Exited normally.
    Succeeded,
    /// Failed, and a Catch sent the execution on.
    Caught,
    /// Stopped because its execution, branch or Map was (ABORTED, or a sibling failed).
    Aborted,
    /// Running now.
    Running,
    /// Waiting for a task token's answer.
    Waiting,
    /// Timed out (TimeoutSeconds or HeartbeatSeconds) and not caught.
    TimedOut,
    /// Failed, and not caught.
    Failed,
}

impl StateStatus {
    /// The lower-case name used as a CSS class and in tests.
    pub fn as_str(self) -> &'static str {
        match self {
            StateStatus::NotEntered => "not-entered",
            StateStatus::Succeeded => "succeeded",
            StateStatus::Caught => "caught",
            StateStatus::Aborted => "aborted",
            StateStatus::Running => "running",
            StateStatus::Waiting => "waiting",
            StateStatus::TimedOut => "timed-out",
            StateStatus::Failed => "failed",
        }
    }

    /// Every status, for legends and style sheets.
    pub const ALL: [StateStatus; 8] = [
        StateStatus::Succeeded,
        StateStatus::Failed,
        StateStatus::Caught,
        StateStatus::TimedOut,
        StateStatus::Waiting,
        StateStatus::Running,
        StateStatus::Aborted,
        StateStatus::NotEntered,
    ];

    /// Fill and stroke colours.
    pub fn colours(self) -> (&'static str, &'static str) {
        match self {
            StateStatus::NotEntered => ("#ffffff", "#9e9e9e"),
            StateStatus::Succeeded => ("#e6f4ea", "#1e8e3e"),
            StateStatus::Caught => ("#fff4e5", "#e8710a"),
            StateStatus::Aborted => ("#eeeeee", "#616161"),
            StateStatus::Running => ("#e8f0fe", "#1a73e8"),
            StateStatus::Waiting => ("#fef7e0", "#b06000"),
            StateStatus::TimedOut => ("#fce8f3", "#a50e7a"),
            StateStatus::Failed => ("#fce8e6", "#d93025"),
        }
    }
}

/// Map iterations by outcome.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IterationCounts {
    /// Started.
    pub started: u64,
    /// Succeeded.
    pub succeeded: u64,
    /// Failed.
    pub failed: u64,
    /// Aborted.
    pub aborted: u64,
}

/// One state's story in the execution (all its visits together).
#[derive(Debug, Clone, Default)]
pub struct StateRun {
    /// How many times it was entered.
    pub entered: u64,
    /// Visits that exited normally.
    pub succeeded: u64,
    /// Visits that failed and were caught, with the error and where the Catch went.
    pub caught: Vec<(String, String)>,
    /// Visits that failed uncaught.
    pub failed: u64,
    /// Visits that timed out (uncaught).
    pub timed_out: u64,
    /// Visits aborted.
    pub aborted: u64,
    /// Visits still open (running or waiting).
    pub open: u64,
    /// Retries (attempts after the first), over all visits.
    pub retries: u64,
    /// Time spent in the state, over all closed visits, in ms.
    pub duration_ms: i64,
    /// The last error and cause seen.
    pub last_error: Option<(String, String)>,
    /// Open task tokens' next deadlines (ms since the epoch); `Some(None)` waits with none.
    pub waiting: Vec<Option<i64>>,
    /// Map iterations.
    pub iterations: Option<IterationCounts>,
    /// For a coverage picture (many executions, not one): what of this state no execution
    /// took. `None` in an execution's picture.
    pub not_covered: Option<Vec<String>>,
}

impl StateRun {
    /// The status its colour shows: the most telling of its visits.
    pub fn status(&self) -> StateStatus {
        if self.entered == 0 {
            StateStatus::NotEntered
        } else if self.failed > 0 {
            StateStatus::Failed
        } else if self.timed_out > 0 {
            StateStatus::TimedOut
        } else if !self.waiting.is_empty() {
            StateStatus::Waiting
        } else if self.open > 0 {
            StateStatus::Running
        } else if self.aborted > 0 {
            StateStatus::Aborted
        } else if !self.caught.is_empty() {
            StateStatus::Caught
        } else {
            StateStatus::Succeeded
        }
    }

    /// A few lines for a hover title: status, visits, retries, catch, deadlines, duration.
    pub fn describe(&self, now_ms: i64) -> Vec<String> {
        if let Some(missed) = &self.not_covered {
            return self.describe_coverage(missed);
        }
        let mut out = vec![self.status().as_str().replace('-', " ")];
        if self.entered > 1 {
            out.push(format!("entered ×{}", self.entered));
        }
        if self.retries > 0 {
            out.push(format!("retried ×{}", self.retries));
        }
        for (error, next) in &self.caught {
            out.push(format!("caught {error} → {next}"));
        }
        if let Some((error, cause)) = &self.last_error {
            if self.status() != StateStatus::Caught || !cause.is_empty() {
                out.push(format!("{error}: {}", super::shorten(cause, 80)));
            }
        }
        for deadline in &self.waiting {
            match deadline {
                Some(at) => out.push(format!(
                    "waiting for a token; deadline in {}",
                    duration_text((at - now_ms).max(0))
                )),
                None => out.push("waiting for a token; no deadline".into()),
            }
        }
        if let Some(it) = &self.iterations {
            out.push(format!(
                "iterations: {} started, {} succeeded, {} failed, {} aborted",
                it.started, it.succeeded, it.failed, it.aborted
            ));
        }
        if self.entered > self.open {
            out.push(format!(
                "time in state: {}",
                duration_text(self.duration_ms)
            ));
        }
        out
    }
}

impl StateRun {
    /// A coverage picture's hover lines: entered how often, retries, what was not covered.
    fn describe_coverage(&self, missed: &[String]) -> Vec<String> {
        let mut out = vec![if self.entered == 0 {
            "not covered".to_owned()
        } else {
            format!("entered ×{}", self.entered)
        }];
        if self.retries > 0 {
            out.push(format!("retried ×{}", self.retries));
        }
        out.extend(missed.iter().map(|m| format!("not covered: {m}")));
        out
    }
}

/// `850 ms`, `12.3 s`, `4 min 05 s`.
pub fn duration_text(ms: i64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        format!("{} min {:02} s", ms / 60_000, (ms % 60_000) / 1000)
    }
}

/// Every state's story in one execution.
#[derive(Debug, Clone, Default)]
pub struct Overlay {
    /// By state name.
    pub states: HashMap<String, StateRun>,
    /// When the overlay was read (ms since the epoch), for deadlines counting down.
    pub now_ms: i64,
    /// Coverage pictures only: how often the tests took each transition a state declares
    /// (`Next`/`End`, Choice rules, `Default`, Catch entries), by source state and slot.
    pub edges: Option<HashMap<(String, EdgeSlot), u64>>,
}

/// An edge's coverage: taken by the tests or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeCoverage {
    /// Some execution took it.
    Taken,
    /// No execution took it.
    Missed,
}

impl EdgeCoverage {
    /// The lower-case name used as a CSS class.
    pub fn as_str(self) -> &'static str {
        match self {
            EdgeCoverage::Taken => "taken",
            EdgeCoverage::Missed => "missed",
        }
    }

    /// The stroke colour: green for taken, orange for missed (red is Catch's own colour).
    pub fn colour(self) -> &'static str {
        match self {
            EdgeCoverage::Taken => "#188038",
            EdgeCoverage::Missed => "#e37400",
        }
    }
}

#[derive(Default)]
struct Visit {
    state: String,
    entered_ms: i64,
    attempts: u64,
    failure: Option<(String, String, bool)>,
}

fn details(event: &EventRecord) -> Value {
    event
        .details
        .as_deref()
        .and_then(|d| serde_json::from_str(d).ok())
        .unwrap_or(Value::Null)
}

fn text(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

impl Overlay {
    /// Whether the tests took `edge` of `cluster`: `None` unless this is a coverage picture
    /// and coverage counts the edge (the start marker's edge is not a transition of a state).
    pub fn edge(&self, cluster: &Cluster, edge: &Edge) -> Option<EdgeCoverage> {
        let edges = self.edges.as_ref()?;
        let from = &cluster.nodes[edge.from];
        if from.kind.is_marker() {
            return None;
        }
        let hits = edges.get(&(from.name.clone(), edge.slot))?;
        Some(match hits {
            0 => EdgeCoverage::Missed,
            _ => EdgeCoverage::Taken,
        })
    }

    /// Reads an execution's history (in order) and its open task tokens.
    pub fn from_history(
        events: &[EventRecord],
        open_tokens: &[TokenRecord],
        execution_running: bool,
        now_ms: i64,
    ) -> Overlay {
        let mut states: HashMap<String, StateRun> = HashMap::new();
        let mut open: HashMap<String, Visit> = HashMap::new();
        // Lane → a state that exited through a Catch whose target is not known yet.
        let mut pending_catch: HashMap<String, String> = HashMap::new();
        for event in events {
            let lane = event
                .replay_key
                .as_deref()
                .and_then(|k| k.rsplit_once(':'))
                .map(|(lane, _)| lane.to_owned())
                .unwrap_or_else(|| "r".into());
            let ty = event.event_type.as_str();
            let body = details(event);
            if ty.ends_with("StateEntered") {
                let name = text(&body, "name");
                if let Some(caught) = pending_catch.remove(&lane) {
                    if let Some(last) = states.entry(caught).or_default().caught.last_mut() {
                        last.1 = name.clone();
                    }
                }
                // A failed visit followed by another state in its lane was caught.
                if let Some(prev) = open.remove(&lane) {
                    let run = states.entry(prev.state.clone()).or_default();
                    run.open = run.open.saturating_sub(1);
                    run.duration_ms += event.timestamp_ms - prev.entered_ms;
                    match prev.failure {
                        Some((error, _, _)) => run.caught.push((error, name.clone())),
                        None => run.succeeded += 1,
                    }
                }
                let run = states.entry(name.clone()).or_default();
                run.entered += 1;
                run.open += 1;
                if ty == "FailStateEntered" {
                    // A Fail state ends its lane at once, with no Exited event.
                    run.open -= 1;
                    run.failed += 1;
                    continue;
                }
                open.insert(
                    lane,
                    Visit {
                        state: name,
                        entered_ms: event.timestamp_ms,
                        ..Visit::default()
                    },
                );
                continue;
            }
            if ty.starts_with("MapIteration") {
                let name = text(&body, "name");
                let counts = states
                    .entry(name)
                    .or_default()
                    .iterations
                    .get_or_insert_with(IterationCounts::default);
                match ty {
                    "MapIterationStarted" => counts.started += 1,
                    "MapIterationSucceeded" => counts.succeeded += 1,
                    "MapIterationFailed" => counts.failed += 1,
                    _ => counts.aborted += 1,
                }
                continue;
            }
            let Some(visit) = open.get_mut(&lane) else {
                continue;
            };
            if ty.ends_with("StateExited") {
                let visit = open.remove(&lane).unwrap_or_default();
                let run = states.entry(visit.state.clone()).or_default();
                run.open = run.open.saturating_sub(1);
                run.duration_ms += event.timestamp_ms - visit.entered_ms;
                match visit.failure {
                    // Exited after a failure: a Catch took it; the next Entered names where.
                    Some((error, _, _)) => {
                        run.caught.push((error, String::new()));
                        pending_catch.insert(lane, visit.state);
                    }
                    None => run.succeeded += 1,
                }
                continue;
            }
            if ty.ends_with("StateAborted") {
                let visit = open.remove(&lane).unwrap_or_default();
                let run = states.entry(visit.state).or_default();
                run.open = run.open.saturating_sub(1);
                run.aborted += 1;
                run.duration_ms += event.timestamp_ms - visit.entered_ms;
                continue;
            }
            if ty.ends_with("Scheduled") {
                visit.attempts += 1;
                visit.failure = None;
                if visit.attempts > 1 {
                    states.entry(visit.state.clone()).or_default().retries += 1;
                }
                continue;
            }
            let failed = ty.ends_with("Failed") || ty.ends_with("TimedOut");
            if failed && !ty.starts_with("Execution") {
                let error = text(&body, "error");
                let cause = text(&body, "cause");
                let timed_out = ty.ends_with("TimedOut") || error == "States.Timeout";
                states.entry(visit.state.clone()).or_default().last_error =
                    Some((error.clone(), cause.clone()));
                visit.failure = Some((error, cause, timed_out));
            }
        }
        for (_, visit) in open {
            let run = states.entry(visit.state.clone()).or_default();
            if execution_running {
                let waiting: Vec<Option<i64>> = open_tokens
                    .iter()
                    .filter(|t| t.state_name == visit.state)
                    .map(TokenRecord::next_deadline)
                    .collect();
                run.waiting.extend(waiting);
                continue;
            }
            run.open = run.open.saturating_sub(1);
            run.duration_ms +=
                events.last().map(|e| e.timestamp_ms).unwrap_or(0) - visit.entered_ms;
            match visit.failure {
                Some((_, _, true)) => run.timed_out += 1,
                Some(_) => run.failed += 1,
                None => run.aborted += 1,
            }
        }
        for run in states.values_mut() {
            run.waiting.dedup();
        }
        Overlay {
            states,
            now_ms,
            edges: None,
        }
    }

    /// The story of one state (a never-entered one when the history does not name it).
    pub fn state(&self, name: &str) -> StateRun {
        self.states.get(name).cloned().unwrap_or_default()
    }
}
